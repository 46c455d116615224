#!/usr/bin/env bash
# Strict and keyed POST next, this build against the build of a baseline commit, in one run
# with rounds interleaved. Writes its section of docs/performance.md.
#   loadtest/before_after.sh <baseline commit>
#   WRK_SECONDS=5 WRK_ROUNDS=3 loadtest/before_after.sh HEAD~5   # a quick try
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"

baseline=${1:?usage: loadtest/before_after.sh <baseline commit>}
ensure_postgres
command -v wrk >/dev/null || apt_install wrk
SQLX_OFFLINE=true cargo build --release --quiet --bin seqvend

build_baseline "$baseline" --bin seqvend
cp target/baseline-target/release/seqvend target/seqvend-baseline
python3 loadtest/before_after.py target/seqvend-baseline "$(git rev-parse --short "$baseline")"
