#!/usr/bin/env bash
# seqvend-client's warm-cache throughput against a running seqvend: the client_bench example
# for 1, 2 and 8 threads, one line of figures each (ids/s per thread, hit rate, waits,
# service calls, duplicates) and the per-id latency percentiles.
#   SEQVEND_URL=http://127.0.0.1:8080 SEQVEND_TOKEN=<lease token> \
#   SEQVEND_ADMIN_TOKEN=<admin token> loadtest/client.sh
# With SEQVEND_ADMIN_TOKEN, a fresh sequence is created; without it, SEQUENCE must exist.
# WARM values (default 20,000,000) are leased before each run's clock starts, and a run ends
# after RUN_SECONDS (default 3) or when that warm cache runs dry, so it measures the cache,
# not the service (one sequence's leases bring about 1.4 M values/s on a 2-core machine:
# warming takes about 15 s a run). RATE (ids/s across threads, default 0: as fast as possible) is passed on.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

: "${SEQVEND_URL:?set SEQVEND_URL to a running seqvend}"
: "${SEQVEND_TOKEN:?set SEQVEND_TOKEN to a token with a lease scope (a bootstrap vend token has lease:*)}"
RUN_SECONDS=${RUN_SECONDS:-3}
WARM=${WARM:-20000000}
RATE=${RATE:-0}
SEQUENCE=${SEQUENCE:-client-bench-$(date +%s)}

if [ -n "${SEQVEND_ADMIN_TOKEN:-}" ]; then
    log "creating sequence $SEQUENCE"
    curl -sf -H "Authorization: Bearer $SEQVEND_ADMIN_TOKEN" -H 'content-type: application/json' \
        "$SEQVEND_URL/sequences" \
        -d "{\"name\": \"$SEQUENCE\", \"min\": 1, \"max\": 9000000000000000000}" >/dev/null
fi

cargo build --release --quiet -p seqvend-client --example client_bench
for threads in 1 2 8; do
    log "THREADS=$threads, up to ${RUN_SECONDS}s, WARM=$WARM, RATE=$RATE"
    out=$(env SEQVEND_URL="$SEQVEND_URL" SEQVEND_TOKEN="$SEQVEND_TOKEN" SEQUENCE="$SEQUENCE" \
        THREADS="$threads" SECONDS="$RUN_SECONDS" RATE="$RATE" WARM="$WARM" \
        target/release/examples/client_bench)
    echo "threads=$threads $(grep '^latency_ns_per_id' <<<"$out" | cut -d' ' -f2-5)"
    echo "threads=$threads $(tail -n 1 <<<"$out")"
done
