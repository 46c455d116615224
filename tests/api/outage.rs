//! PostgreSQL down: seqvend answers 503 `unavailable` fast, reports not ready, and recovers
//! by itself when the database returns.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use seqvend::local_pg::Shutdown;

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread")]
async fn with_postgresql_down_requests_are_503_within_a_second_and_service_recovers() {
    let pg = Pg::start("outage", &[]).await;
    let db = TestDb::create(&pg.cluster).await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("o", 1, 1000).await;
    assert_eq!(app.next_value("o").await, 1);

    pg.stop(Shutdown::Fast).await;
    for _ in 0..3 {
        let started = Instant::now();
        let reply = app.next("o").await;
        reply.assert_error(503, "unavailable");
        assert_eq!(reply.headers["retry-after"], "1");
        assert!(
            started.elapsed() < Duration::from_millis(1500),
            "took {:?}",
            started.elapsed()
        );
    }
    app.get("o").await.assert_error(503, "unavailable");
    app.create_raw(r#"{"name": "p", "min": 1, "max": 2}"#)
        .await
        .assert_error(503, "unavailable");
    app.request(Method::GET, "/readyz", None, None)
        .await
        .assert_error(503, "unavailable");
    assert_eq!(
        app.request(Method::GET, "/healthz", None, None)
            .await
            .status,
        StatusCode::OK
    );

    pg.start_again().await;
    let back = Instant::now();
    eventually(Duration::from_secs(5), "vending resumes", || async {
        app.next("o").await.status == StatusCode::OK
    })
    .await;
    assert!(back.elapsed() < Duration::from_secs(5));
    assert_eq!(
        app.request(Method::GET, "/readyz", None, None).await.status,
        StatusCode::OK
    );
    assert!(app.next_value("o").await > 1);
}

/// A registry query the server never answers (here it waits on a lock; a frozen server is
/// the same to seqvend) is answered 503 at seqvend's own deadline. The server's
/// `statement_timeout` is set out of reach: only seqvend's clock acts.
#[tokio::test(flavor = "multi_thread")]
async fn a_registry_request_the_database_does_not_answer_is_503_at_the_deadline() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.database.statement_timeout = Duration::from_secs(600);
    settings.vend.statement_deadline = Duration::from_millis(500);
    let app = spawn_app_on(&db, settings).await;
    app.create_ok("locked", 1, 1000).await;
    let blocker = db.connect().await;
    blocker
        .batch_execute("BEGIN; LOCK TABLE seqvend.sequences IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(60), app.get("locked"))
        .await
        .expect("answered at the deadline, not when the lock is released");
    reply.assert_error(503, "unavailable");
    assert!(reply.headers.contains_key("retry-after"));
    blocker.batch_execute("ROLLBACK").await.unwrap();
    let read = app.get("locked").await;
    assert_eq!(
        (read.status.as_u16(), &read.body["name"]),
        (200, &serde_json::json!("locked"))
    );
}

/// Ready means a writable primary answers: a database that answers read-only (a standby, a
/// leader Patroni demoted, a primary set read-only) is not ready, and ready again once writable.
#[tokio::test(flavor = "multi_thread")]
async fn a_database_that_answers_read_only_is_not_ready_until_it_takes_writes_again() {
    let pg = Pg::start("read-only", &[]).await;
    let db = TestDb::create(&pg.cluster).await;
    let app = spawn_app_on(&db, test_settings()).await;
    let ready = || async { app.request(Method::GET, "/readyz", None, None).await };
    assert_eq!(ready().await.status, StatusCode::OK);

    let dba = db.connect().await;
    let set_read_only = |on: bool| {
        let statement = format!("ALTER SYSTEM SET default_transaction_read_only = {on}");
        let dba = &dba;
        async move {
            dba.batch_execute(&statement).await.unwrap();
            dba.batch_execute("SELECT pg_reload_conf()").await.unwrap();
        }
    };
    set_read_only(true).await;
    let what = "readiness reports the read-only database";
    eventually(Duration::from_secs(20), what, || async {
        let reply = ready().await;
        reply.status == StatusCode::SERVICE_UNAVAILABLE && reply.code() == "unavailable"
    })
    .await;

    set_read_only(false).await;
    eventually(Duration::from_secs(20), "ready again", || async {
        ready().await.status == StatusCode::OK
    })
    .await;
}
