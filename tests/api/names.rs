//! Names: hostile ones are refused and change nothing; valid ones, however alike, never
//! share a PostgreSQL sequence.

use std::collections::HashSet;

use reqwest::Method;
use serde_json::json;

use crate::helpers::*;

const HOSTILE: &[&str] = &[
    "",
    "a b",
    "a\"b",
    "x\"; DROP TABLE seqvend.sequences; --",
    "a'b",
    "a;b",
    "ups\u{00e9}",
    "\u{1F4E6}",
    "-lead",
    ".lead",
    "_lead",
    "tab\there",
    "nul\u{0}",
    "slash/inside",
];

#[tokio::test(flavor = "multi_thread")]
async fn hostile_names_are_400_and_change_nothing() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let too_long = "x".repeat(64);
    let multibyte = "\u{00e9}".repeat(32);
    let names: Vec<&str> = HOSTILE
        .iter()
        .copied()
        .chain([too_long.as_str(), multibyte.as_str()])
        .collect();
    for name in &names {
        let reply = app.create(json!({"name": name, "min": 1, "max": 10})).await;
        reply.assert_error(400, "invalid_name");
        let reply = app
            .create(json!({"name": "fine", "namespace": name, "min": 1, "max": 10}))
            .await;
        reply.assert_error(400, "invalid_name");
    }
    for name in [
        "a%20b",
        "a%22b",
        "a%3Bb",
        "%2Dlead",
        "x%27y",
        &"y".repeat(64),
        "%F0%9F%93%A6",
    ] {
        for (method, path) in [
            (Method::POST, format!("/sequences/{name}/next")),
            (Method::GET, format!("/sequences/{name}")),
            (Method::DELETE, format!("/sequences/{name}")),
            (Method::POST, format!("/sequences/{name}/ranges")),
        ] {
            let body = (path.ends_with("/ranges")).then(|| json!({"min": 1, "max": 2}));
            app.request(method, &path, Some(ADMIN_TOKEN), body)
                .await
                .assert_error(400, "invalid_name");
        }
    }
    let client = db.connect().await;
    let count = |sql: &'static str| {
        let client = &client;
        async move { client.query_one(sql, &[]).await.unwrap().get::<_, i64>(0) }
    };
    assert_eq!(count("SELECT count(*) FROM seqvend.sequences").await, 0);
    assert_eq!(count("SELECT count(*) FROM pg_class WHERE relkind = 'S' AND relnamespace = 'seqvend_ranges'::regnamespace").await, 0);
    assert_eq!(
        count("SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace").await,
        0
    );
    let tables = client
        .query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = 'seqvend' ORDER BY 1",
            &[],
        )
        .await
        .unwrap();
    let tables: Vec<String> = tables.iter().map(|r| r.get(0)).collect();
    assert_eq!(
        tables,
        [
            "_sqlx_migrations",
            "counters",
            "events",
            "families",
            "idempotency_keys",
            "leases",
            "range_marks",
            "ranges",
            "sequences",
            "snowflake_layout",
            "tokens",
            "usage_rounds",
            "usage_samples",
            "vend_answers",
            "worker_ids",
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn names_alike_in_all_but_case_or_their_last_character_get_sequences_of_their_own() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let stem = "a".repeat(62);
    let names = [
        format!("{stem}x"),
        format!("{stem}y"),
        format!("{stem}X"),
        "Ups".to_owned(),
        "ups".to_owned(),
        "UPS".to_owned(),
    ];
    for (i, name) in names.iter().enumerate() {
        let base = i as i64 * 100;
        app.create_ok(name, base, base + 9).await;
        assert_eq!(
            app.add_range(name, base + 50, base + 59)
                .await
                .status
                .as_u16(),
            201
        );
    }
    for (i, name) in names.iter().enumerate() {
        let base = i as i64 * 100;
        let values = values_of(&app.next_batch(name, 12).await);
        let expected: Vec<i64> = (base..base + 10).chain(base + 50..base + 52).collect();
        assert_eq!(values, expected, "{name}");
    }
    let rows = db
        .connect()
        .await
        .query("SELECT s.name, r.pg_sequence::regclass::text FROM seqvend.ranges r JOIN seqvend.sequences s ON s.id = r.sequence_id", &[])
        .await
        .unwrap();
    let sequences: HashSet<String> = rows.iter().map(|r| r.get(1)).collect();
    assert_eq!(rows.len(), names.len() * 2);
    assert_eq!(
        sequences.len(),
        rows.len(),
        "every range has its own PostgreSQL sequence"
    );
    let listed = app
        .request(Method::GET, "/sequences", Some(VEND_TOKEN), None)
        .await;
    assert_eq!(
        listed.body["sequences"].as_array().unwrap().len(),
        names.len()
    );
}
