//! Through the pooler too, a commit whose wait for the synchronous standby was cancelled
//! (PostgreSQL then commits locally, with only a WARNING) is never answered with its values:
//! PgBouncer passes the WARNING on, and the vend transaction's COMMIT is what waits. The same
//! for the registry's durable commits (a worker id here).

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};

use crate::bouncer::Pooled;
use crate::helpers::*;

/// A backend serving PgBouncer (a vend transaction) that waits at COMMIT for the standby.
async fn vend_commit_waiting(pooled: &Pooled, dba: &tokio_postgres::Client) -> Option<i32> {
    let pooled_backends = pooled.pooled_backends().await;
    dba.query(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
         AND wait_event = 'SyncRep' AND query = 'COMMIT'",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|row| row.get(0))
    .find(|pid| pooled_backends.contains(pid))
}

#[tokio::test(flavor = "multi_thread")]
async fn values_whose_commit_the_standby_did_not_confirm_are_withheld_through_pgbouncer() {
    let pg = Pg::start("pgbouncer-syncrep", &[]).await;
    let db = TestDb::create(&pg.cluster).await;
    let dba = db.connect().await;
    let mut settings = test_settings();
    // Long enough that only the cancelled wait can end the request early.
    settings.vend.deadline = Duration::from_secs(60);
    settings.vend.statement_deadline = Duration::from_secs(60);
    let pooled = Arc::new(Pooled::start_on(db, settings).await);
    pooled.app.create_ok("sync", 1, 1000).await;
    assert_eq!(pooled.app.next_value("sync").await, 1);

    // A synchronous standby that never answers: every commit waits for it.
    dba.batch_execute("ALTER SYSTEM SET synchronous_standby_names = 'absent'")
        .await
        .unwrap();
    dba.batch_execute("SELECT pg_reload_conf()").await.unwrap();
    // A server connection reads the reloaded setting at its next command; a vend on one that
    // had not yet completes normally, and the next one waits.
    let (request, pid) = until_a_vend_waits(
        || {
            let pooled = pooled.clone();
            tokio::spawn(async move { pooled.app.next("sync").await })
        },
        || vend_commit_waiting(&pooled, &dba),
    )
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
    // Commits that waited since (the registry's renewals) go on at once.
    cancel_commits_waiting_for_the_standby(&dba).await;
    let next = eventually_some(Duration::from_secs(20), "vending resumes", || async {
        let reply = pooled.app.next("sync").await;
        (reply.status == StatusCode::OK).then(|| reply.body["value"].as_i64().unwrap())
    })
    .await;
    assert!(
        next > committed,
        "{next} comes after {committed}, which was committed locally and withheld"
    );
}

/// Sends vends (`send`) until one of them waits where `waiting` looks (e.g. for a synchronous
/// standby); one that found nothing to wait for must have answered 200. Returns the waiting
/// request and what `waiting` found (its backend).
async fn until_a_vend_waits<S, W, WF>(send: S, waiting: W) -> (tokio::task::JoinHandle<Reply>, i32)
where
    S: Fn() -> tokio::task::JoinHandle<Reply>,
    W: Fn() -> WF,
    WF: std::future::Future<Output = Option<i32>>,
{
    loop {
        let request = send();
        let found = eventually_some(
            Duration::from_secs(20),
            "a vend waits, or answers",
            || async {
                if request.is_finished() {
                    return Some(None);
                }
                waiting().await.map(Some)
            },
        )
        .await;
        match found {
            Some(pid) => return (request, pid),
            None => assert_eq!(request.await.unwrap().status, StatusCode::OK),
        }
    }
}

/// The registry's durable commits through the pooler too: a worker id whose lease commit the
/// synchronous standby did not confirm is not handed out (503), though PgBouncer, not seqvend,
/// holds the server connection that committed it.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_id_the_standby_did_not_confirm_is_withheld_through_pgbouncer() {
    let pg = Pg::start("pgbouncer-syncrep-worker", &[]).await;
    let db = TestDb::create(&pg.cluster).await;
    let dba = db.connect().await;
    let url = db.url.clone();
    let pooled = Arc::new(Pooled::start_on(db, test_settings()).await);
    a_warning_outside_any_durable_commit(&url).await;
    dba.batch_execute("ALTER SYSTEM SET synchronous_standby_names = 'absent'")
        .await
        .unwrap();
    dba.batch_execute("SELECT pg_reload_conf()").await.unwrap();
    // The waiting COMMIT may be one of the instance's own renewals while the request's commit
    // ran before its server connection read the setting (and rightly answered 200): then
    // another request. With the check gone every attempt answers 200, and the test fails.
    let mut attempts = 0;
    let reply = loop {
        attempts += 1;
        let (request, _) = until_a_vend_waits(
            || {
                let pooled = pooled.clone();
                tokio::spawn(async move {
                    let lease = (Method::POST, "/workers/lease");
                    pooled
                        .app
                        .request(lease.0, lease.1, Some(VEND_TOKEN), None)
                        .await
                })
            },
            || vend_commit_waiting(&pooled, &dba),
        )
        .await;
        cancel_commits_waiting_for_the_standby(&dba).await;
        let reply = request.await.unwrap();
        if reply.status != StatusCode::OK || attempts == 5 {
            break reply;
        }
    };
    reply.assert_error(503, "unavailable");
    forget_the_absent_standby(&dba).await;
}
