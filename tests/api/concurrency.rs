//! Many clients on several service instances at once: no value twice, none outside its
//! range, none lost, exactly one rollover per range end, and retirement is final.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use tokio::task::JoinSet;

use crate::helpers::*;

/// Vends from `name` through `apps` with `clients` concurrent clients each until the
/// sequence is exhausted. `batch(i)` is the count for a client's i-th request (None: single).
pub async fn drain(
    apps: &[Arc<TestApp>],
    clients: usize,
    name: &str,
    batch: fn(usize) -> Option<u32>,
) -> Vec<i64> {
    let mut tasks = JoinSet::new();
    for app in apps {
        for client in 0..clients {
            let (app, name) = (app.clone(), name.to_owned());
            tasks.spawn(async move {
                let mut got = Vec::new();
                for i in client.. {
                    let reply = match batch(i) {
                        None => app.next(&name).await,
                        Some(count) => app.next_batch(&name, count).await,
                    };
                    match reply.status {
                        StatusCode::OK => got.extend(carried_values(&reply)),
                        StatusCode::CONFLICT => {
                            assert_eq!(reply.code(), "sequence_exhausted");
                            break;
                        }
                        other => panic!("unexpected {other}: {}", reply.body),
                    }
                }
                got
            });
        }
    }
    let mut all = Vec::new();
    while let Some(got) = tasks.join_next().await {
        all.extend(got.unwrap());
    }
    all
}

async fn two_instances() -> (TestDb, Vec<Arc<TestApp>>) {
    let db = TestDb::shared().await;
    let first = spawn_app_on(&db, test_settings()).await;
    let second = spawn_app_on(&db, test_settings()).await;
    (db, vec![Arc::new(first), Arc::new(second)])
}

#[tokio::test(flavor = "multi_thread")]
async fn two_instances_reaching_a_range_end_together_roll_over_exactly_once() {
    let (db, apps) = two_instances().await;
    apps[0].create_ok("shared", 1, 40).await;
    apps[0].add_range_ok("shared", 100, 139).await;
    apps[1].add_range_ok("shared", 200, 239).await;
    let values = drain(&apps, 16, "shared", |_| None).await;
    let vended = assert_unique(&values);
    let expected: HashSet<i64> = (1..=40).chain(100..=139).chain(200..=239).collect();
    assert_eq!(
        vended, expected,
        "every value of every range, none twice, none lost"
    );
    let kinds = db
        .connect()
        .await
        .query(
            "SELECT kind FROM seqvend.events WHERE actor = 'vend' ORDER BY id",
            &[],
        )
        .await
        .unwrap();
    let kinds: Vec<String> = kinds.iter().map(|r| r.get(0)).collect();
    assert_eq!(kinds, ["rollover", "rollover", "exhausted"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_instances_and_64_clients_vend_every_value_once_and_lose_none() {
    let (_db, apps) = two_instances().await;
    apps[0].create_ok("busy", 1, 3000).await;
    apps[1].add_range_ok("busy", 10_001, 13_000).await;
    // Half the requests single, half batches of 1 to 37 values.
    let values = drain(&apps, 32, "busy", |i| {
        (i % 2 == 1).then_some((i % 37) as u32 + 1)
    })
    .await;
    let vended = assert_unique(&values);
    assert!(
        values
            .iter()
            .all(|v| (1..=3000).contains(v) || (10_001..=13_000).contains(v)),
        "a value outside the ranges"
    );
    // Values are lost only when a drawn value never reaches a client (a client that gives
    // up after the draw). These clients never give up, so nothing may be lost.
    let lost = 6000 - vended.len();
    assert_eq!(lost, 0, "{lost} values lost");
}

#[tokio::test(flavor = "multi_thread")]
async fn after_delete_has_answered_no_instance_vends_from_the_name() {
    let (_db, apps) = two_instances().await;
    apps[0].create_ok("doomed", 1, 1_000_000).await;
    let vended = Arc::new(AtomicUsize::new(0));
    let retired_at: Arc<std::sync::OnceLock<Instant>> = Arc::default();
    let mut tasks = JoinSet::new();
    for app in &apps {
        for _ in 0..8 {
            let (app, vended, retired_at) = (app.clone(), vended.clone(), retired_at.clone());
            tasks.spawn(async move {
                let mut after_retirement = 0;
                let mut values = Vec::new();
                while after_retirement < 20 {
                    let sent = Instant::now();
                    let reply = app.next("doomed").await;
                    let sent_after = retired_at.get().is_some_and(|at| sent > *at);
                    if sent_after {
                        after_retirement += 1;
                        reply.assert_error(410, "sequence_retired");
                    } else if reply.status == StatusCode::OK {
                        values.extend(carried_values(&reply));
                        vended.fetch_add(1, Ordering::Relaxed);
                    } else {
                        reply.assert_error(410, "sequence_retired");
                    }
                }
                values
            });
        }
    }
    eventually(Duration::from_secs(30), "vending under way", || {
        let vended = vended.clone();
        async move { vended.load(Ordering::Relaxed) >= 200 }
    })
    .await;
    let reply = apps[1].retire("doomed").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["status"], "retired");
    retired_at.set(Instant::now()).unwrap();
    let mut all = Vec::new();
    while let Some(values) = tasks.join_next().await {
        all.extend(values.unwrap());
    }
    assert_unique(&all);
}

/// A draw in flight when DELETE arrives finishes first: retirement waits for it (the vend
/// statement holds the sequence's lock shared, retirement takes it exclusively), so once
/// DELETE has answered, nothing more is drawn.
#[tokio::test(flavor = "multi_thread")]
async fn delete_waits_for_a_draw_in_flight() {
    let db = TestDb::shared().await;
    let app = Arc::new(spawn_app_on(&db, test_settings()).await);
    app.create_ok("inflight", 1, 1000).await;
    // Holding the range's PostgreSQL sequence (the tests' vend statements wait on locks as
    // long as it takes): the vend statement holds the sequence's lock shared, then waits.
    let blocker = db.connect().await;
    blocker
        .batch_execute(
            "BEGIN; DO $$ BEGIN EXECUTE format('ALTER SEQUENCE %s INCREMENT BY 1', \
             (SELECT pg_sequence FROM seqvend.ranges)); END $$",
        )
        .await
        .unwrap();
    let vend = tokio::spawn({
        let app = app.clone();
        async move { app.next_batch("inflight", 3).await }
    });
    let observer = db.connect().await;
    // The vend waits for the sequence.
    until_blocked(&observer, 1, Blocked::On("relation"), "%seqvend.vend%").await;
    let retire = tokio::spawn({
        let app = app.clone();
        async move { app.retire("inflight").await }
    });
    // DELETE waits for the draw in flight.
    until_retirement_waits_then_commit(&observer, &retire, &blocker).await;
    assert_eq!(values_of(&vend.await.unwrap()), [1, 2, 3]);
    let retired = retire.await.unwrap();
    assert_eq!(retired.status, StatusCode::OK);
    assert_eq!(retired.body["status"], "retired");
    app.next("inflight")
        .await
        .assert_error(410, "sequence_retired");
}

/// Two instances whose statements both need the end of a range meet there (the test holds
/// the range until both wait on it): the values are split between them, none twice, and the
/// event log shows one rollover.
#[tokio::test(flavor = "multi_thread")]
async fn two_instances_meeting_at_a_range_end_roll_over_once() {
    let (db, apps) = two_instances().await;
    apps[0].create_ok("meet", 1, 10).await;
    apps[0].add_range_ok("meet", 100, 109).await;
    assert_eq!(values_of(&apps[0].next_batch("meet", 8).await).len(), 8);
    let blocker = db.connect().await;
    blocker
        .batch_execute("SELECT pg_advisory_lock(1398166087, (SELECT min(id) FROM seqvend.ranges))")
        .await
        .unwrap();
    let requests: Vec<_> = apps
        .iter()
        .map(|app| {
            let app = app.clone();
            tokio::spawn(async move { app.next_batch("meet", 4).await })
        })
        .collect();
    let observer = db.connect().await;
    // Both instances wait at the end.
    until_blocked(&observer, 2, Blocked::On("advisory"), "%seqvend.vend%").await;
    blocker
        .batch_execute("SELECT pg_advisory_unlock_all()")
        .await
        .unwrap();
    let mut values = Vec::new();
    for request in requests {
        values.extend(values_of(&request.await.unwrap()));
    }
    values.sort();
    assert_eq!(values, [9, 10, 100, 101, 102, 103, 104, 105]);
    let rollovers: i64 = observer
        .query_one(
            "SELECT count(*) FROM seqvend.events WHERE kind = 'rollover'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(rollovers, 1);
}
