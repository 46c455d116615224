#!/usr/bin/env bash
# Cached sequences under load, in one command: cached `next` beside strict `next` and the no-op
# GET /healthz (wrk, rounds interleaved), values per database statement, the memory of 10,000
# cached sequences, and the thick client's figures (client_bench: warm cache at 1, 2 and 8
# threads, hit rate at a steady 10k ids/s, a 60 s outage of seqvend at 1k ids/s).
# Writes its section of docs/performance.md.
#   loadtest/cache.sh
#   WRK_SECONDS=5 WRK_ROUNDS=1 CACHE_QUICK=1 loadtest/cache.sh   # a quick try
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

ensure_postgres
command -v wrk >/dev/null || apt_install wrk
SQLX_OFFLINE=true cargo build --release --quiet --workspace --examples --bins
exec python3 loadtest/cache.py
