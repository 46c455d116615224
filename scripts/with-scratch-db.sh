#!/usr/bin/env bash
# Runs a command with DATABASE_URL pointing at a throwaway, migrated PostgreSQL database
# (unix socket only), then removes it. Used to check and refresh the .sqlx offline data:
#   scripts/with-scratch-db.sh cargo sqlx prepare          # refresh
#   scripts/with-scratch-db.sh cargo sqlx prepare --check  # verify
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$(repo_root)"
ensure_postgres
bindir=$(pg_bindir)

scratch=$(mktemp -d /tmp/seqvend-scratch.XXXXXX)
chmod 755 "$scratch"
run_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" -eq 0 ] && chown postgres "$scratch"
cleanup() {
    run_pg "$bindir/pg_ctl" -D "$scratch/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$scratch"
}
trap cleanup EXIT

run_pg "$bindir/initdb" -D "$scratch/data" -U seqvend --auth=trust --no-locale -E UTF8 >/dev/null
port=$((40000 + RANDOM % 20000))
run_pg "$bindir/pg_ctl" -D "$scratch/data" -l "$scratch/log" -w \
    -o "-c listen_addresses= -c unix_socket_directories=$scratch -c port=$port" start >/dev/null
"$bindir/psql" -q -h "$scratch" -p "$port" -U seqvend -d postgres -c "CREATE DATABASE seqvend"
"$bindir/psql" -q -h "$scratch" -p "$port" -U seqvend -d seqvend -c "CREATE SCHEMA seqvend"
export DATABASE_URL="postgres://seqvend@localhost/seqvend?host=$scratch&port=$port"
# The same layout `serve` gives the database: migration history in the seqvend schema.
cargo sqlx migrate run --database-url "$DATABASE_URL&options=-c%20search_path%3Dseqvend" >/dev/null
"$@"
