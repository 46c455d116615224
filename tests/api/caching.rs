//! Cached sequences: values drawn durably in leased blocks, handed out from an instance's
//! memory; policies changed at run time; retirement that waits for every instance's cache.

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::concurrency::drain;
use crate::helpers::*;

/// A sequence over [min, max] whose instances cache `size` values each.
async fn create_cached(app: &TestApp, name: &str, min: i64, max: i64, size: u64) -> Value {
    let reply = app
        .create(json!({"name": name, "min": min, "max": max, "cache": {"size": size}}))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    reply.body
}

async fn patch(app: &TestApp, name: &str, body: Value) -> Reply {
    app.request(
        Method::PATCH,
        &format!("/sequences/{name}"),
        Some(ADMIN_TOKEN),
        Some(body),
    )
    .await
}

/// A counter's value in a Prometheus scrape (0 when absent).
pub fn counter(scrape: &str, series: &str) -> u64 {
    scrape
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0, |value| value.parse().unwrap())
}

/// `columns` of each lease recorded for `sequence` (its row `l`), oldest first.
async fn lease_rows(db: &TestDb, sequence: &str, columns: &str) -> Vec<tokio_postgres::Row> {
    let sql = format!(
        "SELECT {columns} FROM seqvend.leases l JOIN seqvend.sequences s ON s.id = l.sequence_id
          WHERE s.name = $1 ORDER BY l.id"
    );
    db.connect().await.query(&sql, &[&sequence]).await.unwrap()
}

/// Leases recorded for `sequence`: (kind, values, released).
async fn leases(db: &TestDb, sequence: &str) -> Vec<(String, i64, bool)> {
    let columns = "l.kind, l.value_count, l.released_at IS NOT NULL";
    let rows = lease_rows(db, sequence, columns).await;
    rows.iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cached_sequence_hands_out_values_from_memory_drawn_in_leased_blocks() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let created = create_cached(&app, "c", 1, 1_000_000, 1000).await;
    assert_eq!(
        created["cache"],
        json!({"size": 1000, "buffer_seconds": 30, "min": 200})
    );
    let mut values = Vec::new();
    for _ in 0..300 {
        values.push(app.next_value("c").await);
    }
    values.extend(values_of(&app.next_batch("c", 50).await));
    assert_unique(&values);
    assert!(increasing(&values), "one instance's values increase");
    // 350 values in 301 requests, from a block of 1000: one lease, no statement per request.
    let drawn = leases(&db, "c").await;
    assert_eq!(drawn, vec![("instance".to_string(), 1000, false)]);
    let scrape = app.scrape().await;
    assert_eq!(
        counter(&scrape, "seqvend_cache_waits_total"),
        1,
        "only the first request waited"
    );
    assert_eq!(counter(&scrape, "seqvend_cache_hits_total"), 300);
    assert_eq!(
        counter(&scrape, r#"seqvend_values_vended_total{sequence="c"}"#),
        350
    );
    // The range's mark covers the whole block: nothing cached can be drawn again.
    let mark: i64 = db
        .connect()
        .await
        .query_one("SELECT high_water FROM seqvend.range_marks", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(mark, 1000);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refill_starts_in_the_background_before_the_cache_runs_dry() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    // No buffer: the refill mark is `min`, 20 values.
    let reply = app
        .create(json!({"name": "r", "min": 1, "max": 1_000_000,
                       "cache": {"size": 100, "buffer_seconds": 0, "min": 20}}))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    for _ in 0..80 {
        app.next_value("r").await;
    }
    assert_eq!(leases(&db, "r").await.len(), 1, "20 held: no refill yet");
    // 19 held: a refill of 81 starts, while requests are still served from memory.
    app.next_value("r").await;
    let granted = r#"seqvend_cache_refills_total{result="granted"}"#;
    eventually(
        Duration::from_secs(10),
        "a second block is in hand",
        || async { counter(&app.scrape().await, granted) == 2 },
    )
    .await;
    let mut vended = Vec::new();
    for _ in 0..80 {
        vended.push(app.next_value("r").await);
    }
    assert_eq!(vended, (82..=161).collect::<Vec<i64>>());
    let scrape = app.scrape().await;
    assert_eq!(
        counter(&scrape, "seqvend_cache_waits_total"),
        1,
        "only the very first request found the cache empty"
    );
    assert_eq!(counter(&scrape, "seqvend_cache_hits_total"), 160);
    assert_eq!(leases(&db, "r").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn values_cached_by_several_instances_never_repeat_and_stay_in_their_ranges() {
    let db = TestDb::shared().await;
    let mut apps = Vec::new();
    for _ in 0..3 {
        apps.push(Arc::new(spawn_app_on(&db, test_settings()).await));
    }
    create_cached(&apps[0], "m", 100, 1099, 64).await;
    apps[0].add_range_ok("m", 5000, 5099).await;
    // Four clients per instance, singles and batches, until every instance answers 409.
    let all = drain(&apps, 4, "m", |i| (i % 3 == 0).then_some(5)).await;
    assert_unique(&all);
    assert!(all
        .iter()
        .all(|v| (100..=1099).contains(v) || (5000..=5099).contains(v)));
    // Every value was handed out: a 409 comes only once no instance holds any.
    assert_eq!(all.len(), 1100);
}

/// Each lease of `sequence` and when it expires, in the database's clock.
async fn expiries(db: &TestDb, sequence: &str) -> Vec<(i64, std::time::SystemTime)> {
    let rows = lease_rows(db, sequence, "l.id, l.expires_at").await;
    rows.iter().map(|row| (row.get(0), row.get(1))).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn only_leases_whose_values_are_still_held_are_renewed() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.cache.renew_every = Duration::from_millis(100);
    let app = spawn_app_on(&db, settings).await;
    create_cached(&app, "renewed", 1, 1_000_000, 4).await;
    for _ in 0..40 {
        app.next_value("renewed").await;
    }
    let before = expiries(&db, "renewed").await;
    assert!(before.len() >= 10, "blocks of 4: {before:?}");
    // The leases of `before` a renewal since extended (a refill's new lease is none of them).
    let renewed = |now: &[(i64, std::time::SystemTime)]| -> Vec<i64> {
        now.iter()
            .filter(|(id, at)| before.iter().any(|(was, then)| was == id && then != at))
            .map(|(id, _)| *id)
            .collect()
    };
    // Wait for a renewal that began after the last value was handed out.
    let renewed = eventually_some(Duration::from_secs(10), "a renewal", || async {
        let extended = renewed(&expiries(&db, "renewed").await);
        (!extended.is_empty()).then_some(extended)
    })
    .await;
    // The reservoir holds the rest of one block and the few after it: the newest leases.
    // All but the newest 4 were handed out whole long before.
    let spent: Vec<i64> = before[..before.len() - 4]
        .iter()
        .map(|(id, _)| *id)
        .collect();
    assert!(
        renewed.iter().all(|id| !spent.contains(id)),
        "leases whose values were all handed out were renewed: {renewed:?} of {before:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lease_granted_after_its_refill_gave_up_is_released() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.vend.deadline = Duration::from_millis(300);
    let app = spawn_app_on(&db, settings).await;
    create_cached(&app, "late", 1, 1_000_000, 10).await;
    // The lease row cannot be written while this session holds the table.
    let blocker = db.connect().await;
    blocker
        .batch_execute("BEGIN; LOCK TABLE seqvend.leases IN SHARE MODE")
        .await
        .unwrap();
    let reply = app.next("late").await;
    reply.assert_error(503, "unavailable");
    // The request's wait and the refill's are two timers: the refill must have given up too.
    let refills = "seqvend_cache_refills_total{result=\"unavailable\"}";
    eventually(Duration::from_secs(10), "the refill gave up", || async {
        counter(&app.scrape().await, refills) == 1
    })
    .await;
    let observer = db.connect().await;
    until_blocked(&observer, 1, Blocked::OnALock, "%seqvend.lease(%").await;
    blocker.batch_execute("COMMIT").await.unwrap();
    // The statement goes on and grants a lease no reservoir holds: released, a retirement
    // need not wait out its expiry.
    eventually(
        Duration::from_secs(10),
        "the late lease released",
        || async {
            let leases = leases(&db, "late").await;
            leases.len() == 1 && leases.iter().all(|(_, _, released)| *released)
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_patch_reaches_every_instance_without_a_restart() {
    let db = TestDb::shared().await;
    let (a, b) = (
        spawn_app_on(&db, test_settings()).await,
        spawn_app_on(&db, test_settings()).await,
    );
    a.create_ok("p", 1, 1_000_000).await;
    // B knows the sequence as strict: a statement per request.
    b.next_value("p").await;
    assert!(leases(&db, "p").await.is_empty());
    let patched = patch(
        &a,
        "p",
        json!({"cache": {"size": 500, "buffer_seconds": 10}}),
    )
    .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    assert_eq!(
        patched.body["cache"],
        json!({"size": 500, "buffer_seconds": 10, "min": 100})
    );
    // Within 2 s B vends from a cache of its own.
    eventually(Duration::from_secs(2), "B caches the sequence", || async {
        b.next_value("p").await;
        counter(&b.scrape().await, "seqvend_cache_hits_total") > 0
    })
    .await;
    // Back to strict: B drops its cache and releases its lease.
    let strict = patch(&a, "p", json!({"cache": {"size": 0}})).await;
    assert_eq!(strict.status, StatusCode::OK, "{}", strict.body);
    eventually(Duration::from_secs(2), "B released its lease", || async {
        let leases = leases(&db, "p").await;
        !leases.is_empty() && leases.iter().all(|(_, _, released)| *released)
    })
    .await;
    let before = leases(&db, "p").await.len();
    b.next_value("p").await;
    assert_eq!(
        leases(&db, "p").await.len(),
        before,
        "strict again: no lease"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_answers_once_every_instance_released_its_cached_values() {
    let db = TestDb::shared().await;
    // Leases that outlast the test, renewed (and their policies re-read) only every minute:
    // only the notice can free them in time.
    let long_leases = || {
        let mut settings = test_settings();
        settings.cache.instance_lease = Duration::from_secs(600);
        settings.cache.renew_every = Duration::from_secs(60);
        settings
    };
    let (a, b) = (
        spawn_app_on(&db, long_leases()).await,
        spawn_app_on(&db, long_leases()).await,
    );
    create_cached(&a, "d", 1, 1_000_000, 1000).await;
    a.next_value("d").await;
    b.next_value("d").await;
    assert_eq!(leases(&db, "d").await.len(), 2);
    let retired = tokio::time::timeout(Duration::from_secs(20), a.retire("d"))
        .await
        .expect("DELETE answered once the instances released on notice");
    assert_eq!(retired.status, StatusCode::OK, "{}", retired.body);
    // Released on notice, not left to expire (the lease lasts a minute).
    let after = leases(&db, "d").await;
    assert_eq!(after.len(), 2, "both leases are still recorded: {after:?}");
    assert!(after.iter().all(|(_, _, released)| *released), "{after:?}");
    for app in [&a, &b] {
        app.next("d").await.assert_error(410, "sequence_retired");
    }
}

/// An instance cut off from PostgreSQL: its role may no longer log in and its sessions are
/// ended, so it can neither hear of changes nor renew its leases.
async fn cut_off(db: &TestDb, role: &str) {
    // Two psql runs: several -c in one run are one transaction, and a backend terminated
    // before NOLOGIN commits could log in again at once.
    for statement in [
        format!("ALTER ROLE {role} NOLOGIN"),
        format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"),
    ] {
        let done = db.psql().args(["-c", &statement]).status().unwrap();
        assert!(done.success(), "{statement}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_partitioned_instance_serves_its_cache_until_its_lease_lapses_and_never_after() {
    let db = TestDb::shared().await;
    let role = format!("partitioned_{}", uuid::Uuid::new_v4().simple());
    let made = db
        .psql()
        .args([
            "-c",
            &format!("CREATE ROLE {role} LOGIN SUPERUSER PASSWORD 'cut'"),
        ])
        .status()
        .unwrap();
    assert!(made.success());
    let short_leases = || {
        let mut settings = test_settings();
        settings.cache.instance_lease = Duration::from_secs(4);
        settings.cache.renew_every = Duration::from_secs(1);
        settings
    };
    let a = spawn_app_on(&db, short_leases()).await;
    // B is the same kind of instance on the same database, logged in as that role.
    let b_url = {
        let (_, host_and_database) = db.url.split_once('@').unwrap();
        format!("postgres://{role}:cut@{host_and_database}")
    };
    let b = spawn_app_on(&TestDb { url: b_url }, short_leases()).await;
    create_cached(&a, "cut", 1, 1_000_000, 1000).await;
    b.next_value("cut").await;
    cut_off(&db, &role).await;
    // B goes on from memory through the partition.
    let during = b.next_value("cut").await;
    assert_eq!(during, 2);
    let retired = a.retire("cut").await;
    assert_eq!(retired.status, StatusCode::OK, "{}", retired.body);
    // DELETE answered: B's lease was neither renewed nor released, so it lapsed first; B
    // hands out nothing more (it can reach no database to refill, either).
    let after = b.next("cut").await;
    assert_ne!(after.status, StatusCode::OK, "{}", after.body);
    let (_, _, released) = leases(&db, "cut")
        .await
        .into_iter()
        .find(|(kind, count, _)| kind == "instance" && *count == 1000)
        .unwrap();
    assert!(!released, "B could not release: its lease expired");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gracefully_stopped_instance_releases_its_cached_leases() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    create_cached(&app, "g", 1, 1_000_000, 1000).await;
    app.next_value("g").await;
    assert_eq!(
        leases(&db, "g").await,
        vec![("instance".to_string(), 1000, false)]
    );
    app.stopped().await;
    // Released, not left to expire: a retirement need not wait for this instance.
    assert_eq!(
        leases(&db, "g").await,
        vec![("instance".to_string(), 1000, true)]
    );
}
