#!/usr/bin/env bash
# The vend statement for small batches (one request, 32 on one sequence, 32 on 32 sequences),
# measured in the database: a baseline commit's migrations against this checkout's, committed
# and rolled back. Needs PostgreSQL only (no seqvend build). Writes the "vend-statement"
# section of docs/performance.md.
#   loadtest/vend_statement.sh main                                  # five rounds of 4 s
#   VEND_ROUNDS=3 VEND_SECONDS=2 loadtest/vend_statement.sh main     # a quick try
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

baseline=${1:?usage: loadtest/vend_statement.sh <baseline commit>}
ensure_postgres
command -v "$(pg_bindir)/pgbench" >/dev/null || apt_install postgresql-contrib
exec python3 loadtest/vend_statement.py "$baseline"
