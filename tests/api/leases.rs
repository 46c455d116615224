//! `POST /sequences/{name}/leases`: blocks of values for clients' own caches.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

async fn lease(app: &TestApp, name: &str, count: u64) -> Reply {
    app.request(
        Method::POST,
        &format!("/sequences/{name}/leases?count={count}"),
        Some(VEND_TOKEN),
        None,
    )
    .await
}

/// Every value of a lease reply's blocks, in order.
pub(crate) fn leased_values(reply: &Reply) -> Vec<i64> {
    let mut values = Vec::new();
    for block in reply.body["blocks"].as_array().unwrap() {
        let (first, last, step) = (
            block["first"].as_i64().unwrap(),
            block["last"].as_i64().unwrap(),
            block["increment"].as_i64().unwrap(),
        );
        let mut value = first;
        loop {
            values.push(value);
            if value == last {
                break;
            }
            value += step;
        }
    }
    values
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lease_is_one_contiguous_block_with_its_expiry_and_the_sequences_policy() {
    let app = spawn_app().await;
    app.create_ok("l", 10, 1_000_000).await;
    let reply = lease(&app, "l", 1000).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(
        reply.body["blocks"],
        json!([{"first": 10, "last": 1009, "increment": 1}])
    );
    assert_eq!(reply.body["count"], 1000);
    assert_eq!(reply.body["exhausted"], false);
    assert_eq!(reply.body["ttl_seconds"], 600);
    assert!(reply.body["expires_at"].as_str().is_some());
    assert_eq!(reply.body["cache"]["size"], 0);
    assert!(
        reply.body.get("values").is_none(),
        "never the values as a list"
    );
    // Drawn durably like any vend: the next value comes after the block.
    assert_eq!(app.next_value("l").await, 1010);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lease_crossing_into_the_next_range_is_two_blocks_and_is_clipped_at_the_end() {
    let app = spawn_app().await;
    let created = app
        .create(json!({"name": "x", "min": 100, "max": 199, "increment": -3, "start": 190}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    app.add_range_ok("x", 1000, 1010).await;
    let reply = lease(&app, "x", 33).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    // 190, 187, …, 100 is 31 values; the next range vends downwards from 1010 and holds
    // four: 1010, 1007, 1004, 1001.
    assert_eq!(
        reply.body["blocks"],
        json!([
            {"first": 190, "last": 100, "increment": -3},
            {"first": 1010, "last": 1007, "increment": -3}
        ])
    );
    let values = leased_values(&reply);
    assert_eq!(values.len(), 33);
    assert_eq!(&values[..2], &[190, 187]);
    assert_eq!(values[31], 1010);
    let rest = lease(&app, "x", 100).await;
    assert_eq!(rest.status, StatusCode::OK, "{}", rest.body);
    assert_eq!(
        (rest.body["count"].clone(), rest.body["exhausted"].clone()),
        (json!(2), json!(true))
    );
    let mut all = values;
    all.extend(leased_values(&rest));
    assert_unique(&all);
    assert!(all
        .iter()
        .all(|v| (100..=199).contains(v) || (1000..=1010).contains(v)));
    lease(&app, "x", 1)
        .await
        .assert_error(409, "sequence_exhausted");
}

#[tokio::test(flavor = "multi_thread")]
async fn leases_and_vends_interleaved_never_hand_out_a_value_twice() {
    let app = spawn_app().await;
    app.create_ok("mix", 1, 5000).await;
    let mut all = Vec::new();
    for i in 0..50 {
        all.extend(leased_values(&lease(&app, "mix", 7 + i).await));
        all.push(app.next_value("mix").await);
        all.extend(values_of(&app.next_batch("mix", 3).await));
    }
    assert_unique(&all);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_lease_requests_are_refused_and_draw_nothing() {
    let app = spawn_app().await;
    app.create_ok("b", 1, 100).await;
    for count in ["0", "10000001", "-1", "x"] {
        app.request(
            Method::POST,
            &format!("/sequences/b/leases?count={count}"),
            Some(VEND_TOKEN),
            None,
        )
        .await
        .assert_error(400, "invalid_request");
    }
    app.request(Method::POST, "/sequences/b/leases", Some(VEND_TOKEN), None)
        .await
        .assert_error(400, "invalid_request");
    app.request(Method::POST, "/sequences/b/leases?count=1", None, None)
        .await
        .assert_error(401, "unauthorized");
    lease(&app, "nope", 1).await.assert_error(404, "not_found");
    lease(&app, "bad name!", 1)
        .await
        .assert_error(400, "invalid_name");
    assert_eq!(app.next_value("b").await, 1, "nothing was drawn");
    app.retire("b").await;
    lease(&app, "b", 1)
        .await
        .assert_error(410, "sequence_retired");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_cache_policies_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    for cache in [
        json!({"size": 100_001}),
        json!({"size": 10, "min": 11}),
        json!({"size": 10, "buffer_seconds": 3601}),
        json!({"size": 0, "min": 1}),
    ] {
        app.create(json!({"name": "p", "min": 1, "max": 100, "cache": cache}))
            .await
            .assert_error(400, "invalid_cache_policy");
    }
    for cache in [
        json!({"size": -1}),
        json!({"size": 10, "lifetime": 5}),
        json!(5),
    ] {
        app.create(json!({"name": "p", "min": 1, "max": 100, "cache": cache}))
            .await
            .assert_error(400, "invalid_request");
    }
    app.get("p").await.assert_error(404, "not_found");
    app.create_ok("p", 1, 100).await;
    let patch = |body| app.request(Method::PATCH, "/sequences/p", Some(ADMIN_TOKEN), Some(body));
    patch(json!({"cache": {"size": 10, "min": 11}}))
        .await
        .assert_error(400, "invalid_cache_policy");
    patch(json!({"name": "q"}))
        .await
        .assert_error(400, "invalid_request");
    app.request(
        Method::PATCH,
        "/sequences/p",
        Some(VEND_TOKEN),
        Some(json!({"cache": {"size": 10}})),
    )
    .await
    .assert_error(403, "forbidden");
    assert_eq!(app.get("p").await.body["cache"]["size"], 0, "unchanged");
    app.request(
        Method::PATCH,
        "/sequences/nope",
        Some(ADMIN_TOKEN),
        Some(json!({"cache": {"size": 10}})),
    )
    .await
    .assert_error(404, "not_found");
    app.retire("p").await;
    patch(json!({"cache": {"size": 10}}))
        .await
        .assert_error(410, "sequence_retired");
}
