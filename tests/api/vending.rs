//! Vending single values and batches, rollover across ranges, exhaustion.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread")]
async fn next_returns_consecutive_values_from_min() {
    let app = spawn_app().await;
    app.create_ok("seq", 1000, 1999).await;
    let reply = app.next("seq").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body, json!({"sequence": "seq", "value": 1000}));
    assert_eq!(app.next_value("seq").await, 1001);
    let reply = app.next_batch("seq", 3).await;
    assert_eq!(
        reply.body,
        json!({"sequence": "seq", "values": [1002, 1003, 1004], "exhausted": false})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn single_vends_roll_over_to_the_next_range_in_the_order_ranges_were_added() {
    let app = spawn_app().await;
    app.create_ok("roll", 1, 2).await;
    app.add_range_ok("roll", 50, 51).await;
    app.add_range_ok("roll", 10, 11).await;
    let mut values = Vec::new();
    for _ in 0..6 {
        values.push(app.next_value("roll").await);
    }
    assert_eq!(values, [1, 2, 50, 51, 10, 11]);
    app.next("roll")
        .await
        .assert_error(409, "sequence_exhausted");
    let body = app.get("roll").await.body;
    assert_eq!(body["status"], "exhausted");
    assert_eq!(body["remaining"], 0);
    let ranges = body["ranges"].as_array().unwrap();
    assert_eq!(ranges.len(), 3);
    assert!(ranges
        .iter()
        .all(|r| r["status"] == "exhausted" && r["next"].is_null()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_continues_into_the_next_range_and_returns_what_is_left_at_the_end() {
    let app = spawn_app().await;
    app.create_ok("b", 1, 5).await;
    app.add_range_ok("b", 100, 104).await;
    let reply = app.next_batch("b", 7).await;
    assert_eq!(
        reply.body,
        json!({"sequence": "b", "values": [1, 2, 3, 4, 5, 100, 101], "exhausted": false})
    );
    let body = app.get("b").await.body;
    assert_eq!(
        (&body["ranges"][0]["status"], &body["ranges"][1]["status"]),
        (&json!("exhausted"), &json!("active"))
    );
    let reply = app.next_batch("b", 10).await;
    assert_eq!(
        reply.body,
        json!({"sequence": "b", "values": [102, 103, 104], "exhausted": true})
    );
    app.next_batch("b", 10)
        .await
        .assert_error(409, "sequence_exhausted");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_descending_sequence_rolls_over_from_the_top_of_each_range() {
    let app = spawn_app().await;
    app.create_body_ok(json!({"name": "d", "min": 1, "max": 3, "increment": -1}))
        .await;
    app.add_range_ok("d", 10, 11).await;
    let reply = app.next_batch("d", 10).await;
    assert_eq!(values_of(&reply), [3, 2, 1, 11, 10]);
    assert_eq!(reply.body["exhausted"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_that_hits_the_end_of_the_last_range_wastes_nothing() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("end", 1, 10).await;
    assert_eq!(values_of(&app.next_batch("end", 4).await), [1, 2, 3, 4]);
    let reply = app.next_batch("end", 100).await;
    assert_eq!(values_of(&reply), [5, 6, 7, 8, 9, 10]);
    // The range's PostgreSQL sequence stopped exactly at the last value handed out.
    let row = db
        .connect()
        .await
        .query_one(
            "SELECT pg_sequence_last_value(pg_sequence::regclass) FROM seqvend.ranges",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<i64>>(0), Some(10));
}

#[tokio::test(flavor = "multi_thread")]
async fn increments_larger_than_one_step_through_the_range() {
    let app = spawn_app().await;
    app.create_body_ok(json!({"name": "step", "min": 0, "max": 10, "increment": 4}))
        .await;
    app.add_range_ok("step", 100, 104).await;
    assert_eq!(
        values_of(&app.next_batch("step", 10).await),
        [0, 4, 8, 100, 104]
    );
}

/// Large batches (many values in one statement) step by the increment too, both ways.
#[tokio::test(flavor = "multi_thread")]
async fn large_batches_step_by_the_increment_in_both_directions() {
    let app = spawn_app().await;
    app.create_body_ok(json!({"name": "up3", "min": 1, "max": 1000, "increment": 3}))
        .await;
    app.create_body_ok(json!({"name": "down7", "min": 1, "max": 1000, "increment": -7}))
        .await;
    let up = values_of(&app.next_batch("up3", 200).await);
    assert_eq!(up, (0..200).map(|i| 1 + 3 * i).collect::<Vec<i64>>());
    let down = values_of(&app.next_batch("down7", 100).await);
    assert_eq!(down, (0..100).map(|i| 1000 - 7 * i).collect::<Vec<i64>>());
    let reply = app.next_batch("down7", 100).await;
    let rest = values_of(&reply);
    assert_eq!(rest, (100..143).map(|i| 1000 - 7 * i).collect::<Vec<i64>>());
    assert_eq!(reply.body["exhausted"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn rollover_and_exhaustion_are_recorded_as_events() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("ev", 1, 2).await;
    app.add_range_ok("ev", 3, 4).await;
    let reply = app.next_batch("ev", 5).await;
    assert_eq!(
        reply.body,
        json!({"sequence": "ev", "values": [1, 2, 3, 4], "exhausted": true})
    );
    let retired = app.retire("ev").await;
    assert_eq!(retired.status, StatusCode::OK, "{}", retired.body);
    let rows = db
        .connect()
        .await
        .query("SELECT kind, actor FROM seqvend.events ORDER BY id", &[])
        .await
        .unwrap();
    let events: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let expected = [
        ("created", "admin"),
        ("range_added", "admin"),
        ("rollover", "vend"),
        ("exhausted", "vend"),
        ("retired", "admin"),
    ];
    assert_eq!(events, expected.map(|(k, a)| (k.to_owned(), a.to_owned())));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_at_the_i64_edges_is_exact() {
    let app = spawn_app().await;
    let step = 1i64 << 62;
    let created = app
        .create(json!({"name": "edge", "min": i64::MIN, "max": i64::MAX, "increment": step}))
        .await;
    assert_eq!(created.status.as_u16(), 201, "{}", created.body);
    // Alongside, in the same statements when they coalesce, a plain sequence.
    app.create_ok("plain", 1, 100).await;
    let (edge, plain) = tokio::join!(app.next_batch("edge", 3), app.next_batch("plain", 3));
    assert_eq!(
        values_of(&edge),
        [i64::MIN, i64::MIN + step, 0],
        "{}",
        edge.body
    );
    assert_eq!(values_of(&plain), [1, 2, 3]);
    let last = app.next_batch("edge", 3).await;
    assert_eq!(values_of(&last), [step]);
    assert_eq!(last.body["exhausted"], true);
    app.next("edge")
        .await
        .assert_error(409, "sequence_exhausted");
}
