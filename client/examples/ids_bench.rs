//! Snowflake ids per second through one client handle (one worker id), from THREADS threads
//! calling `next` (or `next_n(BATCH)` when BATCH > 1), beside the layout's limit of 4,096 ids
//! per millisecond per worker id; then UUIDv7s and HLC timestamps per second on one thread.
//!
//! Environment: SEQVEND_URL, SEQVEND_TOKEN (a token with a `lease` scope, e.g. a bootstrap vend token), THREADS (1), SECONDS (3),
//! BATCH (1). Every id is kept, then checked: unique across threads, increasing per thread.
//!
//! The last line printed is
//! `snowflake_ids=<n> ids_per_second=<x> of_limit=<0..1> p50_ns=<n> p99_ns=<n> p999_ns=<n>
//! errors=<n> duplicates=<n>` (latency per call, every 64th call timed, timer included).

use std::time::{Duration, Instant};

use seqvend_client::{uuidv7, Client, Hlc, Snowflakes};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name}={v:?}")))
        .unwrap_or(default)
}

fn required(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("set {name}"))
}

struct Outcome {
    ids: Vec<i64>,
    errors: u64,
    latencies: Vec<u64>,
}

fn run_thread(snowflakes: Snowflakes, until: Instant, batch: usize) -> Outcome {
    let mut outcome = Outcome {
        ids: Vec::with_capacity(16_000_000),
        errors: 0,
        latencies: Vec::new(),
    };
    let mut calls = 0u64;
    while Instant::now() < until {
        for _ in 0..256 {
            calls += 1;
            let timed = calls % 64 == 0;
            let started = timed.then(Instant::now);
            let issued = if batch == 1 {
                snowflakes.next().map(|id| outcome.ids.push(id))
            } else {
                snowflakes.next_n(batch).map(|ids| outcome.ids.extend(ids))
            };
            if let Some(started) = started {
                outcome.latencies.push(started.elapsed().as_nanos() as u64);
            }
            if issued.is_err() {
                outcome.errors += 1;
            }
        }
    }
    outcome
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

fn main() {
    let threads: usize = env_or("THREADS", 1usize).max(1);
    let seconds: f64 = env_or("SECONDS", 3.0);
    let batch: usize = env_or("BATCH", 1usize).max(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let client = runtime.block_on(async {
        Client::builder(required("SEQVEND_URL"), required("SEQVEND_TOKEN")).build()
    });
    let client = client.expect("client built");
    let snowflakes = runtime
        .block_on(client.snowflake())
        .expect("a worker id leased");
    println!("worker_id={:?}", snowflakes.worker_id());

    let started = Instant::now();
    let until = started + Duration::from_secs_f64(seconds);
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let snowflakes = snowflakes.clone();
            std::thread::spawn(move || run_thread(snowflakes, until, batch))
        })
        .collect();
    let outcomes: Vec<Outcome> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let elapsed = started.elapsed().as_secs_f64();

    let increasing = outcomes
        .iter()
        .all(|o| o.ids.windows(2).all(|w| w[0] < w[1]));
    assert!(increasing, "a thread's ids went back");
    let mut all: Vec<i64> = outcomes
        .iter()
        .flat_map(|o| o.ids.iter().copied())
        .collect();
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    let duplicates = count - all.len();
    let errors: u64 = outcomes.iter().map(|o| o.errors).sum();
    let mut latencies: Vec<u64> = outcomes.into_iter().flat_map(|o| o.latencies).collect();
    latencies.sort_unstable();
    let per_second = count as f64 / elapsed;

    let uuid_started = Instant::now();
    let mut last = uuidv7();
    for _ in 0..1_000_000 {
        let next = uuidv7();
        assert!(next > last);
        last = next;
    }
    let uuids_per_second = 1e6 / uuid_started.elapsed().as_secs_f64();
    let hlc = Hlc::new();
    let hlc_started = Instant::now();
    let mut stamp = hlc.now();
    for _ in 0..10_000_000 {
        stamp = stamp.max(hlc.now());
    }
    let stamps_per_second = 1e7 / hlc_started.elapsed().as_secs_f64();
    println!("uuidv7_per_second={uuids_per_second:.0} hlc_per_second={stamps_per_second:.0}");
    println!(
        "snowflake_ids={count} ids_per_second={per_second:.0} of_limit={:.3} p50_ns={} \
         p99_ns={} p999_ns={} errors={errors} duplicates={duplicates}",
        per_second / 4_096_000.0,
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
        percentile(&latencies, 0.999),
    );
}
