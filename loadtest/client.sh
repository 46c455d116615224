#!/usr/bin/env bash
# seqvend-client from a cold start, in one command: the client_bench example on a new strict
# sequence (the client's default policy) for 10 s from its first value, 1 and 2 threads, at
# full speed and paced at 10 M ids/s per thread, under the adaptive growth (the default)
# beside the fixed rule of earlier versions, in interleaved rounds; medians of 3. Starts its
# own seqvend and PostgreSQL, and writes its section of docs/performance.md; every case also
# runs against lease_stub, a stand-in answering each lease in 2 ms, to show the client apart
# from the service: once allowing leases up to seqvend's limit (10,000,000 values), once only
# up to 100,000 (as services did before leases were drawn in constant time).
#   loadtest/client.sh
#   CLIENT_SECONDS=3 CLIENT_ROUNDS=1 loadtest/client.sh   # a quick try
# The warm cache's figures (1, 2 and 8 threads) are measured by loadtest/cache.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

ensure_postgres
SQLX_OFFLINE=true cargo build --release --quiet --bin seqvend
cargo build --release --quiet -p seqvend-client --example client_bench --example lease_stub
exec python3 loadtest/client.py
