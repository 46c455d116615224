//! The history checker (Jepsen-style): real seqvend instances on a real PostgreSQL, concurrent
//! clients of every kind recording each call and answer, and a hostile operator injecting
//! faults at random — in phases that alternate a narrow focus with chaos. At the end the whole
//! history is checked against seqvend's promises: no value twice, none outside a registry
//! range, none another application drew, every replay equal to its first answer and given
//! only to the token that sent its key (instances run mid-rotation of their vend tokens),
//! nothing of a retired sequence after `DELETE` answered, Snowflake ids unique and increasing
//! per worker, counter values unique per key, and no 500.
//!
//! A seed fixes the schedule: it is printed first and in every failure, and
//! `SEQVEND_HISTORY_SEED=<n>` replays it; `SEQVEND_HISTORY_SECONDS` sets how long a seed runs
//! (30 s by default; `loadtest/history.sh` runs 600); `SEQVEND_HISTORY_FOCUS=rewind` (or
//! `keyed`, `rotation`, `retire`, `chaos`) runs only phases of that kind. Without a seed, CI runs a fixed seed and a
//! random one.

mod check;
mod clients;
#[path = "../common/mod.rs"]
mod common;
// The fault suite's harness: its clusters and processes, of which this suite needs a part.
#[allow(dead_code)]
#[path = "../faults/harness.rs"]
mod harness;
mod history;
mod operator;
mod report;
mod schedule;
mod world;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clients::Ctx;
use history::History;
use operator::Operator;
use world::World;

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_clients_and_a_hostile_operator_never_see_a_promise_broken() {
    let seeds = match schedule::seed_from_env() {
        Some(seed) => vec![seed],
        None => vec![schedule::FIXED_SEED, schedule::random_seed()],
    };
    let mut failures = Vec::new();
    for seed in seeds {
        let (violations, report) = run(seed, schedule::run_length()).await;
        println!("{report}");
        if violations > 0 {
            failures.push(format!(
                "seed {seed}: {violations} violations (replay: SEQVEND_HISTORY_SEED={seed})\n{report}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs one seed's schedule for `total`; returns the number of violations and the report.
async fn run(seed: u64, total: Duration) -> (usize, String) {
    println!("history seed {seed}: {total:?} (replay: SEQVEND_HISTORY_SEED={seed})");
    let history = Arc::new(History::new(seed));
    let board = Arc::new(clients::Board::default());
    let world = Arc::new(World::start("history").await);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(32)
        .build()
        .unwrap();
    for (n, phase) in schedule::plan(seed, total, schedule::focus_from_env())
        .into_iter()
        .enumerate()
    {
        let stop = Arc::new(AtomicBool::new(false));
        let ctx = Ctx {
            history: history.clone(),
            world: world.clone(),
            stop: stop.clone(),
            http: http.clone(),
            board: board.clone(),
        };
        let from = history.now();
        let mut clients = clients::start(phase.focus, n as u64, &ctx);
        let operator = tokio::spawn(Operator::new(ctx, n as u64).run(phase.focus));
        // The schedule's pacing: the phase runs this long.
        tokio::time::sleep(phase.length).await;
        stop.store(true, Ordering::Relaxed);
        let ended = tokio::time::timeout(Duration::from_secs(90), async {
            operator.await.expect("the operator");
            while let Some(client) = clients.join_next().await {
                client.expect("a client task");
            }
        })
        .await;
        assert!(
            ended.is_ok(),
            "seed {seed}: phase {n} did not end within 90 s"
        );
        let name = phase.focus.name().to_owned();
        history
            .phases
            .lock()
            .unwrap()
            .push((name, from, history.now()));
    }
    let db = world.pg.connect().await;
    let registry = check::read_registry(&db).await;
    let (violations, report) = check::check(&history, &registry);
    (violations.total(), report)
}
