#!/usr/bin/env bash
# Row 8 of the speed table taken apart (`POST next` on a random one of 10,000 sequences): seqvend
# beside the floor drawing from the same sequences, under wrk, and PostgreSQL's share statement
# by statement in pgbench. Writes the "many-sequences" section of docs/performance.md. About
# 10 minutes.
#   loadtest/many_sequences.sh
#   MANY_ROUNDS=2 MANY_SECONDS=2 WRK_SECONDS=3 loadtest/many_sequences.sh   # a quick try
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"

ensure_load_tools
command -v "$(pg_bindir)/pgbench" >/dev/null || apt_install postgresql-contrib
log "building seqvend and the floor (release)"
SQLX_OFFLINE=true cargo build --release --quiet --bin seqvend --example floor
exec python3 loadtest/many_sequences.py
