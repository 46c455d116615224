//! GET /sequences/{name}/events: a sequence's history, oldest first or newest first, in the
//! API's words.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::*;

async fn events(app: &TestApp, name: &str, query: &str) -> Reply {
    let path = format!("/sequences/{name}/events{query}");
    app.request(Method::GET, &path, Some(VEND_TOKEN), None)
        .await
}

/// Each event as (kind, range, actor).
fn summary(page: &Value) -> Vec<(String, Value, String)> {
    page["events"]
        .as_array()
        .expect("an events list")
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_owned(),
                e["range"].clone(),
                e["actor"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn ids(page: &Value) -> Vec<i64> {
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sequence_s_life_reads_back_in_order_with_kinds_ranges_and_actors() {
    let app = spawn_app().await;
    app.create_ok("life", 1, 3).await;
    assert_eq!(
        app.add_range("life", 10, 11).await.status,
        StatusCode::CREATED
    );
    // Past the first range's end (a rollover), then past the second's (exhaustion).
    let mut vended = Vec::new();
    for _ in 0..5 {
        vended.push(app.next_value("life").await);
    }
    assert_eq!(vended, [1, 2, 3, 10, 11]);
    app.next("life")
        .await
        .assert_error(409, "sequence_exhausted");
    let changed = app
        .request(
            Method::PATCH,
            "/sequences/life",
            Some(ADMIN_TOKEN),
            Some(json!({"cache": {"size": 0}})),
        )
        .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.body);
    assert_eq!(app.retire("life").await.status, StatusCode::OK);

    let page = events(&app, "life", "").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let first = json!({"min": 1, "max": 3});
    let second = json!({"min": 10, "max": 11});
    let expected = [
        ("created", first, "admin"),
        ("range_added", second.clone(), "admin"),
        ("rollover", second.clone(), "vend"),
        ("exhausted", second, "vend"),
        ("settings_changed", Value::Null, "admin"),
        ("retired", Value::Null, "admin"),
    ]
    .map(|(kind, range, actor)| (kind.to_owned(), range, actor.to_owned()));
    assert_eq!(summary(&page.body), expected, "{}", page.body);
    let ids = ids(&page.body);
    assert!(increasing(&ids), "ids increase: {ids:?}");
    let first = &page.body["events"][0];
    assert!(
        first["at"].as_str().is_some_and(|at| at.contains('T')),
        "{first}"
    );
    assert!(first["detail"].is_null(), "{first}");
    assert!(page.body["next"].is_null(), "one page: {}", page.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rewound_postgresql_sequence_shows_as_rewind_detected_with_what_was_done() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let created = app.create_ok("rewound", 1, 100).await;
    let sequence = created["ranges"][0]["pg_sequence"].as_str().unwrap();
    assert_eq!(
        values_of(&app.next_batch("rewound", 5).await),
        [1, 2, 3, 4, 5]
    );
    db.connect()
        .await
        .execute(&format!("SELECT setval('{sequence}', 1, false)"), &[])
        .await
        .unwrap();
    assert_eq!(app.next_value("rewound").await, 6);

    let page = events(&app, "rewound", "").await;
    let rewind = &page.body["events"][1];
    assert_eq!(
        (&rewind["kind"], &rewind["actor"], &rewind["range"]),
        (
            &json!("rewind_detected"),
            &json!("vend"),
            &json!({"min": 1, "max": 100})
        ),
        "{}",
        page.body
    );
    let detail = rewind["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("moved back"), "{detail}");
}

#[tokio::test(flavor = "multi_thread")]
async fn events_page_by_id_with_after_and_next_and_each_page_keeps_to_its_sequence() {
    let app = spawn_app().await;
    interleaved_histories(&app, "paged", "other").await;
    let everything = ids(&events(&app, "paged", "").await.body);
    assert_eq!(everything.len(), 5, "created and four ranges");

    let (seen, pages) = page_through(&app, "paged", "", "after").await;
    assert_eq!((seen, pages), (everything.clone(), 3));

    let tail = events(&app, "paged", &format!("?after={}", everything[4])).await;
    assert_eq!(tail.body, json!({"events": [], "next": null}));
    let kinds: Vec<String> = summary(&events(&app, "paged", "?limit=1000").await.body)
        .into_iter()
        .map(|(kind, _, _)| kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "created",
            "range_added",
            "range_added",
            "range_added",
            "range_added"
        ]
    );
}

/// `name` with four ranges added after its creation, and `other`'s events interleaved with
/// them by id (they belong to no page of `name`'s).
async fn interleaved_histories(app: &TestApp, name: &str, other: &str) {
    app.create_ok(name, 1, 10).await;
    app.create_ok(other, 1_000, 1_010).await;
    for i in 1..=4 {
        let min = i * 100;
        assert_eq!(
            app.add_range(name, min, min + 9).await.status,
            StatusCode::CREATED
        );
        let theirs = 1_000 * (i + 1);
        assert_eq!(
            app.add_range(other, theirs, theirs + 9).await.status,
            StatusCode::CREATED
        );
    }
}

/// Reads every page of `name`'s events two at a time, from `first` (`""` or `order=…`) and
/// then passing each `next` back as `cursor` (`after` or `before`); returns the ids in the
/// order read and how many pages it took.
async fn page_through(app: &TestApp, name: &str, first: &str, cursor: &str) -> (Vec<i64>, usize) {
    let (mut seen, mut pages) = (Vec::new(), 0);
    let mut query = format!("?limit=2&{first}");
    loop {
        let page = events(app, name, &query).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        pages += 1;
        let ids = ids(&page.body);
        assert!(ids.len() <= 2, "{}", page.body);
        seen.extend(&ids);
        match page.body["next"].as_i64() {
            Some(next) => {
                assert_eq!(Some(&next), ids.last(), "next is the page's last id");
                query = format!("?limit=2&{cursor}={next}");
            }
            None => return (seen, pages),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn newest_first_pages_backwards_with_before_and_keeps_to_its_sequence() {
    let app = spawn_app().await;
    interleaved_histories(&app, "latest", "beside").await;
    let oldest_first = ids(&events(&app, "latest", "").await.body);
    assert_eq!(oldest_first.len(), 5, "created and four ranges");
    let mut expected = oldest_first.clone();
    expected.reverse();

    let (seen, pages) = page_through(&app, "latest", "order=newest", "before").await;
    assert_eq!((seen, pages), (expected.clone(), 3));
    let first = events(&app, "latest", "?order=newest&limit=1").await.body;
    assert_eq!(first["events"][0]["kind"], "range_added");
    assert_eq!(first["events"][0]["range"], json!({"min": 400, "max": 409}));
    // `before` alone reads newest first; before the oldest there is nothing.
    let older = events(&app, "latest", &format!("?before={}", expected[0])).await;
    assert_eq!(ids(&older.body), expected[1..]);
    let none = events(&app, "latest", &format!("?before={}", expected[4])).await;
    assert_eq!(none.body, json!({"events": [], "next": null}));

    // The whole log, newest first, is the oldest-first log reversed.
    let all = |query: &'static str| {
        let app = &app;
        async move {
            let reply = app
                .request(
                    Method::GET,
                    &format!("/events{query}"),
                    Some(ADMIN_TOKEN),
                    None,
                )
                .await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
            ids(&reply.body)
        }
    };
    let mut log = all("?limit=1000").await;
    log.reverse();
    assert_eq!(all("?order=newest&limit=1000").await, log);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_paging_parameters_are_400_and_an_unknown_sequence_404() {
    let app = spawn_app().await;
    app.create_ok("known", 1, 10).await;
    for query in [
        "?limit=0",
        "?limit=1001",
        "?limit=ten",
        "?after=-1",
        "?after=first",
        // An unknown parameter.
        "?since=3",
        "?before=-1",
        "?order=latest",
        "?order=newest&after=1",
        "?order=oldest&before=3",
        "?after=1&before=3",
    ] {
        events(&app, "known", query)
            .await
            .assert_error(400, "invalid_request");
    }
    events(&app, "not%20a%20name", "")
        .await
        .assert_error(400, "invalid_name");
    events(&app, "unknown", "")
        .await
        .assert_error(404, "not_found");
    let anonymous = app
        .request(Method::GET, "/sequences/known/events", None, None)
        .await;
    anonymous.assert_error(401, "unauthorized");
}
