//! PostgreSQL down: seqvend answers 503 `unavailable` fast, reports not ready, and recovers
//! by itself when the database returns.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use seqvend::local_pg::Shutdown;

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread")]
async fn with_postgresql_down_requests_are_503_within_a_second_and_service_recovers() {
    let pg = OwnCluster::start("outage").await;
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

    pg.restart().await;
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
