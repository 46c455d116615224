#!/usr/bin/env bash
# Metric series with 100 and with 10,000 sequences: the per-sequence metrics stay bounded.
# Writes its section of docs/performance.md.
#   loadtest/series.sh
#   SERIES_SEQUENCES=1000 loadtest/series.sh   # a quick try
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

ensure_postgres
SQLX_OFFLINE=true cargo build --release --quiet --bin seqvend
exec python3 loadtest/series.py
