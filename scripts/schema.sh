#!/usr/bin/env bash
# schema.sql is the live schema: what the migrations leave in a database, dumped. Every
# function's current body is there in one place; migrations/ stays the history.
#   scripts/schema.sh          # rewrite schema.sql from the migrations
#   scripts/schema.sh --check  # fail when schema.sql does not match them (run by the tests)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$(repo_root)"

if [ "${1:-}" = "--inner" ]; then
    # Run by with-scratch-db.sh, with DATABASE_URL set to the migrated scratch database. The
    # version lines and the migration history's rows are left out: they change with the
    # PostgreSQL minor release and the checkout's time, not with the schema.
    "$(pg_bindir)/pg_dump" --schema-only --no-owner --no-privileges --no-comments --restrict-key=seqvend \
        --schema=seqvend --schema=seqvend_ranges --exclude-table=seqvend._sqlx_migrations \
        "$DATABASE_URL" | grep -v '^-- Dumped \(from\|by\)' | cat -s
    exit 0
fi

dumped=$(mktemp)
trap 'rm -f "$dumped"' EXIT
scripts/with-scratch-db.sh scripts/schema.sh --inner >"$dumped"
if [ "${1:-}" = "--check" ]; then
    if ! diff -u schema.sql "$dumped"; then
        echo "schema.sql does not match the migrations: run scripts/schema.sh and commit it" >&2
        exit 1
    fi
else
    cp "$dumped" schema.sql
fi
