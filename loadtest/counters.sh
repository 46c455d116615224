#!/usr/bin/env bash
# Counter families under load: a million keys created by first use, draws at random over them
# against draws on one key, disk per key and seqvend's memory. Writes its section of
# docs/performance.md.
#   loadtest/counters.sh
#   COUNTER_KEYS=20000 WRK_SECONDS=3 WRK_ROUNDS=1 loadtest/counters.sh   # a quick try
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

ensure_postgres
command -v wrk >/dev/null || apt_install wrk
SQLX_OFFLINE=true cargo build --release --quiet --bin seqvend
exec python3 loadtest/counters.py
