//! The one way a test waits: on a condition, polled, with a deadline (never a sleep as
//! synchronisation), or on a step, with a deadline that names it; and the condition most
//! tests wait on in PostgreSQL, a session blocked where the test meant it to be.

use std::future::Future;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Waits for `check` to hold, polling, for at most `patience`.
pub async fn eventually<F, Fut>(patience: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    eventually_some(patience, what, || {
        let holds = check();
        async move { holds.await.then_some(()) }
    })
    .await
}

/// Polls `attempt` until it gives a value, for at most `patience`.
pub async fn eventually_some<T, F, Fut>(patience: Duration, what: &str, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + patience;
    loop {
        if let Some(value) = attempt().await {
            return value;
        }
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Awaits `step` for at most `patience`, then fails naming `what`: a step that never ends
/// fails its test, saying which step, instead of hanging the suite until CI's own limit.
/// Half-way it says on stderr that it still waits, for whoever watches a run live.
pub async fn within<T>(patience: Duration, what: &str, step: impl Future<Output = T>) -> T {
    let _backstop = Backstop::arm(patience + BACKSTOP_GRACE, what);
    let mut step = std::pin::pin!(step);
    let half = patience / 2;
    if let Ok(done) = tokio::time::timeout(half, &mut step).await {
        return done;
    }
    eprintln!("still waiting after {half:?}: {what}");
    match tokio::time::timeout(patience - half, step).await {
        Ok(done) => done,
        Err(_) => panic!("gave up after {patience:?}: {what}"),
    }
}

/// How long after a step's deadline its backstop ends the process: the runtime's timer fires
/// late on a loaded machine, but never by this much.
const BACKSTOP_GRACE: Duration = Duration::from_secs(60);

/// Ends the test binary, naming the step, unless dropped within its limit: the backstop for a
/// runtime so stuck (every worker thread blocked) that its own timers, and so `within`'s
/// deadline, never fire. Watched from a thread of its own, outside the runtime.
struct Backstop {
    _disarmed_when_dropped: mpsc::Sender<()>,
}

impl Backstop {
    fn arm(limit: Duration, what: &str) -> Self {
        let (done, dropped) = mpsc::channel();
        let what = what.to_owned();
        std::thread::spawn(move || {
            if dropped.recv_timeout(limit) == Err(RecvTimeoutError::Timeout) {
                // Straight to stderr: libtest's capture of `eprintln!` dies with the process.
                let says = format!("the test runtime is stuck (its timers do not fire): {what}\n");
                let _ = std::io::Write::write_all(&mut std::io::stderr(), says.as_bytes());
                std::process::abort();
            }
        });
        Self {
            _disarmed_when_dropped: done,
        }
    }
}

/// Where a session of the test's database is blocked, as `pg_stat_activity` says.
#[derive(Clone, Copy, Debug)]
pub enum Blocked {
    /// On this wait event: `advisory`, `relation`, `transactionid`, `SyncRep`...
    On(&'static str),
    /// On a lock of any kind: a row, a transaction, a relation, an advisory lock.
    OnALock,
}

/// How many sessions of this database are blocked as `blocked` says while running a
/// statement like `query` (an SQL LIKE pattern): how a test knows a statement waits where it
/// meant it to.
pub async fn sessions_blocked(
    observer: &tokio_postgres::Client,
    blocked: Blocked,
    query: &str,
) -> i64 {
    let (event_type, event) = match blocked {
        Blocked::On(event) => ("%", event),
        Blocked::OnALock => ("Lock", "%"),
    };
    observer
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND wait_event_type LIKE $1 AND wait_event LIKE $2 AND query LIKE $3",
            &[&event_type, &event, &query],
        )
        .await
        .unwrap()
        .get(0)
}

/// Waits (up to 20 s) until `sessions` sessions of this database are blocked as `blocked`
/// says while running a statement like `query` (an SQL LIKE pattern).
pub async fn until_blocked(
    observer: &tokio_postgres::Client,
    sessions: i64,
    blocked: Blocked,
    query: &str,
) {
    let what = format!("{sessions} session(s) blocked {blocked:?} running {query}");
    eventually(Duration::from_secs(20), &what, || async {
        sessions_blocked(observer, blocked, query).await >= sessions
    })
    .await
}

/// Waits until `retire` (a DELETE of a sequence or a family) waits for the draw in flight, on
/// the advisory lock the draw holds, checks it has not answered, then lets the draw commit
/// (`blocker` holds it back in an open transaction).
pub async fn until_retirement_waits_then_commit<T>(
    observer: &tokio_postgres::Client,
    retire: &tokio::task::JoinHandle<T>,
    blocker: &tokio_postgres::Client,
) {
    until_blocked(
        observer,
        1,
        Blocked::On("advisory"),
        "%pg_advisory_xact_lock%",
    )
    .await;
    assert!(!retire.is_finished());
    blocker.batch_execute("COMMIT").await.unwrap();
}
