//! Cached sequences under faults: instances that hold blocks of values in memory, killed with
//! SIGKILL and cut off by a PostgreSQL crash. A killed instance loses what it held (gaps),
//! never more, and no value is handed out twice.

use reqwest::{Method, StatusCode};
use seqvend::local_pg::Shutdown;
use serde_json::json;

use crate::common::process::create;
use crate::harness::*;

/// Values each instance holds per sequence.
const CACHE_SIZE: u128 = 1_000;

#[tokio::test(flavor = "multi_thread")]
async fn caching_instances_killed_under_load_lose_at_most_their_cache_and_never_vend_twice() {
    let _turn = one_at_a_time().await;
    let pg = Pg::start("cache-kill", &[]).await;
    let env = [
        ("SEQVEND_CACHE_LEASE_MS", "4000"),
        ("SEQVEND_CACHE_RENEW_MS", "1000"),
    ];
    let mut instances = Vec::new();
    for _ in 0..3 {
        instances.push(Seqvend::start(&pg.url, &env).await);
    }
    let ranges = [(1, 3_000_000), (5_000_001, 8_000_000)];
    let address = instances[0].address();
    create(&address, "cached", &ranges).await;
    let (status, body) = admin(
        &address,
        Method::PATCH,
        "/sequences/cached",
        Some(json!({"cache": {"size": CACHE_SIZE}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Patient clients: a request given up on after its values left the cache would be a gap
    // no cache size bounds.
    let load = Load {
        clients: 24,
        max_batch: 40,
        impatient_every: 0,
    };
    let addresses = instances.iter().map(Seqvend::address).collect();
    let (record, clients) = start_clients(addresses, "cached", load);
    let mut kills = 0;
    for round in 0..6 {
        until_more_values(&record, 5_000).await;
        instances[round % 3].kill_and_restart().await;
        kills += 1;
        if round == 2 {
            // PostgreSQL crashes with every instance holding blocks: they serve on from memory.
            pg.stop(Shutdown::Immediate).await;
            pg.start_again().await;
        }
    }
    until_more_values(&record, 5_000).await;
    clients.stop().await;
    let outcome = check(&address, "cached", &ranges, &record).await;
    // What each instance life could lose: the values it held (at most the cache size, a refill
    // in flight included), and the batches of responses cut off by the kill.
    let lives = kills + instances.len() as u128;
    let in_flight = u128::from(load.max_batch) * load.clients as u128;
    let bound = CACHE_SIZE * lives + in_flight * kills;
    assert!(
        outcome.gaps <= bound,
        "{} gaps, more than the {bound} that {lives} instance lives could hold",
        outcome.gaps
    );
    report(
        "10-caching-instances-killed",
        "3 instances caching 1,000 values each; 6 × SIGKILL of an instance under load, restarted; \
         1 × immediate shutdown of PostgreSQL",
        &outcome,
        &record,
        &format!("gaps bounded by {bound}: {lives} instance lives × {CACHE_SIZE} cached, plus responses cut off by the kills"),
    );
}

fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

#[tokio::test(flavor = "multi_thread")]
async fn instances_and_client_processes_through_kills_a_crash_and_a_retirement_never_vend_twice() {
    let _turn = one_at_a_time().await;
    let pg = Pg::start("cache-mixed", &[]).await;
    let client_lease_ms: u128 = 5_000;
    let lease = client_lease_ms.to_string();
    let env = [
        ("SEQVEND_CACHE_LEASE_MS", "4000"),
        ("SEQVEND_CACHE_RENEW_MS", "1000"),
        ("SEQVEND_CLIENT_LEASE_MS", lease.as_str()),
    ];
    let mut instances = Vec::new();
    for _ in 0..3 {
        instances.push(Seqvend::start(&pg.url, &env).await);
    }
    let ranges = [(1, 5_000_000)];
    let address = instances[0].address();
    create(&address, "mixed", &ranges).await;
    let (status, body) = admin(
        &address,
        Method::PATCH,
        "/sequences/mixed",
        Some(json!({"cache": {"size": CACHE_SIZE}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A busy process and a slow one: the slow one's blocks outlast their leases, so it is the
    // one that must stop at a lease's end rather than at a block's.
    let processes = [
        ClientProcess::start(
            "client_record",
            &instances[0].address(),
            &[("SEQUENCE", "mixed"), ("RATE", "2000")],
        ),
        ClientProcess::start(
            "client_record",
            &instances[1].address(),
            &[("SEQUENCE", "mixed"), ("RATE", "50")],
        ),
    ];
    let load = Load {
        clients: 12,
        max_batch: 20,
        impatient_every: 0,
    };
    let addresses = instances.iter().map(Seqvend::address).collect();
    let (record, clients) = start_clients(addresses, "mixed", load);
    until_more_values(&record, 5_000).await;
    instances[1].kill_and_restart().await;
    until_more_values(&record, 5_000).await;
    instances[2].kill_and_restart().await;
    until_more_values(&record, 5_000).await;
    pg.stop(Shutdown::Immediate).await;
    pg.start_again().await;
    until_more_values(&record, 5_000).await;
    // The HTTP clients stop (their 410s would be answers the harness does not expect); the
    // client processes go on through the retirement.
    clients.stop().await;
    let (status, body) = admin(&address, Method::DELETE, "/sequences/mixed", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let retired_at = unix_ms();
    // DELETE answered: no instance hands out a value of it any more.
    for instance in &instances {
        let url = format!("{}/sequences/mixed/next", instance.address());
        let reply = reqwest::Client::new()
            .post(url)
            .bearer_auth(VEND_TOKEN)
            .send()
            .await
            .unwrap();
        let status = reply.status();
        let body: serde_json::Value = reply.json().await.unwrap();
        assert_eq!(
            (status, &body["error"]),
            (StatusCode::GONE, &json!("sequence_retired")),
            "{body}"
        );
    }
    // Past every client lease granted before the retirement.
    while unix_ms() <= retired_at + client_lease_ms + 1_000 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let [first, second] = processes;
    let from_processes: Vec<(u128, i64)> = [first.stop(), second.stop()].concat();
    let late: Vec<&(u128, i64)> = from_processes
        .iter()
        .filter(|(at, _)| *at > retired_at + client_lease_ms)
        .collect();
    assert!(
        late.is_empty(),
        "values handed out after DELETE answered and the client leases expired: {late:?}"
    );
    assert!(
        from_processes.len() > 1_000,
        "the client processes handed out values throughout"
    );
    record
        .values
        .lock()
        .unwrap()
        .extend(from_processes.iter().map(|(_, value)| value));
    let outcome = check(&address, "mixed", &ranges, &record).await;
    report(
        "11-caching-with-client-processes",
        "3 instances caching 1,000 values, 2 client processes (seqvend-client) at 2,000 and 50 ids/s; \
         2 × SIGKILL of an instance, 1 × immediate shutdown of PostgreSQL, then DELETE mid-run",
        &outcome,
        &record,
        &format!(
            "{} values from the client processes, none after DELETE answered plus the client \
             lease ({client_lease_ms} ms); every instance answered 410 at once",
            from_processes.len()
        ),
    );
}
