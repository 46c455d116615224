//! Keyed vends stored one row per statement (`seqvend.vend_answers`): the interleavings that
//! could give a key two answers or lose one — a retry racing its first attempt, two keys of one
//! statement with one replayed, a statement that partly fails, the purge beside replays.

use std::collections::HashSet;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::*;

const RANGE_LOCK: &str =
    "SELECT pg_advisory_lock(1398166087, (SELECT min(id) FROM seqvend.ranges))";

/// A keyed `next` sent in the background, answered whenever its statement commits.
fn send_keyed(app: &TestApp, path: &str, key: &str) -> tokio::task::JoinHandle<(Reply, bool)> {
    let (http, address) = (app.http.clone(), app.address.clone());
    let (path, key) = (path.to_owned(), key.to_owned());
    tokio::spawn(async move {
        let response = http
            .post(format!("{address}{path}"))
            .bearer_auth(VEND_TOKEN)
            .header("Idempotency-Key", key)
            .send()
            .await
            .unwrap();
        let replayed = response.headers().contains_key("idempotent-replayed");
        (Reply::from(response).await, replayed)
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_racing_its_first_attempt_on_another_instance_waits_and_replays_it() {
    let db = TestDb::shared().await;
    let first = spawn_app_on(&db, test_settings()).await;
    let second = spawn_app_on(&db, test_settings()).await;
    first.create_ok("raced", 1, 1000).await;
    let blocker = db.connect().await;
    blocker.batch_execute(RANGE_LOCK).await.unwrap();
    let path = "/sequences/raced/next?count=3";
    let original = send_keyed(&first, path, "parcel-1");
    let observer = db.connect().await;
    until_blocked(&observer, 1, Blocked::On("advisory"), "%vend_keyed%").await;
    // The retry, on the other instance, while the first holds the key: it waits for the key.
    let retry = send_keyed(&second, path, "parcel-1");
    until_blocked(&observer, 2, Blocked::On("advisory"), "%vend_keyed%").await;
    blocker
        .batch_execute("SELECT pg_advisory_unlock_all()")
        .await
        .unwrap();
    let (original, replayed) = original.await.unwrap();
    assert_eq!(original.status, StatusCode::OK, "{}", original.body);
    assert!(!replayed);
    assert_eq!(values_of(&original), [1, 2, 3]);
    let (retry, replayed) = retry.await.unwrap();
    assert_eq!(retry.status, StatusCode::OK, "{}", retry.body);
    assert!(replayed, "the retry got the first answer");
    assert_eq!(retry.body, original.body);
    assert_eq!(
        second.next_value("raced").await,
        4,
        "the retry drew nothing: it waited for the key, not the range"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_held_past_the_lock_timeout_is_409_in_flight_and_draws_nothing() {
    let db = TestDb::shared().await;
    let first = spawn_app_on(&db, test_settings()).await;
    let mut impatient = test_settings();
    impatient.database.lock_timeout = Duration::from_millis(300);
    let second = spawn_app_on(&db, impatient).await;
    first.create_ok("held", 1, 1000).await;
    let blocker = db.connect().await;
    blocker.batch_execute(RANGE_LOCK).await.unwrap();
    let path = "/sequences/held/next?count=2";
    let original = send_keyed(&first, path, "parcel-2");
    let observer = db.connect().await;
    until_blocked(&observer, 1, Blocked::On("advisory"), "%vend_keyed%").await;
    let (busy, replayed) = second.keyed_post(path, "parcel-2", VEND_TOKEN).await;
    busy.assert_error(409, "idempotency_key_in_flight");
    assert!(!replayed);
    blocker
        .batch_execute("SELECT pg_advisory_unlock_all()")
        .await
        .unwrap();
    let (original, _) = original.await.unwrap();
    assert_eq!(values_of(&original), [1, 2]);
    let (again, replayed) = second.keyed_post(path, "parcel-2", VEND_TOKEN).await;
    assert!(replayed);
    assert_eq!(values_of(&again), [1, 2]);
    assert_eq!(
        second.next_value("held").await,
        3,
        "the refused retry drew nothing"
    );
}

/// One request of a keyed vend statement: the sequence, the count, the token and key (if
/// keyed), and what was asked.
type KeyedAsk<'a> = (&'a str, i32, Option<(&'a str, &'a str)>, &'a str);

/// One row of the keyed vend statement: requests, outcome, values, detail.
type StatementRow = (Vec<i32>, String, Option<Vec<i64>>, Option<String>);

/// The keyed vend statement, called as a lane calls it: its rows, in request order of each
/// row's first request.
async fn vend_keyed(client: &tokio_postgres::Client, asks: &[KeyedAsk<'_>]) -> Vec<StatementRow> {
    let names: Vec<&str> = asks.iter().map(|a| a.0).collect();
    let counts: Vec<i32> = asks.iter().map(|a| a.1).collect();
    let owners: Vec<Option<&str>> = asks.iter().map(|a| a.2.map(|k| k.0)).collect();
    let keys: Vec<Option<&str>> = asks.iter().map(|a| a.2.map(|k| k.1)).collect();
    let requests: Vec<Option<&str>> = asks.iter().map(|a| a.2.map(|_| a.3)).collect();
    let rows = client
        .query(
            "SELECT requests, outcome, vals, detail
               FROM seqvend.vend_keyed($1, $2, $3, $4, $5, interval '1 hour')",
            &[&names, &counts, &owners, &keys, &requests],
        )
        .await
        .unwrap();
    let mut rows: Vec<StatementRow> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    rows.sort_by_key(|r| r.0[0]);
    rows
}

async fn batch_rows(client: &tokio_postgres::Client) -> i64 {
    client
        .query_one("SELECT count(*) FROM seqvend.vend_answers", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn one_statement_stores_its_keyed_answers_in_one_row_and_replays_each_alone() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("a", 1, 1000).await;
    app.create_ok("b", 1, 1000).await;
    let client = db.connect().await;
    let rows = vend_keyed(
        &client,
        &[
            ("a", 2, Some(("t", "k1")), "next:a:count=2"),
            ("a", 1, None, ""),
            ("b", 3, Some(("t", "k3")), "next:b:count=3"),
            ("a", 2, Some(("u", "k1")), "next:a:count=2"),
        ],
    )
    .await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].0, [1, 2, 4]);
    assert_eq!(rows[0].2.as_deref(), Some(&[1, 2, 3, 4, 5][..]));
    assert_eq!(rows[1].2.as_deref(), Some(&[1, 2, 3][..]));
    assert_eq!(batch_rows(&client).await, 1, "three keys, one row");

    // Two keys in one statement, one of them replayed, one reused with another request.
    let rows = vend_keyed(
        &client,
        &[
            ("a", 1, Some(("t", "k4")), "next:a:one"),
            ("a", 2, Some(("u", "k1")), "next:a:count=2"),
            ("b", 1, Some(("t", "k3")), "next:b:one"),
            ("a", 1, None, ""),
        ],
    )
    .await;
    let outcomes: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(outcomes, ["ok", "replayed", "key_reused"], "{rows:?}");
    assert_eq!(rows[0].0, [1, 4], "only the new ones are drawn for");
    assert_eq!(rows[0].2.as_deref(), Some(&[6, 7][..]));
    assert_eq!(
        rows[1].2.as_deref(),
        Some(&[4, 5][..]),
        "u's k1 as first answered"
    );
    assert_eq!(rows[1].3.as_deref(), Some("200"));
    assert_eq!(rows[2].2, None);
    let answers = answers(&client).await;
    assert_eq!(
        answers,
        [
            ("t".into(), "k1".into(), vec![1, 2]),
            ("t".into(), "k3".into(), vec![1, 2, 3]),
            ("t".into(), "k4".into(), vec![6]),
            ("u".into(), "k1".into(), vec![4, 5]),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_keyed_statement_on_one_sequence_stores_each_requests_slice() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("one", 1, 1000).await;
    // Drawn from once: a sequence never drawn from takes the general statement.
    assert_eq!(app.next_value("one").await, 1);
    let client = db.connect().await;
    let rows = vend_keyed(
        &client,
        &[
            ("one", 2, Some(("t", "k1")), "next:one:count=2"),
            ("one", 1, Some(("t", "k2")), "next:one:one"),
            ("one", 3, Some(("u", "k3")), "next:one:count=3"),
        ],
    )
    .await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].0, [1, 2, 3]);
    assert_eq!(rows[0].1, "ok");
    assert_eq!(rows[0].2.as_deref(), Some(&[2, 3, 4, 5, 6, 7][..]));
    assert_eq!(
        answers(&client).await,
        [
            ("t".into(), "k1".into(), vec![2, 3]),
            ("t".into(), "k2".into(), vec![4]),
            ("u".into(), "k3".into(), vec![5, 6, 7]),
        ]
    );
    let replays = vend_keyed(
        &client,
        &[
            ("one", 3, Some(("u", "k3")), "next:one:count=3"),
            ("one", 1, Some(("t", "k2")), "next:one:one"),
        ],
    )
    .await;
    let replayed: Vec<_> = replays
        .iter()
        .map(|r| (r.1.as_str(), r.2.clone()))
        .collect();
    assert_eq!(
        replayed,
        [
            ("replayed", Some(vec![5, 6, 7])),
            ("replayed", Some(vec![4]))
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_keyed_statement_on_one_sequence_beyond_its_remaining_values_stores_what_it_got() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("short", 1, 4).await;
    // Drawn from once: a sequence never drawn from takes the general statement.
    assert_eq!(app.next_value("short").await, 1);
    let client = db.connect().await;
    let rows = vend_keyed(
        &client,
        &[
            ("short", 2, Some(("t", "k1")), "next:short:count=2"),
            ("short", 2, Some(("t", "k2")), "next:short:count=2"),
            ("short", 1, Some(("t", "k3")), "next:short:one"),
        ],
    )
    .await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].0, [1, 2, 3]);
    assert_eq!(rows[0].1, "ok");
    assert_eq!(rows[0].2.as_deref(), Some(&[2, 3, 4][..]));
    let stored: Vec<(String, Option<Vec<i64>>, i16)> = client
        .query(
            "SELECT key, vals, status FROM seqvend.idempotent_answers ORDER BY key",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        stored,
        [
            ("k1".into(), Some(vec![2, 3]), 200),
            ("k2".into(), Some(vec![4]), 200),
            ("k3".into(), Some(vec![]), 409),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_keyed_statement_on_one_sequence_refused_its_range_lock_stores_nothing() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("held", 1, 1000).await;
    let blocker = db.connect().await;
    blocker.batch_execute(RANGE_LOCK).await.unwrap();
    let client = db.connect().await;
    client
        .batch_execute("SET seqvend.lock_timeout = '100'")
        .await
        .unwrap();
    let rows = vend_keyed(
        &client,
        &[
            ("held", 1, Some(("t", "k1")), "next:held:one"),
            ("held", 2, Some(("t", "k2")), "next:held:count=2"),
        ],
    )
    .await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].0, [1, 2]);
    assert_eq!(rows[0].1, "unavailable");
    assert_eq!(rows[0].2, None);
    assert!(
        rows[0].3.as_deref().unwrap_or("").contains("lock_timeout"),
        "{rows:?}"
    );
    assert_eq!(answers(&client).await, []);
    blocker
        .batch_execute("SELECT pg_advisory_unlock_all()")
        .await
        .unwrap();
    assert_eq!(app.next_value("held").await, 1, "nothing was drawn");
}

/// Every stored answer: (owner, key, values), in owner and key order.
async fn answers(client: &tokio_postgres::Client) -> Vec<(String, String, Vec<i64>)> {
    client
        .query(
            "SELECT owner, key, vals FROM seqvend.idempotent_answers ORDER BY owner, key",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_sent_twice_in_one_statement_gets_one_answer() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("twice", 1, 1000).await;
    let client = db.connect().await;
    let rows = vend_keyed(
        &client,
        &[
            ("twice", 1, Some(("t", "k")), "next:twice:one"),
            ("twice", 1, Some(("t", "k")), "next:twice:one"),
        ],
    )
    .await;
    let outcomes: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(outcomes, ["ok", "key_in_flight"], "{rows:?}");
    assert_eq!(answers(&client).await, [("t".into(), "k".into(), vec![1])]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_statement_that_partly_fails_stores_only_what_it_answered() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("served", 1, 1000).await;
    app.create_ok("locked", 1, 1000).await;
    let blocker = db.connect().await;
    blocker
        .batch_execute(
            "SELECT pg_advisory_lock(1398166087, r.id)
               FROM seqvend.ranges r JOIN seqvend.sequences s ON s.id = r.sequence_id
              WHERE s.name = 'locked'",
        )
        .await
        .unwrap();
    let client = db.connect().await;
    client
        .batch_execute("SET seqvend.lock_timeout = '100'")
        .await
        .unwrap();
    let asks = [
        ("locked", 1, Some(("t", "kl")), "next:locked:one"),
        ("served", 1, Some(("t", "ks")), "next:served:one"),
        ("missing", 1, Some(("t", "km")), "next:missing:one"),
    ];
    let rows = vend_keyed(&client, &asks).await;
    let outcomes: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(outcomes, ["unavailable", "ok", "not_found"], "{rows:?}");
    assert_eq!(answers(&client).await, [("t".into(), "ks".into(), vec![1])]);
    blocker
        .batch_execute("SELECT pg_advisory_unlock_all()")
        .await
        .unwrap();
    // Sent again: the one answered is replayed, the unavailable one is served now.
    let rows = vend_keyed(&client, &asks[..2]).await;
    let outcomes: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(outcomes, ["ok", "replayed"], "{rows:?}");
    assert_eq!(rows[0].2.as_deref(), Some(&[1][..]));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_purge_keeps_every_answer_within_its_retention_and_its_bound() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("p", 1, 1000).await;
    let client = db.connect().await;
    let ask = |owner, key| ("p", 1, Some((owner, key)), "next:p:one");
    vend_keyed(&client, &[ask("crowded", "c1"), ask("calm", "m1")]).await;
    vend_keyed(&client, &[ask("crowded", "c2"), ask("crowded", "c3")]).await;
    // A statement whose answers have expired goes whole.
    vend_keyed(&client, &[ask("calm", "gone")]).await;
    client
        .batch_execute(
            "UPDATE seqvend.vend_answers SET expires_at = now() - interval '2 minutes'
              WHERE 'gone' = ANY (keys)",
        )
        .await
        .unwrap();
    let pool = registry_pool(&db).await;
    let purged = seqvend::registry::purge_answers(&pool, 1).await.unwrap();
    assert_eq!(purged, 1 + 2, "the expired one, and crowded's two oldest");
    let left: Vec<(String, String)> = answers(&client)
        .await
        .into_iter()
        .map(|(owner, key, _)| (owner, key))
        .collect();
    let expected = [("calm", "m1"), ("crowded", "c3")].map(|(o, k)| (o.into(), k.into()));
    assert_eq!(left, expected);
    assert_eq!(batch_rows(&client).await, 2, "the expired row went");
    // calm's answer shares its row with a purged one: it is still replayed.
    let rows = vend_keyed(&client, &[ask("calm", "m1")]).await;
    assert_eq!(rows[0].1, "replayed");
    assert_eq!(rows[0].2.as_deref(), Some(&[2][..]));
}

/// A database of its own, migrated by an instance kept for the test's length, and a plain
/// session on it.
async fn migrated_db() -> (TestDb, TestApp, tokio_postgres::Client) {
    let db = TestDb::shared().await;
    let migrated = spawn_app_on(&db, test_settings()).await;
    let client = db.connect().await;
    (db, migrated, client)
}

/// A registry pool straight to `db`, without seqvend's session settings, for the purge.
async fn registry_pool(db: &TestDb) -> seqvend::db::Registry {
    seqvend::db::Registry::from_pool(sqlx::PgPool::connect(&db.url).await.unwrap())
}

/// A registry pool straight to `db` whose sessions wait only 100 ms for a lock.
async fn impatient_registry_pool(db: &TestDb) -> seqvend::db::Registry {
    let options = sqlx::postgres::PgConnectOptions::from_str(&db.url)
        .unwrap()
        .options([("lock_timeout", "100")]);
    seqvend::db::Registry::from_pool(sqlx::PgPool::connect_with(options).await.unwrap())
}

/// A batch row of keyed answers stored `ago` before now: token `owners[p]` sent `keys[p]`
/// (None: a slot blanked by an earlier purge).
fn answer_row(ago: &str, owners: &[&str], keys: &[Option<&str>]) -> String {
    let n = keys.len();
    let owners: Vec<String> = owners.iter().map(|o| format!("'{o}'")).collect();
    let keys: Vec<String> = keys
        .iter()
        .map(|k| k.map_or("NULL".into(), |k| format!("'{k}'")))
        .collect();
    let positions: Vec<String> = (1..=n).map(|p| p.to_string()).collect();
    let (owners, keys, positions) = (owners.join(","), keys.join(","), positions.join(","));
    format!(
        "INSERT INTO seqvend.vend_answers (created_at, expires_at, owners, keys, requests, firsts, lasts, vals)
         VALUES (now() - interval '{ago}', now() + interval '1 hour', ARRAY[{owners}], ARRAY[{keys}]::text[],
                 array_fill('next:p:one'::text, ARRAY[{n}]), ARRAY[{positions}], ARRAY[{positions}],
                 ARRAY[{positions}]::bigint[]);"
    )
}

/// Every stored answer's token and key, as `token:key`, in that order.
async fn live_keys(client: &tokio_postgres::Client) -> Vec<String> {
    answers(client)
        .await
        .into_iter()
        .map(|(owner, key, _)| format!("{owner}:{key}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_purge_keeps_each_tokens_newest_across_shared_rows_and_both_stores() {
    let (db, _migrated, client) = migrated_db().await;
    let pool = registry_pool(&db).await;
    // Oldest first: a row three tokens share, a lease's answer (its own row), a row with a
    // slot an earlier purge blanked, the newest row. Within a row, later positions are newer.
    let a_lease = "INSERT INTO seqvend.idempotency_keys
                       (owner, key, request, status, vals, created_at, expires_at)
                   VALUES ('a', 'la', 'lease:p:count=5', 200, '{1}',
                           now() - interval '20 seconds', now() + interval '1 hour');";
    let stored = [
        answer_row(
            "30 seconds",
            &["a", "b", "calm", "a"],
            &[Some("a1"), Some("b1"), Some("m1"), Some("a2")],
        ),
        a_lease.into(),
        answer_row(
            "10 seconds",
            &["a", "b", "a", "b", "calm"],
            &[Some("a3"), Some("b2"), None, Some("b3"), Some("m2")],
        ),
        answer_row("0 seconds", &["b", "a"], &[Some("b4"), Some("a4")]),
    ];
    client.batch_execute(&stored.concat()).await.unwrap();
    let purged = seqvend::registry::purge_answers(&pool, 2).await.unwrap();
    assert_eq!(purged, 3 + 2, "a's la, a2 and a1; b's b2 and b1");
    let kept = ["a:a3", "a:a4", "b:b3", "b:b4", "calm:m1", "calm:m2"];
    assert_eq!(live_keys(&client).await, kept, "each token's two newest");
    assert_eq!(seqvend::registry::purge_answers(&pool, 2).await.unwrap(), 0);
    assert_eq!(
        live_keys(&client).await,
        kept,
        "a second purge finds nothing more"
    );

    // One token whose answers are one more than the bound, and nothing else stored.
    client
        .batch_execute(&format!(
            "DELETE FROM seqvend.vend_answers; DELETE FROM seqvend.idempotency_keys; {}",
            answer_row(
                "1 second",
                &["solo", "solo", "solo"],
                &[Some("s1"), Some("s2"), Some("s3")]
            )
        ))
        .await
        .unwrap();
    assert_eq!(seqvend::registry::purge_answers(&pool, 3).await.unwrap(), 0);
    assert_eq!(seqvend::registry::purge_answers(&pool, 2).await.unwrap(), 1);
    assert_eq!(live_keys(&client).await, ["solo:s2", "solo:s3"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn rows_stored_in_the_same_microsecond_are_ranked_by_their_id_wherever_they_lie() {
    let (db, _migrated, client) = migrated_db().await;
    let pool = registry_pool(&db).await;
    // Two statements that started in the same microsecond, the later one (the higher id)
    // first on disk. Every purge must rank them alike, or two purges could each keep a
    // different one; where they lie changes whenever a purge rewrites a row.
    client
        .batch_execute(&format!(
            "{} {} UPDATE seqvend.vend_answers SET id = CASE keys[1] WHEN 'later' THEN 2 ELSE 1 END",
            answer_row("1 second", &["tied"], &[Some("later")]),
            answer_row("1 second", &["tied"], &[Some("earlier")]),
        ))
        .await
        .unwrap();
    assert_eq!(seqvend::registry::purge_answers(&pool, 1).await.unwrap(), 1);
    assert_eq!(live_keys(&client).await, ["tied:later"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_key_stored_again_while_the_purge_ranks_keeps_its_new_answer() {
    let (db, _migrated, client) = migrated_db().await;
    // The purge's transaction begins first: its now() is the time it judges expiry by.
    let purging = db.connect().await;
    purging.batch_execute("BEGIN").await.unwrap();
    let purge_now: String = purging
        .query_one("SELECT now()::text", &[])
        .await
        .unwrap()
        .get(0);
    // A lease's answer a day old that expires just after that, and two newer answers of the
    // same token: with a bound of two, the old answer is the one beyond it, live as the purge
    // sees it, expired as the key's next request sees it.
    client
        .batch_execute(&format!(
            "INSERT INTO seqvend.idempotency_keys (owner, key, request, status, vals, created_at, expires_at)
             VALUES ('t', 'again', 'lease:p:count=5', 200, '{{1}}', now() - interval '1 day',
                     '{purge_now}'::timestamptz + interval '1 microsecond'); {}",
            answer_row("1 second", &["t", "t"], &[Some("v1"), Some("v2")])
        ))
        .await
        .unwrap();
    // The key sent again stores its new answer in place, and has not committed yet.
    let storing = db.connect().await;
    storing.batch_execute("BEGIN").await.unwrap();
    let stored_in_place: bool = storing
        .query_one(
            "SELECT seqvend.store_answer('t', 'again', 'lease:p:count=2', 200::smallint,
                                         '{7, 8}', NULL, NULL, NULL, interval '1 hour')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        stored_in_place,
        "the old answer had expired for the new request"
    );
    // The purge ranks the old answer beyond the bound, and reaches the row being stored.
    let purge = tokio::spawn(async move {
        let row = purging
            .query_one("SELECT seqvend.purge_crowded_answers(2)", &[])
            .await
            .unwrap();
        purging.batch_execute("COMMIT").await.unwrap();
        row.get::<_, i64>(0)
    });
    until_blocked(&client, 1, Blocked::On("transactionid"), "%purge_crowded%").await;
    storing.batch_execute("COMMIT").await.unwrap();
    assert_eq!(purge.await.unwrap(), 0, "the answer it ranked is gone");
    let stored: Vec<i64> = client
        .query_one(
            "SELECT vals FROM seqvend.idempotent_answers WHERE owner = 't' AND key = 'again'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, [7, 8], "the new answer stays, for the key's retry");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_begun_before_its_answer_expired_replays_it_though_a_purge_ran_since() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("p", 1, 1000).await;
    let client = db.connect().await;
    let ask = [("p", 1, Some(("t", "edge")), "next:p:one")];
    let first = vend_keyed(&client, &ask).await;
    assert_eq!(first[0].2.as_deref(), Some(&[1][..]));
    // The retry's transaction begins; its answer expires just after.
    let retrying = db.connect().await;
    retrying.batch_execute("BEGIN").await.unwrap();
    let begun: String = retrying
        .query_one("SELECT now()::text", &[])
        .await
        .unwrap()
        .get(0);
    client
        .batch_execute(&format!(
            "UPDATE seqvend.vend_answers
                SET expires_at = '{begun}'::timestamptz + interval '1 microsecond'
              WHERE 'edge' = ANY (keys)"
        ))
        .await
        .unwrap();
    // A purge, begun after the answer expired, then the retry's read.
    let pool = registry_pool(&db).await;
    assert_eq!(
        seqvend::registry::purge_answers(&pool, 1_000_000)
            .await
            .unwrap(),
        0
    );
    let retry = vend_keyed(&retrying, &ask).await;
    retrying.batch_execute("COMMIT").await.unwrap();
    assert_eq!(retry[0].1, "replayed", "{retry:?}");
    assert_eq!(retry[0].2.as_deref(), Some(&[1][..]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_purge_leaves_the_work_to_another_instances_running_purge() {
    let (db, _migrated, client) = migrated_db().await;
    client
        .batch_execute(&answer_row(
            "1 second",
            &["t", "t"],
            &[Some("k1"), Some("k2")],
        ))
        .await
        .unwrap();
    // Another instance's purge, running: it holds the purges' lock (SVPU) until it commits.
    let running = db.connect().await;
    running
        .batch_execute("BEGIN; SELECT pg_advisory_xact_lock(1398165589, 0)")
        .await
        .unwrap();
    let pool = registry_pool(&db).await;
    let beside = tokio::time::timeout(
        Duration::from_secs(20),
        seqvend::registry::purge_answers(&pool, 1),
    )
    .await
    .expect("a purge does not wait for the one running");
    assert_eq!(beside.unwrap(), 0);
    assert_eq!(
        live_keys(&client).await,
        ["t:k1", "t:k2"],
        "left to the running purge"
    );
    running.batch_execute("COMMIT").await.unwrap();
    assert_eq!(seqvend::registry::purge_answers(&pool, 1).await.unwrap(), 1);
    assert_eq!(live_keys(&client).await, ["t:k2"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_row_the_purge_empties_is_deleted_and_a_row_it_thins_is_kept() {
    let (db, _migrated, client) = migrated_db().await;
    // Oldest first. The first row's only live key goes (beside a slot blanked before), the
    // second row loses both its keys, the third keeps another token's; the newest is kept.
    let stored = [
        answer_row("40 seconds", &["t", "t"], &[None, Some("t0")]),
        answer_row("30 seconds", &["t", "t"], &[Some("t1"), Some("t2")]),
        answer_row("20 seconds", &["t", "u"], &[Some("t3"), Some("u1")]),
        answer_row("10 seconds", &["t", "t"], &[None, Some("t4")]),
    ];
    client.batch_execute(&stored.concat()).await.unwrap();
    let pool = registry_pool(&db).await;
    assert_eq!(seqvend::registry::purge_answers(&pool, 1).await.unwrap(), 4);
    assert_eq!(live_keys(&client).await, ["t:t4", "u:u1"]);
    assert_eq!(
        batch_rows(&client).await,
        2,
        "the rows left with no live answer went"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_expired_but_not_yet_deleted_does_not_count_as_a_tokens_newest() {
    let (_db, _migrated, client) = migrated_db().await;
    client
        .batch_execute(&format!(
            "{} {} UPDATE seqvend.vend_answers SET expires_at = now() - interval '1 second'
                    WHERE 'expired' = ANY (keys)",
            answer_row("2 seconds", &["t"], &[Some("live")]),
            answer_row("1 second", &["t"], &[Some("expired")]),
        ))
        .await
        .unwrap();
    // The crowded step alone, as it runs when an answer expired after the expired step.
    let purged: i64 = client
        .query_one("SELECT seqvend.purge_crowded_answers(1)", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(purged, 0, "t holds one live answer: within its bound");
    assert_eq!(live_keys(&client).await, ["t:expired", "t:live"]);
}

/// A row of `t`'s answers (`t1`, `t2`), another token's expired answer (`gone`), and a
/// session holding the row of `held` as a slow writer would: a purge with a bound of one
/// waits for that row.
async fn a_purge_held_on_a_row(db: &TestDb, held: &str) -> tokio_postgres::Client {
    let holder = db.connect().await;
    holder
        .batch_execute(&format!(
            "{} {} UPDATE seqvend.vend_answers SET expires_at = now() - interval '2 minutes'
                    WHERE 'gone' = ANY (keys);",
            answer_row("2 seconds", &["t", "t"], &[Some("t1"), Some("t2")]),
            answer_row("1 second", &["calm"], &[Some("gone")]),
        ))
        .await
        .unwrap();
    // Its own query string: statements sent with BEGIN in one string join its transaction.
    holder
        .batch_execute(&format!(
            "BEGIN; SELECT 1 FROM seqvend.vend_answers WHERE '{held}' = ANY (keys) FOR UPDATE"
        ))
        .await
        .unwrap();
    holder
}

#[tokio::test(flavor = "multi_thread")]
async fn expired_answers_go_even_while_the_crowded_purge_waits() {
    let (db, _migrated, client) = migrated_db().await;
    let holder = a_purge_held_on_a_row(&db, "t1").await;
    let pool = registry_pool(&db).await;
    let purge = tokio::spawn(async move { seqvend::registry::purge_answers(&pool, 1).await });
    until_blocked(&client, 1, Blocked::On("transactionid"), "%purge_crowded%").await;
    assert_eq!(
        live_keys(&client).await,
        ["t:t1", "t:t2"],
        "the expired answer is gone already"
    );
    holder.batch_execute("COMMIT").await.unwrap();
    assert_eq!(purge.await.unwrap().unwrap(), 1 + 1);
    assert_eq!(live_keys(&client).await, ["t:t2"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_crowded_purge_runs_even_when_the_expired_step_fails() {
    let (db, _migrated, client) = migrated_db().await;
    let _holder = a_purge_held_on_a_row(&db, "gone").await;
    // The expired step fails on the held row.
    let pool = impatient_registry_pool(&db).await;
    let purged = seqvend::registry::purge_answers(&pool, 1).await;
    assert!(purged.is_err(), "{purged:?}");
    assert_eq!(
        live_keys(&client).await,
        ["calm:gone", "t:t2"],
        "t's oldest went all the same"
    );
}

/// How many of one step's purges ended with `result`, as `seqvend_idempotency_purges_total`
/// counts them.
fn purges(metrics: &seqvend::metrics::Metrics, step: &str, result: &str) -> u64 {
    metrics
        .idempotency_purges
        .with_label_values(&[step, result])
        .get()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_purge_step_is_counted_by_its_result() {
    let (db, _migrated, client) = migrated_db().await;
    let holder = a_purge_held_on_a_row(&db, "gone").await;
    // The expired step fails on the held row.
    let pool = impatient_registry_pool(&db).await;
    let metrics = seqvend::metrics::Metrics::new();
    let purged = |step: &str| {
        metrics
            .idempotency_answers_purged
            .with_label_values(&[step])
            .get()
    };

    seqvend::idempotency::purge_once(&pool, 1, &metrics).await;
    assert_eq!(purges(&metrics, "expired", "failed"), 1);
    assert_eq!(purges(&metrics, "crowded", "ok"), 1);
    assert_eq!((purged("expired"), purged("crowded")), (0, 1));
    holder.batch_execute("COMMIT").await.unwrap();

    // Another instance's purge, running: both steps leave the work to it.
    let running = db.connect().await;
    running
        .batch_execute("BEGIN; SELECT pg_advisory_xact_lock(1398165589, 0)")
        .await
        .unwrap();
    seqvend::idempotency::purge_once(&pool, 1, &metrics).await;
    assert_eq!(purges(&metrics, "expired", "left_to_another"), 1);
    assert_eq!(purges(&metrics, "crowded", "left_to_another"), 1);
    running.batch_execute("COMMIT").await.unwrap();

    seqvend::idempotency::purge_once(&pool, 1, &metrics).await;
    assert_eq!(purges(&metrics, "expired", "ok"), 1);
    assert_eq!(purges(&metrics, "crowded", "ok"), 2);
    assert_eq!((purged("expired"), purged("crowded")), (1, 1));
    assert_eq!(purges(&metrics, "expired", "failed"), 1, "no other failure");
    assert_eq!(live_keys(&client).await, ["t:t2"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_purge_may_run_past_the_registrys_statement_timeout() {
    let (db, _migrated, client) = migrated_db().await;
    let holder = a_purge_held_on_a_row(&db, "t1").await;
    // The registry's sessions, with a statement timeout far shorter than the purge will take.
    let options = sqlx::postgres::PgConnectOptions::from_str(&db.url)
        .unwrap()
        .options([("statement_timeout", "100")]);
    let pool = seqvend::db::Registry::from_pool(sqlx::PgPool::connect_with(options).await.unwrap());
    let purge = tokio::spawn(async move { seqvend::registry::purge_answers(&pool, 1).await });
    let waited_past_it = "SELECT count(*) FROM pg_stat_activity
                           WHERE query LIKE '%purge_crowded%' AND wait_event_type = 'Lock'
                             AND clock_timestamp() - query_start > interval '500 ms'";
    eventually(
        Duration::from_secs(20),
        "the purge waited 500 ms",
        || async {
            client
                .query_one(waited_past_it, &[])
                .await
                .unwrap()
                .get::<_, i64>(0)
                == 1
        },
    )
    .await;
    holder.batch_execute("COMMIT").await.unwrap();
    assert_eq!(purge.await.unwrap().unwrap(), 1 + 1);
    assert_eq!(live_keys(&client).await, ["t:t2"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn replays_beside_a_running_purge_all_get_their_first_answer() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("busy", 1, 100_000).await;
    let mut first = Vec::new();
    for n in 0..20 {
        let path = format!("/sequences/busy/next?count={}", n % 3 + 1);
        let key = format!("parcel-{n}");
        let (reply, _) = app.keyed_post(&path, &key, VEND_TOKEN).await;
        first.push((path, key, values_of(&reply)));
    }
    // Another token beyond the bound, so that every round of the purge counts and ranks.
    let crowd_keys: Vec<String> = (0..50).map(|n| format!("crowd-{n}")).collect();
    let crowd_keys: Vec<Option<&str>> = crowd_keys.iter().map(|k| Some(k.as_str())).collect();
    let client = db.connect().await;
    client
        .batch_execute(&answer_row("1 minute", &["crowd"; 50], &crowd_keys))
        .await
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let purge = {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        let (stop, pool) = (stop.clone(), seqvend::db::Registry::from_pool(pool));
        tokio::spawn(async move {
            let mut rounds = 0u32;
            while !stop.load(Ordering::Relaxed) || rounds == 0 {
                seqvend::registry::purge_answers(&pool, 25).await.unwrap();
                rounds += 1;
            }
            rounds
        })
    };
    for _ in 0..3 {
        for (path, key, values) in &first {
            let (again, replayed) = app.keyed_post(path, key, VEND_TOKEN).await;
            assert!(replayed, "{key}: {}", again.body);
            assert_eq!(&values_of(&again), values, "{key}");
        }
    }
    stop.store(true, Ordering::Relaxed);
    assert!(purge.await.unwrap() > 0);
    let left = live_keys(&client).await;
    let crowd = left.iter().filter(|k| k.starts_with("crowd:")).count();
    assert_eq!(crowd, 25, "the purge ran beside the replays: {left:?}");
    let all: Vec<i64> = first.iter().flat_map(|f| f.2.clone()).collect();
    let distinct: HashSet<i64> = all.iter().copied().collect();
    assert_eq!(distinct.len(), all.len(), "no value in two answers");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_used_for_a_lease_and_a_vend_is_reused_either_way() {
    let app = spawn_app().await;
    app.create_ok("both", 1, 1000).await;
    let (lease, _) = app
        .keyed_post("/sequences/both/leases?count=5", "l", VEND_TOKEN)
        .await;
    assert_eq!(lease.status, StatusCode::OK, "{}", lease.body);
    app.keyed_post("/sequences/both/next", "l", VEND_TOKEN)
        .await
        .0
        .assert_error(422, "idempotency_key_reused");
    let (vend, _) = app
        .keyed_post("/sequences/both/next", "v", VEND_TOKEN)
        .await;
    assert_eq!(vend.body, json!({"sequence": "both", "value": 6}));
    app.keyed_post("/sequences/both/leases?count=5", "v", VEND_TOKEN)
        .await
        .0
        .assert_error(422, "idempotency_key_reused");
    assert_eq!(app.next_value("both").await, 7);
}

/// A retry whose transaction began before its key's answer expired, served after another retry
/// found that answer expired and drew anew: it replays the newer answer, as every retry after
/// it does, rather than the expired one its clock still calls live.
#[tokio::test(flavor = "multi_thread")]
async fn a_retry_begun_before_its_answer_expired_replays_the_newest_answer() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("expiring", 1, 1000).await;
    // Answers kept for no time at all: each expires as it is stored.
    let keyed = "SELECT outcome, vals FROM seqvend.vend_keyed(ARRAY['expiring'], ARRAY[1], \
                 ARRAY['late-retry'], ARRAY['parcel'], ARRAY['next:expiring:one'], interval '0')";
    // The late retry's transaction, and so its clock (now()), begins before either answer.
    let late = db.connect().await;
    late.batch_execute("BEGIN").await.unwrap();
    let client = db.connect().await;
    let first = client.query_one(keyed, &[]).await.unwrap();
    assert_eq!(first.get::<_, String>(0), "ok");
    assert_eq!(first.get::<_, Vec<i64>>(1), [1]);
    // A retry after it: the first answer has expired, so it draws anew.
    let second = client.query_one(keyed, &[]).await.unwrap();
    assert_eq!(second.get::<_, String>(0), "ok");
    assert_eq!(second.get::<_, Vec<i64>>(1), [2]);
    // By the late retry's clock both answers are live: it replays the newer.
    let replay = late.query_one(keyed, &[]).await.unwrap();
    late.batch_execute("COMMIT").await.unwrap();
    assert_eq!(replay.get::<_, String>(0), "replayed");
    assert_eq!(replay.get::<_, Vec<i64>>(1), [2]);
}
