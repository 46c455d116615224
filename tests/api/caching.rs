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

/// Leases recorded for `sequence`: (kind, values, released).
async fn leases(db: &TestDb, sequence: &str) -> Vec<(String, i64, bool)> {
    db.connect()
        .await
        .query(
            "SELECT l.kind, l.value_count, l.released_at IS NOT NULL
               FROM seqvend.leases l JOIN seqvend.sequences s ON s.id = l.sequence_id
              WHERE s.name = $1 ORDER BY l.id",
            &[&sequence],
        )
        .await
        .unwrap()
        .iter()
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
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "one instance's values increase"
    );
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
        .query_one("SELECT high_water FROM seqvend.ranges", &[])
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
    apps[0].add_range("m", 5000, 5099).await;
    // Four clients per instance, singles and batches, until every instance answers 409.
    let all = drain(&apps, 4, "m", |i| (i % 3 == 0).then_some(5)).await;
    assert_unique(&all);
    assert!(all
        .iter()
        .all(|v| (100..=1099).contains(v) || (5000..=5099).contains(v)));
    // Every value was handed out: a 409 comes only once no instance holds any.
    assert_eq!(all.len(), 1100);
}
