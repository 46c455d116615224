//! Snowflake ids under faults: three instances issuing over HTTP and two client processes
//! issuing with seqvend-client's own generator, one instance killed with SIGKILL mid-run and
//! restarted once its lease expired, so it takes its old worker id over. No id repeats, each
//! holder's ids increase, and the takeover's ids lie above the killed holder's.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::common::values::{increasing, worker_of};
use crate::common::wait::eventually;
use crate::harness::*;

const LEASE_MS: u64 = 3_000;

/// What the HTTP issuers were given: per (instance, life of its process), the ids in the
/// order answered (one request at a time per instance).
type Answers = Mutex<BTreeMap<(usize, usize), Vec<i64>>>;

/// One task per instance asking for 100 ids every 5 ms until `stop`; failures (the instance
/// killed) are counted. `lives[i]` is the life of instance `i`'s process when a request left.
fn start_issuers(
    addresses: Vec<String>,
    lives: Arc<Vec<AtomicUsize>>,
    stop: Arc<AtomicBool>,
) -> (Arc<Answers>, Arc<AtomicUsize>, JoinSet<()>) {
    let answers = Arc::new(Answers::default());
    let failures = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    for (instance, address) in addresses.into_iter().enumerate() {
        let (answers, failures, lives, stop) = (
            answers.clone(),
            failures.clone(),
            lives.clone(),
            stop.clone(),
        );
        tasks.spawn(async move {
            let http = reqwest::Client::builder()
                .timeout(Duration::from_secs(2))
                .build()
                .unwrap();
            let url = format!("{address}/ids/snowflake?count=100");
            while !stop.load(Ordering::Relaxed) {
                let life = lives[instance].load(Ordering::SeqCst);
                let reply = http.post(&url).bearer_auth(VEND_TOKEN).send().await;
                let body = match reply {
                    Ok(reply) if reply.status().is_success() => {
                        reply.json::<serde_json::Value>().await.ok()
                    }
                    _ => None,
                };
                match body {
                    Some(body) => {
                        let ids = body["ids"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|v| v.as_i64().unwrap());
                        answers
                            .lock()
                            .unwrap()
                            .entry((instance, life))
                            .or_default()
                            .extend(ids);
                    }
                    None => {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
    }
    (answers, failures, tasks)
}

fn assert_increasing(ids: &[i64], whose: &str) {
    assert!(increasing(ids), "{whose}: ids not strictly increasing");
}

#[tokio::test(flavor = "multi_thread")]
async fn snowflake_ids_from_instances_and_client_processes_stay_unique_through_a_kill_and_a_takeover(
) {
    let _turn = one_at_a_time().await;
    let pg = Pg::start("ids-kill", &[]).await;
    let lease = LEASE_MS.to_string();
    let env = [
        ("SEQVEND_WORKER_LEASE_MS", lease.as_str()),
        ("SEQVEND_WORKER_RENEW_MS", "600"),
    ];
    let mut instances = Vec::new();
    for _ in 0..3 {
        instances.push(Seqvend::start(&pg.url, &env).await);
    }
    let started = Instant::now();
    // One process leases through the instance that will be killed: its renewals fail while
    // the instance is away, and it stops until one gets through again.
    let processes = [0, 1]
        .map(|i| ClientProcess::start("ids_record", &instances[i].address(), &[("RATE", "2000")]));
    let lives: Arc<Vec<AtomicUsize>> = Arc::new((0..3).map(|_| AtomicUsize::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let addresses = instances.iter().map(Seqvend::address).collect();
    let (answers, failures, mut issuers) = start_issuers(addresses, lives.clone(), stop.clone());

    tokio::time::sleep(Duration::from_secs(10)).await;
    lives[1].fetch_add(1, Ordering::SeqCst);
    instances[1].kill();
    let killed_at = Instant::now();
    let before: Vec<i64> = answers.lock().unwrap()[&(1, 0)].clone();
    let worker = worker_of(before[0]);
    // Restarted once the database let the lease expire, it takes the lowest expired worker
    // id: its own old one.
    let pg_client = pg.connect().await;
    eventually(Duration::from_secs(15), "the lease expired", || async {
        pg_client
            .query_one(
                "SELECT expires_at <= now() FROM seqvend.worker_ids WHERE worker_id = $1",
                &[&(worker as i32)],
            )
            .await
            .unwrap()
            .get(0)
    })
    .await;
    let down_for = killed_at.elapsed();
    instances[1].restart().await;
    while started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::Relaxed);
    while issuers.join_next().await.is_some() {}
    let [first, second] = processes;
    let from_processes = [first.stop(), second.stop()];

    let answers = answers.lock().unwrap();
    let after = &answers[&(1, 1)];
    let workers_after: HashSet<u32> = after.iter().map(|&id| worker_of(id)).collect();
    assert_eq!(
        workers_after,
        HashSet::from([worker]),
        "the restarted instance takes its old worker id over"
    );
    let last_before = before.iter().max().unwrap();
    assert!(
        after.iter().all(|id| id > last_before),
        "an id after the takeover is below one before it"
    );
    let mut all: Vec<i64> = Vec::new();
    for ((instance, life), ids) in answers.iter() {
        assert_increasing(ids, &format!("instance {instance}, life {life}"));
        all.extend(ids);
    }
    let mut process_ids = 0;
    for (process, lines) in from_processes.iter().enumerate() {
        let mut per_worker: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
        for &(_, id) in lines {
            per_worker.entry(worker_of(id)).or_default().push(id);
        }
        for (worker, ids) in &per_worker {
            assert_increasing(
                ids,
                &format!("client process {process}, worker id {worker}"),
            );
        }
        assert!(
            lines.len() > 10_000,
            "client process {process} issued throughout: {}",
            lines.len()
        );
        process_ids += lines.len();
        all.extend(lines.iter().map(|&(_, id)| id));
    }
    let count = all.len();
    let unique: HashSet<i64> = all.iter().copied().collect();
    assert_eq!(
        unique.len(),
        count,
        "{} ids issued twice",
        count - unique.len()
    );
    report_without_values(
        "12-snowflake-ids-kill-and-takeover",
        "3 instances issuing Snowflake ids over HTTP, 2 client processes (seqvend-client) issuing \
         their own at 2,000 ids/s, for 30 s; 1 × SIGKILL of an instance, restarted once its \
         worker-id lease (3 s) expired",
        &format!(
            "{count} ids, none twice: {} over HTTP, {process_ids} from the client processes; each \
             holder's strictly increasing; the restarted instance took worker id {worker} over \
             after {:.1} s down and issued {} ids, all above the killed holder's {}; {} HTTP \
             requests failed while it was away",
            count - process_ids,
            down_for.as_secs_f64(),
            after.len(),
            before.len(),
            failures.load(Ordering::Relaxed),
        ),
    );
}
