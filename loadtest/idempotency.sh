#!/usr/bin/env bash
# POST next with and without Idempotency-Key, and with a run-time token, against the no-op
# route (wrk, rounds interleaved). Writes its section of docs/performance.md.
#   loadtest/idempotency.sh
#   WRK_SECONDS=5 WRK_ROUNDS=1 loadtest/idempotency.sh   # a quick try
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

ensure_postgres
command -v wrk >/dev/null || apt_install wrk
SQLX_OFFLINE=true cargo build --release --quiet --bin seqvend
exec python3 loadtest/idempotency.py
