//! A value is returned only once its allocation is durable: immediate shutdowns of a real
//! PostgreSQL (no checkpoint, WAL replay on restart) never make seqvend vend a value twice.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use seqvend::local_pg::Shutdown;

use crate::helpers::*;

/// Vends one value, waiting for seqvend to reconnect after a restart (503 until then).
async fn next_after_restart(app: &TestApp, name: &str) -> i64 {
    eventually_some(
        Duration::from_secs(20),
        "seqvend vends again after the restart",
        || async {
            let reply = app.next(name).await;
            if reply.status == StatusCode::OK {
                return reply.body["value"].as_i64();
            }
            reply.assert_error(503, "unavailable");
            None
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn values_vended_before_an_immediate_shutdown_are_never_vended_again() {
    let pg = Pg::start("crash", &[]).await;
    let db = TestDb::create(&pg.cluster).await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("crash", 1, 40).await;
    // PostgreSQL's nextval logs 32 values ahead, so each crash may skip up to 32: room for it.
    app.add_range_ok("crash", 1001, 1300).await;
    let mut seen = Vec::new();
    for round in 0..5 {
        let direct = db.connect().await;
        // Aborted vends: values drawn by transactions that roll back or are cancelled. Their
        // WAL is flushed by nothing of their own; the vends after them must cover it.
        direct
            .batch_execute("BEGIN; SELECT * FROM seqvend.vend('{crash}', '{5}'); ROLLBACK")
            .await
            .unwrap();
        let cancelled = direct
            .batch_execute("SET statement_timeout = 50; SELECT *, pg_sleep(1) FROM seqvend.vend('{crash}', '{3}')")
            .await;
        assert!(cancelled.is_err(), "the statement timeout cancels the vend");
        for _ in 0..3 {
            seen.push(app.next_value("crash").await);
        }
        // Round 2 runs a batch into the end of the first range, round 4 past the last value.
        let count = match round {
            2 => 10,
            4 => 400,
            _ => 2,
        };
        let reply = app.next_batch("crash", count).await;
        if reply.status == StatusCode::OK {
            seen.extend(values_of(&reply));
        } else {
            reply.assert_error(409, "sequence_exhausted");
        }
        pg.stop(Shutdown::Immediate).await;
        pg.start_again().await;
        if round < 4 {
            seen.push(next_after_restart(&app, "crash").await);
        }
    }
    eventually(
        Duration::from_secs(20),
        "seqvend answers after the last restart",
        || async { app.next("crash").await.status != StatusCode::SERVICE_UNAVAILABLE },
    )
    .await;
    assert_unique(&seen);
    assert!(seen
        .iter()
        .all(|v| (1..=40).contains(v) || (1001..=1300).contains(v)));
    assert_eq!(
        seen.iter().max(),
        Some(&1300),
        "the last batch reached the end"
    );
    app.next("crash")
        .await
        .assert_error(409, "sequence_exhausted");
}

#[tokio::test]
async fn the_vend_statement_commits_synchronously_whatever_the_session_says() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("sync", 1, 10).await;
    let direct = db.connect().await;
    // As through a pooler that dropped seqvend's startup options, on a server set to off.
    direct
        .batch_execute("BEGIN; SET LOCAL synchronous_commit = off")
        .await
        .unwrap();
    direct
        .query("SELECT * FROM seqvend.vend('{sync}', '{1}')", &[])
        .await
        .unwrap();
    let setting: String = direct
        .query_one("SELECT current_setting('synchronous_commit')", &[])
        .await
        .unwrap()
        .get(0);
    direct.batch_execute("COMMIT").await.unwrap();
    assert_eq!(setting, "on", "the vend's commit waits for its WAL flush");
}

/// The backend of a statement like `query` (an SQL LIKE pattern) whose commit waits for a
/// synchronous standby, if any; the longest waiting when several do (a `COMMIT` of the
/// request's and one of a renewal's may wait at once).
async fn waiting_for_the_standby(observer: &tokio_postgres::Client, query: &str) -> Option<i32> {
    observer
        .query_opt(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'SyncRep' \
             AND query LIKE $1 ORDER BY query_start LIMIT 1",
            &[&query],
        )
        .await
        .unwrap()
        .map(|row| row.get(0))
}

/// A synchronous standby that never answers: every commit waits for it.
async fn name_an_absent_synchronous_standby(dba: &tokio_postgres::Client) {
    dba.batch_execute("ALTER SYSTEM SET synchronous_standby_names = 'absent'")
        .await
        .unwrap();
    dba.batch_execute("SELECT pg_reload_conf()").await.unwrap();
}

/// Sends requests (`send`) one at a time until one waits for the synchronous standby in a
/// statement like `query`: backends read a reloaded `synchronous_standby_names` at their next
/// command, so a request that ran before that answers 200, and a later one waits. Returns
/// that request, still waiting, and its backend.
async fn until_a_request_waits_for_the_standby(
    observer: &tokio_postgres::Client,
    query: &str,
    send: impl Fn() -> tokio::task::JoinHandle<Reply>,
) -> (tokio::task::JoinHandle<Reply>, i32) {
    loop {
        let request = send();
        let waiting = eventually_some(
            Duration::from_secs(20),
            "a request waits for the standby, or answers",
            || async {
                if request.is_finished() {
                    return Some(None);
                }
                waiting_for_the_standby(observer, query).await.map(Some)
            },
        )
        .await;
        match waiting {
            Some(pid) => return (request, pid),
            None => assert_eq!(request.await.unwrap().status, StatusCode::OK),
        }
    }
}

/// PostgreSQL commits locally, with only a WARNING, when a commit's wait for the synchronous
/// standby is cancelled (here by a DBA's pg_cancel_backend). Those values may be missing on the
/// standby a failover promotes, so seqvend must not hand them out.
#[tokio::test(flavor = "multi_thread")]
async fn values_whose_commit_the_synchronous_standby_did_not_confirm_are_withheld() {
    let pg = Pg::start("syncrep", &[]).await;
    let db = TestDb::create(&pg.cluster).await;
    let mut settings = test_settings();
    // Long enough that only the cancelled wait can end the request early.
    settings.vend.deadline = Duration::from_secs(60);
    settings.vend.statement_deadline = Duration::from_secs(60);
    let app = std::sync::Arc::new(spawn_app_on(&db, settings).await);
    app.create_ok("sync", 1, 1000).await;
    assert_eq!(app.next_value("sync").await, 1);

    let dba = db.connect().await;
    name_an_absent_synchronous_standby(&dba).await;
    let (request, pid) = until_a_request_waits_for_the_standby(&dba, "%seqvend.vend%", || {
        let app = app.clone();
        tokio::spawn(async move { app.next("sync").await })
    })
    .await;
    dba.query_one("SELECT pg_cancel_backend($1)", &[&pid])
        .await
        .unwrap();
    let reply = request.await.unwrap();
    reply.assert_error(503, "unavailable");
    let committed: i64 = dba
        .query_one("SELECT high_water FROM seqvend.range_marks", &[])
        .await
        .unwrap()
        .get(0);

    dba.batch_execute("ALTER SYSTEM RESET synchronous_standby_names")
        .await
        .unwrap();
    dba.batch_execute("SELECT pg_reload_conf()").await.unwrap();
    if let Some(pid) = waiting_for_the_standby(&dba, "%seqvend.vend%").await {
        dba.query_one("SELECT pg_cancel_backend($1)", &[&pid])
            .await
            .unwrap();
    }
    let next = eventually_some(Duration::from_secs(20), "vending resumes", || async {
        let reply = app.next("sync").await;
        (reply.status == StatusCode::OK).then(|| reply.body["value"].as_i64().unwrap())
    })
    .await;
    assert!(
        next > committed,
        "{next} comes after {committed}, which was committed locally and withheld"
    );
}

/// The registry pool's durable commits (worker ids, block lease rows and their renewals) are
/// held to the vend statement's rule: a commit whose wait for the synchronous standby was
/// cancelled is committed here only, and what it records is not acted on. Here a worker id:
/// handed out, it could be handed out again by the standby a failover promotes.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_id_whose_lease_the_synchronous_standby_did_not_confirm_is_not_handed_out() {
    let pg = Pg::start("syncrep-worker", &[]).await;
    let db = TestDb::create(&pg.cluster).await;
    let app = std::sync::Arc::new(spawn_app_on(&db, test_settings()).await);
    a_warning_outside_any_durable_commit(&db.url).await;
    let dba = db.connect().await;
    name_an_absent_synchronous_standby(&dba).await;
    // A waiting `COMMIT` may be another commit of the instance's (a renewal), while the
    // request's own commit ran on a connection that had not yet read the reloaded setting and
    // rightly answered 200. So a 200 sends another request; with the check gone every attempt
    // answers 200 (each of its commits waited and was cancelled), and the test fails.
    let mut attempts = 0;
    let reply = loop {
        attempts += 1;
        let (request, _) = until_a_request_waits_for_the_standby(&dba, "COMMIT", || {
            let app = app.clone();
            tokio::spawn(async move {
                app.request(Method::POST, "/workers/lease", Some(VEND_TOKEN), None)
                    .await
            })
        })
        .await;
        // Every waiting commit, the instance's own renewals too: the request's among them.
        assert!(cancel_commits_waiting_for_the_standby(&dba).await >= 1);
        let reply = request.await.unwrap();
        if reply.status != StatusCode::OK || attempts == 5 {
            break reply;
        }
    };
    reply.assert_error(503, "unavailable");

    forget_the_absent_standby(&dba).await;
}

/// A keyed answer whose first commit the synchronous standby did not confirm (answered 503) is
/// committed here only. Replayed to a retry before it is durable, its values could be handed
/// out again by the standby a failover promotes: so the replay's own commit waits for the
/// standby too, and a cancelled wait withholds the replay as it withheld the first answer.
#[tokio::test(flavor = "multi_thread")]
async fn a_keyed_answer_the_standby_did_not_confirm_is_not_replayed_before_it_is_durable() {
    let pg = Pg::start("syncrep-replay", &[]).await;
    let db = TestDb::create(&pg.cluster).await;
    let mut settings = test_settings();
    // Long enough that only a cancelled wait can end a request early.
    settings.vend.deadline = Duration::from_secs(60);
    settings.vend.statement_deadline = Duration::from_secs(60);
    let app = std::sync::Arc::new(spawn_app_on(&db, settings).await);
    app.create_ok("replay", 1, 1000).await;
    assert_eq!(app.next_value("replay").await, 1);
    let dba = db.connect().await;
    name_an_absent_synchronous_standby(&dba).await;

    // A new key per attempt: an attempt that ran before the reload rightly answered 200.
    let attempts = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let keyed = |key: String| {
        let app = app.clone();
        tokio::spawn(async move {
            let (reply, _) = app
                .keyed_post("/sequences/replay/next", &key, VEND_TOKEN)
                .await;
            reply
        })
    };
    let (first, pid) = until_a_request_waits_for_the_standby(&dba, "%seqvend.vend%", || {
        let n = attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        keyed(format!("parcel-{n}"))
    })
    .await;
    let key = format!(
        "parcel-{}",
        attempts.load(std::sync::atomic::Ordering::SeqCst)
    );
    dba.query_one("SELECT pg_cancel_backend($1)", &[&pid])
        .await
        .unwrap();
    first.await.unwrap().assert_error(503, "unavailable");

    // The retry: it must wait for the standby, not answer from the local commit.
    let retry = keyed(key.clone());
    let pid = eventually_some(
        Duration::from_secs(20),
        "the retry waits for the standby, or answers",
        || async {
            assert!(
                !retry.is_finished(),
                "the retry answered before the standby confirmed the answer it replays"
            );
            waiting_for_the_standby(&dba, "%seqvend.vend%").await
        },
    )
    .await;
    dba.query_one("SELECT pg_cancel_backend($1)", &[&pid])
        .await
        .unwrap();
    retry.await.unwrap().assert_error(503, "unavailable");

    // Once the standby requirement is gone, the retry replays the stored answer.
    dba.batch_execute("ALTER SYSTEM RESET synchronous_standby_names")
        .await
        .unwrap();
    dba.batch_execute("SELECT pg_reload_conf()").await.unwrap();
    cancel_commits_waiting_for_the_standby(&dba).await;
    let replayed = eventually_some(Duration::from_secs(20), "the retry replays", || async {
        let (reply, replayed) = app
            .keyed_post("/sequences/replay/next", &key, VEND_TOKEN)
            .await;
        (reply.status == StatusCode::OK).then_some(replayed)
    })
    .await;
    assert!(replayed, "the stored answer is replayed, not drawn anew");
}
