//! One application process issuing Snowflake ids with the client's own generator, for
//! seqvend's fault suite (and for watching it by hand): leases a worker id through
//! SEQVEND_URL, issues RATE ids/s (default 2000) in batches every 10 ms, and appends one line
//! per id, `<unix ms> <id>`, to OUT, until SIGTERM. Errors (the lease lapsed while the service
//! is away, no worker id, the clock) are counted, not fatal: the process keeps asking.
//!
//! Environment: SEQVEND_URL, SEQVEND_TOKEN (a token with a `lease` scope, e.g. a bootstrap vend token), OUT, RATE.

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use seqvend_client::Client;
use tokio::signal::unix::{signal, SignalKind};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("set {name}"))
}

#[tokio::main]
async fn main() {
    let rate: usize = std::env::var("RATE").map_or(2000, |r| r.parse().expect("RATE"));
    let client = Client::builder(env("SEQVEND_URL"), env("SEQVEND_TOKEN"))
        .build()
        .expect("client built");
    let snowflakes = loop {
        match client.snowflake().await {
            Ok(snowflakes) => break snowflakes,
            Err(error) => {
                eprintln!("no worker id yet: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let out = std::fs::File::create(env("OUT")).expect("OUT created");
    let mut out = std::io::BufWriter::new(out);
    let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let batch = (rate / 100).max(1);
    let (mut issued, mut errors) = (0u64, 0u64);
    loop {
        tokio::select! {
            _ = terminate.recv() => break,
            _ = tick.tick() => {}
        }
        match snowflakes.next_n(batch) {
            Ok(ids) => {
                let at = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_millis();
                for id in &ids {
                    writeln!(out, "{at} {id}").expect("written");
                }
                issued += ids.len() as u64;
            }
            Err(_) => errors += 1,
        }
    }
    out.flush().expect("flushed");
    eprintln!(
        "issued={issued} errors={errors} worker_id={:?}",
        snowflakes.worker_id()
    );
}
