//! Starting an instance on a database that does not answer a startup step: startup fails
//! within its patience, naming the step, instead of waiting forever with nothing bound.

use std::time::{Duration, Instant};

use seqvend::startup::Application;

use crate::helpers::*;

/// The lock migrations take ('SVMG', see `migrate`).
const MIGRATION_LOCK: i64 = 0x5356_4d47;

/// How long this test lets each startup step wait.
const PATIENCE: Duration = Duration::from_secs(3);

/// Starts an instance on `db` that only its startup patience stops: no statement of its own
/// times out first, as when the server stops answering. Its error, and how long it took.
async fn failed_start(db: &TestDb) -> (String, Duration) {
    let mut settings = test_settings();
    settings.database.statement_timeout = Duration::from_secs(600);
    settings.database.startup_patience = PATIENCE;
    let started = Instant::now();
    let build = Application::build(&settings, &db.url);
    match within(Duration::from_secs(60), "startup to fail", build).await {
        Ok(_) => panic!("seqvend started"),
        Err(err) => (format!("{err:#}"), started.elapsed()),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_startup_step_that_gets_no_answer_fails_naming_the_step_within_the_startup_patience() {
    let db = TestDb::shared().await;
    let _migrated = spawn_app_on(&db, test_settings()).await;
    let dba = db.connect().await;

    dba.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .await
        .unwrap();
    let (err, took) = failed_start(&db).await;
    assert!(err.starts_with("migrating: no answer within 3s"), "{err}");
    assert!(took < PATIENCE * 10, "took {took:?}");
    dba.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
        .await
        .unwrap();

    dba.batch_execute("BEGIN; LOCK TABLE seqvend.snowflake_layout IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let (err, took) = failed_start(&db).await;
    assert!(
        err.starts_with("fixing the Snowflake layout: no answer within 3s"),
        "{err}"
    );
    assert!(took < PATIENCE * 10, "took {took:?}");
    dba.batch_execute("ROLLBACK").await.unwrap();

    // Nothing was left behind: the next instance starts.
    spawn_app_on(&db, test_settings())
        .await
        .snowflake_ids(1)
        .await;
}

/// Migrating a fresh database takes far longer than a statement timeout meant for serving;
/// the operator's timeout must not stop the migrations (it bounds the statements served
/// after them, which at 1 ms may well fail the start at a later step: that is not under test).
#[tokio::test(flavor = "multi_thread")]
async fn a_statement_timeout_shorter_than_the_migrations_does_not_stop_them() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.database.statement_timeout = Duration::from_millis(1);
    let build = Application::build(&settings, &db.url);
    let started = within(
        Duration::from_secs(180),
        "a start with a 1 ms statement timeout",
        build,
    )
    .await;
    if let Err(err) = &started {
        let err = format!("{err:#}");
        assert!(!err.starts_with("migrating"), "{err}");
    }
    drop(started);
    let dba = db.connect().await;
    let applied: i64 = dba
        .query_one("SELECT count(*) FROM seqvend._sqlx_migrations", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(applied as usize, seqvend::migrate::MIGRATOR.iter().count());
}
