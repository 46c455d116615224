//! Creating, reading, listing, extending and retiring sequences.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread")]
async fn create_returns_201_with_the_sequence_and_its_first_range() {
    let app = spawn_app().await;
    let reply = app
        .create(json!({"name": "fedex-4471", "min": 100, "max": 199}))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let body = &reply.body;
    assert_eq!(body["name"], "fedex-4471");
    assert_eq!(body["namespace"], "fedex-4471");
    assert_eq!(body["increment"], 1);
    assert_eq!(body["status"], "active");
    assert_eq!(body["remaining"], 100);
    assert_eq!(
        body["ranges"],
        json!([{"min": 100, "max": 199, "status": "active", "next": 100, "remaining": 100,
                "pg_sequence": "seqvend_ranges.r1"}])
    );
    assert!(body["created_at"].is_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn start_and_a_negative_increment_make_a_descending_sequence() {
    let app = spawn_app().await;
    let reply = app
        .create(json!({"name": "down", "min": 1, "max": 10, "increment": -3}))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(reply.body["ranges"][0]["next"], 10);
    assert_eq!(reply.body["remaining"], 4);
    let values: Vec<i64> = [app.next_value("down").await, app.next_value("down").await].into();
    assert_eq!(values, [10, 7]);
    let reply = app
        .create(json!({"name": "mid", "min": 1, "max": 10, "start": 8}))
        .await;
    assert_eq!(reply.body["ranges"][0]["next"], 8);
    assert_eq!(app.next_value("mid").await, 8);
}

#[tokio::test(flavor = "multi_thread")]
async fn get_reports_next_and_remaining_per_range_and_in_total() {
    let app = spawn_app().await;
    app.create_ok("usps", 1, 10).await;
    assert_eq!(
        app.add_range("usps", 20, 24).await.status,
        StatusCode::CREATED
    );
    for _ in 0..3 {
        app.next_value("usps").await;
    }
    let body = app.get("usps").await.body;
    assert_eq!(body["remaining"], 7 + 5);
    assert_eq!(
        body["ranges"][0],
        json!({"min": 1, "max": 10, "status": "active", "next": 4, "remaining": 7,
               "pg_sequence": "seqvend_ranges.r1"})
    );
    assert_eq!(
        body["ranges"][1],
        json!({"min": 20, "max": 24, "status": "pending", "next": 20, "remaining": 5,
               "pg_sequence": "seqvend_ranges.r2"})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_full_i64_span_is_one_valid_range() {
    let app = spawn_app().await;
    let reply = app
        .create(json!({"name": "all", "min": i64::MIN, "max": i64::MAX}))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let raw = app
        .http
        .get(format!("{}/sequences/all", app.address))
        .bearer_auth(VEND_TOKEN)
        .send()
        .await
        .unwrap();
    assert!(
        raw.text()
            .await
            .unwrap()
            .contains(r#""remaining":18446744073709551616"#),
        "2^64, exactly"
    );
    assert_eq!(app.next_value("all").await, i64::MIN);
    let top = app
        .create(json!({"name": "top", "namespace": "t", "min": i64::MAX - 1, "max": i64::MAX}))
        .await;
    assert_eq!(top.status, StatusCode::CREATED, "{}", top.body);
    let reply = app.next_batch("top", 5).await;
    assert_eq!(
        (values_of(&reply), reply.body["exhausted"].as_bool()),
        (vec![i64::MAX - 1, i64::MAX], Some(true))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn list_pages_through_sequences_in_name_order() {
    let app = spawn_app().await;
    for name in ["b", "a", "C", "d", "e"] {
        app.create_ok(name, 1, 5).await;
    }
    let first = app
        .request(Method::GET, "/sequences?limit=2", Some(VEND_TOKEN), None)
        .await;
    assert_eq!(first.status, StatusCode::OK);
    let names = |reply: &Reply| -> Vec<String> {
        reply.body["sequences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&first), ["C", "a"]);
    assert_eq!(first.body["next"], "a");
    let second = app
        .request(
            Method::GET,
            "/sequences?limit=2&after=a",
            Some(VEND_TOKEN),
            None,
        )
        .await;
    assert_eq!(names(&second), ["b", "d"]);
    let last = app
        .request(
            Method::GET,
            "/sequences?limit=2&after=d",
            Some(VEND_TOKEN),
            None,
        )
        .await;
    assert_eq!(
        (names(&last), &last.body["next"]),
        (vec!["e".to_owned()], &json!(null))
    );
    assert_eq!(last.body["sequences"][0]["ranges"][0]["remaining"], 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_range_added_to_an_exhausted_sequence_is_active_and_revives_it() {
    let app = spawn_app().await;
    app.create_ok("dhl", 1, 2).await;
    assert_eq!(values_of(&app.next_batch("dhl", 2).await), [1, 2]);
    assert_eq!(app.get("dhl").await.body["status"], "exhausted");
    let reply = app.add_range("dhl", 5, 6).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(
        reply.body,
        json!({"min": 5, "max": 6, "status": "active", "next": 5, "remaining": 2,
               "pg_sequence": "seqvend_ranges.r2"})
    );
    assert_eq!(app.get("dhl").await.body["status"], "active");
    assert_eq!(app.next_value("dhl").await, 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn ranges_of_one_namespace_never_overlap_but_other_namespaces_are_free() {
    let app = spawn_app().await;
    app.create(json!({"name": "acct-a", "namespace": "ups-acct", "min": 1, "max": 100}))
        .await;
    let clash = app
        .create(json!({"name": "acct-b", "namespace": "ups-acct", "min": 100, "max": 200}))
        .await;
    clash.assert_error(409, "range_overlap");
    assert_eq!(
        app.get("acct-b").await.status,
        StatusCode::NOT_FOUND,
        "a refused create leaves nothing behind"
    );
    let ok = app
        .create(json!({"name": "acct-b", "namespace": "ups-acct", "min": 101, "max": 200}))
        .await;
    assert_eq!(ok.status, StatusCode::CREATED);
    app.add_range("acct-a", 150, 160)
        .await
        .assert_error(409, "range_overlap");
    app.add_range("acct-a", 50, 51)
        .await
        .assert_error(409, "range_overlap");
    let elsewhere = app
        .create(json!({"name": "other", "min": 1, "max": 100}))
        .await;
    assert_eq!(
        elsewhere.status,
        StatusCode::CREATED,
        "namespace defaults to the name"
    );
    assert_eq!(
        app.get("acct-a").await.body["ranges"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn retiring_answers_the_retired_sequence_and_the_name_is_never_reused() {
    let app = spawn_app().await;
    app.create_ok("old", 1, 10).await;
    let reply = app.retire("old").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["status"], "retired");
    assert_eq!(
        reply.body["remaining"], 0,
        "a retired sequence vends nothing more"
    );
    assert_eq!(
        app.retire("old").await.body["status"],
        "retired",
        "retiring twice answers the same"
    );
    app.next("old").await.assert_error(410, "sequence_retired");
    app.next_batch("old", 3)
        .await
        .assert_error(410, "sequence_retired");
    app.add_range("old", 20, 30)
        .await
        .assert_error(410, "sequence_retired");
    app.create(json!({"name": "old", "min": 100, "max": 200}))
        .await
        .assert_error(409, "name_taken");
    assert_eq!(app.get("old").await.body["status"], "retired");
}

#[tokio::test]
async fn each_range_names_its_postgresql_sequence_so_a_dba_can_find_it() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("dba-view", 1, 100).await;
    let added = app.add_range("dba-view", 201, 300).await;
    assert_eq!(added.status.as_u16(), 201, "{}", added.body);
    app.next_batch("dba-view", 3).await;

    let client = db.connect().await;
    let stored: Vec<String> = client
        .query(
            "SELECT pg_sequence::text FROM seqvend.ranges ORDER BY id",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let shown = app.get("dba-view").await;
    let listed: Vec<&str> = shown.body["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["pg_sequence"].as_str().unwrap())
        .collect();
    assert_eq!(listed, stored);
    assert_eq!(added.body["pg_sequence"], stored[1]);
    // The name works as is in a DBA's query.
    let last: i64 = client
        .query_one(&format!("SELECT last_value FROM {}", listed[0]), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(last, 3);
}
