//! seqvend-client against a real seqvend and PostgreSQL: values unique and in vend order
//! across concurrent callers, clipped leases then `Exhausted`, refusals, an outage served
//! from the cache, and expiry.

use std::sync::Arc;
use std::time::{Duration, Instant};

use seqvend_client::{Client, Error, Sequence};

use crate::helpers::*;

/// Values taken with `next` until it fails, and the failure.
async fn drain(sequence: &Sequence) -> (Vec<i64>, Error) {
    let mut values = Vec::new();
    loop {
        match sequence.next().await {
            Ok(value) => values.push(value),
            Err(error) => return (values, error),
        }
    }
}

/// The values of every block leased to clients, from the lease table.
async fn client_leased(db: &TestDb) -> i64 {
    db.connect()
        .await
        .query_one(
            "SELECT coalesce(sum(value_count), 0)::int8 FROM seqvend.leases WHERE kind = 'client'",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn values_are_unique_and_increase_for_each_caller_across_many_concurrent_callers() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("orders", 1, 10_000_000).await;
    let client = app.client();
    let orders = client.sequence("orders");

    let mut callers = Vec::new();
    for caller in 0..16 {
        let orders = orders.clone();
        let client = client.clone();
        callers.push(tokio::spawn(async move {
            let mut values = Vec::new();
            for round in 0..400 {
                match (caller + round) % 3 {
                    0 => values.push(orders.next().await.unwrap()),
                    1 => values.extend(orders.next_n(37).await.unwrap()),
                    _ => values.push(client.next("orders").await.unwrap()),
                }
            }
            values
        }));
    }
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let orders = orders.clone();
            std::thread::spawn(move || {
                let mut values = Vec::new();
                while values.len() < 20_000 {
                    match orders.try_next() {
                        Ok(value) => values.push(value),
                        Err(_) => std::thread::yield_now(),
                    }
                }
                values
            })
        })
        .collect();

    let mut all = Vec::new();
    for caller in callers {
        let values = caller.await.unwrap();
        assert!(increasing(&values), "one caller's values increase");
        all.extend(values);
    }
    for thread in threads {
        let values = thread.join().unwrap();
        assert!(increasing(&values), "one thread's values increase");
        all.extend(values);
    }
    assert_unique(&all);
    let leased = client_leased(&db).await;
    assert!(all.len() as i64 <= leased);
    assert!(
        all.iter().all(|value| (1..=leased).contains(value)),
        "every value was leased to this client, from the start of the range"
    );
    // Values are drawn durably: what the service vends next comes after all of them.
    let next = app.next_value("orders").await;
    assert!(all.iter().all(|value| *value < next));
    // Hits are the values of calls that did not wait; a call that waited took at most 37.
    let metrics = client.metrics();
    let waited_for = all.len() as u64 - metrics.hits;
    assert!(waited_for <= metrics.waits * 37, "{metrics:?}");
    assert_eq!((metrics.discarded, metrics.failed_calls), (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn two_clients_of_one_sequence_never_share_a_value() {
    let app = spawn_app().await;
    // Room for both: a burst makes each lease up to `max_cached` (4,000,000) at once.
    app.create_ok("shared", 1, 100_000_000).await;
    let (one, two) = (app.client(), app.client());
    let mut all = one.next_n("shared", 3000).await.unwrap();
    all.extend(two.next_n("shared", 3000).await.unwrap());
    all.extend(one.next_n("shared", 3000).await.unwrap());
    assert_unique(&all);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clipped_lease_is_served_to_the_last_value_and_then_the_sequence_is_exhausted() {
    let app = spawn_app().await;
    app.create_ok("short", 1, 2500).await;
    let client = app.client();
    let short = client.sequence("short");
    let (values, error) = drain(&short).await;
    assert_eq!(values, (1..=2500).collect::<Vec<i64>>());
    assert_eq!(error, Error::Exhausted("short".into()));
    assert_eq!(short.try_next(), Err(Error::Exhausted("short".into())));
    assert!(matches!(short.next_n(2).await, Err(Error::Exhausted(_))));
    // Nothing was lost on the way: the service agrees nothing is left.
    app.next("short")
        .await
        .assert_error(409, "sequence_exhausted");
    assert_eq!(short.metrics().discarded, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_sequence_is_not_found_and_asked_for_once_within_the_quiet_period() {
    let app = spawn_app().await;
    let client = app.client();
    assert_eq!(
        client.next("nowhere").await,
        Err(Error::NotFound("nowhere".into()))
    );
    assert_eq!(
        client.next("nowhere").await,
        Err(Error::NotFound("nowhere".into()))
    );
    assert!(client.try_next("nowhere").is_err());
    assert_eq!(client.metrics().service_calls, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_token_is_unauthorized() {
    let app = spawn_app().await;
    app.create_ok("guarded", 1, 1000).await;
    let client = Client::builder(&app.address, "not-a-token")
        .wait_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    assert_eq!(client.next("guarded").await, Err(Error::Unauthorized));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retired_sequence_answers_retired_once_its_cached_values_are_gone() {
    let app = spawn_app().await;
    app.create_ok("gone", 1, 1_000_000).await;
    app.create_ok("kept", 1, 1_000_000).await;
    let client = app.client();
    let kept = client.sequence("kept");
    let first = kept.next().await.unwrap();

    assert_eq!(app.retire("gone").await.status.as_u16(), 200);
    assert_eq!(app.retire("kept").await.status.as_u16(), 200);
    assert_eq!(
        client.next("gone").await,
        Err(Error::Retired("gone".into()))
    );
    // Values leased before the retirement were vended before it: they are still handed out.
    let (values, error) = drain(&kept).await;
    assert_eq!(error, Error::Retired("kept".into()));
    assert!(!values.is_empty() && values[0] == first + 1);
    assert!(increasing(&values));
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_service_stopped_cached_values_flow_without_a_wait_then_calls_fail_fast() {
    let app = spawn_app().await;
    app.create_ok("outage", 1, 1_000_000).await;
    let client = Client::builder(&app.address, VEND_TOKEN)
        .wait_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let outage = client.sequence("outage");
    // The wait timeout is short: on a loaded machine the first lease may take longer.
    let patience = Instant::now() + Duration::from_secs(30);
    while let Err(error) = outage.prefetch(5000).await {
        assert!(
            error == Error::Timeout && Instant::now() < patience,
            "{error:?}"
        );
    }
    let before = client.metrics();
    app.stop().await;
    // A refill fails while values are cached (a prefetch beyond them forces one).
    let refused = outage.prefetch(1_000_000).await.unwrap_err();
    assert!(refused.is_transient(), "{refused:?}");
    assert!(client.metrics().failed_calls > before.failed_calls);

    let (values, error) = drain(&outage).await;
    assert!(
        values.len() >= 5000,
        "served {} from the cache",
        values.len()
    );
    assert_unique(&values);
    assert!(
        matches!(
            error,
            Error::Transport(_) | Error::Unavailable { .. } | Error::Timeout
        ),
        "{error:?}"
    );
    let after = client.metrics();
    assert_eq!(
        after.waits - before.waits,
        1,
        "only the call that found the cache empty waited"
    );
    // With nothing cached, try_next still answers at once.
    let started = Instant::now();
    assert!(outage.try_next().is_err());
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "well within the wait timeout"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_value_is_handed_out_after_its_lease_expires() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.cache.client_lease = Duration::from_secs(2);
    let app = spawn_app_on(&db, settings).await;
    app.create_ok("short-lived", 1, 10_000_000).await;
    let client = Arc::new(app.client());
    let sequence = client.sequence("short-lived");
    assert_eq!(sequence.next().await.unwrap(), 1);

    // The first block (the strict default: 10,000 values) is closed before its 2 s are up,
    // its unused values discarded, and values come from a later lease.
    eventually(Duration::from_secs(10), "the first block expires", || {
        let client = client.clone();
        async move { client.metrics().discarded >= 9_999 }
    })
    .await;
    let next = sequence.next().await.unwrap();
    assert!(next > 10_000, "{next} is from a later lease");
}

/// The ticker that closes blocks at their deadline never runs on a runtime a hot loop
/// starves: the take itself must refuse a value past the lease's deadline, less the fence
/// for the two clocks' rates (a tenth, as the instance cache keeps) and the expiry margin.
#[tokio::test(flavor = "multi_thread")]
async fn a_starved_runtime_takes_no_value_past_the_leases_fenced_deadline() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    let ttl = Duration::from_secs(2);
    settings.cache.client_lease = ttl;
    let app = spawn_app_on(&db, settings).await;
    app.create_ok("hot", 1, 1_000_000).await;
    let address = app.address.clone();
    let margin = Duration::from_millis(200);
    let (taken, late) = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let client = Client::builder(&address, VEND_TOKEN)
                .expiry_margin(margin)
                .wait_timeout(Duration::from_secs(30))
                .build()
                .unwrap();
            let hot = client.sequence("hot");
            hot.prefetch(100_000).await.unwrap();
            // Every lease was sent before this, so every deadline falls before it + ttl.
            let leased = Instant::now();
            let last_allowed = leased + ttl - ttl / 10 - margin;
            let (mut taken, mut late) = (0u64, Vec::new());
            // Never yields to the runtime: a value every 50 µs, past the lease's end.
            while leased.elapsed() < ttl + Duration::from_millis(500) {
                let before = Instant::now();
                if let Ok(value) = hot.try_next() {
                    taken += 1;
                    if before > last_allowed {
                        late.push((value, before - last_allowed));
                    }
                }
                while before.elapsed() < Duration::from_micros(50) {
                    std::hint::spin_loop();
                }
            }
            (taken, late)
        })
    })
    .join()
    .unwrap();
    assert!(taken > 1_000, "the loop took values: {taken}");
    assert!(
        late.is_empty(),
        "{} values taken past the fenced deadline less the margin, the first {:?}",
        late.len(),
        late.first()
    );
}

/// The sizes of the client leases of this test's database, in the order they were granted.
async fn client_lease_sizes(db: &TestDb) -> Vec<i64> {
    let sql = "SELECT value_count FROM seqvend.leases WHERE kind = 'client' ORDER BY id";
    let rows = db.connect().await.query(sql, &[]).await.unwrap();
    rows.iter().map(|row| row.get(0)).collect()
}

/// A cold start at full speed: the first lease is the strict default (10,000); the refill
/// that follows it has already seen the rate, so every later lease tops up to `max_cached`
/// from below half of it (more than 2,000,000 each, where leases were once held to 100,000),
/// and the cache runs dry about once per lease, not once per 10,000 values.
#[tokio::test(flavor = "multi_thread")]
async fn from_a_cold_start_at_full_speed_every_lease_after_the_first_is_the_largest() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("burst", 1, 10_000_000).await;
    let client = app.client();
    let burst = client.sequence("burst");
    let mut taken = Vec::with_capacity(1_000_000);
    while taken.len() < 1_000_000 {
        taken.extend(burst.next_n(10_000).await.unwrap());
    }
    assert!(increasing(&taken));
    let sizes = client_lease_sizes(&db).await;
    assert_eq!(sizes[0], 10_000, "{sizes:?}");
    assert!(sizes.len() >= 2, "{sizes:?}");
    let half_of_max_cached = seqvend_client::DEFAULT_MAX_CACHED as i64 / 2;
    assert!(
        sizes[1..].iter().all(|size| *size > half_of_max_cached),
        "{sizes:?}"
    );
    let metrics = client.metrics();
    assert!(metrics.waits <= metrics.refills, "{metrics:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn closing_a_client_counts_what_it_held_as_discarded_and_hands_out_nothing_more() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("closing", 1, 10_000_000).await;
    let client = app.client();
    let closing = client.sequence("closing");
    closing.prefetch(50_000).await.unwrap();
    let taken = closing.next_n(10).await.unwrap();
    let metrics = client.close();
    let leased = client_leased(&db).await;
    assert_eq!(metrics.hits, 10);
    assert_eq!(metrics.discarded, leased as u64 - 10, "{metrics:?}");
    assert_eq!(closing.next().await, Err(Error::Closed));
    assert_eq!(closing.try_next(), Err(Error::Closed));
    assert_eq!(client.next("another").await, Err(Error::Closed));
    assert_eq!(
        client_leased(&db).await,
        leased,
        "nothing leased after the close"
    );
    assert_eq!(taken, (1..=10).collect::<Vec<i64>>());
}

/// A client told it may lease more than the service allows learns the limit from the first
/// refusal, and goes on in leases the service grants.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_asking_for_more_than_the_service_allows_falls_back_to_its_limit() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("large", 1, 100_000_000).await;
    let client = Client::builder(&app.address, VEND_TOKEN)
        .max_lease(20_000_000)
        .max_cached(1_000_000)
        .wait_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let large = client.sequence("large");
    // The refill task starts with the sequence and may lease a first, small block before the
    // prefetch is seen; what is still wanted after it must be above the service's limit too,
    // so the client asks beyond the limit either way.
    large.prefetch(20_000_001).await.unwrap();
    // The refusal is one failed call (a busy database may add others, answered 503).
    let metrics = client.metrics();
    assert!(metrics.failed_calls >= 1, "{metrics:?}");
    let sizes = client_lease_sizes(&db).await;
    assert!(sizes.iter().all(|size| *size <= 10_000_000), "{sizes:?}");
    assert!(sizes.iter().sum::<i64>() >= 20_000_001, "{sizes:?}");
    assert_eq!(large.next().await.unwrap(), 1);
}
