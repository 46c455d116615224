//! Counter families: a counter per key, created by its first draw, following the family's
//! parameters exactly as a PostgreSQL sequence of the same parameters would.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use reqwest::{Method, StatusCode, Url};
use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::helpers::*;

impl TestApp {
    pub async fn create_family(&self, body: Value) -> Reply {
        self.request(Method::POST, "/families", Some(ADMIN_TOKEN), Some(body))
            .await
    }

    pub async fn create_family_ok(&self, body: Value) -> Value {
        let reply = self.create_family(body).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        reply.body
    }

    /// `POST /families/{family}/counters/{key}/next[?count=N]`, the key percent-encoded as
    /// any HTTP client would.
    pub async fn draw(&self, family: &str, key: &str, count: Option<u32>) -> Reply {
        let mut url = self.counter_url(family, key);
        url.path_segments_mut().unwrap().push("next");
        if let Some(count) = count {
            url.set_query(Some(&format!("count={count}")));
        }
        let request = self.http.post(url).bearer_auth(VEND_TOKEN);
        Reply::from(request.send().await.expect("request sent")).await
    }

    pub async fn counter(&self, family: &str, key: &str) -> Reply {
        let request = self
            .http
            .get(self.counter_url(family, key))
            .bearer_auth(VEND_TOKEN);
        Reply::from(request.send().await.expect("request sent")).await
    }

    fn counter_url(&self, family: &str, key: &str) -> Url {
        let mut url = Url::parse(&self.address).unwrap();
        url.path_segments_mut()
            .unwrap()
            .extend(["families", family, "counters", key]);
        url
    }
}

/// Draws `count` values (or one) and returns them, with whether the counter ran out.
async fn drawn(app: &TestApp, family: &str, key: &str, count: Option<u32>) -> (Vec<i64>, bool) {
    let reply = app.draw(family, key, count).await;
    match reply.status {
        StatusCode::OK => {
            assert_eq!(reply.body["family"], family, "{}", reply.body);
            assert_eq!(reply.body["key"], key, "{}", reply.body);
            if count.is_none() {
                (vec![reply.body["value"].as_i64().unwrap()], false)
            } else {
                (values_of(&reply), reply.body["exhausted"] == true)
            }
        }
        _ => {
            reply.assert_error(409, "counter_exhausted");
            (Vec::new(), true)
        }
    }
}

/// Every value a PostgreSQL sequence with these clauses hands out, up to `most`.
async fn sequence_values(db: &TestDb, clauses: &str, most: usize) -> Vec<i64> {
    let client = db.connect().await;
    let name = format!("parity_{}", uuid::Uuid::new_v4().simple());
    client
        .batch_execute(&format!("CREATE SEQUENCE {name} {clauses} NO CYCLE"))
        .await
        .unwrap();
    let mut values = Vec::new();
    while values.len() < most {
        match client
            .query_one(&format!("SELECT nextval('{name}')"), &[])
            .await
        {
            Ok(row) => values.push(row.get(0)),
            Err(err) => {
                let text = format!("{err:?}");
                assert!(text.contains("reached maximum") || text.contains("reached minimum"));
                break;
            }
        }
    }
    values
}

#[tokio::test]
async fn a_family_s_counters_follow_a_postgresql_sequence_of_the_same_parameters() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let (min, max) = (i64::MIN, i64::MAX);
    // (family body, the same as CREATE SEQUENCE clauses)
    let cases = [
        (json!({}), String::new()),
        (json!({"increment": -1}), "INCREMENT -1".to_owned()),
        (
            json!({"min": 1, "max": 20, "increment": 3}),
            "MINVALUE 1 MAXVALUE 20 INCREMENT 3".to_owned(),
        ),
        (
            json!({"min": -10, "max": 10, "increment": -4, "start": 7}),
            "MINVALUE -10 MAXVALUE 10 INCREMENT -4 START 7".to_owned(),
        ),
        (
            json!({"min": 0, "max": max, "increment": 4, "start": max - 10}),
            format!("MINVALUE 0 MAXVALUE {max} INCREMENT 4 START {}", max - 10),
        ),
        (
            json!({"min": min, "max": min + 10, "increment": -3, "start": min + 9}),
            format!(
                "MINVALUE {min} MAXVALUE {} INCREMENT -3 START {}",
                min + 10,
                min + 9
            ),
        ),
        (
            json!({"min": min, "max": max, "increment": max, "start": min}),
            format!("MINVALUE {min} MAXVALUE {max} INCREMENT {max} START {min}"),
        ),
    ];
    for (i, (body, clauses)) in cases.into_iter().enumerate() {
        let family = format!("parity-{i}");
        let mut body = body;
        body["name"] = json!(family);
        app.create_family_ok(body.clone()).await;
        let expected = sequence_values(&db, &clauses, 40).await;
        // Batches of varied size, single draws between them, until 40 values or the end.
        let mut got = Vec::new();
        let mut ran_out = false;
        for count in [None, Some(3), None, Some(1), Some(7), Some(30)]
            .into_iter()
            .cycle()
        {
            if got.len() >= 40 || ran_out {
                break;
            }
            let (values, exhausted) = drawn(&app, &family, "k", count).await;
            got.extend(values);
            ran_out = exhausted;
        }
        got.truncate(40);
        assert_eq!(got, expected, "family {body}, sequence {clauses:?}");
        if expected.len() < 40 {
            // Ran out where the sequence did, and stays out.
            app.draw(&family, "k", None)
                .await
                .assert_error(409, "counter_exhausted");
            let counter = app.counter(&family, "k").await;
            assert_eq!(counter.status, StatusCode::OK, "{}", counter.body);
            assert_eq!(counter.body["next_value"], Value::Null);
            assert_eq!(counter.body["remaining"], 0);
        }
        // Every key has a counter of its own, from the start.
        let (other, _) = drawn(&app, &family, "other key", Some(2)).await;
        assert_eq!(other, expected[..2.min(expected.len())]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_raced_into_existence_by_two_instances_get_one_counter_each() {
    let db = TestDb::shared().await;
    let apps = [
        Arc::new(spawn_app_on(&db, test_settings()).await),
        Arc::new(spawn_app_on(&db, test_settings()).await),
    ];
    apps[0].create_family_ok(json!({"name": "chat"})).await;
    // 20 rounds: 16 clients over both instances draw from the same 2 new keys at once.
    for round in 0..20 {
        let mut tasks = JoinSet::new();
        for client in 0..16 {
            let app = apps[client % 2].clone();
            let key = format!("group-{round}-{}", client % 2);
            tasks.spawn(async move {
                let count = (client % 3 + 1) as u32;
                let (values, exhausted) = drawn(&app, "chat", &key, Some(count)).await;
                assert!(!exhausted);
                (key, values)
            });
        }
        let mut by_key: HashMap<String, Vec<i64>> = HashMap::new();
        while let Some(joined) = tasks.join_next().await {
            let (key, values) = joined.unwrap();
            by_key.entry(key).or_default().extend(values);
        }
        for (key, mut values) in by_key {
            values.sort_unstable();
            // Strict counters: exactly 1..=n, none twice, none skipped.
            let n = values.len() as i64;
            assert_eq!(values, (1..=n).collect::<Vec<_>>(), "{key}");
            let counter = apps[round % 2].counter("chat", &key).await;
            assert_eq!(counter.body["drawn"], n, "{key}: {}", counter.body);
        }
    }
    let client = db.connect().await;
    let rows = client
        .query_one(
            "SELECT count(*), count(DISTINCT key) FROM seqvend.counters",
            &[],
        )
        .await
        .unwrap();
    assert_eq!((rows.get::<_, i64>(0), rows.get::<_, i64>(1)), (40, 40));
}

#[tokio::test]
async fn hostile_keys_are_served_as_given_or_refused_and_never_reach_sql_as_text() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_family_ok(json!({"name": "labels"})).await;
    let exactly_200 = "é".repeat(100);
    let served = [
        "o'brien",
        "'; DROP TABLE seqvend.counters; --",
        "a\"b",
        "100%",
        "%27",
        "%",
        "_",
        "\\",
        "日本語",
        "🚚 parcel",
        " ",
        "?x=1&y=#2",
        exactly_200.as_str(),
    ];
    for key in served {
        let (first, _) = drawn(&app, "labels", key, None).await;
        let (second, _) = drawn(&app, "labels", key, Some(2)).await;
        assert_eq!((first, second), (vec![1], vec![2, 3]), "{key:?}");
        let counter = app.counter("labels", key).await;
        assert_eq!(counter.status, StatusCode::OK, "{key:?}: {}", counter.body);
        assert_eq!(counter.body["key"], key);
        assert_eq!(counter.body["next_value"], 4);
    }
    // Stored as given, one row each, and the table is still there.
    let client = db.connect().await;
    let stored: HashSet<String> = client
        .query("SELECT key FROM seqvend.counters", &[])
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(stored, served.iter().map(|k| k.to_string()).collect());

    // Sent with every byte percent-encoded: an HTTP client would drop or refuse some of
    // them itself, and the server must refuse them whatever the client does.
    let too_long = format!("{exactly_200}a");
    let ascii_201 = "x".repeat(201);
    for key in [
        &ascii_201,
        &too_long,
        "a/b",
        "line\nbreak",
        "nul\0",
        "tab\t",
        "\u{7f}",
    ] {
        let encoded: String = key.bytes().map(|b| format!("%{b:02X}")).collect();
        let path = format!("/families/labels/counters/{encoded}");
        let draw = format!("{path}/next");
        app.request(Method::POST, &draw, Some(VEND_TOKEN), None)
            .await
            .assert_error(400, "invalid_key");
        app.request(Method::GET, &path, Some(VEND_TOKEN), None)
            .await
            .assert_error(400, "invalid_key");
    }
    let count: i64 = client
        .query_one("SELECT count(*) FROM seqvend.counters", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, served.len() as i64, "a refused key drew nothing");
}

/// A family of ten values 10^17 apart up to 10^18 - 1: its capacity counted with numeric
/// division, which keeps about 16 significant digits, came out 11, and the eleventh value drawn
/// was 10^18, past the family's bound.
#[tokio::test]
async fn a_family_of_large_steps_gives_nothing_past_its_bound() {
    let app = spawn_app().await;
    let (step, max) = (100_000_000_000_000_000_i64, 999_999_999_999_999_999_i64);
    app.create_family_ok(json!({"name": "wide", "min": 0, "max": max, "increment": step}))
        .await;
    let (values, exhausted) = drawn(&app, "wide", "k", Some(20)).await;
    assert_eq!(values, (0..10).map(|k| k * step).collect::<Vec<_>>());
    assert!(exhausted);
    app.draw("wide", "k", None)
        .await
        .assert_error(409, "counter_exhausted");
}

/// A counter drawn one value past its bound under the capacity counted before migration
/// 20261207120000 reads as used up, not as -1 values left.
#[tokio::test]
async fn a_counter_drawn_past_its_bound_before_the_exact_capacity_reads_as_used_up() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_family_ok(json!({"name": "old", "min": 1, "max": 5}))
        .await;
    assert_eq!(
        drawn(&app, "old", "k", Some(5)).await,
        (vec![1, 2, 3, 4, 5], false)
    );
    db.connect()
        .await
        .batch_execute("UPDATE seqvend.counters SET drawn = drawn + 1")
        .await
        .unwrap();
    let counter = app.counter("old", "k").await;
    assert_eq!(counter.body["remaining"], 0, "{}", counter.body);
    app.draw("old", "k", None)
        .await
        .assert_error(409, "counter_exhausted");
}

/// A family spanning most of bigint by a large step: a draw of all its values answers them,
/// though their offsets from the first overflow a bigint.
#[tokio::test]
async fn a_family_spanning_most_of_bigint_gives_all_its_values_in_one_draw() {
    let app = spawn_app().await;
    let (step, bound) = (100_000_000_000_000_000_i64, 5_000_000_000_000_000_000_i64);
    app.create_family_ok(json!({"name": "span", "min": -bound, "max": bound, "increment": step}))
        .await;
    let (values, exhausted) = drawn(&app, "span", "k", Some(101)).await;
    let expected = (0..101_i128).map(|k| (-i128::from(bound) + k * i128::from(step)) as i64);
    assert_eq!(values, expected.collect::<Vec<_>>());
    assert!(!exhausted);
    app.draw("span", "k", None)
        .await
        .assert_error(409, "counter_exhausted");
}

#[tokio::test]
async fn a_counter_that_reaches_the_family_bound_answers_409_counter_exhausted() {
    let app = spawn_app().await;
    app.create_family_ok(json!({"name": "shift", "min": 1, "max": 5}))
        .await;
    assert_eq!(
        drawn(&app, "shift", "w1", Some(3)).await,
        (vec![1, 2, 3], false)
    );
    assert_eq!(
        drawn(&app, "shift", "w1", Some(3)).await,
        (vec![4, 5], true)
    );
    app.draw("shift", "w1", None)
        .await
        .assert_error(409, "counter_exhausted");
    app.draw("shift", "w1", Some(2))
        .await
        .assert_error(409, "counter_exhausted");
    let counter = app.counter("shift", "w1").await;
    assert_eq!(
        (
            counter.body["drawn"].clone(),
            counter.body["remaining"].clone()
        ),
        (json!(5), json!(0))
    );
    // Its neighbours are untouched.
    assert_eq!(drawn(&app, "shift", "w2", None).await, (vec![1], false));
    let scrape = app.scrape().await;
    assert!(
        scrape.contains("seqvend_counter_exhausted_total{family=\"shift\"} 2"),
        "{scrape}"
    );
}

#[tokio::test]
async fn a_retired_family_answers_410_and_its_name_is_never_reused() {
    let app = spawn_app().await;
    let created = app.create_family_ok(json!({"name": "orders"})).await;
    assert_eq!(created["status"], "active");
    drawn(&app, "orders", "o-1", None).await;
    let retire = || app.request(Method::DELETE, "/families/orders", Some(ADMIN_TOKEN), None);
    let retired = retire().await;
    assert_eq!(retired.status, StatusCode::OK, "{}", retired.body);
    assert_eq!(retired.body["status"], "retired");
    let again = retire().await;
    assert_eq!(again.body, retired.body, "retiring again answers the same");

    app.draw("orders", "o-1", None)
        .await
        .assert_error(410, "family_retired");
    app.draw("orders", "new key", Some(5))
        .await
        .assert_error(410, "family_retired");
    app.counter("orders", "o-1")
        .await
        .assert_error(410, "family_retired");
    let family = app
        .request(Method::GET, "/families/orders", Some(ADMIN_TOKEN), None)
        .await;
    assert_eq!(family.body["status"], "retired");
    app.create_family(json!({"name": "orders"}))
        .await
        .assert_error(409, "name_taken");

    let events = app
        .request(Method::GET, "/events", Some(ADMIN_TOKEN), None)
        .await;
    let kinds: Vec<(&str, &str, &str)> = events.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let field = |name: &str| e[name].as_str().unwrap_or("");
            (field("kind"), field("family"), field("token"))
        })
        .collect();
    let admin = crate::tokens::bootstrap_admin_name();
    assert_eq!(
        kinds,
        [
            ("family_created", "orders", admin.as_str()),
            ("family_retired", "orders", admin.as_str())
        ]
    );
}

#[tokio::test]
async fn bad_families_and_bad_requests_are_refused_and_change_nothing() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let refused = [
        (json!({"name": "a", "min": 5, "max": 5}), "invalid_range"),
        (
            json!({"name": "a", "min": 1, "max": 9, "start": 10}),
            "invalid_range",
        ),
        (json!({"name": "a", "increment": 0}), "invalid_range"),
        (json!({"name": "a", "max": 0}), "invalid_range"),
        (json!({"name": "a", "min": 1.5}), "invalid_range"),
        (json!({"name": "-a"}), "invalid_name"),
        (json!({"name": "a b"}), "invalid_name"),
        (json!({"name": "a", "colour": "red"}), "invalid_request"),
        (json!({}), "invalid_request"),
        (json!(["a"]), "invalid_request"),
    ];
    for (body, code) in refused {
        app.create_family(body.clone())
            .await
            .assert_error(400, code);
    }
    let client = db.connect().await;
    let families: i64 = client
        .query_one("SELECT count(*) FROM seqvend.families", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(families, 0);

    app.draw("nope", "k", None)
        .await
        .assert_error(404, "not_found");
    app.counter("nope", "k")
        .await
        .assert_error(404, "not_found");
    app.create_family_ok(json!({"name": "f"})).await;
    app.counter("f", "never drawn")
        .await
        .assert_error(404, "not_found");
    for count in [0, 10_001] {
        app.draw("f", "k", Some(count))
            .await
            .assert_error(400, "invalid_request");
    }
    app.draw("bad name!", "k", None)
        .await
        .assert_error(400, "invalid_name");
    // Draws are not stored for replay: a key is refused rather than silently ignored.
    let keyed = app
        .http
        .post(format!("{}/families/f/counters/k/next", app.address))
        .bearer_auth(VEND_TOKEN)
        .header("Idempotency-Key", "retry-1");
    Reply::from(keyed.send().await.unwrap())
        .await
        .assert_error(400, "invalid_request");
    let counters: i64 = client
        .query_one("SELECT count(*) FROM seqvend.counters", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(counters, 0, "nothing was drawn");
}

#[tokio::test]
async fn families_are_listed_in_pages_and_scoped_like_sequences() {
    let app = spawn_app().await;
    for name in ["orders-eu", "orders-us", "chat", "shift"] {
        app.create_family_ok(json!({"name": name})).await;
    }
    let first = list_families(&app, "?limit=2", ADMIN_TOKEN).await;
    assert_eq!(family_names(&first), ["chat", "orders-eu"]);
    assert_eq!(first.body["next"], "orders-eu");
    let second = list_families(&app, "?limit=2&after=orders-eu", ADMIN_TOKEN).await;
    assert_eq!(family_names(&second), ["orders-us", "shift"]);
    assert_eq!(second.body["next"], Value::Null);
    list_families(&app, "?limit=0", ADMIN_TOKEN)
        .await
        .assert_error(400, "invalid_request");

    let token = app
        .request(
            Method::POST,
            "/tokens",
            Some(ADMIN_TOKEN),
            Some(json!({"name": "orders-app", "scopes": ["vend:orders-*"]})),
        )
        .await;
    assert_eq!(token.status, StatusCode::CREATED, "{}", token.body);
    let secret = token.body["token"].as_str().unwrap();
    let listed = list_families(&app, "", secret).await;
    assert_eq!(family_names(&listed), ["orders-eu", "orders-us"]);
    let app = &app;
    let vend = |family: &str| {
        let path = format!("/families/{family}/counters/k/next");
        async move { app.request(Method::POST, &path, Some(secret), None).await }
    };
    assert_eq!(vend("orders-eu").await.status, StatusCode::OK);
    vend("chat").await.assert_error(403, "forbidden");
    // The answer is the same whether or not the family exists.
    vend("nope").await.assert_error(403, "forbidden");
    app.request(
        Method::POST,
        "/families",
        Some(secret),
        Some(json!({"name": "orders-jp"})),
    )
    .await
    .assert_error(403, "forbidden");
    app.request(Method::DELETE, "/families/orders-eu", Some(secret), None)
        .await
        .assert_error(403, "forbidden");
    app.request(
        Method::POST,
        "/families",
        Some(VEND_TOKEN),
        Some(json!({"name": "x"})),
    )
    .await
    .assert_error(403, "forbidden");
}

async fn list_families(app: &TestApp, query: &str, token: &str) -> Reply {
    app.request(Method::GET, &format!("/families{query}"), Some(token), None)
        .await
}

fn family_names(reply: &Reply) -> Vec<String> {
    reply.body["families"]
        .as_array()
        .unwrap_or_else(|| panic!("not a page: {}", reply.body))
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn metrics_count_per_family_never_per_key() {
    let app = spawn_app().await;
    app.create_family_ok(json!({"name": "chat"})).await;
    for key in ["room-1", "room-2", "room-3"] {
        drawn(&app, "chat", key, Some(4)).await;
    }
    drawn(&app, "chat", "room-1", None).await;
    let scrape = app.scrape().await;
    for line in [
        "seqvend_counter_values_vended_total{family=\"chat\"} 13",
        "seqvend_counters_created_total{family=\"chat\"} 3",
    ] {
        assert!(scrape.contains(line), "{line} in {scrape}");
    }
    assert!(!scrape.contains("room-"), "a key became a label: {scrape}");
}

#[tokio::test(flavor = "multi_thread")]
async fn retiring_waits_for_a_draw_in_flight_and_no_draw_commits_after_it() {
    let db = TestDb::shared().await;
    let app = Arc::new(spawn_app_on(&db, test_settings()).await);
    app.create_family_ok(json!({"name": "inflight"})).await;
    drawn(&app, "inflight", "k", None).await;
    // Holding the counter's row: the draw has taken the family's lock and waits for the row.
    let blocker = db.connect().await;
    blocker
        .batch_execute("BEGIN; SELECT 1 FROM seqvend.counters FOR UPDATE")
        .await
        .unwrap();
    let draw = tokio::spawn({
        let app = app.clone();
        async move { app.draw("inflight", "k", Some(3)).await }
    });
    let observer = db.connect().await;
    // The draw waits for the counter's row.
    until_blocked(
        &observer,
        1,
        Blocked::On("transactionid"),
        "%draw_counters%",
    )
    .await;
    let retire = tokio::spawn({
        let app = app.clone();
        async move {
            app.request(
                Method::DELETE,
                "/families/inflight",
                Some(ADMIN_TOKEN),
                None,
            )
            .await
        }
    });
    // DELETE waits for the draw in flight.
    until_retirement_waits_then_commit(&observer, &retire, &blocker).await;
    assert_eq!(values_of(&draw.await.unwrap()), [2, 3, 4]);
    let retired = retire.await.unwrap();
    assert_eq!(retired.body["status"], "retired", "{}", retired.body);
    app.draw("inflight", "k", None)
        .await
        .assert_error(410, "family_retired");
}
