#!/usr/bin/env bash
# The database's work per 1,000 values/s, for strict, cached (server lease cache) and client
# (seqvend-client's thick cache) vends, at a fixed rate each, beside an idle baseline: commits,
# statements (pg_stat_statements), WAL records, bytes and full-page images, PostgreSQL's CPU.
# Starts a private PostgreSQL with pg_stat_statements, a release seqvend on it, and writes the
# `db-load` section of docs/scaling.md.
#   loadtest/db_load.sh
#   DB_LOAD_SECONDS=10 DB_LOAD_ROUNDS=1 loadtest/db_load.sh   # a quick try
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"
ensure_postgres
ensure_k6
SQLX_OFFLINE=true cargo build --release --quiet --bin seqvend
SQLX_OFFLINE=true cargo build --release --quiet -p seqvend-client --example client_bench
bindir=$(pg_bindir)

scratch=$(mktemp -d /tmp/seqvend-db-load.XXXXXX)
chmod 755 "$scratch"
run_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" -eq 0 ] && chown postgres "$scratch"
cleanup() {
    run_pg "$bindir/pg_ctl" -D "$scratch/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$scratch"
}
trap cleanup EXIT

run_pg "$bindir/initdb" -D "$scratch/data" -U seqvend --auth=trust --no-locale -E UTF8 >/dev/null
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Settings as shipped, but for the statement statistics the measurement reads.
run_pg "$bindir/pg_ctl" -D "$scratch/data" -l "$scratch/postgres.log" -w -o \
    "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$scratch -c shared_preload_libraries=pg_stat_statements" \
    start >/dev/null
"$bindir/psql" -q -h 127.0.0.1 -p "$port" -U seqvend -d postgres -c "CREATE DATABASE seqvend"
"$bindir/psql" -q -h 127.0.0.1 -p "$port" -U seqvend -d seqvend -c "CREATE EXTENSION pg_stat_statements"

DB_LOAD_URL="postgres://seqvend@127.0.0.1:$port/seqvend" DB_LOAD_PGDATA="$scratch/data" \
    DB_LOAD_PSQL="$bindir/psql" DB_LOAD_WORK="$scratch" python3 loadtest/db_load.py
