//! The first promise under concurrency: never a value twice, never one outside a range, while
//! other sessions rewind, lock, narrow or drain what seqvend draws from. Most tests here call
//! the vend statement directly, several sessions at once, the way a coalesced batch runs it, so
//! that which sequences share a statement is the test's choice.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;
use reqwest::{Method, StatusCode};
use serde_json::json;

use seqvend::settings::DatabaseSettings;

use crate::helpers::*;

/// The range seqvend draws `name` from now: its id and its PostgreSQL sequence.
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

/// One statement's answer for one sequence: its outcome and values.
#[derive(Debug, PartialEq)]
struct Answer {
    name: String,
    outcome: String,
    values: Option<Vec<i64>>,
}

impl Answer {
    /// The outcome and the values, for comparing with what a test expects.
    fn outcome_and_values(&self) -> (&str, Option<&[i64]>) {
        (self.outcome.as_str(), self.values.as_deref())
    }
}

/// Runs `seqvend.vend` for `asks` (name, count) as one statement, the way a coalesced batch
/// does, and returns an answer per sequence, in name order.
async fn vend(client: &tokio_postgres::Client, asks: &[(&str, i32)]) -> Vec<Answer> {
    let names: Vec<&str> = asks.iter().map(|a| a.0).collect();
    let counts: Vec<i32> = asks.iter().map(|a| a.1).collect();
    let rows = client
        .query(
            "SELECT requests, outcome, vals FROM seqvend.vend($1::text[], $2::int4[])",
            &[&names, &counts],
        )
        .await
        .unwrap_or_else(|err| panic!("the vend statement failed: {err:?}"));
    let mut answers: Vec<Answer> = rows
        .iter()
        .map(|row| {
            let requests: Vec<i32> = row.get(0);
            Answer {
                name: names[requests[0] as usize - 1].to_owned(),
                outcome: row.get(1),
                values: row.get(2),
            }
        })
        .collect();
    answers.sort_by(|a, b| a.name.cmp(&b.name));
    answers
}

/// A connection whose statements give up after `limit`: a statement that waits on a lock
/// forever fails the test instead of hanging it.
async fn impatient(db: &TestDb, limit: &str) -> tokio_postgres::Client {
    let client = db.connect().await;
    client
        .batch_execute(&format!("SET statement_timeout = '{limit}'"))
        .await
        .unwrap();
    client
}

/// The lock timeout of the tests that count waits: long enough that a second wait could not
/// hide in the time the statement takes anyway.
const LOCK_TIMEOUT: Duration = Duration::from_millis(2_000);

/// A connection whose vend statements wait `LOCK_TIMEOUT` for a lock (and give up after 30 s).
async fn waiting_for_locks(db: &TestDb) -> tokio_postgres::Client {
    let client = impatient(db, "30s").await;
    client
        .batch_execute(&format!(
            "SET seqvend.lock_timeout = '{}'",
            LOCK_TIMEOUT.as_millis()
        ))
        .await
        .unwrap();
    client
}

/// `waited` holds one `LOCK_TIMEOUT` and not two.
fn assert_one_lock_timeout(waited: Duration) {
    assert!(
        waited < 2 * LOCK_TIMEOUT - Duration::from_millis(100),
        "{waited:?}"
    );
}

/// Fast path and `draw()` both drew from the range in one statement when a rewind landed
/// between them; each wrote a mark for it and the lower one could win, so the next rewind was
/// repaired only to it and values went out again. Several sessions vend batches of 1–64 from
/// one sequence while another rewinds it to its start in a loop.
#[tokio::test(flavor = "multi_thread")]
async fn a_rewind_landing_inside_a_batch_never_lets_a_value_out_twice() {
    vend_while_rewinding(&["hot"]).await;
}

/// The batch's one attempt stops at a rewind landing inside it and is undone for every sequence
/// of the batch, which then take the per-sequence path: none of them hands a value out twice,
/// the sequence nobody rewinds included.
#[tokio::test(flavor = "multi_thread")]
async fn a_rewind_inside_a_batch_of_several_sequences_never_lets_a_value_out_twice() {
    vend_while_rewinding(&["calm", "hot"]).await;
}

/// Vends batches of 1–64 values of each of `names` (one statement for them all, several
/// sessions) while another session rewinds the last of them to its start in a loop; fails on a
/// value out twice or outside the range.
async fn vend_while_rewinding(names: &'static [&'static str]) {
    const START: i64 = 1;
    const MAX: i64 = 1_000_000_000;
    const BUDGET: Duration = Duration::from_secs(8);
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    for name in names {
        app.create_ok(name, START, MAX).await;
    }
    let rewound = names[names.len() - 1];
    let (_, sequence) = active_range(&db.connect().await, rewound).await;

    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(HashSet::<(String, i64)>::new()));
    let twice = Arc::new(Mutex::new(Vec::<(String, i64)>::new()));
    let rewinder = {
        let (client, stop) = (db.connect().await, stop.clone());
        tokio::spawn(async move {
            let mut rewinds = 0u64;
            while !stop.load(Ordering::Relaxed) {
                client
                    .query_one(
                        "SELECT setval($1::text::regclass, $2)",
                        &[&sequence, &START],
                    )
                    .await
                    .unwrap();
                rewinds += 1;
            }
            rewinds
        })
    };
    let mut vendors = Vec::new();
    for _ in 0..3 {
        let client = db.connect().await;
        // A rewind's repair waits for the rewinder's setval to commit; on a machine whose disk
        // is busy that commit can outlast the default 200 ms lock timeout, and the sequence
        // would answer `unavailable` (by design) instead of the values this test checks.
        client
            .batch_execute("SET seqvend.lock_timeout = '5000'")
            .await
            .unwrap();
        let (stop, seen, twice) = (stop.clone(), seen.clone(), twice.clone());
        vendors.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let asks: Vec<(&str, i32)> = names
                    .iter()
                    .map(|&name| (name, rand::thread_rng().gen_range(1..=64)))
                    .collect();
                for answer in vend(&client, &asks).await {
                    assert_eq!(answer.outcome, "ok", "{answer:?}");
                    let values = answer.values.unwrap();
                    assert!(values.iter().all(|v| (START..=MAX).contains(v)));
                    let mut seen = seen.lock().unwrap();
                    for v in values {
                        if !seen.insert((answer.name.clone(), v)) {
                            twice.lock().unwrap().push((answer.name.clone(), v));
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                }
            }
        }));
    }
    let started = Instant::now();
    while started.elapsed() < BUDGET && !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for vendor in vendors {
        vendor.await.unwrap();
    }
    let rewinds = rewinder.await.unwrap();
    let twice = twice.lock().unwrap().clone();
    let vended = seen.lock().unwrap().len();
    assert!(
        twice.is_empty(),
        "{} values handed out twice (of {vended}, {rewinds} rewinds), e.g. {:?}",
        twice.len(),
        &twice[..twice.len().min(10)]
    );
    assert!(
        rewinds > 100 && vended > 10_000,
        "{rewinds} rewinds, {vended} values"
    );
}

/// A vend that waited for another session's locks must read the range's mark as that session
/// committed it, not as it stood when the waiting statement began. Here the session it waits
/// for draws five values and rewinds the sequence below them before it commits: with the mark
/// of the waiting statement's start, four of those five would go out again.
#[tokio::test(flavor = "multi_thread")]
async fn a_vend_that_waited_for_the_locks_reads_the_mark_left_by_the_session_it_waited_for() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let name = "waited-for";
    app.create_ok(name, 1, 1_000_000).await;
    let observer = db.connect().await;
    let (_, sequence) = active_range(&observer, name).await;

    let holder = db.connect().await;
    holder.batch_execute("BEGIN").await.unwrap();
    let held = vend(&holder, &[(name, 5)]).await;
    let first_five = held[0].values.clone().unwrap();

    let waiter = impatient(&db, "20s").await;
    waiter
        .batch_execute("SET seqvend.lock_timeout = '10000'")
        .await
        .unwrap();
    let waiting = tokio::spawn(async move { vend(&waiter, &[(name, 3)]).await });
    // The waiting statement has begun once it waits for the range's lock.
    let started = Instant::now();
    loop {
        let waits: i64 = observer
            .query_one(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if waits > 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the second vend never waited"
        );
        tokio::task::yield_now().await;
    }
    holder
        .query_one(
            "SELECT setval($1::text::regclass, $2)",
            &[&sequence, &first_five[0]],
        )
        .await
        .unwrap();
    holder.batch_execute("COMMIT").await.unwrap();

    let answer = waiting.await.unwrap();
    assert_eq!(answer[0].outcome, "ok", "{answer:?}");
    let again: Vec<i64> = (answer[0].values.clone().unwrap())
        .into_iter()
        .filter(|v| first_five.contains(v))
        .collect();
    assert!(
        again.is_empty(),
        "handed out twice: {again:?} (first {first_five:?}, then {answer:?})"
    );
}

/// What a DBA can leave locked on one sequence, and how to leave it so.
struct DbaLock {
    what: &'static str,
    /// SQL run in an open transaction; `{seq}` is the range's PostgreSQL sequence, `{range}`
    /// its id, `{name}` the sequence's name.
    sql: &'static str,
}

const DBA_LOCKS: &[DbaLock] = &[
    DbaLock {
        what: "ALTER SEQUENCE left open on its range's sequence",
        sql: "ALTER SEQUENCE {seq} INCREMENT BY 1",
    },
    DbaLock {
        what: "its range's registry row locked",
        sql: "SELECT 1 FROM seqvend.ranges WHERE id = {range} FOR UPDATE",
    },
    DbaLock {
        what: "its range's mark locked",
        sql: "SELECT 1 FROM seqvend.range_marks WHERE range_id = {range} FOR UPDATE",
    },
    DbaLock {
        what: "its range's lock held, as by an instance stuck mid-vend",
        sql: "SELECT pg_advisory_xact_lock(1398166087, {range})",
    },
    DbaLock {
        what: "its registry row locked as its range rolls over",
        sql: "SELECT 1 FROM seqvend.sequences WHERE name = '{name}' FOR UPDATE",
    },
    DbaLock {
        what: "its next range's registry row locked as it rolls over",
        sql: "SELECT 1 FROM seqvend.ranges WHERE id = {range} + 1 FOR UPDATE",
    },
];

/// A lock a DBA leaves on one sequence of a coalesced batch answers that sequence's requests
/// `unavailable`, soon, and the batch's other sequences get their values, none burned. (A
/// plain session: the statement's own 200 ms lock timeout, as when a pooler drops seqvend's.)
#[tokio::test(flavor = "multi_thread")]
async fn a_lock_left_on_one_sequence_fails_only_that_sequence_of_the_batch_and_soon() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let client = impatient(&db, "5s").await;
    for (i, lock) in DBA_LOCKS.iter().enumerate() {
        let (before, held, after) = (format!("a{i}"), format!("b{i}"), format!("c{i}"));
        app.create_ok(&before, 1, 1000).await;
        // Three values: a batch of three uses it up and rolls over to the next range.
        app.create_ok(&held, 1, 3).await;
        app.add_range_ok(&held, 10, 1000).await;
        app.create_ok(&after, 1, 1000).await;
        let (range, seq) = active_range(&client, &held).await;

        let dba = db.connect().await;
        let sql = lock
            .sql
            .replace("{seq}", &seq)
            .replace("{range}", &range.to_string())
            .replace("{name}", &held);
        dba.batch_execute(&format!("BEGIN; {sql}")).await.unwrap();

        let asks = [
            (before.as_str(), 3),
            (held.as_str(), 3),
            (after.as_str(), 3),
        ];
        let started = Instant::now();
        let answers = vend(&client, &asks).await;
        let took = started.elapsed();
        let outcomes: Vec<(&str, Option<&[i64]>)> =
            answers.iter().map(Answer::outcome_and_values).collect();
        assert_eq!(
            outcomes,
            [
                ("ok", Some(&[1, 2, 3][..])),
                ("unavailable", None),
                ("ok", Some(&[1, 2, 3][..]))
            ],
            "{}",
            lock.what
        );
        assert!(
            took < Duration::from_secs(2),
            "{}: took {took:?}",
            lock.what
        );

        dba.batch_execute("ROLLBACK").await.unwrap();
        let answers = vend(&client, &asks).await;
        assert_eq!(
            answers[0].values.as_deref(),
            Some(&[4, 5, 6][..]),
            "{}",
            lock.what
        );
        assert_eq!(
            answers[2].values.as_deref(),
            Some(&[4, 5, 6][..]),
            "{}",
            lock.what
        );
        assert_eq!(answers[1].outcome, "ok", "{}: {answers:?}", lock.what);
    }
}

/// A range's mark a DBA holds on a sequence whose draw is the common case (room to spare, a
/// few values): the batch's one attempt draws for all three, the mark of the held one cannot be
/// written, and only that sequence goes without; the others get their values, none burned.
#[tokio::test(flavor = "multi_thread")]
async fn a_range_mark_held_in_the_common_case_costs_the_other_sequences_nothing() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let client = impatient(&db, "5s").await;
    for name in ["x", "y", "z"] {
        app.create_ok(name, 1, 1_000_000).await;
        // Drawn once: a sequence never drawn from takes the per-sequence path.
        assert_eq!(app.next_value(name).await, 1);
    }
    let (range, _) = active_range(&client, "y").await;
    let dba = db.connect().await;
    dba.batch_execute(&format!(
        "BEGIN; SELECT 1 FROM seqvend.range_marks WHERE range_id = {range} FOR UPDATE"
    ))
    .await
    .unwrap();

    let asks = [("x", 2), ("y", 2), ("z", 2)];
    let outcomes = |answers: Vec<Answer>| -> Vec<(String, Option<Vec<i64>>)> {
        answers.into_iter().map(|a| (a.outcome, a.values)).collect()
    };
    let held = outcomes(vend(&client, &asks).await);
    assert_eq!(
        held,
        [
            ("ok".to_owned(), Some(vec![2, 3])),
            ("unavailable".to_owned(), None),
            ("ok".to_owned(), Some(vec![2, 3])),
        ]
    );
    dba.batch_execute("ROLLBACK").await.unwrap();
    let released = outcomes(vend(&client, &asks).await);
    assert_eq!(released[0].1, Some(vec![4, 5]));
    assert_eq!(released[2].1, Some(vec![4, 5]));
    assert_eq!(released[1].0, "ok", "{released:?}");
}

/// The same, with the held sequence alone in its batch (the one-sequence path): its mark cannot
/// be written, and the statement still answers `unavailable` for it rather than failing.
#[tokio::test(flavor = "multi_thread")]
async fn a_range_mark_held_answers_unavailable_when_the_batch_names_only_that_sequence() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let client = impatient(&db, "5s").await;
    app.create_ok("alone", 1, 1_000_000).await;
    assert_eq!(app.next_value("alone").await, 1);
    let (range, _) = active_range(&client, "alone").await;
    let dba = db.connect().await;
    dba.batch_execute(&format!(
        "BEGIN; SELECT 1 FROM seqvend.range_marks WHERE range_id = {range} FOR UPDATE"
    ))
    .await
    .unwrap();

    let held = vend(&client, &[("alone", 2)]).await;
    assert_eq!(held[0].outcome_and_values(), ("unavailable", None));
    dba.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(vend(&client, &[("alone", 2)]).await[0].outcome, "ok");
}

/// A range whose mark row is gone (deleted by hand) hands nothing out, on the one-sequence path
/// and in a batch beside other sequences, rather than values no mark records; nor does a
/// lease of it. Once the row is back, it vends again.
#[tokio::test(flavor = "multi_thread")]
async fn a_range_without_its_mark_row_hands_nothing_out() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let client = impatient(&db, "5s").await;
    for name in ["unmarked", "beside"] {
        app.create_ok(name, 1, 1_000_000).await;
        assert_eq!(app.next_value(name).await, 1);
    }
    let (range, _) = active_range(&client, "unmarked").await;
    client
        .batch_execute(&format!(
            "DELETE FROM seqvend.range_marks WHERE range_id = {range}"
        ))
        .await
        .unwrap();

    let alone = vend(&client, &[("unmarked", 2)]).await;
    assert_eq!(alone[0].outcome_and_values(), ("unavailable", None));
    let batch = vend(&client, &[("beside", 2), ("unmarked", 2)]).await;
    let outcomes: Vec<(&str, Option<&[i64]>)> =
        batch.iter().map(Answer::outcome_and_values).collect();
    assert_eq!(outcomes, [("ok", Some(&[2, 3][..])), ("unavailable", None)]);
    let lease = client
        .query_one(
            "SELECT outcome, value_count FROM \
             seqvend.lease('unmarked', 1000, 'client', 'client', interval '1 minute')",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (lease.get::<_, String>(0), lease.get::<_, i64>(1)),
        ("unavailable".to_owned(), 0)
    );

    client
        .batch_execute(&format!(
            "INSERT INTO seqvend.range_marks (range_id, high_water) VALUES ({range}, 1)"
        ))
        .await
        .unwrap();
    assert_eq!(vend(&client, &[("unmarked", 2)]).await[0].outcome, "ok");
}

/// A range inserted without seqvend's own query (as an instance of the previous version, or a
/// DBA, would insert one) gets its mark row all the same, so that it vends once it is active.
#[tokio::test(flavor = "multi_thread")]
async fn a_range_inserted_by_hand_gets_its_mark_row() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let client = impatient(&db, "5s").await;
    app.create_ok("handmade", 1, 3).await;
    let (range, _) = active_range(&client, "handmade").await;
    client
        .batch_execute(&format!(
            "CREATE SEQUENCE seqvend_ranges.handmade AS bigint MINVALUE 10 MAXVALUE 1000 \
                 START 10 CACHE 1 NO CYCLE;
             INSERT INTO seqvend.ranges (id, sequence_id, namespace, min_value, max_value,
                                         start_value, status, pg_sequence)
             SELECT {range} + 1000, sequence_id, namespace, 10, 1000, 10, 'pending',
                    'seqvend_ranges.handmade'
               FROM seqvend.ranges WHERE id = {range}"
        ))
        .await
        .unwrap();
    let marks: i64 = client
        .query_one(
            "SELECT count(*) FROM seqvend.range_marks WHERE range_id = $1 AND high_water IS NULL",
            &[&(range + 1000)],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(marks, 1);
    // The first range's three values, then the hand-made range's first two.
    let drawn = vend(&client, &[("handmade", 5)]).await;
    assert_eq!(
        drawn[0].outcome_and_values(),
        ("ok", Some(&[1, 2, 3, 10, 11][..]))
    );
}

/// A mark row deleted by hand while the one-sequence statement waits to write it (the DBA's
/// `DELETE` holds the row until it commits): the draw finds no mark to write and hands nothing
/// out.
#[tokio::test(flavor = "multi_thread")]
async fn a_mark_row_deleted_while_a_draw_waits_to_write_it_hands_nothing_out() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let client = waiting_for_locks(&db).await;
    app.create_ok("deleted", 1, 1_000_000).await;
    assert_eq!(app.next_value("deleted").await, 1);
    let (range, _) = active_range(&client, "deleted").await;
    let dba = db.connect().await;
    dba.batch_execute(&format!(
        "BEGIN; DELETE FROM seqvend.range_marks WHERE range_id = {range}"
    ))
    .await
    .unwrap();

    let draw = tokio::spawn(async move { vend(&client, &[("deleted", 2)]).await });
    let observer = db.connect().await;
    until_blocked(&observer, 1, Blocked::On("transactionid"), "%seqvend.vend%").await;
    dba.batch_execute("COMMIT").await.unwrap();
    let answer = draw.await.unwrap();
    assert_eq!(answer[0].outcome_and_values(), ("unavailable", None));
}

/// A DBA's open `ALTER SEQUENCE`, with the sequence alone in its batch (the one-sequence path):
/// the statement answers `unavailable` for it, once, after one `lock_timeout`, rather than
/// failing or waiting again for each path it could take.
#[tokio::test(flavor = "multi_thread")]
async fn a_sequence_a_dba_holds_answers_unavailable_after_one_lock_timeout_when_alone_in_its_batch()
{
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let client = waiting_for_locks(&db).await;
    app.create_ok("altered", 1, 1_000_000).await;
    assert_eq!(app.next_value("altered").await, 1);
    let (_, seq) = active_range(&client, "altered").await;
    let dba = db.connect().await;
    dba.batch_execute(&format!("BEGIN; ALTER SEQUENCE {seq} INCREMENT BY 1"))
        .await
        .unwrap();

    let started = Instant::now();
    let held = vend(&client, &[("altered", 2)]).await;
    let waited = started.elapsed();
    assert_eq!(held[0].outcome_and_values(), ("unavailable", None));
    assert_one_lock_timeout(waited);
    dba.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        vend(&client, &[("altered", 2)]).await[0].values,
        Some(vec![2, 3])
    );
}

/// A DBA's open `ALTER SEQUENCE` on one sequence of a batch naming several: that sequence
/// answers `unavailable` after one `lock_timeout`, not one in the batch's attempt and another
/// on its own path, and the others are served.
#[tokio::test(flavor = "multi_thread")]
async fn a_sequence_a_dba_holds_answers_unavailable_after_one_lock_timeout_beside_others() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let client = waiting_for_locks(&db).await;
    app.create_ok("altered_among", 1, 1_000_000).await;
    app.create_ok("beside_altered", 1, 1_000_000).await;
    assert_eq!(app.next_value("altered_among").await, 1);
    assert_eq!(app.next_value("beside_altered").await, 1);
    let (_, seq) = active_range(&client, "altered_among").await;
    let dba = db.connect().await;
    dba.batch_execute(&format!("BEGIN; ALTER SEQUENCE {seq} INCREMENT BY 1"))
        .await
        .unwrap();

    let started = Instant::now();
    let answers = vend(&client, &[("beside_altered", 1), ("altered_among", 2)]).await;
    let waited = started.elapsed();
    let outcomes: Vec<_> = answers
        .iter()
        .map(|a| (a.name.as_str(), a.outcome.as_str(), a.values.clone()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("altered_among", "unavailable", None),
            ("beside_altered", "ok", Some(vec![2]))
        ]
    );
    assert_one_lock_timeout(waited);
    dba.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        vend(&client, &[("altered_among", 2)]).await[0].values,
        Some(vec![2, 3])
    );
}

/// Another session holding the range's advisory lock (another instance's long draw), with the
/// sequence alone in its batch: `unavailable` after one `lock_timeout`, not one per path.
#[tokio::test(flavor = "multi_thread")]
async fn a_range_lock_held_answers_unavailable_after_one_lock_timeout_when_alone_in_its_batch() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let client = waiting_for_locks(&db).await;
    app.create_ok("drawn_elsewhere", 1, 1_000_000).await;
    assert_eq!(app.next_value("drawn_elsewhere").await, 1);
    let (range, _) = active_range(&client, "drawn_elsewhere").await;
    let other = db.connect().await;
    other
        .batch_execute(&format!(
            "BEGIN; SELECT pg_advisory_xact_lock(1398166087, {range})"
        ))
        .await
        .unwrap();

    let started = Instant::now();
    let held = vend(&client, &[("drawn_elsewhere", 1)]).await;
    let waited = started.elapsed();
    assert_eq!(held[0].outcome_and_values(), ("unavailable", None));
    assert_one_lock_timeout(waited);
    other.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        vend(&client, &[("drawn_elsewhere", 1)]).await[0].values,
        Some(vec![2])
    );
}

/// Over HTTP: the held sequence answers 503 `unavailable` with `Retry-After` within about a
/// second, is not counted as a failed sequence, and the others keep vending meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn a_sequence_a_dba_holds_answers_503_soon_and_counts_no_failure() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.database.lock_timeout = DatabaseSettings::default().lock_timeout;
    let app = spawn_app_on(&db, settings).await;
    app.create_ok("held", 1, 1000).await;
    app.create_ok("other", 1, 1000).await;
    assert_eq!(app.next_value("held").await, 1);
    let (_, seq) = active_range(&db.connect().await, "held").await;
    let dba = db.connect().await;
    dba.batch_execute(&format!("BEGIN; ALTER SEQUENCE {seq} INCREMENT BY 1"))
        .await
        .unwrap();

    let started = Instant::now();
    let reply = app.next("held").await;
    reply.assert_error(503, "unavailable");
    assert!(
        reply.headers.contains_key("retry-after"),
        "{:?}",
        reply.headers
    );
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(app.next_value("other").await, 1);
    let metrics = app.scrape().await;
    assert!(
        !metrics.contains("seqvend_sequence_failures_total{sequence=\"held\"}"),
        "{metrics}"
    );

    dba.batch_execute("ROLLBACK").await.unwrap();
    let next = app.next_value("held").await;
    assert!(next > 1, "{next}");
}

/// `MAXVALUE` narrowed while a vend waits for the sequence: the vend had read the old bound, so
/// `nextval` meets the new one (`2200H`) after the room check passed. The request is served
/// from what is left and the next range, not failed.
#[tokio::test(flavor = "multi_thread")]
async fn maxvalue_narrowed_while_a_vend_waits_is_served_from_the_next_range() {
    let db = TestDb::shared().await;
    let app = Arc::new(spawn_app_on(&db, test_settings()).await);
    app.create_ok("narrowed", 1, 100).await;
    app.add_range_ok("narrowed", 1001, 1100).await;
    assert_eq!(values_of(&app.next_batch("narrowed", 3).await), [1, 2, 3]);
    let observer = db.connect().await;
    let (_, seq) = active_range(&observer, "narrowed").await;
    let dba = db.connect().await;
    dba.batch_execute(&format!("BEGIN; ALTER SEQUENCE {seq} MAXVALUE 5"))
        .await
        .unwrap();

    let vend = {
        let app = app.clone();
        tokio::spawn(async move { app.next_batch("narrowed", 5).await })
    };
    // The vend waits for the sequence.
    until_blocked(&observer, 1, Blocked::On("relation"), "%seqvend.vend%").await;
    dba.batch_execute("COMMIT").await.unwrap();

    let reply = vend.await.unwrap();
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let values = values_of(&reply);
    assert_eq!(values.len(), 5, "{values:?}");
    assert!(increasing(&values), "{values:?}");
    assert!(
        values
            .iter()
            .all(|v| (4..=5).contains(v) || (1001..=1100).contains(v)),
        "{values:?}"
    );
}

/// Counter draws of two batches meeting in opposite orders: one batch holds `b` (it has room)
/// and is inserting a new key another session is inserting too; the other draws `a` then `b`.
/// When the insert is let go, the first goes on to `a`, which it left for its locked step (it
/// is running out). Both must be served: seqvend's own draws take keys in one order.
#[tokio::test(flavor = "multi_thread")]
async fn counter_draws_meeting_in_opposite_orders_never_deadlock() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let reply = app
        .request(
            Method::POST,
            "/families",
            Some(ADMIN_TOKEN),
            Some(json!({"name": "tight", "min": 1, "max": 10})),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let draw = "SELECT requests, outcome, taken FROM seqvend.draw_counters($1::text[], $2::text[], $3::int4[])";
    let setup = db.connect().await;
    setup
        .query(
            draw,
            &[&vec!["tight", "tight"], &vec!["a", "b"], &vec![8, 1]],
        )
        .await
        .unwrap();

    // Another session inserts the key `n` and holds it uncommitted.
    let other = db.connect().await;
    other
        .batch_execute(
            "BEGIN; INSERT INTO seqvend.counters (drawn, family_id, key) \
             SELECT 0, id, 'n' FROM seqvend.families WHERE name = 'tight'",
        )
        .await
        .unwrap();
    let first = {
        let client = impatient(&db, "10s").await;
        tokio::spawn(async move {
            let asks = (vec!["tight"; 3], vec!["a", "b", "n"], vec![5, 1, 1]);
            client.query(draw, &[&asks.0, &asks.1, &asks.2]).await
        })
    };
    let observer = db.connect().await;
    // The first batch waits on `n`.
    until_blocked(
        &observer,
        1,
        Blocked::On("transactionid"),
        "%draw_counters%",
    )
    .await;
    let second = {
        let client = impatient(&db, "10s").await;
        tokio::spawn(async move {
            let asks = (vec!["tight"; 2], vec!["a", "b"], vec![1, 1]);
            client.query(draw, &[&asks.0, &asks.1, &asks.2]).await
        })
    };
    // Both batches wait.
    until_blocked(&observer, 2, Blocked::OnALock, "%draw_counters%").await;
    other.batch_execute("ROLLBACK").await.unwrap();
    let (first, second) = (first.await.unwrap(), second.await.unwrap());
    assert!(first.is_ok() && second.is_ok(), "{first:?} / {second:?}");
}

/// A pooler may drop the session's `synchronous_commit = on`: the counter draw forces it for
/// its own transaction, as the vend statement does, so its commit waits for the WAL flush.
#[tokio::test(flavor = "multi_thread")]
async fn draws_force_synchronous_commit_whatever_the_session_says() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("seq", 1, 1000).await;
    let reply = app
        .request(
            Method::POST,
            "/families",
            Some(ADMIN_TOKEN),
            Some(json!({"name": "fam", "min": 1, "max": 1000})),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let client = db.connect().await;
    // The vend statement twice: a sequence's first draw is served by its general path, the
    // next ones by its common case, which sets only what its session lacks; then that common
    // case asked for directly, as seqvend asks for it. Then a keyed vend twice: a draw, and a
    // replay that draws nothing, whose commit must still wait for a synchronous standby.
    let keyed_vend = "seqvend.vend_keyed(ARRAY['seq'], ARRAY[1], ARRAY['owner'], ARRAY['key'], \
                      ARRAY['next:seq:1'], interval '1 hour')";
    let keyed = format!("SELECT * FROM {keyed_vend}");
    let statements = [
        "SELECT seqvend.draw_counters(ARRAY['fam'], ARRAY['k'], ARRAY[1])",
        "SELECT seqvend.vend(ARRAY['seq'], ARRAY[1])",
        "SELECT seqvend.vend(ARRAY['seq'], ARRAY[1])",
        "SELECT seqvend.vend_one_sequence('seq', ARRAY[1])",
        &keyed,
        &keyed,
    ];
    for statement in statements {
        client
            .batch_execute("SET synchronous_commit = off; BEGIN")
            .await
            .unwrap();
        client.batch_execute(statement).await.unwrap();
        let in_force: String = client
            .query_one("SHOW synchronous_commit", &[])
            .await
            .unwrap()
            .get(0);
        client.batch_execute("COMMIT").await.unwrap();
        assert_eq!(in_force, "on", "{statement}");
    }
    // The second keyed vend drew nothing: the key's answer is the first one's, replayed.
    let outcome: String = client
        .query_one(&format!("SELECT outcome FROM {keyed_vend}"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(outcome, "replayed");
}

/// A database upgraded from before block counts were exact may hold a value handed out one
/// step past a range's end (its mark records it, outside the range), which the next range of
/// the namespace holds too. The upgrade moves that range's mark past it: the value is never
/// handed out again, and running the repair again changes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_value_handed_out_past_a_range_end_is_not_handed_out_again() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("legacy", 1, 100).await;
    app.add_range_ok("legacy", 101, 200).await;
    let client = db.connect().await;
    let (first, _) = active_range(&client, "legacy").await;
    let reply = app
        .request(
            Method::POST,
            "/sequences/legacy/leases?count=100",
            Some(VEND_TOKEN),
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    // As the old count left it: 101 handed out from the first range, past its end.
    client
        .execute(
            "UPDATE seqvend.range_marks SET high_water = 101 WHERE range_id = $1",
            &[&first],
        )
        .await
        .unwrap();
    let repair = "SELECT seqvend.mark_values_past_range_ends()";
    let moved: i32 = client.query_one(repair, &[]).await.unwrap().get(0);
    assert_eq!(moved, 1);
    assert_eq!(app.next_value("legacy").await, 102, "101 went out already");
    let again: i32 = client.query_one(repair, &[]).await.unwrap().get(0);
    assert_eq!(again, 0);
    assert_eq!(app.next_value("legacy").await, 103);
}
