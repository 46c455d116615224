#!/usr/bin/env bash
# Strict vends and counter draws through PgBouncer 1.18 in transaction mode against straight to
# PostgreSQL, in the same run. Writes its section of docs/performance.md.
#   loadtest/pgbouncer.sh
#   WRK_SECONDS=3 WRK_ROUNDS=1 loadtest/pgbouncer.sh   # a quick try
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

ensure_postgres
ensure_pgbouncer
command -v wrk >/dev/null || apt_install wrk
SQLX_OFFLINE=true cargo build --release --quiet --bin seqvend
exec python3 loadtest/pgbouncer.py
