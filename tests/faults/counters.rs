//! Counters by key under faults: two instances drawing single values and batches from a few
//! hundred counters of one family, PostgreSQL crashed mid-batch and each instance killed,
//! with new keys first drawn just before every fault, so that creating a counter races the
//! crash too. No counter hands out a value twice, nor one outside the family's bounds or off
//! its step; after recovery each counter's `drawn` covers every value its clients received,
//! and its next draw is a value none of them was given.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;
use reqwest::{Method, StatusCode};
use seqvend::local_pg::Shutdown;
use serde_json::json;
use tokio::task::JoinSet;

use crate::harness::*;

const FAMILY: &str = "orders";
const START: i64 = 1_000;
const INCREMENT: i64 = 7;
const MIN: i64 = 1;
const MAX: i64 = 1_000_000_000_000;

const LOAD: Load = Load {
    clients: 24,
    max_batch: 40,
    impatient_every: 4,
};

/// Keys drawn from the start; each fault brings `NEW_KEYS` more, 300 in all.
const FIRST_KEYS: usize = 90;
const NEW_KEYS: usize = 30;

enum Fault {
    /// Immediate shutdown of PostgreSQL (no checkpoint: WAL replay on restart), restarted.
    CrashPostgres,
    /// SIGKILL of the instance, restarted on its port.
    KillSeqvend(usize),
}

const FAULTS: [Fault; 7] = [
    Fault::CrashPostgres,
    Fault::KillSeqvend(0),
    Fault::CrashPostgres,
    Fault::CrashPostgres,
    Fault::KillSeqvend(1),
    Fault::CrashPostgres,
    Fault::CrashPostgres,
];

fn key(i: usize) -> String {
    format!("order-{i:03}")
}

/// Every value the clients were given, by key.
type Received = Mutex<BTreeMap<String, Vec<i64>>>;

/// Clients drawing from the first `keys` counters of the family through `addresses` until
/// `stop` is set: half single values, half `?count=` 1–`max_batch`; one request in three goes
/// to the `NEW_KEYS` latest keys, so that a new key's first draws come soon after it appears.
/// Every value is recorded by key, and counted in the record.
fn start_counter_clients(
    addresses: Vec<String>,
    load: Load,
    keys: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) -> (Arc<Record>, Arc<Received>, JoinSet<()>) {
    let record = Arc::new(Record::default());
    let received = Arc::new(Received::default());
    let mut tasks = JoinSet::new();
    for client in 0..load.clients {
        let (record, received, keys, stop) =
            (record.clone(), received.clone(), keys.clone(), stop.clone());
        let address = addresses[client % addresses.len()].clone();
        let impatient = load.impatient_every > 0 && client % load.impatient_every == 0;
        tasks.spawn(async move {
            let http = reqwest::Client::builder()
                .pool_max_idle_per_host(4)
                .build()
                .unwrap();
            while !stop.load(Ordering::Relaxed) {
                let (key, count, patience) = {
                    let mut rng = rand::thread_rng();
                    let active = keys.load(Ordering::Relaxed);
                    let key = if rng.gen_bool(1.0 / 3.0) {
                        key(rng.gen_range(active - NEW_KEYS..active))
                    } else {
                        key(rng.gen_range(0..active))
                    };
                    let count = rng.gen_bool(0.5).then(|| rng.gen_range(1..=load.max_batch));
                    (key, count, patience(&mut rng, impatient))
                };
                let url = match count {
                    None => format!("{address}/families/{FAMILY}/counters/{key}/next"),
                    Some(n) => format!("{address}/families/{FAMILY}/counters/{key}/next?count={n}"),
                };
                match vend_once(&http, &url, patience, &record).await {
                    Answer::Values(values, body) => {
                        let asked = count.unwrap_or(1) as usize;
                        if body["family"] != FAMILY
                            || body["key"] != key.as_str()
                            || values.len() != asked
                            || (count.is_some() && body["exhausted"] != false)
                        {
                            let mut other = record.other.lock().unwrap();
                            other.push(format!("{key} asked {asked}: {body}"));
                        }
                        received
                            .lock()
                            .unwrap()
                            .entry(key)
                            .or_default()
                            .extend(&values);
                        record.values.lock().unwrap().extend(values);
                    }
                    Answer::Nothing => {}
                    Answer::Other(status, body) => {
                        let mut other = record.other.lock().unwrap();
                        other.push(format!("{key}: {status}: {body}"));
                    }
                }
            }
        });
    }
    (record, received, tasks)
}

/// A value's place in its counter's run (0 for `START`), if it is on the family's step.
fn index(value: i64) -> Option<i64> {
    let offset = value - START;
    (offset % INCREMENT == 0 && offset / INCREMENT >= 0).then_some(offset / INCREMENT)
}

/// What the counters' checks found, beyond the figures of an `Outcome`.
struct Counted {
    outcome: Outcome,
    /// Values a client received that lie at or beyond their counter's `drawn` (values its next
    /// draws would hand out again), and the keys of those counters.
    behind: usize,
    behind_keys: Vec<String>,
    /// Counters whose first value no client received: their creation's answer was lost.
    first_unseen: usize,
    /// Keys no draw created (none of their draws committed), so no client holds a value.
    never_created: usize,
    /// Keys with a value handed out twice, for the failure message.
    twice: Vec<String>,
    /// Each key's `next_value`.
    next: Vec<(String, i64)>,
}

/// Checks every key's values (none twice, each within the family's bounds and on its step)
/// against what its counter reports (`drawn` covers them all, `next_value` follows them; a key
/// with no counter has no value received), and counts the gaps: values drawn that no client
/// received.
async fn check_counters(
    address: &str,
    keys: usize,
    received: &Received,
    record: &Record,
) -> Counted {
    let received = received.lock().unwrap().clone();
    let mut counted = Counted {
        outcome: Outcome {
            vended: 0,
            duplicates: 0,
            out_of_range: 0,
            gaps: 0,
        },
        behind: 0,
        behind_keys: Vec::new(),
        first_unseen: 0,
        never_created: 0,
        twice: Vec::new(),
        next: Vec::new(),
    };
    for i in 0..keys {
        let key = key(i);
        let values = received.get(&key).cloned().unwrap_or_default();
        let unique: HashSet<i64> = values.iter().copied().collect();
        let (status, body) = admin(
            address,
            Method::GET,
            &format!("/families/{FAMILY}/counters/{key}"),
            None,
        )
        .await;
        if status == StatusCode::NOT_FOUND {
            // No draw of this key ever committed (the clients pick keys at random, and each
            // draw of it may have met a fault): then no client may hold a value of it, and its
            // first draw, below, must hand out the family's start.
            assert!(
                values.is_empty(),
                "{key}: no counter after recovery, yet clients received {values:?}"
            );
            counted.never_created += 1;
            counted.next.push((key, START));
            continue;
        }
        assert_eq!(status, StatusCode::OK, "{key}: {body}");
        let drawn = body["drawn"].as_i64().unwrap();
        let next = body["next_value"].as_i64().unwrap();
        assert_eq!(next, START + drawn * INCREMENT, "{key}: {body}");
        let outcome = &mut counted.outcome;
        outcome.vended += values.len();
        outcome.duplicates += values.len() - unique.len();
        outcome.out_of_range += values
            .iter()
            .filter(|&&v| !(MIN..=MAX).contains(&v) || index(v).is_none())
            .count();
        // A counter that reports fewer values drawn than its clients received is behind them:
        // counted below, and failed on.
        outcome.gaps += u128::try_from(drawn - unique.len() as i64).unwrap_or(0);
        let behind = values
            .iter()
            .filter(|&&v| index(v).is_some_and(|i| i >= drawn))
            .count();
        if behind > 0 {
            counted.behind += behind;
            counted.behind_keys.push(key.clone());
        }
        counted.first_unseen += usize::from(!unique.contains(&START));
        if values.len() != unique.len() {
            counted.twice.push(key.clone());
        }
        counted.next.push((key, next));
    }
    let unexpected = record.other.lock().unwrap().clone();
    assert!(unexpected.is_empty(), "unexpected answers: {unexpected:?}");
    let outcome = &counted.outcome;
    assert_eq!(
        outcome.duplicates,
        0,
        "values handed out twice, by {} counters: {:?}",
        counted.twice.len(),
        counted.twice
    );
    assert_eq!(
        outcome.out_of_range, 0,
        "values outside the family's bounds or off its step"
    );
    assert_eq!(
        counted.behind,
        0,
        "values received that their counter's `drawn` does not cover, by {} counters: {:?}",
        counted.behind_keys.len(),
        counted.behind_keys
    );
    counted
}

#[tokio::test(flavor = "multi_thread")]
async fn counters_through_postgresql_crashes_and_instance_kills_never_hand_out_a_value_twice() {
    let _turn = one_at_a_time().await;
    let pg = Pg::start("counters", &[]).await;
    let mut instances = [
        Seqvend::start(&pg.url, &[]).await,
        Seqvend::start(&pg.url, &[]).await,
    ];
    let address = instances[0].address();
    let (status, body) = admin(
        &address,
        Method::POST,
        "/families",
        Some(
            json!({"name": FAMILY, "start": START, "increment": INCREMENT, "min": MIN, "max": MAX}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let keys = Arc::new(AtomicUsize::new(FIRST_KEYS));
    let stop = Arc::new(AtomicBool::new(false));
    let addresses = instances.iter().map(Seqvend::address).collect();
    let (record, received, mut clients) =
        start_counter_clients(addresses, LOAD, keys.clone(), stop.clone());
    let (mut recoveries, mut restarts) = (Vec::new(), Vec::new());
    for fault in &FAULTS {
        until_more_values(&record, 1_500).await;
        // New keys: some are created before the fault, some as it strikes, the rest after.
        keys.fetch_add(NEW_KEYS, Ordering::Relaxed);
        until_more_values(&record, 100).await;
        match *fault {
            Fault::CrashPostgres => {
                pg.stop(Shutdown::Immediate).await;
                pg.start_again().await;
                let back = Instant::now();
                until_more_values(&record, 1).await;
                recoveries.push(back.elapsed());
            }
            Fault::KillSeqvend(i) => restarts.push(instances[i].kill_and_restart().await),
        }
    }
    until_more_values(&record, 1_500).await;
    stop.store(true, Ordering::Relaxed);
    while let Some(client) = clients.join_next().await {
        client.unwrap();
    }

    let keys = keys.load(Ordering::Relaxed);
    let counted = check_counters(&instances[1].address(), keys, &received, &record).await;
    // Each counter's next draw: the value the other instance read as next, and one no client
    // was given.
    let received = received.lock().unwrap().clone();
    let http = reqwest::Client::new();
    for (key, next) in &counted.next {
        let url = format!("{address}/families/{FAMILY}/counters/{key}/next");
        let reply = http
            .post(url)
            .bearer_auth(VEND_TOKEN)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), StatusCode::OK, "{key}");
        let body: serde_json::Value = reply.json().await.unwrap();
        assert_eq!(body["value"], *next, "{key}: the next draw after recovery");
        assert!(
            !received
                .get(key)
                .is_some_and(|values| values.contains(next)),
            "{key}: its next draw after recovery handed out {next} again"
        );
    }
    let slowest_recovery = recoveries.iter().max().unwrap();
    let slowest_restart = restarts.iter().max().unwrap();
    report(
        "13-counters-crashed-and-killed",
        &format!(
            "2 instances drawing from {keys} counters of one family (single values and batches of 1–40); \
             5 × immediate shutdown of PostgreSQL under load, restarted; 2 × SIGKILL of an instance, restarted; \
             {NEW_KEYS} keys first drawn just before each fault"
        ),
        &counted.outcome,
        &record,
        &format!(
            "values counted per key; each counter's `drawn` covers every value received, and its next \
             draw after recovery was one never received; {} counters' first value never reached a client; \
             {} keys never created (no draw of theirs committed, no value received); \
             PostgreSQL back to first value drawn: slowest {slowest_recovery:?}; restart to ready: slowest {slowest_restart:?}",
            counted.first_unseen, counted.never_created
        ),
    );
}
