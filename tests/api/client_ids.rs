//! seqvend-client's Snowflake ids against real seqvend instances and PostgreSQL: unique and
//! increasing per worker id across client handles and instances; a client whose lease lapses
//! stops by its own clock, a takeover issues above it, and on `lease_lost` it leases anew.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use seqvend_client::{Error, Snowflakes};

use crate::helpers::*;

/// `per_thread` ids from each of `threads` threads sharing `snowflakes`, by `next` and
/// `next_n` in turn, each thread's in the order issued.
async fn issue_from_threads(
    snowflakes: &Snowflakes,
    threads: usize,
    per_thread: usize,
) -> Vec<Vec<i64>> {
    let handles: Vec<_> = (0..threads)
        .map(|thread| {
            let snowflakes = snowflakes.clone();
            tokio::task::spawn_blocking(move || {
                let mut ids = Vec::with_capacity(per_thread);
                while ids.len() < per_thread {
                    if (ids.len() / 1000 + thread) % 2 == 0 {
                        ids.push(snowflakes.next().unwrap());
                    } else {
                        ids.extend(snowflakes.next_n(997.min(per_thread - ids.len())).unwrap());
                    }
                }
                ids
            })
        })
        .collect();
    let mut all = Vec::new();
    for handle in handles {
        all.push(handle.await.unwrap());
    }
    all
}

#[tokio::test(flavor = "multi_thread")]
async fn client_snowflake_ids_are_unique_and_increase_per_worker_id_across_clients_and_instances() {
    let db = TestDb::shared().await;
    let first = spawn_app_on(&db, test_settings()).await;
    let second = spawn_app_on(&db, test_settings()).await;
    let clients = [first.client(), first.client(), second.client()];
    let mut handles = Vec::new();
    for client in &clients {
        handles.push(client.snowflake().await.unwrap());
    }
    // A second handle from one client is another holder, with a worker id of its own.
    handles.push(clients[0].snowflake().await.unwrap());
    let mut all = first.snowflake_ids(5000).await;
    all.extend(second.snowflake_ids(5000).await);
    let mut workers: HashSet<u32> = all.iter().map(|&id| worker_of(id)).collect();
    assert_eq!(workers.len(), 2, "one worker id per instance");
    for snowflakes in &handles {
        let worker = snowflakes.worker_id().unwrap();
        assert!(workers.insert(worker), "worker id {worker} held twice");
        for ids in issue_from_threads(snowflakes, 2, 30_000).await {
            assert!(increasing(&ids), "a thread's ids went back");
            assert!(ids.iter().all(|&id| worker_of(id) == worker));
            all.extend(ids);
        }
    }
    assert_eq!(all.len(), 10_000 + handles.len() * 2 * 30_000);
    assert_unique(&all);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_cut_off_stops_by_its_own_clock_a_takeover_issues_above_it_and_it_leases_anew() {
    let db = TestDb::shared().await;
    let lease = Duration::from_millis(2000);
    let first = spawn_app_on(&db, short_leases(lease.as_millis() as u64)).await;
    let client = first.client();
    let snowflakes = client.snowflake().await.unwrap();
    let worker = snowflakes.worker_id().unwrap();
    let mut before = snowflakes.next_n(5000).unwrap();

    // The instance vanishes: no renewal gets through, and the client stops on its own.
    first.abandon().await;
    let vanished = Instant::now();
    let stopped_with = loop {
        match snowflakes.next_n(100) {
            Ok(ids) => before.extend(ids),
            Err(error) => break error,
        }
        assert!(vanished.elapsed() < 2 * lease, "issuing never stopped");
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    assert_eq!(stopped_with, Error::LeaseLapsed);
    assert!(
        vanished.elapsed() <= lease,
        "issued {:?} after the last renewal could have been sent",
        vanished.elapsed()
    );
    assert!(increasing(&before));

    // Once the database lets the leases expire, another client takes the worker id over
    // (a new instance takes the lowest expired id, 0, for itself; the client the next).
    let pg = db.connect().await;
    eventually(Duration::from_secs(10), "the leases expire", || async {
        let held: i64 = pg
            .query_one(
                "SELECT count(*) FROM seqvend.worker_ids WHERE expires_at > now()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        held == 0
    })
    .await;
    let second = spawn_app_on(&db, short_leases(lease.as_millis() as u64)).await;
    let other = second.client();
    let takeover = other.snowflake().await.unwrap();
    assert_eq!(takeover.worker_id(), Some(worker), "the expired worker id");
    let after = takeover.next_n(5000).unwrap();
    assert!(after[0] > *before.last().unwrap());

    // An instance comes back where the first client looks: its renewal is refused
    // (lease_lost), it drops the worker id and leases another.
    let mut settings = short_leases(lease.as_millis() as u64);
    settings.listen = first
        .address
        .trim_start_matches("http://")
        .parse::<SocketAddr>()
        .unwrap();
    let _back = spawn_app_on(&db, settings).await;
    let anew = eventually_some(Duration::from_secs(10), "a new worker id", || async {
        snowflakes.worker_id().filter(|&id| id != worker)
    })
    .await;
    let renewed = snowflakes.next_n(5000).unwrap();
    assert!(renewed.iter().all(|&id| worker_of(id) == anew));
    assert_unique(&[before, after, renewed].concat());
}
