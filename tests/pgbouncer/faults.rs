//! PgBouncer restarted, and paused then resumed, while clients vend strict values, keyed
//! values and counters through it: nothing is handed out twice or outside its range, nothing
//! acknowledged is lost, and every request answers 200 or 503 within its deadline.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use tokio::task::JoinSet;

use crate::bouncer::Pooled;
use crate::helpers::*;

/// The vend deadline of the instance under test: a request waits at most this long.
const DEADLINE: Duration = Duration::from_millis(1500);
/// What a loaded machine may add to a deadline before the answer is read.
const SLACK: Duration = Duration::from_millis(1500);
const CLIENTS: usize = 6;
const RANGE: (i64, i64) = (1, 1_000_000_000);

/// What one request asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Ask {
    Strict,
    Keyed,
    Counter(usize),
}

struct Answer {
    ask: Ask,
    status: StatusCode,
    values: Vec<i64>,
    sent: Instant,
    took: Duration,
}

/// Clients vending through the instance until stopped, every answer recorded.
struct Load {
    answers: Arc<Mutex<Vec<Answer>>>,
    stop: Arc<AtomicBool>,
    clients: JoinSet<()>,
}

impl Load {
    fn start(pooled: &Pooled) -> Self {
        let answers = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut clients = JoinSet::new();
        for client in 0..CLIENTS {
            let (http, address) = (pooled.app.http.clone(), pooled.app.address.clone());
            let (answers, stop) = (answers.clone(), stop.clone());
            clients.spawn(async move {
                let mut round = 0;
                while !stop.load(Ordering::Relaxed) {
                    let ask = [Ask::Strict, Ask::Keyed, Ask::Counter(client % 2)][round % 3];
                    let answer = send(&http, &address, ask, &format!("{client}-{round}")).await;
                    answers.lock().unwrap().push(answer);
                    round += 1;
                }
            });
        }
        Self {
            answers,
            stop,
            clients,
        }
    }

    /// Waits until `count` requests sent after `since` have got their values.
    async fn served_since(&self, since: Instant, count: usize, what: &str) {
        eventually(Duration::from_secs(30), what, || async {
            let answers = self.answers.lock().unwrap();
            answers
                .iter()
                .filter(|a| a.sent >= since && a.status == StatusCode::OK)
                .count()
                >= count
        })
        .await
    }

    async fn stopped(mut self) -> Vec<Answer> {
        self.stop.store(true, Ordering::Relaxed);
        while let Some(ended) = self.clients.join_next().await {
            if let Err(failed) = ended {
                // A client's assertion (an answer neither 200 nor 503) fails the test.
                std::panic::resume_unwind(failed.into_panic());
            }
        }
        std::mem::take(&mut *self.answers.lock().unwrap())
    }
}

async fn send(http: &reqwest::Client, address: &str, ask: Ask, key: &str) -> Answer {
    let (path, keyed) = match ask {
        Ask::Strict => ("/sequences/strict/next?count=2".to_owned(), false),
        Ask::Keyed => ("/sequences/strict/next?count=3".to_owned(), true),
        Ask::Counter(k) => (
            format!("/families/orders/counters/key-{k}/next?count=2"),
            false,
        ),
    };
    let mut request = http
        .post(format!("{address}{path}"))
        .bearer_auth(VEND_TOKEN);
    if keyed {
        request = request.header("Idempotency-Key", key);
    }
    let sent = Instant::now();
    let reply = Reply::from(request.send().await.expect("request sent")).await;
    let took = sent.elapsed();
    let values = if reply.status == StatusCode::OK {
        values_of(&reply)
    } else {
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            "{}",
            reply.body
        );
        Vec::new()
    };
    Answer {
        ask,
        status: reply.status,
        values,
        sent,
        took,
    }
}

async fn pooled_under_test() -> Pooled {
    let mut settings = test_settings();
    settings.vend.deadline = DEADLINE;
    // Connecting may take a loaded machine a while; the deadline still bounds each request.
    settings.database.connect_timeout = Duration::from_secs(3);
    let pooled = Pooled::start(settings).await;
    pooled.app.create_ok("strict", RANGE.0, RANGE.1).await;
    pooled.create_family("orders").await;
    pooled
}

/// The promise over every answer: each value once, within its range, each answer in time;
/// and nothing acknowledged lost: what the instance draws next is beyond everything it
/// acknowledged. Returns (values, answers 503).
async fn check(pooled: &Pooled, answers: &[Answer]) -> (usize, usize) {
    let mut strict = Vec::new();
    let mut per_counter: HashMap<usize, Vec<i64>> = HashMap::new();
    for answer in answers {
        assert!(
            answer.took <= DEADLINE + SLACK,
            "a request waited {:?}, past its deadline",
            answer.took
        );
        match answer.ask {
            Ask::Counter(k) => per_counter.entry(k).or_default().extend(&answer.values),
            Ask::Strict | Ask::Keyed => strict.extend(&answer.values),
        }
    }
    assert_unique(&strict);
    assert!(strict.iter().all(|v| (RANGE.0..=RANGE.1).contains(v)));
    let next = pooled.app.next_value("strict").await;
    assert!(
        strict.iter().all(|v| *v < next),
        "an acknowledged value came back"
    );
    for (k, drawn) in &per_counter {
        assert_unique(drawn);
        let path = format!("/families/orders/counters/key-{k}/next");
        let reply = pooled
            .app
            .request(Method::POST, &path, Some(VEND_TOKEN), None)
            .await;
        let next = reply.body["value"].as_i64().expect("a counter value");
        assert!(drawn.iter().all(|v| *v >= 1 && *v < next), "{k}: {next}");
    }
    let values = strict.len() + per_counter.values().map(Vec::len).sum::<usize>();
    let unavailable = answers
        .iter()
        .filter(|a| a.status == StatusCode::SERVICE_UNAVAILABLE)
        .count();
    let distinct: HashSet<Ask> = answers.iter().map(|a| a.ask).collect();
    assert_eq!(distinct.len(), 4, "every kind of request ran");
    (values, unavailable)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pgbouncer_restart_under_load_loses_nothing() {
    let pooled = pooled_under_test().await;
    let load = Load::start(&pooled);
    load.served_since(Instant::now(), 30, "load runs").await;

    let bouncer = &pooled.bouncer;
    tokio::task::block_in_place(|| bouncer.restart());
    let restarted = Instant::now();
    load.served_since(restarted, 60, "vends go on after the restart")
        .await;

    let answers = load.stopped().await;
    let (values, unavailable) = check(&pooled, &answers).await;
    println!(
        "restart: {} requests, {values} values, 0 duplicates, {unavailable} answered 503",
        answers.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn pause_and_resume_under_load_lose_nothing_and_keep_every_deadline() {
    let pooled = pooled_under_test().await;
    let load = Load::start(&pooled);
    load.served_since(Instant::now(), 30, "load runs").await;

    let console = pooled.bouncer.console().await;
    console.simple_query("PAUSE").await.expect("paused");
    let paused = Instant::now();
    // Held until requests sent during the pause have been answered (503, at their deadline).
    eventually(
        Duration::from_secs(30),
        "requests sent during the pause are answered",
        || async {
            let answers = load.answers.lock().unwrap();
            answers
                .iter()
                .filter(|a| a.sent >= paused && a.status == StatusCode::SERVICE_UNAVAILABLE)
                .count()
                >= CLIENTS
        },
    )
    .await;
    console.simple_query("RESUME").await.expect("resumed");
    let resumed = Instant::now();
    load.served_since(resumed, 60, "vends go on after RESUME")
        .await;

    let answers = load.stopped().await;
    let during = answers
        .iter()
        .filter(|a| a.sent >= paused && a.sent + a.took < resumed)
        .count();
    let (values, unavailable) = check(&pooled, &answers).await;
    println!(
        "pause: {} requests ({during} during the pause), {values} values, 0 duplicates, \
         {unavailable} answered 503",
        answers.len()
    );
}
