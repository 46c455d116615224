//! The coalescer under load: per-sequence order, rollover and exhaustion inside shared
//! statements, bounded queues and deadlines. Real PostgreSQL throughout.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use reqwest::StatusCode;
use seqvend::domain::SequenceName;
use seqvend::http::error::ApiError;
use seqvend::metrics::Metrics;
use seqvend::settings::VendSettings;
use seqvend::vend::{Outcome, Pending, VendError, Vender};
use serde_json::json;
use tokio::task::JoinSet;

use crate::helpers::*;

/// A vender of its own on `db`: one lane per connection of its `pool_size`.
fn vender(db: &TestDb, pool_size: usize, vend: VendSettings, metrics: Arc<Metrics>) -> Vender {
    let mut settings = test_settings().database;
    settings.vend_pool_size = pool_size;
    let pool = seqvend::db::vend_pool(&db.url, &settings).unwrap();
    Vender::start(pool, metrics, vend)
}

fn name(raw: &str) -> SequenceName {
    SequenceName::parse(raw).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_taken_first_get_the_earlier_values_across_rollover_and_exhaustion() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("up", 1, 100).await;
    app.add_range_ok("up", 1000, 1149).await;
    app.create_body_ok(json!({"name": "down", "min": 1, "max": 120, "increment": -1}))
        .await;
    app.add_range_ok("down", 500, 579).await;
    let vender = vender(
        &db,
        2,
        VendSettings {
            batch_max_requests: 64,
            ..patient_vend_settings()
        },
        Arc::new(Metrics::new()),
    );

    // 600 requests submitted in one known order, interleaving two sequences and batch sizes,
    // far more than the 450 values there are.
    let mut submitted = Vec::new();
    for i in 0..600u32 {
        let sequence = if i % 3 == 0 { "down" } else { "up" };
        let count = 1 + (i / 3) % 3;
        submitted.push((
            sequence,
            count,
            vender.submit(name(sequence), count).unwrap(),
        ));
    }
    let mut by_sequence: HashMap<&str, Vec<Outcome>> = HashMap::new();
    for (sequence, count, pending) in submitted {
        let outcome = pending.wait().await.unwrap();
        if let Outcome::Values(values) = &outcome {
            assert!(values.len() <= count as usize);
        }
        by_sequence.entry(sequence).or_default().push(outcome);
    }
    let expected_up: Vec<i64> = (1..=100).chain(1000..=1149).collect();
    let expected_down: Vec<i64> = (1..=120).rev().chain((500..=579).rev()).collect();
    for (sequence, expected) in [("up", expected_up), ("down", expected_down)] {
        let outcomes = &by_sequence[sequence];
        let served = outcomes
            .iter()
            .take_while(|o| matches!(o, Outcome::Values(_)))
            .count();
        // More was asked than there is: some requests must have found it exhausted.
        assert!(served < outcomes.len(), "{sequence}: never exhausted");
        assert!(
            outcomes[served..].iter().all(|o| *o == Outcome::Exhausted),
            "{sequence}: once exhausted, always exhausted"
        );
        let values: Vec<i64> = outcomes[..served]
            .iter()
            .flat_map(|o| match o {
                Outcome::Values(v) => v.clone(),
                _ => unreachable!(),
            })
            .collect();
        // Every value, none lost, in vend order: the order the requests were taken in.
        assert_eq!(values, expected, "{sequence}");
    }
    assert_eq!(app.get("up").await.body["status"], "exhausted");
}

#[tokio::test(flavor = "multi_thread")]
async fn many_clients_over_many_sequences_through_the_coalescer_never_see_a_value_twice() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.vend.batch_max_requests = 32;
    let app = Arc::new(spawn_app_on(&db, settings).await);
    let mut ranges: HashMap<String, Vec<(i64, i64)>> = HashMap::new();
    for s in 0..12i64 {
        let name = format!("load-{s:02}");
        let base = s * 100_000;
        app.create_ok(&name, base, base + 149).await;
        app.add_range_ok(&name, base + 1000, base + 1099).await;
        app.add_range_ok(&name, base + 5000, base + 5049).await;
        ranges.insert(
            name,
            vec![
                (base, base + 149),
                (base + 1000, base + 1099),
                (base + 5000, base + 5049),
            ],
        );
    }
    let ranges = Arc::new(ranges);
    let mut clients = JoinSet::new();
    for _ in 0..48 {
        let (app, ranges) = (app.clone(), ranges.clone());
        clients.spawn(async move {
            let mut seen: HashMap<String, Vec<i64>> = HashMap::new();
            let mut live: Vec<String> = ranges.keys().cloned().collect();
            while !live.is_empty() {
                let (pick, count) = {
                    let mut rng = rand::thread_rng();
                    (rng.gen_range(0..live.len()), rng.gen_range(0..4u32))
                };
                let name = live[pick].clone();
                let reply = if count == 0 {
                    app.next(&name).await
                } else {
                    app.next_batch(&name, count).await
                };
                match reply.status {
                    StatusCode::OK => {
                        let values = carried_values(&reply);
                        let mine = seen.entry(name.clone()).or_default();
                        // One client's requests are sequential: each gets later values.
                        assert!(
                            mine.last().is_none_or(|last| values[0] > *last),
                            "{name}: {values:?} after {mine:?}"
                        );
                        mine.extend(values);
                    }
                    StatusCode::CONFLICT => {
                        assert_eq!(reply.code(), "sequence_exhausted");
                        live.remove(pick);
                    }
                    other => panic!("{other}: {}", reply.body),
                }
            }
            seen
        });
    }
    let mut all: HashMap<String, Vec<i64>> = HashMap::new();
    while let Some(seen) = clients.join_next().await {
        for (name, values) in seen.unwrap() {
            all.entry(name).or_default().extend(values);
        }
    }
    for (name, values) in &all {
        let unique = assert_unique(values);
        let inside = |v: &i64| ranges[name].iter().any(|(lo, hi)| (lo..=hi).contains(&v));
        assert!(
            values.iter().all(inside),
            "{name}: a value outside its ranges"
        );
        assert_eq!(
            unique.len(),
            300,
            "{name}: all 300 values vended, none lost"
        );
    }
    assert_eq!(all.len(), 12);
}

/// Holds a range's lock from outside, so that the vend statement drawing from it
/// waits: the lane stays busy for as long as the test wants.
async fn block_range(db: &TestDb) -> tokio_postgres::Client {
    let blocker = db.connect().await;
    blocker
        .batch_execute("SELECT pg_advisory_lock(1398166087, (SELECT min(id) FROM seqvend.ranges))")
        .await
        .unwrap();
    blocker
}

/// Lets the statement held by `block_range` go on.
async fn release(blocker: &tokio_postgres::Client) {
    blocker
        .batch_execute("SELECT pg_advisory_unlock_all()")
        .await
        .unwrap();
}

/// "gate": created first, so its range is range 1, the one `block_range` holds.
const GATE: (&str, i64, i64) = ("gate", 1, 1000);

/// A fresh database with `sequences` created in order, the instance that created them, and a
/// vender of its own (`lanes` lanes, `vend` settings) whose metrics the test reads.
struct Bench {
    db: TestDb,
    _app: TestApp,
    vender: Vender,
    metrics: Arc<Metrics>,
}

impl Bench {
    async fn start(sequences: &[(&str, i64, i64)], lanes: usize, vend: VendSettings) -> Self {
        let db = TestDb::shared().await;
        let app = spawn_app_on(&db, test_settings()).await;
        for (sequence, min, max) in sequences {
            app.create_ok(sequence, *min, *max).await;
        }
        let metrics = Arc::new(Metrics::new());
        let vender = vender(&db, lanes, vend, metrics.clone());
        Self {
            db,
            _app: app,
            vender,
            metrics,
        }
    }

    fn submit(&self, sequence: &str, count: u32) -> Pending {
        self.vender.submit(name(sequence), count).unwrap()
    }

    /// Keeps the lane of `sequence` (whose range is range 1) busy with a request for one of
    /// its values until `release`: requests submitted meanwhile to that lane queue, and then
    /// share the next statement.
    async fn hold_the_lane(&self, sequence: &str) -> (tokio_postgres::Client, Pending) {
        let blocker = block_range(&self.db).await;
        let held = self.submit(sequence, 1);
        wait_until_a_vend_waits_on_the_lock(&self.db).await;
        (blocker, held)
    }

    /// Submits `requests` (a sequence, a count) while the gate's statement holds the one lane,
    /// then lets it go: the gate's one value, then each request's outcome in order.
    async fn queue_behind_the_gate(&self, requests: &[(&str, u32)]) -> Vec<Outcome> {
        let (blocker, gate) = self.hold_the_lane(GATE.0).await;
        let queued: Vec<_> = requests
            .iter()
            .map(|(sequence, count)| self.submit(sequence, *count))
            .collect();
        release(&blocker).await;
        assert_eq!(gate.wait().await.unwrap(), Outcome::Values(vec![1]));
        let mut outcomes = Vec::new();
        for pending in queued {
            outcomes.push(pending.wait().await.unwrap());
        }
        outcomes
    }

    /// How many vend statements ran.
    fn statements(&self) -> u64 {
        self.metrics.vend_batch_requests.get_sample_count()
    }

    /// How many requests the vend statements served, all told.
    fn requests_in_statements(&self) -> f64 {
        self.metrics.vend_batch_requests.get_sample_sum()
    }
}

async fn wait_until_a_vend_waits_on_the_lock(db: &TestDb) {
    let observer = db.connect().await;
    until_blocked(&observer, 1, Blocked::On("advisory"), "%seqvend.vend%").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_queue_answers_503_at_once_and_the_queued_requests_still_complete() {
    let vend = VendSettings {
        queue_bound: 4,
        deadline: Duration::from_secs(30),
        ..Default::default()
    };
    let bench = Bench::start(&[("q", 1, 1000)], 1, vend).await;
    let (blocker, in_flight) = bench.hold_the_lane("q").await;
    let queued: Vec<_> = (0..4).map(|_| bench.submit("q", 1)).collect();
    let started = Instant::now();
    let refused = bench
        .vender
        .submit(name("q"), 1)
        .err()
        .expect("the fifth queued request is refused");
    assert!(matches!(refused, VendError::AtCapacity), "{refused:?}");
    let answered = ApiError::from(refused);
    assert!(matches!(answered, ApiError::Unavailable(_)), "{answered:?}");
    assert!(started.elapsed() < Duration::from_millis(100));
    release(&blocker).await;
    assert_eq!(in_flight.wait().await.unwrap(), Outcome::Values(vec![1]));
    let mut values = Vec::new();
    for pending in queued {
        match pending.wait().await.unwrap() {
            Outcome::Values(v) => values.extend(v),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(values, [2, 3, 4, 5]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_vend_the_database_cannot_answer_in_time_is_503_after_the_deadline() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.vend.deadline = Duration::from_millis(300);
    let app = spawn_app_on(&db, settings).await;
    app.create_ok("slow", 1, 1000).await;
    let blocker = block_range(&db).await;
    let started = Instant::now();
    let reply = app.next("slow").await;
    reply.assert_error(503, "unavailable");
    assert!(reply.headers.contains_key("retry-after"));
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_millis(1500),
        "{waited:?}"
    );
    release(&blocker).await;
    // The abandoned request's value was drawn for nobody (a gap), never handed out twice.
    // Read by an instance with the usual patience: on a loaded machine, this one's 300 ms
    // could run out again.
    let patient = spawn_app_on(&db, test_settings()).await;
    let next = patient.next_value("slow").await;
    assert!(next == 1 || next == 2, "{next}");
}

/// A statement the server never finishes (here it waits on a lock; a frozen server is the
/// same to seqvend) is abandoned at seqvend's own deadline, with its connection, so the lane
/// serves again at once. `statement_timeout` is set out of reach: only seqvend's clock acts.
#[tokio::test(flavor = "multi_thread")]
async fn a_statement_past_its_deadline_gives_up_its_connection_and_the_lane_serves_again() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.database.statement_timeout = Duration::from_secs(600);
    settings.database.vend_pool_size = 1; // one lane, one connection
    settings.vend.deadline = Duration::from_secs(600);
    settings.vend.statement_deadline = Duration::from_millis(500);
    let app = spawn_app_on(&db, settings).await;
    app.create_ok("stuck", 1, 1000).await; // range 1: the one `block_range` holds
    app.create_ok("free", 5000, 6000).await;
    let blocker = block_range(&db).await;

    let reply = tokio::time::timeout(Duration::from_secs(60), app.next("stuck"))
        .await
        .expect("answered at the statement deadline, long before the request's");
    reply.assert_error(503, "unavailable");
    // The abandoned statement still waits in the server; the lane has a new connection.
    wait_until_a_vend_waits_on_the_lock(&db).await;
    assert_eq!(app.next_value("free").await, 5000);

    release(&blocker).await;
    // The abandoned statement's value went to nobody (a gap), never handed out twice.
    let next = app.next_value("stuck").await;
    assert!(next == 1 || next == 2, "{next}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_caller_that_goes_away_leaves_the_queue() {
    let bench = Bench::start(&[("gone", 1, 1000)], 1, patient_vend_settings()).await;
    let queue_depth = || bench.metrics.vend_queue_depth.get();
    let pending = bench.submit("gone", 1);
    assert_eq!(queue_depth(), 1);
    drop(pending); // as a dropped HTTP request does
    assert_eq!(queue_depth(), 0);
    bench.vender.vend(name("gone"), 1).await.unwrap();
    assert_eq!(queue_depth(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sequence_that_fails_in_a_shared_statement_fails_alone() {
    let sequences = [GATE, ("broken", 2000, 3000), ("fine", 5000, 6000)];
    let bench = Bench::start(&sequences, 1, patient_vend_settings()).await;
    bench
        .db
        .connect()
        .await
        .batch_execute(
            "DROP SEQUENCE seqvend_ranges.r2; \
             ALTER SEQUENCE seqvend_ranges.r3 RESTART WITH 5005",
        )
        .await
        .unwrap();

    // One lane: while the gate's statement waits, the others queue and then share one.
    let outcomes = bench
        .queue_behind_the_gate(&[("broken", 2), ("fine", 2), ("fine", 1)])
        .await;
    match &outcomes[0] {
        Outcome::Failed(reason) => assert!(reason.contains("missing"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        outcomes[1..],
        [
            Outcome::Values(vec![5005, 5006]),
            Outcome::Values(vec![5007])
        ]
    );
    assert_eq!(
        bench.statements(),
        2,
        "the gate's statement, then one for the three others"
    );
    assert_eq!(bench.requests_in_statements(), 4.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_coalescing_each_request_is_its_own_statement_and_the_queue_is_bounded() {
    let vend = VendSettings {
        coalesce: false,
        queue_bound: 2,
        ..patient_vend_settings()
    };
    let bench = Bench::start(&[GATE, ("direct", 100, 1000)], 2, vend).await;
    let (blocker, held) = bench.hold_the_lane(GATE.0).await;
    let second = bench.submit("direct", 2);
    let refused = bench
        .vender
        .submit(name("direct"), 1)
        .err()
        .expect("the queue is full");
    assert!(matches!(refused, VendError::AtCapacity), "{refused:?}");
    assert_eq!(
        second.wait().await.unwrap(),
        Outcome::Values(vec![100, 101])
    );
    release(&blocker).await;
    assert_eq!(held.wait().await.unwrap(), Outcome::Values(vec![1]));
    assert_eq!(
        bench.vender.vend(name("direct"), 1).await.unwrap(),
        Outcome::Values(vec![102])
    );
    assert_eq!(
        bench.requests_in_statements(),
        bench.statements() as f64,
        "one request per statement"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_that_would_overfill_a_statement_waits_for_the_next_one() {
    let vend = VendSettings {
        batch_max_values: 5,
        ..patient_vend_settings()
    };
    let bench = Bench::start(&[GATE, ("big", 100, 1000)], 1, vend).await;
    // 3 + 3 > 5: the second request waits for the next statement.
    let outcomes = bench
        .queue_behind_the_gate(&[("big", 3), ("big", 3), ("big", 1)])
        .await;
    assert_eq!(
        outcomes,
        [
            Outcome::Values(vec![100, 101, 102]),
            Outcome::Values(vec![103, 104, 105]),
            Outcome::Values(vec![106]),
        ]
    );
    assert_eq!(
        bench.statements(),
        3,
        "the gate; the first request; the carried one with the last"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_value_is_drawn_for_a_caller_that_went_away_before_its_statement() {
    let bench = Bench::start(&[GATE, ("kept", 100, 1000)], 1, patient_vend_settings()).await;
    let (blocker, gate) = bench.hold_the_lane(GATE.0).await;
    let gone = bench.submit("kept", 5);
    let stays = bench.submit("kept", 1);
    drop(gone); // as a dropped HTTP request does
    release(&blocker).await;
    assert_eq!(gate.wait().await.unwrap(), Outcome::Values(vec![1]));
    assert_eq!(
        stays.wait().await.unwrap(),
        Outcome::Values(vec![100]),
        "nothing was drawn for the caller that left"
    );
}

/// The server's own `statement_timeout` (seqvend's session setting) cancels a statement stuck
/// on a lock; seqvend's clocks are set out of reach so only the server acts.
#[tokio::test(flavor = "multi_thread")]
async fn the_servers_statement_timeout_cancels_a_stuck_vend() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.database.statement_timeout = Duration::from_millis(300);
    settings.vend.deadline = Duration::from_secs(600);
    settings.vend.statement_deadline = Duration::from_secs(600);
    let app = spawn_app_on(&db, settings).await;
    app.create_ok("held", 1, 1000).await;
    let blocker = block_range(&db).await;
    let reply = tokio::time::timeout(Duration::from_secs(60), app.next("held"))
        .await
        .expect("answered once the server cancelled the statement");
    reply.assert_error(503, "unavailable");
    let observer = db.connect().await;
    let waiting = sessions_blocked(&observer, Blocked::On("advisory"), "%seqvend.vend%").await;
    assert_eq!(waiting, 0, "the statement was cancelled, not left waiting");
    release(&blocker).await;
    assert_eq!(
        app.next_value("held").await,
        1,
        "a cancelled draw drew nothing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_statement_takes_at_most_batch_max_requests_and_the_rest_wait_for_the_next() {
    let vend = VendSettings {
        batch_max_requests: 2,
        ..patient_vend_settings()
    };
    let bench = Bench::start(&[GATE, ("many", 100, 1000)], 1, vend).await;
    let outcomes = bench.queue_behind_the_gate(&[("many", 1); 3]).await;
    assert_eq!(outcomes, [100, 101, 102].map(|v| Outcome::Values(vec![v])));
    assert_eq!(bench.statements(), 3, "the gate; two requests; the third");
    assert_eq!(bench.requests_in_statements(), 4.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_that_exactly_fill_a_statement_share_it() {
    let vend = VendSettings {
        batch_max_values: 5,
        ..patient_vend_settings()
    };
    let bench = Bench::start(&[GATE, ("big", 100, 1000)], 1, vend).await;
    // 3 + 2 = 5: both fit in one statement.
    let outcomes = bench.queue_behind_the_gate(&[("big", 3), ("big", 2)]).await;
    assert_eq!(
        outcomes,
        [
            Outcome::Values(vec![100, 101, 102]),
            Outcome::Values(vec![103, 104]),
        ]
    );
    assert_eq!(
        bench.statements(),
        2,
        "the gate; then both requests in one statement"
    );
}

/// Lanes are per sequence: a sequence whose statement waits holds up only the sequences that
/// share its lane, never the others.
#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_statement_holds_up_only_its_own_lane() {
    let others: Vec<String> = (0..8).map(|i| format!("other-{i}")).collect();
    let mut sequences = vec![GATE];
    for (i, other) in (1..).zip(&others) {
        sequences.push((other.as_str(), i * 1000, i * 1000 + 99));
    }
    let bench = Bench::start(&sequences, 4, patient_vend_settings()).await;
    let (blocker, gate) = bench.hold_the_lane(GATE.0).await;
    // Eight sequences over four lanes: some share the gate's lane and wait with it, the
    // others are served meanwhile.
    let mut vends = JoinSet::new();
    for other in &others {
        let (vender, other) = (bench.vender.clone(), name(other));
        vends.spawn(async move { vender.vend(other, 1).await });
    }
    let first = tokio::time::timeout(Duration::from_secs(20), vends.join_next())
        .await
        .expect("a sequence on another lane is served while the gate's statement waits");
    assert!(
        matches!(first.unwrap().unwrap(), Ok(Outcome::Values(_))),
        "served"
    );
    release(&blocker).await;
    assert_eq!(gate.wait().await.unwrap(), Outcome::Values(vec![1]));
    while let Some(vend) = vends.join_next().await {
        let vend = vend.unwrap();
        assert!(matches!(vend, Ok(Outcome::Values(_))), "{vend:?}");
    }
}
