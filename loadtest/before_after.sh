#!/usr/bin/env bash
# Strict and keyed POST next, this build against the build of a baseline commit, in one run
# with rounds interleaved. Writes its section of docs/performance.md.
#   loadtest/before_after.sh <baseline commit>
#   WRK_SECONDS=5 WRK_ROUNDS=3 loadtest/before_after.sh HEAD~5   # a quick try
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

baseline=${1:?usage: loadtest/before_after.sh <baseline commit>}
ensure_postgres
command -v wrk >/dev/null || apt_install wrk
SQLX_OFFLINE=true cargo build --release --quiet --bin seqvend

# The baseline is built from its own checkout, with a target directory of its own kept under
# target/ so that a second run builds nothing.
source_dir=target/baseline-src
rm -rf "$source_dir"
git worktree prune
git worktree add --quiet --detach "$source_dir" "$baseline"
trap 'git worktree remove --force "$source_dir"' EXIT
(cd "$source_dir" && SQLX_OFFLINE=true CARGO_TARGET_DIR=../baseline-target \
    cargo build --release --quiet --bin seqvend)
cp target/baseline-target/release/seqvend target/seqvend-baseline
python3 loadtest/before_after.py target/seqvend-baseline "$(git rev-parse --short "$baseline")"
