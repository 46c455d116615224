//! Leases never hand out a value twice: a keyed lease is replayed exactly as first answered,
//! every lease and worker-id write commits durably whatever the session says, a renewal never
//! extends a lease of a retired sequence, a closed reservoir's release spares its successor's
//! lease, and a dropped range sequence can be recreated past what was handed out.

use std::future::Future;
use std::time::Duration;

use reqwest::StatusCode;
use seqvend::domain::SequenceName;
use serde_json::json;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

use crate::helpers::*;

const RACING_HOLDER: &str = "instance:racing";

async fn keyed_lease(app: &TestApp, name: &str, count: u32, key: &str) -> (Reply, bool) {
    let path = format!("/sequences/{name}/leases?count={count}");
    app.keyed_post(&path, key, VEND_TOKEN).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_keyed_lease_rolling_into_a_lower_range_is_replayed_exactly_as_first_answered() {
    let app = spawn_app().await;
    app.create_ok("hops", 100, 102).await;
    app.add_range_ok("hops", 10, 11).await;
    app.add_range_ok("hops", 105, 200).await;
    let (first, replayed) = keyed_lease(&app, "hops", 10, "hop-1").await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert!(!replayed);
    let handed_out = json!([
        {"first": 100, "last": 102, "increment": 1},
        {"first": 10, "last": 11, "increment": 1},
        {"first": 105, "last": 109, "increment": 1},
    ]);
    assert_eq!(first.body["blocks"], handed_out);
    let (again, replayed) = keyed_lease(&app, "hops", 10, "hop-1").await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert!(replayed);
    for field in ["blocks", "count", "exhausted", "expires_at"] {
        assert_eq!(again.body[field], first.body[field], "{field}");
    }
}

/// A pool the way a pooler that drops startup options leaves seqvend's sessions: no
/// `synchronous_commit = on` of seqvend's own, on a database whose default is off.
async fn pool_without_seqvend_settings(db: &TestDb) -> PgPool {
    let options: PgConnectOptions = db.url.parse().unwrap();
    PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options.application_name("pooled"))
        .await
        .unwrap()
}

/// Records, for every row written to the lease tables by the `pooled` sessions, the
/// `synchronous_commit` its transaction ran with when it wrote the row.
const RECORD_COMMIT_SETTING: &str = "
    CREATE TABLE public.commit_settings (tbl text, setting text);
    CREATE FUNCTION public.record_commit_setting() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF current_setting('application_name') = 'pooled' THEN
            INSERT INTO public.commit_settings
            VALUES (TG_TABLE_NAME, current_setting('synchronous_commit'));
        END IF;
        RETURN NEW;
    END $$;
    CREATE TRIGGER record_commit_setting BEFORE INSERT OR UPDATE ON seqvend.leases
        FOR EACH ROW EXECUTE FUNCTION public.record_commit_setting();
    CREATE TRIGGER record_commit_setting BEFORE INSERT OR UPDATE ON seqvend.worker_ids
        FOR EACH ROW EXECUTE FUNCTION public.record_commit_setting();
";

#[tokio::test(flavor = "multi_thread")]
async fn lease_and_worker_id_writes_commit_synchronously_whatever_the_session_says() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("durable", 1, 1000).await;
    // Migrated: nothing of the instance writes the lease tables from here on.
    app.stopped().await;
    let direct = db.connect().await;
    direct.batch_execute(RECORD_COMMIT_SETTING).await.unwrap();
    direct
        .batch_execute("DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = off', current_database()); END $$")
        .await
        .unwrap();
    let pool = pool_without_seqvend_settings(&db).await;
    let session: String = sqlx::query_scalar("SELECT current_setting('synchronous_commit')")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(session, "off", "the session itself does not ask for it");

    // An instance's cached lease: drawn, renewed, released.
    let lease: i64 = sqlx::query_scalar(
        "SELECT lease_id FROM seqvend.lease('durable', 5, 'instance', $1, interval '60 s')",
    )
    .bind(RACING_HOLDER)
    .fetch_one(&pool)
    .await
    .unwrap();
    let registry = seqvend::db::Registry::from_pool(pool.clone());
    let length = Duration::from_secs(60);
    let renewed =
        seqvend::registry::renew_instance_leases(&registry, RACING_HOLDER, &[lease], length)
            .await
            .unwrap();
    assert!(renewed.contains(&lease));
    seqvend::registry::release_lease(&registry, lease)
        .await
        .unwrap();

    // A worker id: taken, renewed, released.
    let length = Duration::from_secs(30);
    let worker = seqvend::ids::worker_lease::take(&registry, 1_000, length)
        .await
        .unwrap();
    let worker_id = i64::from(worker.worker_id);
    seqvend::ids::worker_lease::renew(&registry, worker_id, &worker.holder, 2_000, length)
        .await
        .unwrap();
    seqvend::ids::worker_lease::release(&registry, worker.worker_id, &worker.holder, 2_000)
        .await
        .unwrap();

    let seen: Vec<(String, String)> =
        sqlx::query_as("SELECT tbl, setting FROM public.commit_settings ORDER BY tbl, setting")
            .fetch_all(&pool)
            .await
            .unwrap();
    let expected = [
        ("leases", "on"),
        ("leases", "on"),
        ("leases", "on"),
        ("worker_ids", "on"),
        ("worker_ids", "on"),
        ("worker_ids", "on"),
    ];
    let seen: Vec<(&str, &str)> = seen.iter().map(|(t, s)| (&**t, &**s)).collect();
    assert_eq!(
        seen, expected,
        "each write committed with synchronous_commit on"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn releasing_a_closed_reservoirs_leases_spares_the_lease_its_successor_took() {
    let db = TestDb::shared().await;
    // A reservoir closed by a policy change held `closed`; its successor (the policy changed
    // back) leased `successor` before the release of the closed one's leases ran.
    let (_app, pool, closed) = leased_sequence(&db, "succession").await;
    let successor = racing_lease(&pool, "succession").await;
    let registry = seqvend::db::Registry::from_pool(pool.clone());
    seqvend::registry::release_sequence_leases(&registry, RACING_HOLDER, "succession", closed)
        .await
        .unwrap();
    let released: Vec<(i64, bool)> = sqlx::query_as(
        "SELECT id, released_at IS NOT NULL FROM seqvend.leases WHERE holder = $1 ORDER BY id",
    )
    .bind(RACING_HOLDER)
    .fetch_all(&pool)
    .await
    .unwrap();
    // Released, the successor's lease would no longer hold up a retirement while its values
    // are still handed out.
    assert_eq!(released, [(closed, true), (successor, false)]);
}

/// Waits until `task` has finished or a session runs a statement like `query` blocked on a
/// lock; says which.
async fn finished_or_blocked<T>(
    observer: &tokio_postgres::Client,
    task: &tokio::task::JoinHandle<T>,
    query: &str,
) -> Finished {
    eventually_some(Duration::from_secs(20), query, || async {
        if task.is_finished() {
            Some(Finished::Done)
        } else if sessions_blocked(observer, Blocked::OnALock, query).await > 0 {
            Some(Finished::Blocked)
        } else {
            None
        }
    })
    .await
}

#[derive(Debug, PartialEq, Eq)]
enum Finished {
    Done,
    Blocked,
}

/// A sequence with one live instance lease held by `RACING_HOLDER`: its lease id.
async fn leased_sequence(db: &TestDb, name: &str) -> (TestApp, PgPool, i64) {
    let app = spawn_app_on(db, test_settings()).await;
    app.create_ok(name, 1, 1000).await;
    let pool = pool_without_seqvend_settings(db).await;
    let lease = racing_lease(&pool, name).await;
    (app, pool, lease)
}

/// A lease of 5 values of `name` for `RACING_HOLDER`, live for a minute: its id.
async fn racing_lease(pool: &PgPool, name: &str) -> i64 {
    sqlx::query_scalar("SELECT lease_id FROM seqvend.lease($1, 5, 'instance', $2, interval '60 s')")
        .bind(name)
        .bind(RACING_HOLDER)
        .fetch_one(pool)
        .await
        .unwrap()
}

fn spawn_renewal(
    pool: &PgPool,
    lease: i64,
) -> tokio::task::JoinHandle<std::collections::HashSet<i64>> {
    let pool = pool.clone();
    tokio::spawn(async move {
        let registry = seqvend::db::Registry::from_pool(pool);
        let length = Duration::from_secs(60);
        seqvend::registry::renew_instance_leases(&registry, RACING_HOLDER, &[lease], length)
            .await
            .unwrap()
    })
}

fn spawn_retirement(pool: &PgPool, name: &str) -> tokio::task::JoinHandle<()> {
    let pool = pool.clone();
    let name = SequenceName::parse(name).unwrap();
    tokio::spawn(async move {
        let registry = seqvend::db::Registry::from_pool(pool);
        seqvend::registry::retire_sequence(&registry, &name, "test")
            .await
            .unwrap();
    })
}

async fn joined<T>(task: impl Future<Output = Result<T, tokio::task::JoinError>>) -> T {
    tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("finished in time")
        .expect("did not panic")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retirement_committed_while_a_renewal_is_in_flight_is_never_renewed_past() {
    let db = TestDb::shared().await;
    let (_app, pool, lease) = leased_sequence(&db, "retiring").await;
    let observer = db.connect().await;
    // A session holds the lease row: the renewal, once it has read the sequence, waits here.
    let holder = db.connect().await;
    holder.batch_execute("BEGIN").await.unwrap();
    holder
        .execute(
            "SELECT 1 FROM seqvend.leases WHERE id = $1 FOR UPDATE",
            &[&lease],
        )
        .await
        .unwrap();
    let renewal = spawn_renewal(&pool, lease);
    // The renewal waits for the lease row.
    until_blocked(&observer, 1, Blocked::OnALock, "%UPDATE seqvend.leases%").await;
    let retirement = spawn_retirement(&pool, "retiring");
    let retirement_state = finished_or_blocked(
        &observer,
        &retirement,
        "%FROM seqvend.sequences WHERE id = $1 FOR UPDATE%",
    )
    .await;
    holder.batch_execute("ROLLBACK").await.unwrap();
    let renewed = joined(renewal).await;
    joined(retirement).await;
    if retirement_state == Finished::Done {
        assert!(
            !renewed.contains(&lease),
            "the sequence was retired before the renewal committed, yet its lease was renewed"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_renewal_waiting_on_a_retirement_renews_nothing_of_the_retired_sequence() {
    let db = TestDb::shared().await;
    let (_app, pool, lease) = leased_sequence(&db, "retired-first").await;
    let observer = db.connect().await;
    // A session holds the event log: the retirement, once it has marked the sequence retired,
    // waits here to record its event.
    let holder = db.connect().await;
    holder
        .batch_execute("BEGIN; LOCK TABLE seqvend.events IN SHARE MODE")
        .await
        .unwrap();
    let retirement = spawn_retirement(&pool, "retired-first");
    // The retirement waits for the event log.
    until_blocked(
        &observer,
        1,
        Blocked::OnALock,
        "%INSERT INTO seqvend.events%",
    )
    .await;
    let renewal = spawn_renewal(&pool, lease);
    let renewal_state = finished_or_blocked(&observer, &renewal, "%seqvend.leases%").await;
    holder.batch_execute("COMMIT").await.unwrap();
    joined(retirement).await;
    let renewed = joined(renewal).await;
    assert!(
        !renewed.contains(&lease),
        "a lease of a retired sequence was renewed (the renewal {renewal_state:?} meanwhile)"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_range_sequence_is_recreated_past_what_was_handed_out() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("dropped", 1, 100).await;
    let mut seen = values_of(&app.next_batch("dropped", 5).await);
    let direct = db.connect().await;
    let range: i32 = direct
        .query_one(
            "SELECT r.id FROM seqvend.ranges r JOIN seqvend.sequences s ON s.id = r.sequence_id \
             WHERE s.name = 'dropped'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    direct
        .batch_execute(&format!("DROP SEQUENCE seqvend_ranges.r{range}"))
        .await
        .unwrap();
    app.next("dropped")
        .await
        .assert_error(500, "sequence_failed");

    let recreated: String = direct
        .query_one(
            "SELECT seqvend.recreate_range_sequence($1)::text",
            &[&range],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(recreated, format!("seqvend_ranges.r{range}"));
    let again = app.next_batch("dropped", 3).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(
        values_of(&again),
        [6, 7, 8],
        "values continue after the mark"
    );
    seen.extend(values_of(&again));
    assert_unique(&seen);

    let refused = direct
        .query_one("SELECT seqvend.recreate_range_sequence($1)", &[&range])
        .await
        .expect_err("a sequence that exists is not recreated");
    let message = refused
        .as_db_error()
        .expect("refused by PostgreSQL")
        .message();
    assert!(message.contains("still exists"), "{message}");
    assert_eq!(app.next_value("dropped").await, 9);
}
