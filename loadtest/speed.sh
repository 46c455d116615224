#!/usr/bin/env bash
# Every row of the speed table (strict, cached and keyed vends beside the no-op route, batches,
# block leases, the thick client from a cold start, k6 latency at a constant rate, many
# sequences, counters), this build beside the build of a baseline commit in the same run,
# rounds interleaved, medians of 3; and the floor of strict vends (examples/floor.rs), built
# from this checkout, beside each build. A quiet run writes the "speed" section of
# loadtest/RESULTS.md.
#   loadtest/speed.sh 52c83cf                   # about 20 minutes with a baseline
#   loadtest/speed.sh                           # this build alone (each row still beside its
#                                               # own same-run baseline route)
#   SPEED_RECORD=1 loadtest/speed.sh 52c83cf    # a noisy run too replaces the table of
#                                               # record (otherwise: target/loadtest/)
#   SPEED_QUICK=1 loadtest/speed.sh 52c83cf     # short runs to try it out; writes
#                                               # target/loadtest/speed-quick.md instead
# SPEED_ROUNDS (3), WRK_SECONDS (10) and LOADTEST_PORT (18080; the baseline takes the next
# port; the floor servers 10 above each) change the run.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"

ensure_load_tools
log "building this build (release)"
SQLX_OFFLINE=true cargo build --release --quiet --bin seqvend -p seqvend -p seqvend-client --example client_bench --example floor

if [ $# -eq 0 ]; then exec python3 loadtest/speed.py; fi
baseline=$(git rev-parse --short "$1")
log "building the baseline $baseline (release, in target/baseline-target)"
# A baseline older than the client's benchmark has none: its row says so.
rm -f target/client_bench-baseline
if build_baseline "$baseline" --bin seqvend -p seqvend -p seqvend-client --example client_bench; then
    cp target/baseline-target/release/examples/client_bench target/client_bench-baseline
else
    build_baseline "$baseline" --bin seqvend
fi
cp target/baseline-target/release/seqvend target/seqvend-baseline
python3 loadtest/speed.py target/seqvend-baseline target/client_bench-baseline "$baseline"
