#!/usr/bin/env bash
# What printing carrier numbers costs the vend path: wrk on POST next for a formatted and a
# plain sequence in the same run (about 2 minutes). Figures go in docs/performance-formats.md.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

ensure_postgres
command -v wrk >/dev/null || apt_install wrk
SQLX_OFFLINE=true cargo build --release --quiet
exec python3 loadtest/formats.py
