#!/usr/bin/env bash
# Blocks in constant time, measured in the database: the vend and lease statements as a
# baseline commit's migrations left them against this checkout's, and the ways of drawing a
# block that were weighed. Needs PostgreSQL only (no seqvend build). Writes the "blocks"
# section of docs/performance.md.
#   loadtest/blocks.sh main                               # five rounds of 5 s
#   BLOCKS_ROUNDS=3 BLOCKS_SECONDS=2 loadtest/blocks.sh main   # a quick try
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

baseline=${1:?usage: loadtest/blocks.sh <baseline commit>}
ensure_postgres
command -v "$(pg_bindir)/pgbench" >/dev/null || apt_install postgresql-contrib
exec python3 loadtest/blocks.py "$baseline"
