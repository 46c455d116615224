#!/usr/bin/env bash
# Time-ordered ids under load, in one command: Snowflake and UUIDv7 batches of 1,000 beside the
# no-op GET /healthz, interleaved in one run, with seqvend and its own PostgreSQL on this machine.
# Writes docs/performance-ids.md.
#   loadtest/ids.sh
#   WRK_SECONDS=5 WRK_ROUNDS=1 loadtest/ids.sh   # a quick try
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

ensure_postgres
command -v wrk >/dev/null || apt_install wrk
SQLX_OFFLINE=true cargo build --release --quiet
exec python3 loadtest/ids.py
