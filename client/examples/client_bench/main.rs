//! Ids per second through one client, from THREADS threads taking values of one sequence.
//!
//! Environment: SEQVEND_URL, SEQVEND_TOKEN (a token with a `lease` scope, e.g. a bootstrap vend token), SEQUENCE (which must exist),
//! THREADS (1), SECONDS (10), RATE (ids/s across all threads; 0, the default, is as fast as
//! possible), WARM (values to lease before the clock starts; 0), MAX_CACHED (the client's
//! cap on values held; its default if unset), GROWTH (`adaptive`, the default, or `fixed`: the
//! rule of earlier versions), MAX_LEASE (the most one lease asks for; its default if unset).
//! Every value is recorded in a per-thread bitmap,
//! so duplicates (within and across threads) are counted exactly.
//!
//! With WARM set, the run measures the warm cache: it ends after SECONDS, or as soon as a
//! thread finds the cache empty, whichever comes first (so it never waits).
//!
//! The last line printed is
//! `ids=<n> ids_per_second_per_thread=<x> hit_rate=<0..1> waits=<n> service_calls=<n> duplicates=<n>`
//! for the measured seconds only (leases made while warming are reported above it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use seqvend_client::{Client, Error, Growth, Metrics, Sequence};

mod record;

use record::{duplicates, Latencies, Seen};

struct Config {
    url: String,
    token: String,
    sequence: String,
    threads: usize,
    seconds: f64,
    rate: f64,
    warm: u64,
    max_cached: Option<u64>,
    max_lease: Option<u64>,
    growth: Growth,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a valid value")),
        Err(_) => default,
    }
}

fn required(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("set {name}"))
}

impl Config {
    fn from_env() -> Self {
        Self {
            url: required("SEQVEND_URL"),
            token: required("SEQVEND_TOKEN"),
            sequence: required("SEQUENCE"),
            threads: env_or("THREADS", 1usize).max(1),
            seconds: env_or("SECONDS", 10.0),
            rate: env_or("RATE", 0.0),
            warm: env_or("WARM", 0u64),
            max_cached: std::env::var("MAX_CACHED").ok().map(|v| v.parse().unwrap()),
            max_lease: std::env::var("MAX_LEASE").ok().map(|v| v.parse().unwrap()),
            growth: match std::env::var("GROWTH").as_deref() {
                Ok("fixed") => Growth::Fixed,
                Ok("adaptive") | Err(_) => Growth::Adaptive,
                Ok(other) => panic!("GROWTH={other:?} is neither adaptive nor fixed"),
            },
        }
    }
}

/// What one thread did.
struct Outcome {
    taken: u64,
    errors: u64,
    seen: Seen,
    latencies: Latencies,
}

fn main() {
    let config = Config::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (client, sequence, first) = runtime.block_on(async {
        let mut builder = Client::builder(&config.url, &config.token).growth(config.growth);
        if let Some(values) = config.max_cached {
            builder = builder.max_cached(values);
        }
        if let Some(values) = config.max_lease {
            builder = builder.max_lease(values);
        }
        let client = builder.build().expect("client built");
        let sequence = client.sequence(&config.sequence);
        let first = sequence.next().await.expect("a first value");
        if config.warm > 0 {
            sequence.prefetch(config.warm).await.expect("cache warmed");
        }
        println!("first value {first}; warmed with {:?}", client.metrics());
        (client, sequence, first)
    });

    let before = client.metrics();
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let outcomes: Vec<Outcome> = std::thread::scope(|scope| {
        let takers: Vec<_> = (0..config.threads)
            .map(|_| {
                let sequence = sequence.clone();
                let (runtime, stop, config) = (runtime.handle(), &stop, &config);
                scope.spawn(move || take(&sequence, runtime, stop, config, first))
            })
            .collect();
        let deadline = started + Duration::from_secs_f64(config.seconds);
        while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::Relaxed);
        takers.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    report(&config, &outcomes, elapsed, client.metrics(), before);
}

/// Takes values until told to stop: from the cache, and waiting (`next`) only when empty.
fn take(
    sequence: &Sequence,
    runtime: &tokio::runtime::Handle,
    stop: &AtomicBool,
    config: &Config,
    first: i64,
) -> Outcome {
    let mut outcome = Outcome {
        taken: 0,
        errors: 0,
        seen: Seen::new(first),
        latencies: Latencies::default(),
    };
    let per_thread = config.rate / config.threads as f64;
    let started = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let batch = if per_thread > 0.0 {
            let due = (started.elapsed().as_secs_f64() * per_thread) as u64;
            if due <= outcome.taken {
                std::thread::sleep(Duration::from_micros(200));
                continue;
            }
            // At most a batch at a time behind, so a run held back by its leases still ends
            // when told to.
            (due - outcome.taken).min(4096)
        } else {
            4096
        };
        for _ in 0..batch {
            let timed = outcome.latencies.due();
            let value = match sequence.try_next() {
                Ok(value) => value,
                Err(Error::Empty) if config.warm > 0 => {
                    if !stop.swap(true, Ordering::Relaxed) {
                        eprintln!("the warm cache ran dry after {:?}", started.elapsed());
                    }
                    break;
                }
                Err(Error::Empty | Error::Unavailable { .. } | Error::Transport(_)) => {
                    match runtime.block_on(sequence.next()) {
                        Ok(value) => value,
                        Err(error) => {
                            outcome.errors += 1;
                            eprintln!("next: {error}");
                            continue;
                        }
                    }
                }
                Err(error) => panic!("try_next: {error}"),
            };
            if let Some(since) = timed {
                outcome.latencies.record(since);
            }
            outcome.seen.insert(value);
            outcome.taken += 1;
        }
    }
    outcome
}

fn report(config: &Config, outcomes: &[Outcome], elapsed: f64, after: Metrics, before: Metrics) {
    let ids: u64 = outcomes.iter().map(|o| o.taken).sum();
    let errors: u64 = outcomes.iter().map(|o| o.errors).sum();
    let seen: Vec<&Seen> = outcomes.iter().map(|o| &o.seen).collect();
    let mut latencies = Latencies::default();
    for outcome in outcomes {
        latencies.merge(&outcome.latencies);
    }
    let hits = after.hits - before.hits;
    println!(
        "threads={} seconds={elapsed:.2} rate={} warm={} errors={errors}",
        config.threads, config.rate, config.warm
    );
    println!("{}", latencies.summary());
    println!("client metrics after the run: {after:?}");
    println!(
        "ids={ids} ids_per_second_per_thread={:.0} hit_rate={:.4} waits={} service_calls={} duplicates={}",
        ids as f64 / elapsed / config.threads as f64,
        if ids == 0 { 0.0 } else { hits as f64 / ids as f64 },
        after.waits - before.waits,
        after.service_calls - before.service_calls,
        duplicates(&seen),
    );
}
