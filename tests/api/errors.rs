//! Every error code, from real HTTP requests, and proof that refused requests change nothing.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread")]
async fn malformed_requests_are_400_invalid_request() {
    let app = spawn_app().await;
    let bodies = [
        json!({"name": "a", "min": 1}), // missing field
        json!({"name": "a", "min": 1, "max": 2, "colour": "red"}), // unknown field
        json!({"name": "a", "min": "1", "max": 2}), // wrong type
        json!({"name": 7, "min": 1, "max": 2}), // wrong type
        json!(["a", 1, 2]),             // not an object
    ];
    for body in bodies {
        app.create(body.clone())
            .await
            .assert_error(400, "invalid_request");
    }
    app.create_raw("{\"name\": \"a\", ")
        .await
        .assert_error(400, "invalid_request");
    let not_json = app
        .http
        .post(format!("{}/sequences", app.address))
        .bearer_auth(ADMIN_TOKEN)
        .body("name=a")
        .send()
        .await
        .unwrap();
    Reply::from(not_json)
        .await
        .assert_error(400, "invalid_request");

    app.create_ok("ok", 1, 5).await;
    for count in ["0", "10001", "-1", "abc", "1.5"] {
        let path = format!("/sequences/ok/next?count={count}");
        app.request(Method::POST, &path, Some(VEND_TOKEN), None)
            .await
            .assert_error(400, "invalid_request");
    }
    // Overlapping the sequence's own range: refused, nothing added.
    app.add_range("ok", 1, 2)
        .await
        .assert_error(409, "range_overlap");
    let path = "/sequences/ok/ranges";
    app.request(
        Method::POST,
        path,
        Some(ADMIN_TOKEN),
        Some(json!({"min": 10, "max": 20, "start": 10})),
    )
    .await
    .assert_error(400, "invalid_request");
    for query in ["limit=0", "limit=1001", "limit=x", "after=%20x"] {
        let path = format!("/sequences?{query}");
        app.request(Method::GET, &path, Some(VEND_TOKEN), None)
            .await
            .assert_error(400, "invalid_request");
    }
    assert_eq!(
        app.get("ok").await.body["remaining"],
        5,
        "nothing was drawn or added"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn impossible_ranges_are_400_invalid_range_and_create_nothing() {
    let app = spawn_app().await;
    let bodies = [
        json!({"name": "r", "min": 10, "max": 1}),
        json!({"name": "r", "min": 7, "max": 7}),
        json!({"name": "r", "min": 1, "max": 10, "start": 11}),
        json!({"name": "r", "min": 1, "max": 10, "start": 0}),
        json!({"name": "r", "min": 1, "max": 10, "increment": 0}),
        json!({"name": "r", "min": 1, "max": 9223372036854775808u64}),
        json!({"name": "r", "min": 1.5, "max": 10}),
        json!({"name": "r", "min": 1, "max": 10, "increment": i64::MIN}),
    ];
    for body in bodies {
        app.create(body.clone())
            .await
            .assert_error(400, "invalid_range");
    }
    let below_i64 = r#"{"name": "r", "min": -9223372036854775809, "max": 1}"#;
    app.create_raw(below_i64)
        .await
        .assert_error(400, "invalid_range");
    app.get("r").await.assert_error(404, "not_found");
    app.create_ok("r", 1, 10).await;
    app.add_range("r", 30, 20)
        .await
        .assert_error(400, "invalid_range");
    assert_eq!(
        app.get("r").await.body["ranges"].as_array().unwrap().len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_or_unknown_tokens_are_401_with_a_bearer_challenge() {
    let app = spawn_app().await;
    app.create_ok("s", 1, 5).await;
    for token in [None, Some("wrong"), Some("")] {
        for (method, path) in [
            (Method::POST, "/sequences/s/next"),
            (Method::GET, "/sequences/s"),
            (Method::GET, "/sequences"),
            (Method::DELETE, "/sequences/s"),
        ] {
            let reply = app.request(method, path, token, None).await;
            reply.assert_error(401, "unauthorized");
            assert_eq!(reply.headers["www-authenticate"], "Bearer");
        }
    }
    let basic = app
        .http
        .get(format!("{}/sequences/s", app.address))
        .basic_auth(ADMIN_TOKEN, Some("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.get("s").await.body["remaining"], 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn vend_tokens_may_vend_and_read_but_not_administer() {
    let app = spawn_app().await;
    app.create_ok("s", 1, 5).await;
    let body = json!({"name": "t", "min": 1, "max": 2});
    app.request(Method::POST, "/sequences", Some(VEND_TOKEN), Some(body))
        .await
        .assert_error(403, "forbidden");
    let range = json!({"min": 10, "max": 20});
    app.request(
        Method::POST,
        "/sequences/s/ranges",
        Some(VEND_TOKEN),
        Some(range),
    )
    .await
    .assert_error(403, "forbidden");
    app.request(Method::DELETE, "/sequences/s", Some(VEND_TOKEN), None)
        .await
        .assert_error(403, "forbidden");
    assert_eq!(app.next_value("s").await, 1);
    let admin_vend = app
        .request(Method::POST, "/sequences/s/next", Some(ADMIN_TOKEN), None)
        .await;
    assert_eq!(admin_vend.body["value"], 2, "admins may vend too");
    let body = app.get("s").await.body;
    assert_eq!(
        (
            body["status"].as_str(),
            body["ranges"].as_array().unwrap().len()
        ),
        (Some("active"), 1)
    );
    app.get("t").await.assert_error(404, "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_sequences_and_routes_are_404_and_wrong_methods_405() {
    let app = spawn_app().await;
    app.next("nope").await.assert_error(404, "not_found");
    app.next_batch("nope", 2)
        .await
        .assert_error(404, "not_found");
    app.get("nope").await.assert_error(404, "not_found");
    app.retire("nope").await.assert_error(404, "not_found");
    app.add_range("nope", 1, 2)
        .await
        .assert_error(404, "not_found");
    app.request(Method::GET, "/no/such/route", Some(ADMIN_TOKEN), None)
        .await
        .assert_error(404, "not_found");
    let wrong = app
        .request(Method::PUT, "/sequences/x/next", Some(ADMIN_TOKEN), None)
        .await;
    wrong.assert_error(405, "method_not_allowed");
    assert_eq!(wrong.headers["allow"], "POST");
    let wrong = app
        .request(Method::PUT, "/sequences/x", Some(ADMIN_TOKEN), None)
        .await;
    assert_eq!(wrong.headers["allow"], "GET, PATCH, DELETE");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_body_is_413_payload_too_large() {
    let app = spawn_app().await;
    let body = json!({"name": "big", "min": 1, "max": 2, "pad": "x".repeat(100_000)});
    app.create(body)
        .await
        .assert_error(413, "payload_too_large");
    app.get("big").await.assert_error(404, "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exhausted_sequence_is_409_and_a_retired_one_410() {
    let app = spawn_app().await;
    app.create_ok("tiny", 1, 2).await;
    app.next_batch("tiny", 2).await;
    app.next("tiny")
        .await
        .assert_error(409, "sequence_exhausted");
    app.next_batch("tiny", 10)
        .await
        .assert_error(409, "sequence_exhausted");
    app.retire("tiny").await;
    app.next("tiny").await.assert_error(410, "sequence_retired");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fault_inside_the_database_is_500_internal_with_an_opaque_message() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("s", 1, 5).await;
    // Break the schema behind seqvend's back: the vend functions disappear.
    db.connect()
        .await
        .batch_execute(
            "DROP FUNCTION seqvend.vend(text[], integer[]); \
             DROP FUNCTION seqvend.vend_one_sequence(text, integer[])",
        )
        .await
        .unwrap();
    let reply = app.next("s").await;
    reply.assert_error(500, "internal");
    assert_eq!(
        reply.body["message"], "internal error",
        "no internals leak to the caller"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_response_carries_a_request_id_echoing_the_callers() {
    let app = spawn_app().await;
    let echoed = app
        .http
        .get(format!("{}/healthz", app.address))
        .header("x-request-id", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(echoed.headers()["x-request-id"], "abc-123");
    let fresh = app.next("missing").await;
    let id = fresh.headers["x-request-id"].to_str().unwrap();
    assert_eq!(id.len(), 36, "a new UUID: {id}");
    let other = app.next("missing").await;
    assert_ne!(other.headers["x-request-id"], fresh.headers["x-request-id"]);
}
