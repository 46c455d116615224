#!/usr/bin/env bash
# Starts seqvend. With no DATABASE_URL it runs its own PostgreSQL in SEQVEND_DATA_DIR
# (default ./.seqvend), installing the server package first if it is missing. With no tokens
# configured it creates an admin and a vend token on first run and prints where they are.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$(repo_root)"

if [ -z "${DATABASE_URL:-}" ]; then
    ensure_postgres
    export SEQVEND_DATA_DIR="${SEQVEND_DATA_DIR:-$PWD/.seqvend}"
    # As root the cluster runs as `postgres`, which must be able to reach the directory.
    if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$(dirname "$SEQVEND_DATA_DIR")" 2>/dev/null; then
        export SEQVEND_DATA_DIR=/var/lib/seqvend
        log "the postgres user cannot reach $PWD; keeping the database in $SEQVEND_DATA_DIR"
    fi
fi

if [ -z "${SEQVEND_ADMIN_TOKENS:-}${SEQVEND_VEND_TOKENS:-}" ] && [ "${SEQVEND_AUTH_DISABLED:-}" != "true" ]; then
    tokens="${SEQVEND_TOKENS_FILE:-$PWD/.seqvend-tokens}"
    if [ ! -f "$tokens" ]; then
        (umask 077; {
            echo "SEQVEND_ADMIN_TOKENS=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
            echo "SEQVEND_VEND_TOKENS=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
        } > "$tokens")
        log "created an admin and a vend token in $tokens"
    fi
    set -a; source "$tokens"; set +a
    log "tokens: see $tokens (curl -H \"Authorization: Bearer \$SEQVEND_ADMIN_TOKENS\" ...)"
fi

export SQLX_OFFLINE=true
cargo build --release --quiet
exec ./target/release/seqvend serve
