//! The load the Patroni scenarios run under: clients of every kind of number seqvend hands out
//! — a strict sequence (single vends and batches), a cached one, keyed vends (a retry sends
//! the same `Idempotency-Key` until answered), counters by key and Snowflake ids — spread over
//! several `seqvend serve` processes. Every answer is recorded with when its request left and
//! when it came back, so a scenario can say what was acknowledged before and after its fault.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;
use reqwest::StatusCode;
use serde_json::Value;
use tokio::task::JoinSet;

use crate::common::VEND_TOKEN;

/// The kinds of numbers the clients ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Strict,
    Cached,
    Keyed,
    Counter,
    Snowflake,
}

pub const KINDS: [Kind; 5] = [
    Kind::Strict,
    Kind::Cached,
    Kind::Keyed,
    Kind::Counter,
    Kind::Snowflake,
];

pub const STRICT: &str = "ha-strict";
pub const CACHED: &str = "ha-cached";
pub const KEYED: &str = "ha-keyed";
pub const FAMILY: &str = "ha-counters";
pub const COUNTER_KEYS: usize = 8;
/// Every sequence's one range: far more than a run draws.
pub const RANGE: (i64, i64) = (1, 1_000_000_000);
/// How long a client waits for an answer before giving up on it.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// One acknowledged answer: its values (for a counter, of `key`).
pub struct Acked {
    pub kind: Kind,
    pub key: usize,
    pub sent: Instant,
    pub answered: Instant,
    pub values: Vec<i64>,
}

/// One request that got no values.
pub struct Failed {
    pub kind: Kind,
    pub sent: Instant,
    pub ended: Instant,
    /// A 503 (`unavailable` with `Retry-After` while the database cannot take writes, or
    /// `no_worker_id` while a Snowflake worker lease cannot be renewed), or anything else:
    /// another status, no answer, the client gave up.
    pub unavailable: bool,
    pub what: String,
}

#[derive(Default)]
pub struct Journal {
    pub acked: Mutex<Vec<Acked>>,
    pub failed: Mutex<Vec<Failed>>,
    /// Per kind, when the latest acknowledged request was sent.
    pub latest_sent: Mutex<HashMap<Kind, Instant>>,
    /// When the clients' own runtime woke a timer late, and by how much (past `LAG_NOTED`):
    /// a request the clients time late may have been late in the clients.
    pub lags: Mutex<Vec<(Instant, Duration)>>,
}

/// How often the lag probe wakes, and the lateness it notes.
const LAG_TICK: Duration = Duration::from_millis(10);
const LAG_NOTED: Duration = Duration::from_millis(5);

/// Notes how late the clients' runtime wakes a timer until `stop`: the harness's own
/// scheduling, measured on the same runtime the clients time their requests on.
async fn probe_lag(stop: Arc<AtomicBool>, journal: Arc<Journal>) {
    while !stop.load(Ordering::Relaxed) {
        let asked = Instant::now();
        tokio::time::sleep(LAG_TICK).await;
        let lag = asked.elapsed().saturating_sub(LAG_TICK);
        if lag > LAG_NOTED {
            journal.lags.lock().unwrap().push((Instant::now(), lag));
        }
    }
}

pub struct Load {
    stop: Arc<AtomicBool>,
    tasks: JoinSet<()>,
    pub journal: Arc<Journal>,
}

impl Load {
    /// Two clients of each kind per seqvend address.
    pub fn start(addresses: &[String]) -> Self {
        let (stop, journal) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(Journal::default()),
        );
        let mut tasks = JoinSet::new();
        tasks.spawn(probe_lag(stop.clone(), journal.clone()));
        for (n, address) in addresses.iter().enumerate() {
            for kind in KINDS {
                for copy in 0..2 {
                    let client = Client {
                        kind,
                        address: address.clone(),
                        id: format!("{n}-{copy}"),
                    };
                    tasks.spawn(client.run(stop.clone(), journal.clone()));
                }
            }
        }
        Self {
            stop,
            tasks,
            journal,
        }
    }

    pub async fn stop(mut self) -> Arc<Journal> {
        self.stop.store(true, Ordering::Relaxed);
        while self.tasks.join_next().await.is_some() {}
        self.journal
    }
}

struct Client {
    kind: Kind,
    address: String,
    id: String,
}

impl Client {
    async fn run(self, stop: Arc<AtomicBool>, journal: Arc<Journal>) {
        let http = reqwest::Client::builder()
            .timeout(PATIENCE)
            .build()
            .unwrap();
        // A keyed request not answered is sent again, the same, as a client would.
        let mut pending: Option<(String, usize, String)> = None;
        let mut asked = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let (url, key, idempotency) = match pending.take() {
                Some(retry) => retry,
                None => {
                    let (url, key) = self.request(&mut rand::thread_rng());
                    asked += 1;
                    (url, key, format!("ha-{}-{asked}", self.id))
                }
            };
            let keyed = (self.kind == Kind::Keyed).then_some(idempotency.as_str());
            let sent = Instant::now();
            match ask(&http, &url, keyed).await {
                Ok(values) => {
                    let mut latest = journal.latest_sent.lock().unwrap();
                    let entry = latest.entry(self.kind).or_insert(sent);
                    *entry = (*entry).max(sent);
                    drop(latest);
                    journal.acked.lock().unwrap().push(Acked {
                        kind: self.kind,
                        key,
                        sent,
                        answered: Instant::now(),
                        values,
                    });
                }
                Err((unavailable, what)) => {
                    if self.kind == Kind::Keyed {
                        pending = Some((url, key, idempotency));
                    }
                    journal.failed.lock().unwrap().push(Failed {
                        kind: self.kind,
                        sent,
                        ended: Instant::now(),
                        unavailable,
                        what,
                    });
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }

    fn request(&self, rng: &mut impl Rng) -> (String, usize) {
        let address = &self.address;
        let count: u32 = if rng.gen_bool(0.5) {
            1
        } else {
            rng.gen_range(2..=20)
        };
        match self.kind {
            Kind::Strict => (
                format!("{address}/sequences/{STRICT}/next?count={count}"),
                0,
            ),
            Kind::Cached => (format!("{address}/sequences/{CACHED}/next"), 0),
            Kind::Keyed => (format!("{address}/sequences/{KEYED}/next?count={count}"), 0),
            Kind::Counter => {
                let key = rng.gen_range(0..COUNTER_KEYS);
                let url = format!("{address}/families/{FAMILY}/counters/k{key}/next?count={count}");
                (url, key)
            }
            Kind::Snowflake => (format!("{address}/ids/snowflake?count={count}"), 0),
        }
    }
}

/// One request: its values, or whether it failed as a 503 `unavailable` and how.
async fn ask(
    http: &reqwest::Client,
    url: &str,
    key: Option<&str>,
) -> Result<Vec<i64>, (bool, String)> {
    let mut request = http.post(url).bearer_auth(VEND_TOKEN);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    let reply = request.send().await.map_err(|e| (false, e.to_string()))?;
    let (status, retry_after) = (reply.status(), reply.headers().contains_key("retry-after"));
    let body: Value = reply.json().await.map_err(|e| (false, e.to_string()))?;
    match status {
        StatusCode::OK => Ok(values_of(&body)),
        StatusCode::SERVICE_UNAVAILABLE if body["error"] != "unavailable" || retry_after => {
            Err((true, body.to_string()))
        }
        other => Err((false, format!("{other}: {body}"))),
    }
}

/// The numbers of an answer: `value`, `values` or `ids` (Snowflake ids as numbers).
fn values_of(body: &Value) -> Vec<i64> {
    if let Some(value) = body["value"].as_i64() {
        return vec![value];
    }
    let list = body.get("values").or_else(|| body.get("ids"));
    list.and_then(Value::as_array)
        .map(|items| items.iter().filter_map(number).collect())
        .unwrap_or_default()
}

fn number(item: &Value) -> Option<i64> {
    item.as_i64().or_else(|| item.as_str()?.parse().ok())
}
