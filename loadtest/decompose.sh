#!/usr/bin/env bash
# Where a request's CPU goes (seqvend, the floor server, PostgreSQL, wrk), route by route: the
# no-op route, strict `POST next`, and the floor server's (examples/floor.rs) no-op and
# `POST /floor`, wrk -t1 -c64, CPU from /proc. Prints a table; writes nothing.
#   loadtest/decompose.sh                                   # 3 rounds of 8 s
#   DECOMPOSE_ROUNDS=5 DECOMPOSE_SECONDS=5 loadtest/decompose.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"

ensure_load_tools
log "building seqvend and the floor server (release)"
SQLX_OFFLINE=true cargo build --release --quiet --bin seqvend --example floor
exec python3 loadtest/decompose.py
