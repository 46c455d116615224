#!/usr/bin/env bash
# seqvend-client's own Snowflake ids against a running seqvend: the ids_bench example on one
# handle (one worker id, so at most 4,096,000 ids/s) for 1 and 2 threads calling next(), and
# 1 thread calling next_n(1000); one line of figures each, beside UUIDv7 and HLC rates.
#   SEQVEND_URL=http://127.0.0.1:8080 SEQVEND_TOKEN=<lease token> loadtest/ids_client.sh
# RUN_SECONDS (default 3) per run.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

: "${SEQVEND_URL:?set SEQVEND_URL to a running seqvend}"
: "${SEQVEND_TOKEN:?set SEQVEND_TOKEN to a token with a lease scope (a bootstrap vend token has lease:*)}"
RUN_SECONDS=${RUN_SECONDS:-3}

cargo build --release --quiet -p seqvend-client --example ids_bench
for run in "1 1" "2 1" "1 1000"; do
    read -r threads batch <<<"$run"
    log "THREADS=$threads BATCH=$batch, ${RUN_SECONDS}s"
    out=$(env SEQVEND_URL="$SEQVEND_URL" SEQVEND_TOKEN="$SEQVEND_TOKEN" THREADS="$threads" \
        BATCH="$batch" SECONDS="$RUN_SECONDS" target/release/examples/ids_bench)
    echo "threads=$threads batch=$batch $(tail -n 1 <<<"$out")"
    [ "$run" = "1 1" ] && echo "$(grep '^uuidv7_per_second' <<<"$out")"
done
