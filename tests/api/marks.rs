//! Each range's mark, the last value handed out from it, lives in a PostgreSQL sequence of its
//! own (`seqvend_ranges.m<range id>`). A range made before those keeps its mark in its
//! registry row (`high_water`) until seqvend starts again and gives it one.

use crate::helpers::*;

/// The active range of `name`: its id and its PostgreSQL sequence.
async fn active_range(client: &tokio_postgres::Client, name: &str) -> (i32, String) {
    let row = client
        .query_one(
            "SELECT r.id, r.pg_sequence::text FROM seqvend.ranges r \
               JOIN seqvend.sequences s ON s.id = r.sequence_id \
              WHERE s.name = $1 AND r.status = 'active'",
            &[&name],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

/// The range's row as it stands: its mark sequence (if any) and `high_water`.
async fn row_marks(client: &tokio_postgres::Client, range: i32) -> (Option<String>, Option<i64>) {
    let row = client
        .query_one(
            "SELECT mark::text, high_water FROM seqvend.ranges WHERE id = $1",
            &[&range],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_range_has_a_mark_sequence_that_follows_each_draw() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("fresh", 1, 1000).await;
    let dba = db.connect().await;
    let (range, _) = active_range(&dba, "fresh").await;
    let mark = || async {
        dba.query_one(
            "SELECT pg_sequence_last_value(mark) FROM seqvend.ranges WHERE id = $1",
            &[&range],
        )
        .await
        .unwrap()
        .get::<_, Option<i64>>(0)
    };
    assert_eq!(
        row_marks(&dba, range).await.0,
        Some(format!("seqvend_ranges.m{range}"))
    );
    assert_eq!(mark().await, None, "nothing handed out yet");
    assert_eq!(app.next_value("fresh").await, 1);
    assert_eq!(mark().await, Some(1));
    assert_eq!(values_of(&app.next_batch("fresh", 3).await), [2, 3, 4]);
    assert_eq!(mark().await, Some(4));
}

/// A range from an earlier release: its draws read and write the mark in its row, a rewind
/// below that mark is still seen, and the next start moves the mark into a sequence of its
/// own, from which draws go on.
#[tokio::test(flavor = "multi_thread")]
async fn a_range_made_before_mark_sequences_keeps_its_mark_in_its_row_until_the_next_start() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("older", 1, 1000).await;
    assert_eq!(
        values_of(&app.next_batch("older", 5).await),
        [1, 2, 3, 4, 5]
    );
    let dba = db.connect().await;
    let (range, sequence) = active_range(&dba, "older").await;
    // As an earlier release left it: the mark in the row, no mark sequence.
    dba.batch_execute(&format!(
        "UPDATE seqvend.ranges SET high_water = seqvend.range_mark(id, mark, high_water), \
                mark = NULL WHERE id = {range}; \
         DROP SEQUENCE seqvend_ranges.m{range}"
    ))
    .await
    .unwrap();
    assert_eq!(row_marks(&dba, range).await, (None, Some(5)));

    assert_eq!(values_of(&app.next_batch("older", 2).await), [6, 7]);
    assert_eq!(row_marks(&dba, range).await, (None, Some(7)));
    // Rewound below the row's mark: repaired past it, as ever.
    dba.batch_execute(&format!("SELECT setval('{sequence}', 2)"))
        .await
        .unwrap();
    assert_eq!(app.next_value("older").await, 8);
    assert_eq!(row_marks(&dba, range).await, (None, Some(8)));

    drop(app);
    let app = spawn_app_on(&db, test_settings()).await;
    let (mark, high_water) = row_marks(&dba, range).await;
    assert_eq!(mark, Some(format!("seqvend_ranges.m{range}")));
    assert_eq!(
        high_water,
        Some(8),
        "kept, frozen, for instances of earlier releases"
    );
    let given: i64 = dba
        .query_one(
            "SELECT pg_sequence_last_value(mark) FROM seqvend.ranges WHERE id = $1",
            &[&range],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(given, 8);
    assert_eq!(app.next_value("older").await, 9);
    // Rewound again: the mark sequence guards it now.
    dba.batch_execute(&format!("SELECT setval('{sequence}', 3)"))
        .await
        .unwrap();
    assert_eq!(app.next_value("older").await, 10);
    assert_eq!(row_marks(&dba, range).await.1, Some(8));
}

/// A mark sequence dropped by hand: nothing can tell what was handed out, so the sequence's
/// draws fail, alone, with an error that names it and says how to make it again; its reads and
/// the other sequences go on. Made again at the last value handed out, draws go on past it.
#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_mark_sequence_fails_only_its_own_draws_until_it_is_made_again() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("unmarked", 1, 1000).await;
    app.create_ok("fine", 5000, 6000).await;
    assert_eq!(values_of(&app.next_batch("unmarked", 3).await), [1, 2, 3]);
    let dba = db.connect().await;
    let (range, _) = active_range(&dba, "unmarked").await;
    dba.batch_execute(&format!("DROP SEQUENCE seqvend_ranges.m{range}"))
        .await
        .unwrap();

    let reply = app.next("unmarked").await;
    reply.assert_error(500, "sequence_failed");
    let message = reply.body["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("seqvend_ranges.m{range}")) && message.contains("missing"),
        "{message}"
    );
    assert_eq!(app.next_value("fine").await, 5000);
    assert_eq!(app.get("unmarked").await.status, 200, "reading still works");

    // Only the operator knows the last value handed out: none given, or one before what the
    // registry row records, is refused.
    for refused in ["NULL", "0"] {
        let error = dba
            .batch_execute(&format!(
                "SELECT seqvend.recreate_mark_sequence({range}, {refused})"
            ))
            .await
            .unwrap_err();
        let message = error.as_db_error().map(|e| e.message().to_owned());
        assert!(
            message
                .as_deref()
                .is_some_and(|m| m.contains("were handed out")),
            "{error:?}"
        );
    }
    dba.batch_execute(&format!(
        "SELECT seqvend.recreate_mark_sequence({range}, 3)"
    ))
    .await
    .unwrap();
    assert_eq!(app.next_value("unmarked").await, 4);
}

/// A mark sequence reset by hand, or not carried over by a migration (logical replication
/// copies the registry's rows, not its sequences), reads as "nothing handed out": the draws of
/// its sequence fail closed rather than hand its values out again, until it is set.
#[tokio::test(flavor = "multi_thread")]
async fn a_mark_sequence_reset_fails_its_draws_closed_until_it_is_set() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("moved", 1, 1000).await;
    app.create_ok("fine", 5000, 6000).await;
    assert_eq!(
        values_of(&app.next_batch("moved", 5).await),
        [1, 2, 3, 4, 5]
    );
    let dba = db.connect().await;
    let (range, sequence) = active_range(&dba, "moved").await;
    // As a new cluster fed by logical replication has them: both sequences at their start.
    dba.batch_execute(&format!(
        "ALTER SEQUENCE {sequence} RESTART; ALTER SEQUENCE seqvend_ranges.m{range} RESTART"
    ))
    .await
    .unwrap();

    for asked in [1, 3] {
        let reply = app.next_batch("moved", asked).await;
        reply.assert_error(500, "sequence_failed");
        let message = reply.body["message"].as_str().unwrap();
        assert!(
            message.contains("as if nothing had been handed out"),
            "{message}"
        );
    }
    assert_eq!(app.next_value("fine").await, 5000);

    dba.batch_execute(&format!("SELECT setval('seqvend_ranges.m{range}', 5)"))
        .await
        .unwrap();
    assert_eq!(values_of(&app.next_batch("moved", 2).await), [6, 7]);
}

/// A mark sequence altered by hand so that the next mark no longer fits it: that sequence
/// goes without, the other sequences of the batch get their values.
#[tokio::test(flavor = "multi_thread")]
async fn a_mark_sequence_altered_out_of_bounds_fails_only_its_sequence_of_the_batch() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let client = db.connect().await;
    for name in ["m1", "m2"] {
        app.create_ok(name, 1, 1000).await;
        assert_eq!(app.next_value(name).await, 1);
    }
    let (range, _) = active_range(&client, "m1").await;
    client
        .batch_execute(&format!(
            "ALTER SEQUENCE seqvend_ranges.m{range} MAXVALUE 2"
        ))
        .await
        .unwrap();
    let rows = client
        .query(
            "SELECT outcome, vals FROM seqvend.vend('{m1,m1,m2,m2}', '{1,1,1,1}') \
              ORDER BY requests[1]",
            &[],
        )
        .await
        .unwrap();
    let answers: Vec<(String, Option<Vec<i64>>)> =
        rows.iter().map(|row| (row.get(0), row.get(1))).collect();
    assert_eq!(
        answers,
        [
            ("unavailable".to_owned(), None),
            ("ok".to_owned(), Some(vec![2, 3]))
        ]
    );
}
