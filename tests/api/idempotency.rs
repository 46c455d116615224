//! `Idempotency-Key` on vends and leases: a retry gets the first answer, from any instance,
//! and burns no values.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::*;

async fn keyed(app: &TestApp, path: &str, key: &str, token: &str) -> (Reply, bool) {
    app.keyed_post(path, key, token).await
}

async fn keyed_next(app: &TestApp, name: &str, count: u32, key: &str) -> (Reply, bool) {
    let path = format!("/sequences/{name}/next?count={count}");
    keyed(app, &path, key, VEND_TOKEN).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repeat_with_the_same_key_gets_the_same_values_and_burns_none() {
    let app = spawn_app().await;
    app.create_ok("labels", 1, 1000).await;
    let (first, replayed) = keyed_next(&app, "labels", 3, "parcel-77").await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert!(!replayed);
    assert_eq!(values_of(&first), [1, 2, 3]);
    for _ in 0..3 {
        let (again, replayed) = keyed_next(&app, "labels", 3, "parcel-77").await;
        assert_eq!(again.status, StatusCode::OK);
        assert!(replayed, "a repeat says it is one");
        assert_eq!(again.body, first.body);
    }
    // One value, keyed: answered in the single-value shape both times.
    let one = keyed(&app, "/sequences/labels/next", "parcel-78", VEND_TOKEN)
        .await
        .0;
    assert_eq!(one.body["value"], 4);
    let (again, replayed) = keyed(&app, "/sequences/labels/next", "parcel-78", VEND_TOKEN).await;
    assert!(replayed);
    assert_eq!(again.body, json!({"sequence": "labels", "value": 4}));
    assert_eq!(
        app.next_value("labels").await,
        5,
        "no value was burned by a repeat"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_sent_with_another_request_or_by_another_token_is_told_apart() {
    let app = spawn_app().await;
    app.create_ok("a", 1, 1000).await;
    app.create_ok("b", 1, 1000).await;
    keyed_next(&app, "a", 2, "k").await;
    keyed_next(&app, "a", 3, "k")
        .await
        .0
        .assert_error(422, "idempotency_key_reused");
    keyed_next(&app, "b", 2, "k")
        .await
        .0
        .assert_error(422, "idempotency_key_reused");
    keyed(&app, "/sequences/a/next", "k", VEND_TOKEN)
        .await
        .0
        .assert_error(422, "idempotency_key_reused");
    // The same key from another token is another key.
    let (other, replayed) = keyed(&app, "/sequences/a/next?count=2", "k", ADMIN_TOKEN).await;
    assert_eq!(values_of(&other), [3, 4]);
    assert!(!replayed);
    assert_eq!(app.next_value("a").await, 5);
    for bad in ["", &"k".repeat(256), "with space", "tab\tkey"] {
        let response = app
            .http
            .post(format!("{}/sequences/a/next", app.address))
            .bearer_auth(VEND_TOKEN)
            .header("Idempotency-Key", bad)
            .send()
            .await
            .unwrap();
        Reply::from(response)
            .await
            .assert_error(400, "invalid_request");
    }
    assert_eq!(app.next_value("a").await, 6, "refused keys drew nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_vend_its_client_gave_up_on_is_replayed_by_the_other_instance() {
    let db = TestDb::shared().await;
    let first = spawn_app_on(&db, test_settings()).await;
    let second = spawn_app_on(&db, test_settings()).await;
    first.create_ok("timed-out", 1, 1000).await;
    // The range is held, so the first vend statement waits; the client gives up.
    let blocker = db.connect().await;
    blocker
        .batch_execute("SELECT pg_advisory_lock(1398166087, (SELECT min(id) FROM seqvend.ranges))")
        .await
        .unwrap();
    let gave_up = first
        .http
        .post(format!(
            "{}/sequences/timed-out/next?count=3",
            first.address
        ))
        .bearer_auth(VEND_TOKEN)
        .header("Idempotency-Key", "label-9")
        .timeout(Duration::from_millis(300))
        .send()
        .await;
    assert!(gave_up.unwrap_err().is_timeout());
    let observer = db.connect().await;
    // The vend waits on the range.
    until_blocked(&observer, 1, Blocked::On("advisory"), "%vend_keyed%").await;
    blocker
        .batch_execute("SELECT pg_advisory_unlock_all()")
        .await
        .unwrap();
    // The retry comes once the first statement has committed its answer: sent while it is
    // still committing, the retry would draw values of its own (a gap) before replaying it.
    eventually(
        Duration::from_secs(10),
        "the first vend commits its answer",
        || async {
            let stored: i64 = observer
                .query_one(
                    "SELECT count(*) FROM seqvend.idempotent_answers WHERE key = 'label-9'",
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            stored > 0
        },
    )
    .await;
    // The retry, on the other instance: the values the first statement drew and stored.
    let (retried, replayed) = keyed_next(&second, "timed-out", 3, "label-9").await;
    assert_eq!(retried.status, StatusCode::OK, "{}", retried.body);
    assert!(replayed);
    assert_eq!(values_of(&retried), [1, 2, 3]);
    assert_eq!(second.next_value("timed-out").await, 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repeat_while_the_first_is_served_here_is_409_at_once() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("held", 1, 1000).await;
    let blocker = db.connect().await;
    blocker
        .batch_execute("SELECT pg_advisory_lock(1398166087, (SELECT min(id) FROM seqvend.ranges))")
        .await
        .unwrap();
    let (http, address) = (app.http.clone(), app.address.clone());
    let first = tokio::spawn(async move {
        let response = http
            .post(format!("{address}/sequences/held/next?count=2"))
            .bearer_auth(VEND_TOKEN)
            .header("Idempotency-Key", "busy")
            .send()
            .await
            .unwrap();
        Reply::from(response).await
    });
    let observer = db.connect().await;
    // The first waits on the range.
    until_blocked(&observer, 1, Blocked::On("advisory"), "%vend_keyed%").await;
    keyed_next(&app, "held", 2, "busy")
        .await
        .0
        .assert_error(409, "idempotency_key_in_flight");
    blocker
        .batch_execute("SELECT pg_advisory_unlock_all()")
        .await
        .unwrap();
    let first = first.await.unwrap();
    assert_eq!(values_of(&first), [1, 2]);
    let (again, replayed) = keyed_next(&app, "held", 2, "busy").await;
    assert!(replayed);
    assert_eq!(values_of(&again), [1, 2]);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_repeats_on_two_instances_get_one_answer() {
    let db = TestDb::shared().await;
    let first = spawn_app_on(&db, test_settings()).await;
    let second = spawn_app_on(&db, test_settings()).await;
    first.create_ok("raced", 1, 100_000).await;
    let mut tasks = Vec::new();
    for i in 0..24 {
        let app = if i % 2 == 0 { &first } else { &second };
        let (http, address) = (app.http.clone(), app.address.clone());
        tasks.push(tokio::spawn(async move {
            let response = http
                .post(format!("{address}/sequences/raced/next?count=5"))
                .bearer_auth(VEND_TOKEN)
                .header("Idempotency-Key", "same-parcel")
                .send()
                .await
                .unwrap();
            Reply::from(response).await
        }));
    }
    let mut answers = Vec::new();
    for task in tasks {
        let reply = task.await.unwrap();
        match reply.status {
            StatusCode::OK => answers.push(values_of(&reply)),
            _ => reply.assert_error(409, "idempotency_key_in_flight"),
        }
    }
    assert!(!answers.is_empty());
    assert!(
        answers.iter().all(|values| values == &answers[0]),
        "one answer for one key: {answers:?}"
    );
    assert_eq!(answers[0].len(), 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exhausted_answer_is_replayed_as_it_was() {
    let app = spawn_app().await;
    app.create_ok("short", 1, 2).await;
    app.next_batch("short", 2).await;
    keyed_next(&app, "short", 1, "late")
        .await
        .0
        .assert_error(409, "sequence_exhausted");
    app.add_range("short", 10, 20).await;
    let (again, replayed) = keyed_next(&app, "short", 1, "late").await;
    again.assert_error(409, "sequence_exhausted");
    assert!(
        replayed,
        "the stored answer stands, though values came since"
    );
    // Clipped: the values there were, then exhausted, both replayed alike.
    keyed_next(&app, "short", 9, "big").await;
    let (first, _) = keyed_next(&app, "short", 5, "clipped").await;
    assert_eq!(values_of(&first), [19, 20]);
    assert_eq!(first.body["exhausted"], true);
    let (again, replayed) = keyed_next(&app, "short", 5, "clipped").await;
    assert!(replayed);
    assert_eq!(again.body, first.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_expire_and_are_purged_with_a_bound_per_token() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.vend.key_ttl = Duration::from_secs(1);
    let app = spawn_app_on(&db, settings).await;
    app.create_ok("expiring", 1, 1000).await;
    assert_eq!(
        values_of(&keyed_next(&app, "expiring", 1, "e").await.0),
        [1]
    );
    let client = db.connect().await;
    eventually(Duration::from_secs(10), "the answer expires", || async {
        let live: i64 = client
            .query_one(
                "SELECT count(*) FROM seqvend.idempotent_answers WHERE expires_at > now()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        live == 0
    })
    .await;
    let (fresh, replayed) = keyed_next(&app, "expiring", 1, "e").await;
    assert!(!replayed);
    assert_eq!(values_of(&fresh), [2], "an expired key serves anew");

    // Purging: the expired go, and of a token's live ones only the newest `bound` stay.
    client
        .batch_execute(
            "INSERT INTO seqvend.idempotency_keys (owner, key, request, status, vals, created_at, expires_at)
             SELECT 'crowded', 'k' || n, 'next:x:one', 200, '{1}', now() - n * interval '1 second',
                    now() + interval '1 hour'
               FROM generate_series(1, 5) n;
             INSERT INTO seqvend.idempotency_keys (owner, key, request, status, vals, expires_at)
             VALUES ('old', 'gone', 'next:x:one', 200, '{1}', now() - interval '2 minutes')",
        )
        .await
        .unwrap();
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
    let registry = seqvend::db::Registry::from_pool(pool);
    let purged = seqvend::registry::purge_answers(&registry, 3)
        .await
        .unwrap();
    assert!(purged >= 3, "the expired one and two crowded: {purged}");
    let old: i64 = client
        .query_one(
            "SELECT count(*) FROM seqvend.idempotency_keys WHERE owner = 'old'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(old, 0);
    let left: Vec<String> = client
        .query(
            "SELECT key FROM seqvend.idempotency_keys WHERE owner = 'crowded' ORDER BY key",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(left, ["k1", "k2", "k3"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_keyed_lease_is_replayed_with_its_blocks() {
    let app = spawn_app().await;
    let created = app
        .create(json!({"name": "leased", "min": 1, "max": 150, "increment": 1}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    app.add_range("leased", 1001, 2000).await;
    let path = "/sequences/leased/leases?count=200";
    let (first, replayed) = keyed(&app, path, "lease-1", VEND_TOKEN).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert!(!replayed);
    assert_eq!(
        first.body["blocks"],
        json!([{"first": 1, "last": 150, "increment": 1}, {"first": 1001, "last": 1050, "increment": 1}])
    );
    let (again, replayed) = keyed(&app, path, "lease-1", VEND_TOKEN).await;
    assert!(replayed);
    for field in ["blocks", "count", "exhausted", "expires_at"] {
        assert_eq!(again.body[field], first.body[field], "{field}");
    }
    keyed(
        &app,
        "/sequences/leased/leases?count=5",
        "lease-1",
        VEND_TOKEN,
    )
    .await
    .0
    .assert_error(422, "idempotency_key_reused");
    assert_eq!(app.next_value("leased").await, 1051);
}

/// A retry after the sequence was retired is answered 410, as any vend is, not the stored
/// values: a client that never got the first answer would otherwise get values of the retired
/// sequence after `DELETE` answered.
#[tokio::test(flavor = "multi_thread")]
async fn a_keyed_vend_is_not_replayed_once_its_sequence_is_retired() {
    let app = spawn_app().await;
    app.create_ok("closing", 1, 1000).await;
    app.create_ok("open", 1, 1000).await;
    let (first, _) = keyed_next(&app, "closing", 3, "label-1").await;
    assert_eq!(values_of(&first), [1, 2, 3]);
    let (other, _) = keyed_next(&app, "open", 2, "label-2").await;
    assert_eq!(app.retire("closing").await.status, StatusCode::OK);

    keyed_next(&app, "closing", 3, "label-1")
        .await
        .0
        .assert_error(410, "sequence_retired");
    // The key's other answers are replayed as before.
    let (again, replayed) = keyed_next(&app, "open", 2, "label-2").await;
    assert!(replayed);
    assert_eq!(again.body, other.body);
}

/// The same for a keyed lease: a replay would hand a client a block of the retired sequence,
/// with minutes of its lease left.
#[tokio::test(flavor = "multi_thread")]
async fn a_keyed_lease_is_not_replayed_once_its_sequence_is_retired() {
    let app = spawn_app().await;
    app.create_ok("closing", 1, 1000).await;
    let path = "/sequences/closing/leases?count=5";
    let (first, _) = keyed(&app, path, "lease-1", VEND_TOKEN).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(app.retire("closing").await.status, StatusCode::OK);
    keyed(&app, path, "lease-1", VEND_TOKEN)
        .await
        .0
        .assert_error(410, "sequence_retired");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_keyed_vend_of_a_cached_sequence_is_drawn_and_stored() {
    let app = spawn_app().await;
    let created = app
        .create(json!({"name": "cached", "min": 1, "max": 100000, "cache": {"size": 100}}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let cached = app.next_value("cached").await;
    let (first, _) = keyed_next(&app, "cached", 2, "c").await;
    let values = values_of(&first);
    assert!(values.iter().all(|v| *v > cached), "{values:?}");
    let (again, replayed) = keyed_next(&app, "cached", 2, "c").await;
    assert!(replayed);
    assert_eq!(values_of(&again), values);
}
