//! One application process using the client, for seqvend's fault suite (and for watching the
//! client by hand): takes values of SEQUENCE at RATE ids/s (default 1000) through the client's
//! cache and appends one line per value, `<unix ms> <value>`, to OUT, until SIGTERM. Errors
//! (the service down with the cache empty, the sequence retired, …) are counted, not fatal:
//! the process keeps asking, as an application would.
//!
//! Environment: SEQVEND_URL, SEQVEND_TOKEN (a token with a `lease` scope, e.g. a bootstrap vend token), SEQUENCE, OUT, RATE.

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use seqvend_client::Client;
use tokio::signal::unix::{signal, SignalKind};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("set {name}"))
}

#[tokio::main]
async fn main() {
    let rate: f64 = std::env::var("RATE").map_or(1000.0, |r| r.parse().expect("RATE"));
    let client = Client::builder(env("SEQVEND_URL"), env("SEQVEND_TOKEN"))
        .build()
        .expect("client built");
    let sequence = client.sequence(&env("SEQUENCE"));
    let out = std::fs::File::create(env("OUT")).expect("OUT created");
    let mut out = std::io::BufWriter::new(out);
    let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate.max(1.0)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut errors = 0u64;
    loop {
        tokio::select! {
            _ = terminate.recv() => break,
            _ = tick.tick() => {}
        }
        match sequence.next().await {
            Ok(value) => {
                let at = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_millis();
                writeln!(out, "{at} {value}").expect("written");
            }
            Err(_) => errors += 1,
        }
    }
    out.flush().expect("flushed");
    eprintln!("errors={errors} metrics={:?}", client.metrics());
}
