//! Blocks drawn in constant time: a draw of more than 64 values claims its block with one
//! `setval` under the sequence's lock. These tests hold it to the promise beside other users
//! of the sequence, at the range's end, after a restart, and with the lock held elsewhere.

use crate::helpers::*;

/// The PostgreSQL sequence of `name`'s active range.
async fn pg_sequence(app: &TestApp, name: &str) -> String {
    let reply = app.get(name).await;
    reply.body["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["status"] == "active")
        .unwrap()["pg_sequence"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn consecutive(first: i64, last: i64) -> Vec<i64> {
    (first..=last).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_block_holds_its_sequence_against_other_sessions_until_it_commits() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("held", 1, 1_000_000).await;
    let sequence = pg_sequence(&app, "held").await;
    let drawer = db.connect().await;
    drawer.batch_execute("BEGIN").await.unwrap();
    let block = drawer
        .query_one(
            "SELECT firsts, lasts FROM seqvend.vend_runs('{held}', '{1000}')",
            &[],
        )
        .await
        .unwrap();
    let (firsts, lasts): (Vec<i64>, Vec<i64>) = (block.get(0), block.get(1));
    assert_eq!((firsts, lasts), (vec![1], vec![1000]), "one block");

    // Another application's nextval waits for the block's commit: it cannot take a value of
    // the block between the block's read of the sequence and its setval.
    let other = db.connect().await;
    other
        .batch_execute("SET statement_timeout = '300ms'")
        .await
        .unwrap();
    let waited = other
        .query_one("SELECT nextval($1::text::regclass)", &[&sequence])
        .await;
    let waited = waited.expect_err("nextval elsewhere waits while a block is drawn");
    assert_eq!(
        waited.as_db_error().map(|e| e.code()),
        Some(&tokio_postgres::error::SqlState::QUERY_CANCELED),
        "{waited}"
    );
    drawer.batch_execute("COMMIT").await.unwrap();
    let after: i64 = other
        .query_one("SELECT nextval($1::text::regclass)", &[&sequence])
        .await
        .unwrap()
        .get(0);
    assert_eq!(after, 1001, "the next value after the block");
}

#[tokio::test(flavor = "multi_thread")]
async fn blocks_drawn_beside_nextval_in_other_sessions_never_share_a_value() {
    const MAX: i64 = 10_000_000;
    let db = TestDb::shared().await;
    let app = std::sync::Arc::new(spawn_app_on(&db, test_settings()).await);
    app.create_ok("shared", 1, MAX).await;
    let sequence = pg_sequence(&app, "shared").await;
    let others: Vec<_> = (0..3)
        .map(|_| {
            let (url, sequence) = (db.url.clone(), sequence.clone());
            tokio::spawn(async move {
                let client = crate::common::cluster::connect(&url).await;
                let mut drawn = Vec::new();
                for _ in 0..1500 {
                    let row = client
                        .query_one("SELECT nextval($1::text::regclass)", &[&sequence])
                        .await
                        .unwrap();
                    drawn.push(row.get::<_, i64>(0));
                }
                drawn
            })
        })
        .collect();
    let vends: Vec<_> = (0..4)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                // A 503 (a connection not made in time on a busy machine) hands nothing out:
                // sent again, as a client would.
                let mut values = Vec::new();
                let mut batches = 0;
                for _ in 0..100 {
                    let reply = app.next_batch("shared", 1000).await;
                    if reply.status == reqwest::StatusCode::SERVICE_UNAVAILABLE {
                        continue;
                    }
                    values.extend(values_of(&reply));
                    batches += 1;
                    if batches == 15 {
                        break;
                    }
                }
                assert_eq!(batches, 15, "15 batches answered");
                values
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in others.into_iter().chain(vends) {
        all.extend(task.await.unwrap());
    }
    assert_eq!(assert_unique(&all).len(), 3 * 1500 + 4 * 15 * 1000);
    assert!(all.iter().all(|v| (1..=MAX).contains(v)));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_block_reaching_the_end_is_cut_there_and_continues_in_the_next_range() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("edge", 1, 1000).await;
    app.add_range_ok("edge", 2001, 3000).await;
    let first_range = pg_sequence(&app, "edge").await;
    assert_eq!(
        values_of(&app.next_batch("edge", 100).await),
        consecutive(1, 100)
    );
    let crossing = values_of(&app.next_batch("edge", 1000).await);
    let mut expected = consecutive(101, 1000);
    expected.extend(consecutive(2001, 2100));
    assert_eq!(crossing, expected);

    // The sequence's own MAXVALUE narrowed by hand below the range's end: the block stops
    // there and the draw rolls over, as a value-by-value draw does.
    app.add_range_ok("edge", 5001, 6000).await;
    let second_range = pg_sequence(&app, "edge").await;
    assert_ne!(first_range, second_range);
    let client = db.connect().await;
    client
        .batch_execute(&format!("ALTER SEQUENCE {second_range} MAXVALUE 2500"))
        .await
        .unwrap();
    let narrowed = values_of(&app.next_batch("edge", 500).await);
    let mut expected = consecutive(2101, 2500);
    expected.extend(consecutive(5001, 5100));
    assert_eq!(narrowed, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_block_after_a_restart_starts_at_the_restart_value() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("restarted", 1, 1_000_000).await;
    let sequence = pg_sequence(&app, "restarted").await;
    assert_eq!(
        values_of(&app.next_batch("restarted", 10).await),
        consecutive(1, 10)
    );
    let client = db.connect().await;
    client
        .batch_execute(&format!("ALTER SEQUENCE {sequence} RESTART WITH 5000"))
        .await
        .unwrap();
    assert_eq!(
        values_of(&app.next_batch("restarted", 1000).await),
        consecutive(5000, 5999)
    );
    let theirs: i64 = client
        .query_one("SELECT nextval($1::text::regclass)", &[&sequence])
        .await
        .unwrap()
        .get(0);
    assert_eq!(theirs, 6000);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_block_beside_a_transaction_holding_the_sequence_is_drawn_value_by_value() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("busy", 1, 1_000_000).await;
    let sequence = pg_sequence(&app, "busy").await;
    // Another application's transaction that called nextval holds the sequence (a lock a
    // block's would wait for) until it ends.
    let other = db.connect().await;
    other.batch_execute("BEGIN").await.unwrap();
    let theirs: i64 = other
        .query_one("SELECT nextval($1::text::regclass)", &[&sequence])
        .await
        .unwrap()
        .get(0);
    let reply = app.next_batch("busy", 1000).await;
    assert_eq!(reply.status, reqwest::StatusCode::OK, "{}", reply.body);
    let values = values_of(&reply);
    assert_eq!(values.len(), 1000);
    assert!(!values.contains(&theirs));
    other.batch_execute("COMMIT").await.unwrap();
}
