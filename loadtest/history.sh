#!/usr/bin/env bash
# The history checker (tests/history) for ten minutes with one seed: three seqvend instances,
# clients of every kind and a hostile operator, in phases that alternate a narrow focus with
# chaos; the whole history is then checked and its report printed (seed, operations, values,
# faults injected, violations). Exits non-zero on any violation.
#   loadtest/history.sh                          # a random seed, 600 s
#   SEQVEND_HISTORY_SEED=42 loadtest/history.sh  # replay a seed
#   SEQVEND_HISTORY_SECONDS=120 SEQVEND_HISTORY_FOCUS=rewind loadtest/history.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

ensure_postgres
export SQLX_OFFLINE=true
export SEQVEND_HISTORY_SECONDS="${SEQVEND_HISTORY_SECONDS:-600}"
# One seed, printed first so that a run cut short can still be replayed.
export SEQVEND_HISTORY_SEED="${SEQVEND_HISTORY_SEED:-$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')}"
log "history checker: seed $SEQVEND_HISTORY_SEED, $SEQVEND_HISTORY_SECONDS s"
exec cargo test --release --locked --test history -- --nocapture
