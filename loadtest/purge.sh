#!/usr/bin/env bash
# The purge of stored idempotency answers, measured in the database: a baseline commit's
# migrations against this checkout's, on the same 2,536,000 stored answers. Needs PostgreSQL only
# (no seqvend build). Writes the "purge" section of docs/performance.md.
#   loadtest/purge.sh main                                        # three rounds
#   PURGE_ROUNDS=1 PURGE_ANSWERS=100000 loadtest/purge.sh main    # a quick try
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

baseline=${1:?usage: loadtest/purge.sh <baseline commit>}
ensure_postgres
command -v "$(pg_bindir)/pgbench" >/dev/null || apt_install postgresql-contrib
exec python3 loadtest/purge.py "$baseline"
