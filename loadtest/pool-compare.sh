#!/usr/bin/env bash
# Per-request nextval through deadpool-postgres vs a sqlx pool vs a no-op route (wrk).
#   loadtest/pool-compare.sh [seconds per run] [rounds]
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"
ensure_postgres
command -v wrk >/dev/null || apt_install wrk
SQLX_OFFLINE=true cargo run --release --quiet --example pool_compare -- "${1:-10}" "${2:-3}"
