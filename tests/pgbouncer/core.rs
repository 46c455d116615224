//! The API's core through PgBouncer in transaction mode: strict vends, batches, rollover to
//! the next range, keyed vends, the instance cache, block leases, counters and tokens.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;
use tokio::task::JoinSet;

use crate::bouncer::Pooled;
use crate::helpers::*;

#[tokio::test(flavor = "multi_thread")]
async fn strict_vends_batches_rollover_and_keyed_vends_go_through_pgbouncer() {
    let pooled = Pooled::with_test_settings().await;
    let app = &pooled.app;
    let before = pooled.pooled_transactions().await;
    app.create_ok("parcels", 1, 10).await;
    app.add_range_ok("parcels", 101, 110).await;

    let mut vended = vec![app.next_value("parcels").await];
    let batch = app.next_batch("parcels", 4).await;
    assert_eq!(batch.status, StatusCode::OK, "{}", batch.body);
    vended.extend(values_of(&batch));
    let path = "/sequences/parcels/next?count=3";
    let (keyed, replayed) = app.keyed_post(path, "label-1", VEND_TOKEN).await;
    assert_eq!(keyed.status, StatusCode::OK, "{}", keyed.body);
    assert!(!replayed);
    let (again, replayed) = app.keyed_post(path, "label-1", VEND_TOKEN).await;
    assert!(replayed, "a repeat through the pooler is a replay");
    assert_eq!(again.body, keyed.body);
    vended.extend(values_of(&keyed));
    // The first range's last two values, then the next range.
    while vended.len() < 12 {
        vended.push(app.next_value("parcels").await);
    }
    assert_eq!(vended, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 101, 102]);
    assert!(
        pooled.pooled_transactions().await >= before + 8,
        "the vends went through PgBouncer"
    );
}

/// Many lanes at once: their connections' transactions interleave on PgBouncer's server
/// connections, which a statement that outlived its transaction (a named one) would not survive.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_vends_on_many_sequences_share_pgbouncers_server_connections() {
    let pooled = Pooled::with_test_settings().await;
    let app = Arc::new(pooled.app);
    let names: Vec<String> = (0..8).map(|i| format!("seq-{i}")).collect();
    for name in &names {
        app.create_ok(name, 1, 1_000_000).await;
    }
    let mut requests = JoinSet::new();
    for round in 0..25 {
        for name in names.clone() {
            let app = app.clone();
            requests.spawn(async move {
                // A 503 on a loaded machine is retried, as clients do; anything else is not.
                let mut reply = app.next_batch(&name, 1 + round % 3).await;
                for _ in 0..20 {
                    if reply.status != StatusCode::SERVICE_UNAVAILABLE {
                        break;
                    }
                    reply = app.next_batch(&name, 1 + round % 3).await;
                }
                (name, reply)
            });
        }
    }
    let mut vended: HashMap<String, Vec<i64>> = HashMap::new();
    while let Some(done) = requests.join_next().await {
        let (name, reply) = done.unwrap();
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        vended.entry(name).or_default().extend(values_of(&reply));
    }
    for values in vended.values() {
        let asked: u32 = (0..25).map(|round| 1 + round % 3).sum();
        assert_eq!(values.len(), asked as usize, "every batch got its values");
        assert_unique(values);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cached_takes_leases_and_counters_go_through_pgbouncer() {
    let pooled = Pooled::with_test_settings().await;
    let app = &pooled.app;
    app.create_body_ok(json!({"name": "cached", "min": 1, "max": 10000, "cache": {"size": 10}}))
        .await;
    let mut values = Vec::new();
    // Three refills of the instance cache, each a block lease drawn through PgBouncer.
    for _ in 0..25 {
        values.push(app.next_value("cached").await);
    }
    let lease = app
        .request(
            Method::POST,
            "/sequences/cached/leases?count=5",
            Some(VEND_TOKEN),
            None,
        )
        .await;
    assert_eq!(lease.status, StatusCode::OK, "{}", lease.body);
    for block in lease.body["blocks"].as_array().unwrap() {
        let (first, last) = (
            block["first"].as_i64().unwrap(),
            block["last"].as_i64().unwrap(),
        );
        values.extend(first..=last);
    }
    assert_eq!(values.len(), 30);
    assert_unique(&values);
    assert!(values.iter().all(|v| (1..=10000).contains(v)), "{values:?}");

    pooled.create_family("orders").await;
    let mut drawn = Vec::new();
    for key in ["shop-a", "shop-b", "shop-a"] {
        let path = format!("/families/orders/counters/{key}/next?count=2");
        let reply = app
            .request(Method::POST, &path, Some(VEND_TOKEN), None)
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        drawn.push(values_of(&reply));
    }
    assert_eq!(drawn, [vec![1, 2], vec![1, 2], vec![3, 4]]);
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_are_made_used_and_revoked_with_pgbouncer_in_front() {
    let pooled = Pooled::with_test_settings().await;
    let app = &pooled.app;
    app.create_ok("fedex-1", 1, 100).await;
    let (id, secret) = app.create_token("merchant", &["vend:fedex-*"]).await;
    let vend = || async {
        let request = app
            .http
            .post(format!("{}/sequences/fedex-1/next", app.address))
            .bearer_auth(&secret);
        Reply::from(request.send().await.unwrap()).await
    };
    let first = vend().await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let path = format!("/tokens/{id}");
    let revoked = app
        .request(Method::DELETE, &path, Some(ADMIN_TOKEN), None)
        .await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.body);
    // The revocation reaches the instance by LISTEN/NOTIFY, which needs the direct URL.
    eventually(
        Duration::from_secs(2),
        "the revoked token is refused",
        || async { vend().await.status == StatusCode::UNAUTHORIZED },
    )
    .await;
}
