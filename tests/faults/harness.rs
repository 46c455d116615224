//! The fault-injection harness: clients that record every value they were given, the client
//! crate's application processes, and the checks every scenario ends with. The PostgreSQL
//! clusters and `seqvend serve` processes they run against come from `tests/common`.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::task::JoinSet;

pub use crate::common::cluster::Pg;
pub use crate::common::process::{admin, Seqvend};
pub use crate::common::scratch::scratch_dir;
pub use crate::common::VEND_TOKEN;
// The names the history checker imports the bootstrap tokens by; this suite does not use them.
#[allow(unused_imports)]
pub use crate::common::{ADMIN_TOKEN as ADMIN, VEND_TOKEN as VEND};

/// Scenarios run one at a time: each loads both cores, and several at once would turn
/// timing checks (503 within a second, recovery within 5 s) into noise.
pub async fn one_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

/// An application process using `seqvend-client` (one of the client crate's examples, built
/// beside this test by `cargo build --workspace --examples`) through `address`, writing one
/// line per value or id it was given, `<unix ms> <value>`.
pub struct ClientProcess {
    child: Child,
    out: PathBuf,
}

impl ClientProcess {
    pub fn start(example: &str, address: &str, env: &[(&str, &str)]) -> Self {
        let examples = std::env::current_exe()
            .unwrap()
            .parent()
            .and_then(|deps| deps.parent())
            .unwrap()
            .join("examples");
        let program = examples.join(example);
        assert!(
            program.exists(),
            "{} is missing: build it with `cargo build --workspace --examples` (scripts/test.sh does)",
            program.display()
        );
        let out = scratch_dir("client").with_extension("values");
        let child = Command::new(program)
            .env("SEQVEND_URL", address)
            .env("SEQVEND_TOKEN", VEND_TOKEN)
            .env("OUT", &out)
            .envs(env.iter().copied())
            .stderr(Stdio::null())
            .spawn()
            .expect("client process started");
        Self { child, out }
    }

    /// SIGTERM (the process flushes what it wrote), then its lines as (unix ms, value).
    pub fn stop(mut self) -> Vec<(u128, i64)> {
        let stopped = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(stopped.success());
        assert!(
            self.child.wait().unwrap().success(),
            "the client process failed"
        );
        let text = std::fs::read_to_string(&self.out).unwrap();
        let _ = std::fs::remove_file(&self.out);
        text.lines()
            .map(|line| {
                let (at, value) = line.split_once(' ').unwrap();
                (at.parse().unwrap(), value.parse().unwrap())
            })
            .collect()
    }
}

/// What the clients saw.
#[derive(Default)]
pub struct Record {
    pub values: Mutex<Vec<i64>>,
    pub ok: AtomicU64,
    pub unavailable: AtomicU64,
    pub cancelled: AtomicU64,
    pub other: Mutex<Vec<String>>,
    pub exhausted: AtomicBool,
    /// Longest a request that got an answer waited for it, in microseconds.
    pub slowest_answer_us: AtomicU64,
    /// When the latest request that was answered with values was sent. Answers to requests
    /// sent before a fault can still arrive after it; this tells them from the rest.
    pub latest_request_with_values: Mutex<Option<Instant>>,
}

impl Record {
    fn requested_values_at(&self, sent: Instant) {
        let mut latest = self.latest_request_with_values.lock().unwrap();
        *latest = (*latest).max(Some(sent));
    }
}

/// How clients behave.
#[derive(Clone, Copy)]
pub struct Load {
    pub clients: usize,
    /// Largest batch; 1 means single vends only.
    pub max_batch: u32,
    /// One client in `impatient_every` gives up after 1–5 ms (cancelling mid-request).
    pub impatient_every: usize,
}

/// The tasks of clients that vend until stopped or until the sequence is exhausted.
pub struct Clients {
    stop: Arc<AtomicBool>,
    tasks: JoinSet<()>,
}

impl Clients {
    /// Stops the clients and waits until each has finished its last request.
    pub async fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        while self.tasks.join_next().await.is_some() {}
    }

    /// Waits until every client has found the sequence exhausted.
    pub async fn until_exhausted(mut self) {
        while self.tasks.join_next().await.is_some() {}
    }
}

/// Clients vending from `name` through `addresses` until stopped or until the sequence is
/// exhausted. Every value a client is given is recorded.
pub fn start_clients(addresses: Vec<String>, name: &str, load: Load) -> (Arc<Record>, Clients) {
    let record = Arc::new(Record::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = JoinSet::new();
    for client in 0..load.clients {
        let (record, stop, name) = (record.clone(), stop.clone(), name.to_owned());
        let address = addresses[client % addresses.len()].clone();
        let impatient = load.impatient_every > 0 && client % load.impatient_every == 0;
        tasks.spawn(async move {
            let http = reqwest::Client::builder()
                .pool_max_idle_per_host(4)
                .build()
                .unwrap();
            while !stop.load(Ordering::Relaxed) && !record.exhausted.load(Ordering::Relaxed) {
                let (count, patience) = {
                    let mut rng = rand::thread_rng();
                    let count = if load.max_batch > 1 && rng.gen_bool(0.5) {
                        rng.gen_range(2..=load.max_batch)
                    } else {
                        1
                    };
                    (count, patience(&mut rng, impatient))
                };
                let url = if count == 1 {
                    format!("{address}/sequences/{name}/next")
                } else {
                    format!("{address}/sequences/{name}/next?count={count}")
                };
                match vend_once(&http, &url, patience, &record).await {
                    Answer::Values(values, _) => record.values.lock().unwrap().extend(values),
                    Answer::Nothing => {}
                    Answer::Other(StatusCode::CONFLICT, body)
                        if body["error"] == "sequence_exhausted" =>
                    {
                        record.exhausted.store(true, Ordering::Relaxed);
                    }
                    Answer::Other(status, body) => record
                        .other
                        .lock()
                        .unwrap()
                        .push(format!("{status}: {body}")),
                }
            }
        });
    }
    (record, Clients { stop, tasks })
}

/// How long a client waits for an answer: 1–5 ms if it is impatient, else 10 s.
pub fn patience(rng: &mut impl Rng, impatient: bool) -> Duration {
    if impatient {
        Duration::from_millis(rng.gen_range(1..=5))
    } else {
        Duration::from_secs(10)
    }
}

/// What became of one vend request.
pub enum Answer {
    /// 200: the values given (from `value` or `values`), and the body.
    Values(Vec<i64>, Value),
    /// Given up on, seqvend down, or 503 `unavailable` with `Retry-After`: counted in the record.
    Nothing,
    /// Any other answer, for the caller to judge.
    Other(StatusCode, Value),
}

/// Sends one vend request (`POST url`) as a client with `patience` would, and counts in
/// `record` what became of it; the values of a 200 are the caller's to record.
pub async fn vend_once(
    http: &reqwest::Client,
    url: &str,
    patience: Duration,
    record: &Record,
) -> Answer {
    let sent = Instant::now();
    let response = match http
        .post(url)
        .bearer_auth(VEND_TOKEN)
        .timeout(patience)
        .send()
        .await
    {
        Ok(response) => response,
        Err(err) if err.is_timeout() => {
            record.cancelled.fetch_add(1, Ordering::Relaxed);
            return Answer::Nothing;
        }
        // seqvend itself is down (killed) or restarting: try again.
        Err(_) => {
            record.unavailable.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(5)).await;
            return Answer::Nothing;
        }
    };
    let status = response.status();
    let retry_after = response.headers().contains_key("retry-after");
    let body: Value = match response.json().await {
        Ok(body) => body,
        Err(_) => {
            record.cancelled.fetch_add(1, Ordering::Relaxed);
            return Answer::Nothing;
        }
    };
    record
        .slowest_answer_us
        .fetch_max(sent.elapsed().as_micros() as u64, Ordering::Relaxed);
    match status {
        StatusCode::OK => {
            let values: Vec<i64> = match body.get("value") {
                Some(v) => vec![v.as_i64().unwrap()],
                None => body["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_i64().unwrap())
                    .collect(),
            };
            record.ok.fetch_add(1, Ordering::Relaxed);
            record.requested_values_at(sent);
            Answer::Values(values, body)
        }
        StatusCode::SERVICE_UNAVAILABLE => {
            assert_eq!(body["error"], "unavailable");
            assert!(retry_after, "a 503 without Retry-After: {body}");
            record.unavailable.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(5)).await;
            Answer::Nothing
        }
        other => Answer::Other(other, body),
    }
}

/// Waits until the clients have received at least `more` further values. The scenarios'
/// ranges hold far more than they draw: a 409 `sequence_exhausted` meanwhile is a failure.
pub async fn until_more_values(record: &Record, more: usize) {
    let target = record.values.lock().unwrap().len() + more;
    let deadline = Instant::now() + Duration::from_secs(60);
    while record.values.lock().unwrap().len() < target {
        assert!(
            !record.exhausted.load(Ordering::Relaxed),
            "409 sequence_exhausted while the ranges still held values"
        );
        assert!(
            Instant::now() < deadline,
            "the clients stopped getting values"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The figures of one scenario, checked and reported.
pub struct Outcome {
    pub vended: usize,
    pub duplicates: usize,
    pub out_of_range: usize,
    /// Values drawn from the ranges that no client received (given up on, or in flight at a crash).
    pub gaps: u128,
}

/// Checks the scenario's values: none twice, none outside `ranges`; counts the gaps from what
/// the sequence reports as remaining.
pub async fn check(address: &str, name: &str, ranges: &[(i64, i64)], record: &Record) -> Outcome {
    let values = record.values.lock().unwrap().clone();
    let unique: HashSet<i64> = values.iter().copied().collect();
    let out_of_range = values
        .iter()
        .filter(|v| !ranges.iter().any(|(lo, hi)| (lo..=hi).contains(v)))
        .count();
    let (status, body) = admin(
        address,
        reqwest::Method::GET,
        &format!("/sequences/{name}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Per range: a retired sequence reports nothing remaining as a whole, but its ranges still
    // say what was never drawn.
    let remaining: u128 = body["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|range| u128::from(range["remaining"].as_u64().unwrap()))
        .sum();
    let capacity: u128 = ranges.iter().map(|(lo, hi)| (hi - lo + 1) as u128).sum();
    let consumed = capacity
        .checked_sub(remaining)
        .expect("the sequence reports more values left than its ranges hold");
    let outcome = Outcome {
        vended: values.len(),
        duplicates: values.len() - unique.len(),
        out_of_range,
        // Checked: in a release build a plain subtraction would wrap instead of failing.
        gaps: consumed
            .checked_sub(unique.len() as u128)
            .expect("the sequence reports fewer values drawn than clients were given"),
    };
    let unexpected = record.other.lock().unwrap().clone();
    assert!(unexpected.is_empty(), "unexpected answers: {unexpected:?}");
    assert_eq!(outcome.duplicates, 0, "values vended twice");
    assert_eq!(outcome.out_of_range, 0, "values outside their ranges");
    outcome
}

/// Appends a scenario's figures to the reliability report (when the run writes one).
pub fn report(scenario: &str, faults: &str, outcome: &Outcome, record: &Record, notes: &str) {
    let Some(dir) = std::env::var_os("SEQVEND_RELIABILITY_DIR") else {
        return;
    };
    let row = json!({
        "scenario": scenario,
        "faults": faults,
        "vended": outcome.vended,
        "duplicates": outcome.duplicates,
        "out_of_range": outcome.out_of_range,
        "gaps": outcome.gaps.to_string(),
        "requests_ok": record.ok.load(Ordering::Relaxed),
        "requests_unavailable": record.unavailable.load(Ordering::Relaxed),
        "requests_cancelled": record.cancelled.load(Ordering::Relaxed),
        "notes": notes,
    });
    let path = PathBuf::from(dir).join(format!("{scenario}.json"));
    std::fs::write(path, serde_json::to_string_pretty(&row).unwrap()).unwrap();
}

/// Appends a scenario that vends nothing (API fuzzing) to the reliability report.
pub fn report_without_values(scenario: &str, faults: &str, notes: &str) {
    let Some(dir) = std::env::var_os("SEQVEND_RELIABILITY_DIR") else {
        return;
    };
    let row = json!({ "scenario": scenario, "faults": faults, "notes": notes });
    let path = PathBuf::from(dir).join(format!("{scenario}.json"));
    std::fs::write(path, serde_json::to_string_pretty(&row).unwrap()).unwrap();
}
