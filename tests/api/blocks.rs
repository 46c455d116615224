//! Blocks drawn in constant time: a lease or batch of more than 64 values claims its block
//! with one `setval` under the sequence's lock. These tests hold it to nextval's answers and
//! to the promise beside other users of the sequence: another application's nextval, a DBA
//! reading the sequence, a pg_dump holding it, an owner changed, a rewind, a restart, bounds
//! and increments altered.

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};

use crate::helpers::*;
use crate::leases::leased_values;

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

/// A lease of `count` values, sent again after a 503 as a client would (on a busy machine a
/// vend connection is sometimes not made in time; a 503 hands nothing out).
async fn lease(app: &TestApp, name: &str, count: u64) -> Reply {
    let path = format!("/sequences/{name}/leases?count={count}");
    for _ in 0..10 {
        let reply = app
            .request(Method::POST, &path, Some(VEND_TOKEN), None)
            .await;
        if reply.status != StatusCode::SERVICE_UNAVAILABLE {
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
            return reply;
        }
    }
    panic!("a lease of {count} from {name}: 503 ten times");
}

fn consecutive(first: i64, last: i64) -> Vec<i64> {
    (first..=last).collect()
}

async fn nextval(client: &tokio_postgres::Client, sequence: &str) -> i64 {
    client
        .query_one("SELECT nextval($1::text::regclass)", &[&sequence])
        .await
        .unwrap()
        .get(0)
}

/// The sequence's file and catalog row version: a block must change neither (a new file is
/// what made a DBA's concurrent read find no row).
async fn file_and_row(client: &tokio_postgres::Client, sequence: &str) -> (u32, String) {
    let row = client
        .query_one(
            "SELECT c.relfilenode::oid, (SELECT s.xmin::text FROM pg_sequence s \
             WHERE s.seqrelid = c.oid) FROM pg_class c WHERE c.oid = $1::text::regclass",
            &[&sequence],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lease_of_100000_values_is_one_block_and_the_sequence_goes_on_after_it() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("big", 1, 1_000_000_000).await;
    let sequence = pg_sequence(&app, "big").await;
    let dba = db.connect().await;
    let before = file_and_row(&dba, &sequence).await;
    let reply = lease(&app, "big", 100_000).await;
    assert_eq!(
        reply.body["blocks"],
        serde_json::json!([{"first": 1, "last": 100_000, "increment": 1}])
    );
    assert_eq!(nextval(&dba, &sequence).await, 100_001);
    assert_eq!(
        file_and_row(&dba, &sequence).await,
        before,
        "no new file, no catalog write"
    );
    let mark: i64 = dba
        .query_one("SELECT high_water FROM seqvend.range_marks", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(mark, 100_000, "the range's mark is the block's last value");
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
            "SELECT runs_first, runs_last FROM seqvend.lease('held', 1000, 'client', 'x', \
             interval '1 min')",
            &[],
        )
        .await
        .unwrap();
    let (firsts, lasts): (Vec<i64>, Vec<i64>) = (block.get(0), block.get(1));
    assert_eq!((firsts, lasts), (vec![1], vec![1000]), "one block");

    // Another application's nextval, and a DBA's read, wait for the block's commit: nobody
    // takes a value of the block between its read of the sequence and its setval.
    let other = db.connect().await;
    other
        .batch_execute("SET statement_timeout = '300ms'")
        .await
        .unwrap();
    for sql in [
        format!("SELECT nextval('{sequence}')"),
        format!("SELECT last_value FROM {sequence}"),
    ] {
        let waited = other
            .query_one(&sql, &[])
            .await
            .expect_err("waits for the block");
        assert_eq!(
            waited.as_db_error().map(|e| e.code()),
            Some(&tokio_postgres::error::SqlState::QUERY_CANCELED),
            "{sql}: {waited}"
        );
    }
    drawer.batch_execute("COMMIT").await.unwrap();
    assert_eq!(
        nextval(&other, &sequence).await,
        1001,
        "the value after the block"
    );
}

/// A DBA reading the sequence while blocks are drawn always finds its row (the read waits for
/// a block's lock, and the block leaves the sequence's file in place).
#[tokio::test(flavor = "multi_thread")]
async fn a_dba_reading_the_sequence_while_blocks_are_drawn_always_finds_its_row() {
    let db = TestDb::shared().await;
    let app = Arc::new(spawn_app_on(&db, test_settings()).await);
    app.create_ok("read", 1, 1_000_000_000).await;
    let sequence = pg_sequence(&app, "read").await;
    let leases = {
        let app = app.clone();
        tokio::spawn(async move {
            for _ in 0..60 {
                lease(&app, "read", 5_000).await;
            }
        })
    };
    let dba = db.connect().await;
    let mut reads = 0;
    while !leases.is_finished() {
        let rows = dba
            .query(&format!("SELECT last_value FROM {sequence}"), &[])
            .await
            .unwrap();
        assert_eq!(rows.len(), 1, "the sequence's row, read #{reads}");
        reads += 1;
    }
    leases.await.unwrap();
    assert!(reads > 0);
    assert_eq!(
        nextval(&dba, &sequence).await,
        300_001,
        "60 blocks of 5,000"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn blocks_drawn_beside_nextval_in_other_sessions_never_share_a_value() {
    const MAX: i64 = 10_000_000;
    let db = TestDb::shared().await;
    let app = Arc::new(spawn_app_on(&db, test_settings()).await);
    app.create_ok("shared", 1, MAX).await;
    let sequence = pg_sequence(&app, "shared").await;
    let others: Vec<_> = (0..3)
        .map(|_| {
            let (url, sequence) = (db.url.clone(), sequence.clone());
            tokio::spawn(async move {
                let client = crate::common::cluster::connect(&url).await;
                let mut drawn = Vec::new();
                for _ in 0..1000 {
                    drawn.push(nextval(&client, &sequence).await);
                }
                drawn
            })
        })
        .collect();
    let drawers: Vec<_> = (0..4)
        .map(|n| {
            let app = app.clone();
            tokio::spawn(async move {
                let mut values = Vec::new();
                for _ in 0..10 {
                    if n % 2 == 0 {
                        values.extend(leased_values(&lease(&app, "shared", 2000).await));
                        continue;
                    }
                    // A 503 (a lock not had in time on a busy machine) hands nothing out.
                    let reply = app.next_batch("shared", 1000).await;
                    if reply.status != StatusCode::SERVICE_UNAVAILABLE {
                        values.extend(values_of(&reply));
                    }
                }
                values
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in others.into_iter().chain(drawers) {
        all.extend(task.await.unwrap());
    }
    assert_unique(&all);
    assert!(all.len() >= 3 * 1000 + 2 * 10 * 2000);
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
    // there and the draw rolls over, as nextval would.
    app.add_range_ok("edge", 5001, 6000).await;
    let second_range = pg_sequence(&app, "edge").await;
    assert_ne!(first_range, second_range);
    let client = db.connect().await;
    client
        .batch_execute(&format!("ALTER SEQUENCE {second_range} MAXVALUE 2500"))
        .await
        .unwrap();
    let narrowed = leased_values(&lease(&app, "edge", 500).await);
    let mut expected = consecutive(2101, 2500);
    expected.extend(consecutive(5001, 5100));
    assert_eq!(narrowed, expected);
}

/// Values `step` apart from `first`, `count` of them.
fn stepped(first: i64, step: i64, count: i64) -> Vec<i64> {
    (0..count).map(|k| first + k * step).collect()
}

/// Two touching ranges of values 10^17 apart: [0, 9·10^18 - 1] (90 values) and
/// [9·10^18, 9.2·10^18 - 1] (2 values). What is left of the first is counted by dividing
/// numbers of 19 digits, more than PostgreSQL's numeric division keeps: (9·10^18 - 1) / 10^17
/// rounds to 90, and so did the room of every block reaching its end, one value too many.
const LARGE_STEP: i64 = 100_000_000_000_000_000;
const SECOND_RANGE: i64 = 9_000_000_000_000_000_000;

async fn ranges_of_large_steps(app: &TestApp, name: &str) {
    app.create_body_ok(serde_json::json!(
        {"name": name, "min": 0, "max": SECOND_RANGE - 1, "increment": LARGE_STEP}
    ))
    .await;
    app.add_range_ok(name, SECOND_RANGE, SECOND_RANGE + 2 * LARGE_STEP - 1)
        .await;
}

/// Every value of the two ranges, in order.
fn all_of_large_steps() -> Vec<i64> {
    let mut all = stepped(0, LARGE_STEP, 90);
    all.extend(stepped(SECOND_RANGE, LARGE_STEP, 2));
    all
}

/// A block that reaches the end of a range of large steps stops at its last value, in a vend
/// batch and in a lease: counted one too many, its setval failed, and so did every draw that
/// reached the end.
#[tokio::test(flavor = "multi_thread")]
async fn a_block_reaching_the_end_of_a_range_of_large_steps_stops_at_it() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    ranges_of_large_steps(&app, "steps").await;
    let reply = app.next_batch("steps", 150).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(values_of(&reply), all_of_large_steps());
    assert_eq!(reply.body["exhausted"], true);

    ranges_of_large_steps(&app, "leased").await;
    let mut leased = leased_values(&lease(&app, "leased", 80).await);
    leased.extend(leased_values(&lease(&app, "leased", 20).await));
    assert_eq!(leased, all_of_large_steps());
}

/// A DBA widened the sequence of such a range (`NO MAXVALUE`): a block still stops at the
/// range's last value. Counted one too many, it handed out 9·10^18, outside the range, and the
/// next range handed it out again.
#[tokio::test(flavor = "multi_thread")]
async fn a_widened_sequence_of_large_steps_gives_nothing_past_its_range() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    ranges_of_large_steps(&app, "wide").await;
    let sequence = pg_sequence(&app, "wide").await;
    db.connect()
        .await
        .batch_execute(&format!("ALTER SEQUENCE {sequence} NO MAXVALUE"))
        .await
        .unwrap();
    let leased = leased_values(&lease(&app, "wide", 150).await);
    assert_unique(&leased);
    assert_eq!(leased, all_of_large_steps());
}

/// `count` values of `name`, as a lease or a vend batch: the answer, sent again after a 503 as
/// a client would (a 503 hands nothing out; see `lease`), any other status as it comes.
async fn blocks_asked(app: &TestApp, name: &str, count: u32, leased: bool) -> Reply {
    let route = if leased { "leases" } else { "next" };
    let path = format!("/sequences/{name}/{route}?count={count}");
    for _ in 0..10 {
        let reply = app
            .request(Method::POST, &path, Some(VEND_TOKEN), None)
            .await;
        if reply.status != StatusCode::SERVICE_UNAVAILABLE {
            return reply;
        }
    }
    panic!("{path}: 503 ten times");
}

/// A small deterministic generator (xorshift), so that a failing shape can be replayed.
struct Shapes(u64);

impl Shapes {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Ranges of every scale, up and down, some with their sequence widened by hand, drawn to the
/// end in batches and leases of more than 64 values (each a block): every value the range holds
/// comes out once, in order, and nothing past its end. The shapes favour ends just short of the
/// next step, where a count by division rounds up.
#[tokio::test(flavor = "multi_thread")]
async fn blocks_of_ranges_of_every_scale_give_each_value_once_and_stop_at_the_end() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let dba = db.connect().await;
    let mut shapes = Shapes(0x9E37_79B9_7F4A_7C15);
    for shape in 0..24 {
        let count = 70 + shapes.below(200) as i128;
        // The largest step that fits `count` values in a bigint, at some power of ten below it.
        let widest = (i64::MAX as i128 * 2) / count;
        let step = (widest / 10_i128.pow(shapes.below(18) as u32)).max(1);
        let short_of_next = match shapes.below(3) {
            0 => 0,
            1 => step - 1,
            _ => (shapes.next() as i128) % step,
        };
        let span = step * (count - 1) + short_of_next;
        let room = i64::MAX as i128 - i64::MIN as i128 - span;
        let min = i64::MIN as i128 + (shapes.next() as i128 % (room + 1));
        let max = min + span;
        let down = shapes.below(2) == 1;
        let increment = if down { -step } else { step };
        let name = format!("scale-{shape}");
        let widened = shapes.below(2) == 1;
        let shape_text = format!("{name}: [{min}, {max}] by {increment}, widened: {widened}");
        app.create_body_ok(serde_json::json!(
            {"name": name, "min": min as i64, "max": max as i64, "increment": increment as i64}
        ))
        .await;
        if widened {
            let sequence = pg_sequence(&app, &name).await;
            let widen = if down { "NO MINVALUE" } else { "NO MAXVALUE" };
            dba.batch_execute(&format!("ALTER SEQUENCE {sequence} {widen}"))
                .await
                .unwrap();
        }
        let mut drawn: Vec<i64> = Vec::new();
        for turn in 0.. {
            let ask = 65 + shapes.below(100) as u32;
            // Batches and leases take turns.
            let leased = turn % 2 == 1;
            let reply = blocks_asked(&app, &name, ask, leased).await;
            if reply.status == StatusCode::CONFLICT {
                break;
            }
            let what = format!("{shape_text}, leased: {leased}, {ask} values");
            assert_eq!(reply.status, StatusCode::OK, "{what}: {}", reply.body);
            let values = if leased {
                leased_values(&reply)
            } else {
                values_of(&reply)
            };
            assert!(!values.is_empty(), "{shape_text}");
            drawn.extend(values);
            assert!(
                drawn.len() as i128 <= count,
                "{shape_text}: more than the range holds"
            );
        }
        let first = if down { max } else { min };
        let expected: Vec<i64> = (0..count).map(|k| (first + k * increment) as i64).collect();
        assert_eq!(drawn.len(), expected.len(), "{shape_text}");
        assert!(
            drawn == expected,
            "{shape_text}: not every value once, in order"
        );
    }
}

/// What a DBA did to the sequence gives the values nextval would give: a restart starts the
/// block at the restart value; a changed increment is drawn value by value at that increment;
/// a rewind behind the mark is repaired, never handed out again.
#[tokio::test(flavor = "multi_thread")]
async fn a_block_after_a_restart_a_new_increment_or_a_rewind_gives_what_nextval_would() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("moved", 1, 1_000_000).await;
    let sequence = pg_sequence(&app, "moved").await;
    assert_eq!(
        leased_values(&lease(&app, "moved", 100).await),
        consecutive(1, 100)
    );
    let dba = db.connect().await;
    let alter = |sql: String| {
        let dba = &dba;
        async move { dba.batch_execute(&sql).await.unwrap() }
    };
    alter(format!("ALTER SEQUENCE {sequence} RESTART WITH 5000")).await;
    assert_eq!(
        leased_values(&lease(&app, "moved", 1000).await),
        consecutive(5000, 5999)
    );
    assert_eq!(nextval(&dba, &sequence).await, 6000);

    alter(format!("ALTER SEQUENCE {sequence} INCREMENT BY 3")).await;
    let by_three: Vec<i64> = (0..200).map(|k| 6003 + 3 * k).collect();
    assert_eq!(leased_values(&lease(&app, "moved", 200).await), by_three);
    alter(format!("ALTER SEQUENCE {sequence} INCREMENT BY 1")).await;

    alter(format!("SELECT setval('{sequence}', 10)")).await;
    let after_rewind = leased_values(&lease(&app, "moved", 1000).await);
    assert_eq!(
        after_rewind,
        consecutive(6601, 7600),
        "past the mark, not from 11"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_block_beside_a_transaction_holding_the_sequence_is_drawn_value_by_value() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("busy", 1, 1_000_000).await;
    let sequence = pg_sequence(&app, "busy").await;
    // Another application's transaction that called nextval, and a pg_dump (which reads every
    // sequence inside one long transaction), hold locks a block's would wait for.
    for holding in [
        format!("SELECT nextval('{sequence}')"),
        format!("SELECT last_value FROM {sequence}"),
    ] {
        let other = db.connect().await;
        other.batch_execute("BEGIN").await.unwrap();
        other.batch_execute(&holding).await.unwrap();
        let theirs = nextval(&other, &sequence).await;
        // Answered while the transaction stays open: the block did not wait for it.
        let reply = tokio::time::timeout(Duration::from_secs(20), lease(&app, "busy", 1000))
            .await
            .expect("the lease answered while the sequence was held");
        let values = leased_values(&reply);
        assert_eq!(values, consecutive(theirs + 1, theirs + 1000), "{holding}");
        other.batch_execute("COMMIT").await.unwrap();
    }
}

/// Only the sequence's owner may take its lock: where seqvend may not, it draws value by value;
/// and a block never changes who owns the sequence.
#[tokio::test(flavor = "multi_thread")]
async fn a_sequence_seqvend_may_not_lock_is_drawn_value_by_value_and_keeps_its_owner() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("owned", 1, 1_000_000).await;
    let sequence = pg_sequence(&app, "owned").await;
    let role = format!("clerk_{}", uuid::Uuid::new_v4().simple());
    let dba = db.connect().await;
    dba.batch_execute(&format!(
        "CREATE ROLE {role}; GRANT USAGE ON SCHEMA seqvend, seqvend_ranges TO {role}; \
         GRANT USAGE, SELECT, UPDATE ON SEQUENCE {sequence} TO {role}"
    ))
    .await
    .unwrap();
    // A session that may draw from the sequence but does not own it: the block is declined.
    dba.batch_execute(&format!("BEGIN; SET LOCAL ROLE {role}"))
        .await
        .unwrap();
    let declined: Option<i64> = dba
        .query_one(
            "SELECT taken FROM seqvend.draw_block($1::text::regclass, 1000, 1, 1, 1000000, NULL)",
            &[&sequence],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(declined, None, "declined without the owner's rights");
    dba.batch_execute("ROLLBACK").await.unwrap();

    // A DBA gives the sequence to another owner: blocks go on, and leave it that owner's.
    dba.batch_execute(&format!("ALTER SEQUENCE {sequence} OWNER TO {role}"))
        .await
        .unwrap();
    assert_eq!(
        leased_values(&lease(&app, "owned", 1000).await),
        consecutive(1, 1000)
    );
    let owner: String = dba
        .query_one(
            "SELECT relowner::regrole::text FROM pg_class WHERE oid = $1::text::regclass",
            &[&sequence],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(owner, role);
    dba.batch_execute(&format!(
        "ALTER SEQUENCE {sequence} OWNER TO CURRENT_USER; DROP OWNED BY {role}; DROP ROLE {role}"
    ))
    .await
    .unwrap();
}

/// A lease's blocks as `(first, last)` runs of increment 1, without listing millions of values.
fn runs(reply: &Reply) -> Vec<(i64, i64)> {
    let blocks = reply.body["blocks"].as_array().unwrap();
    blocks
        .iter()
        .map(|block| {
            assert_eq!(block["increment"], 1);
            (
                block["first"].as_i64().unwrap(),
                block["last"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Leases up to 10,000,000 values are drawn as runs: a 5,000,000-value lease beside vends in
/// other requests shares no value with them, says it is not exhausted, and the next one is cut
/// at the sequence's end and says so.
#[tokio::test(flavor = "multi_thread")]
async fn a_lease_of_5_000_000_values_is_runs_shared_with_no_concurrent_vend_and_cut_at_the_end() {
    const MAX: i64 = 8_000_000;
    let db = TestDb::shared().await;
    let app = Arc::new(spawn_app_on(&db, test_settings()).await);
    app.create_ok("huge", 1, MAX).await;
    let vends: Vec<_> = (0..2)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                let mut values = Vec::new();
                for _ in 0..20 {
                    let reply = app.next_batch("huge", 100).await;
                    if reply.status != StatusCode::SERVICE_UNAVAILABLE {
                        values.extend(values_of(&reply));
                    }
                }
                values
            })
        })
        .collect();
    let first = lease(&app, "huge", 5_000_000).await;
    let mut vended = Vec::new();
    for task in vends {
        vended.extend(task.await.unwrap());
    }
    let leased = runs(&first);
    assert_eq!(first.body["count"], 5_000_000);
    assert_eq!(first.body["exhausted"], false);
    let total: i64 = leased.iter().map(|(a, b)| b - a + 1).sum();
    assert_eq!(total, 5_000_000, "{leased:?}");
    assert_unique(&vended);
    let inside = |v: &i64| leased.iter().any(|(a, b)| (a..=b).contains(&v));
    assert!(!vended.iter().any(inside), "a vended value was leased too");

    let last = lease(&app, "huge", 5_000_000).await;
    let rest = runs(&last);
    let expected = MAX - 5_000_000 - vended.len() as i64;
    assert_eq!(last.body["count"], expected, "{rest:?}");
    assert_eq!(last.body["exhausted"], true);
    assert_eq!(rest.last().unwrap().1, MAX, "cut at the range's end");
    assert!(rest
        .iter()
        .all(|(a, b)| !leased.iter().any(|(c, d)| a <= d && c <= b)));
}

/// Where the block is declined (a pg_dump holds the sequence), the value-by-value draw stops
/// at 100,000 values: the lease comes back short but not exhausted, and the next lease goes on
/// right after it, in one block once the sequence is free again.
#[tokio::test(flavor = "multi_thread")]
async fn a_large_lease_whose_block_is_declined_is_cut_at_100_000_and_the_next_goes_on() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("dumped", 1, 20_000_000).await;
    let sequence = pg_sequence(&app, "dumped").await;
    let dump = db.connect().await;
    dump.batch_execute("BEGIN").await.unwrap();
    dump.batch_execute(&format!("SELECT last_value FROM {sequence}"))
        .await
        .unwrap();
    let short = lease(&app, "dumped", 5_000_000).await;
    assert_eq!(runs(&short), [(1, 100_000)]);
    assert_eq!(short.body["count"], 100_000);
    assert_eq!(short.body["exhausted"], false, "cut, not run out");
    dump.batch_execute("COMMIT").await.unwrap();
    let next = lease(&app, "dumped", 5_000_000).await;
    assert_eq!(runs(&next), [(100_001, 5_100_000)]);
    assert_eq!(next.body["exhausted"], false);
}

/// A keyed lease cut at 100,000 values (its block declined) is replayed as it was answered:
/// short, and not exhausted. A retry told "exhausted" would take a sequence with values left
/// for one that ran out.
#[tokio::test(flavor = "multi_thread")]
async fn a_keyed_lease_cut_at_100_000_is_replayed_as_cut_not_exhausted() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("dumped-keyed", 1, 20_000_000).await;
    let sequence = pg_sequence(&app, "dumped-keyed").await;
    let dump = db.connect().await;
    dump.batch_execute("BEGIN").await.unwrap();
    dump.batch_execute(&format!("SELECT last_value FROM {sequence}"))
        .await
        .unwrap();
    let path = "/sequences/dumped-keyed/leases?count=5000000";
    let (short, replayed) = app.keyed_post(path, "cut-1", VEND_TOKEN).await;
    assert_eq!(short.status, StatusCode::OK, "{}", short.body);
    assert!(!replayed);
    assert_eq!(runs(&short), [(1, 100_000)]);
    assert_eq!(short.body["exhausted"], false, "cut, not run out");
    dump.batch_execute("COMMIT").await.unwrap();
    let (again, replayed) = app.keyed_post(path, "cut-1", VEND_TOKEN).await;
    assert!(replayed);
    for field in ["blocks", "count", "exhausted"] {
        assert_eq!(again.body[field], short.body[field], "{field}");
    }
}

/// A count of 0 or above 10,000,000 is refused before anything is drawn; 10,000,000 is not.
#[tokio::test(flavor = "multi_thread")]
async fn a_lease_of_0_or_over_10_000_000_values_is_refused_and_draws_nothing() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("bounded", 1, 100_000_000).await;
    for count in [0, 10_000_001, 100_000_000] {
        let path = format!("/sequences/bounded/leases?count={count}");
        let reply = app
            .request(Method::POST, &path, Some(VEND_TOKEN), None)
            .await;
        reply.assert_error(400, "invalid_request");
        let message = reply.body["message"].as_str().unwrap_or_default();
        assert!(message.contains("10000000"), "{message}");
    }
    assert_eq!(runs(&lease(&app, "bounded", 1).await), [(1, 1)]);
    // One run when its block is had at once; on a loaded machine the lock may not come within
    // 20 ms, and the lease is then cut at 100,000 (the test above): either way it starts at 2.
    let most = lease(&app, "bounded", 10_000_000).await;
    assert_eq!(runs(&most)[0].0, 2, "the refused leases drew nothing");
}
