//! A request for numbers is answered by its deadline counted from its arrival, whatever step
//! it is held in: here the catalog read before the vend statement, which has a (longer)
//! deadline of its own. Each such answer's lateness is exported.

use std::time::{Duration, Instant};

use crate::helpers::*;

/// The vend deadline these tests set: short, so a wait past it shows.
const VEND_DEADLINE: Duration = Duration::from_millis(1000);
/// The registry's own deadline (the catalog read's), far beyond the vend deadline: the vend
/// must not wait for it.
const REGISTRY_DEADLINE: Duration = Duration::from_secs(15);
/// What the test allows past the deadline for its own scheduling and seqvend's on a shared,
/// loaded machine (the Patroni runs measured seqvend's answers ready within 5 ms of their
/// deadline; the client's own view adds its scheduling). Far below the registry deadline, so
/// a deadline that does not cover the catalog read fails.
const ALLOWANCE: Duration = Duration::from_millis(1500);

#[tokio::test(flavor = "multi_thread")]
async fn a_vend_held_before_its_statement_is_answered_503_at_the_vend_deadline() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.database.statement_timeout = Duration::from_secs(600);
    settings.vend.statement_deadline = REGISTRY_DEADLINE;
    settings.vend.deadline = VEND_DEADLINE;
    // One instance creates the sequence; the other has never read it, so its vend reads the
    // catalog first.
    let creator = spawn_app_on(&db, settings.clone()).await;
    let app = spawn_app_on(&db, settings).await;
    creator.create_ok("held", 1, 1000).await;
    let blocker = db.connect().await;
    blocker
        .batch_execute("BEGIN; LOCK TABLE seqvend.sequences IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();

    let sent = Instant::now();
    let reply = app.next("held").await;
    let took = sent.elapsed();
    reply.assert_error(503, "unavailable");
    assert!(reply.headers.contains_key("retry-after"));
    assert!(
        took <= VEND_DEADLINE + ALLOWANCE,
        "answered after {took:?}, deadline {VEND_DEADLINE:?}"
    );

    blocker.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        app.next_value("held").await,
        1,
        "nothing was drawn for the 503"
    );
    let metrics = app.scrape().await;
    let answered =
        r#"seqvend_http_request_lateness_seconds_count{route="/sequences/{name}/next"} 2"#;
    assert!(metrics.contains(answered), "{metrics}");
}
