//! The scenarios. Each runs under load from clients of which some give up after 1–5 ms
//! (cancelling requests mid-flight), with single and batch vends.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use seqvend::local_pg::Shutdown;

use crate::common::process::create;
use crate::common::wait::eventually;
use crate::common::ADMIN_TOKEN;
use crate::harness::*;

const LOAD: Load = Load {
    clients: 24,
    max_batch: 40,
    impatient_every: 4,
};
/// Clients that wait up to 10 s for each answer: a request that outlasts that hung.
const PATIENT: Load = Load {
    impatient_every: 0,
    ..LOAD
};

#[tokio::test(flavor = "multi_thread")]
async fn seqvend_killed_under_load_five_times_never_vends_a_value_twice() {
    let _turn = one_at_a_time().await;
    let pg = Pg::start("kill", &[]).await;
    let mut seqvend = Seqvend::start(&pg.url, &[]).await;
    let ranges = [(1, 400_000), (1_000_001, 1_400_000)];
    create(&seqvend.address(), "parcel", &ranges).await;
    let (record, clients) = start_clients(vec![seqvend.address()], "parcel", LOAD);
    let mut restarts = Vec::new();
    for _ in 0..5 {
        until_more_values(&record, 2_000).await;
        restarts.push(seqvend.kill_and_restart().await);
    }
    until_more_values(&record, 2_000).await;
    clients.stop().await;
    let outcome = check(&seqvend.address(), "parcel", &ranges, &record).await;
    let slowest = restarts.iter().max().unwrap();
    report(
        "1-seqvend-killed",
        "5 × SIGKILL of seqvend under load, restarted",
        &outcome,
        &record,
        &format!("restart to ready: slowest {slowest:?}"),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn postgresql_crashed_under_load_five_times_never_vends_a_value_twice() {
    let _turn = one_at_a_time().await;
    let pg = Pg::start("crash", &[]).await;
    let seqvend = Seqvend::start(&pg.url, &[("SEQVEND_STATEMENT_TIMEOUT_MS", "200")]).await;
    // Small ranges: batches run into MAXVALUE and roll over around the crashes. Enough of
    // them that the clients, vending throughout, never use them all up however slow the
    // machine (a 409 while values remain fails the scenario): on a loaded machine PostgreSQL
    // stays up for many seconds between crashes (its restarts and the lock holder's
    // connection are slow), and the clients drew 300,000 values at ~20,000 a second.
    let ranges: Vec<(i64, i64)> = (0..200)
        .map(|i| (i * 10_000 + 1, i * 10_000 + 5_000))
        .collect();
    create(&seqvend.address(), "parcel", &ranges).await;
    let (record, clients) = start_clients(vec![seqvend.address()], "parcel", LOAD);
    let mut recoveries = Vec::new();
    for round in 0..5 {
        until_more_values(&record, 1_000).await;
        if round % 2 == 0 {
            // Statement timeouts: a session holds the active range's lock for 300 ms, longer
            // than seqvend's 200 ms statement timeout, so the vends waiting on it are cancelled.
            let blocker = pg.connect().await;
            blocker
                .batch_execute(
                    "SELECT pg_advisory_lock(1398166087, (SELECT id FROM seqvend.ranges WHERE status = 'active')); \
                     SELECT pg_sleep(0.3); SELECT pg_advisory_unlock_all()",
                )
                .await
                .unwrap();
        }
        pg.stop(Shutdown::Immediate).await;
        pg.start_again().await;
        let back = Instant::now();
        until_more_values(&record, 1).await;
        recoveries.push(back.elapsed());
    }
    until_more_values(&record, 1_000).await;
    clients.stop().await;
    let outcome = check(&seqvend.address(), "parcel", &ranges, &record).await;
    let slowest = recoveries.iter().max().unwrap();
    report(
        "2-postgresql-crashed",
        "5 × immediate shutdown of PostgreSQL under load, restarted; 3 × 300 ms range lock against a 200 ms statement timeout",
        &outcome,
        &record,
        &format!("PostgreSQL back to first value vended: slowest {slowest:?}"),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_postgresql_stopped_for_ten_seconds_every_request_is_a_prompt_503_and_seqvend_recovers(
) {
    let _turn = one_at_a_time().await;
    let pg = Pg::start("outage", &[]).await;
    let seqvend = Seqvend::start(&pg.url, &[]).await;
    let ranges = [(1, 1_000_000)];
    create(&seqvend.address(), "parcel", &ranges).await;
    let (record, clients) = start_clients(vec![seqvend.address()], "parcel", PATIENT);
    until_more_values(&record, 2_000).await;
    let rss_before = seqvend.rss_kb();

    pg.stop(Shutdown::Fast).await;
    let down = Instant::now();
    record.slowest_answer_us.store(0, Ordering::Relaxed);
    let unavailable_at_down = record.unavailable.load(Ordering::Relaxed);
    let http = reqwest::Client::new();
    let mut not_ready = 0;
    while down.elapsed() < Duration::from_secs(10) {
        let readyz = http
            .get(format!("{}/readyz", seqvend.address()))
            .send()
            .await
            .unwrap();
        assert_eq!(readyz.status(), StatusCode::SERVICE_UNAVAILABLE);
        not_ready += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let slowest_during_outage =
        Duration::from_micros(record.slowest_answer_us.load(Ordering::Relaxed));
    // Every client kept getting answers: 503s (each with Retry-After, checked as they come),
    // no values, and no request outlasting its client's patience.
    let answered_503 = record.unavailable.load(Ordering::Relaxed) - unavailable_at_down;
    assert!(
        answered_503 >= 100,
        "only {answered_503} answers of 503 during a 10 s outage"
    );
    assert_eq!(record.cancelled.load(Ordering::Relaxed), 0);
    assert!(
        slowest_during_outage < Duration::from_millis(1500),
        "an answer took {slowest_during_outage:?}"
    );
    let rss_during = seqvend.rss_kb();
    // Answers to requests sent before the stop may still have arrived after it; no request sent
    // once PostgreSQL was down may have been given a value. Read before PostgreSQL returns: a
    // request sent during the outage may then rightly be served.
    let latest_with_values = record.latest_request_with_values.lock().unwrap().unwrap();
    assert!(
        latest_with_values < down,
        "a request sent {:?} into the outage was given values",
        latest_with_values - down
    );

    pg.start_again().await;
    let back = Instant::now();
    let values_at_return = record.values.lock().unwrap().len();
    until_more_values(&record, 1).await;
    let recovery = back.elapsed();
    assert!(
        recovery < Duration::from_secs(5),
        "recovered after {recovery:?}"
    );
    assert!(values_at_return > 0);
    until_more_values(&record, 1_000).await;
    clients.stop().await;

    // No pile-up: memory stayed flat, and seqvend holds no more connections than its pools.
    assert!(
        rss_during < rss_before + 50 * 1024,
        "RSS grew from {rss_before} kB to {rss_during} kB"
    );
    let connections: i64 = pg
        .connect()
        .await
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'seqvend'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(connections <= 2 + 4, "{connections} connections");
    let outcome = check(&seqvend.address(), "parcel", &ranges, &record).await;
    report(
        "5-outage",
        "PostgreSQL stopped for 10 s under load",
        &outcome,
        &record,
        &format!(
            "slowest answer during the outage {slowest_during_outage:?}; /readyz answered 503 all {not_ready} times; \
             recovered {recovery:?} after PostgreSQL returned; RSS {rss_before} kB before, {rss_during} kB during; \
             {connections} connections after"
        ),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn three_instances_on_one_database_roll_over_and_run_out_without_a_value_twice() {
    let _turn = one_at_a_time().await;
    let pg = Pg::start("three", &[]).await;
    let instances = [
        Seqvend::start(&pg.url, &[]).await,
        Seqvend::start(&pg.url, &[]).await,
        Seqvend::start(&pg.url, &[]).await,
    ];
    let ranges = [(1, 20_000), (50_001, 70_000), (90_001, 100_000)];
    create(&instances[0].address(), "parcel", &ranges).await;
    let addresses: Vec<String> = instances.iter().map(Seqvend::address).collect();
    let (record, clients) = start_clients(
        addresses,
        "parcel",
        Load {
            clients: 30,
            ..LOAD
        },
    );
    clients.until_exhausted().await;
    assert!(record.exhausted.load(Ordering::Relaxed));
    let outcome = check(&instances[1].address(), "parcel", &ranges, &record).await;
    let (_, body) = admin(
        &instances[2].address(),
        Method::GET,
        "/sequences/parcel",
        None,
    )
    .await;
    assert_eq!(body["status"], "exhausted");
    report(
        "6-three-instances",
        "3 seqvend instances on one database, 2 rollovers and exhaustion during the run",
        &outcome,
        &record,
        "ran until the sequence was exhausted",
    );
}

/// What a DBA and another application do to a range's sequence by the normal PostgreSQL
/// means, while two instances vend from it under load: draw with nextval, move it forward,
/// then move it back again and again. seqvend never hands out a value twice, nor one that the
/// other application drew before the rewinds began.
#[tokio::test(flavor = "multi_thread")]
async fn a_dba_drawing_moving_and_rewinding_the_sequence_under_load_never_gets_a_value_twice() {
    let _turn = one_at_a_time().await;
    let pg = Pg::start("dba", &[]).await;
    let instances = [
        Seqvend::start(&pg.url, &[]).await,
        Seqvend::start(&pg.url, &[]).await,
    ];
    let ranges = [(1, 1_000_000_000)];
    create(&instances[0].address(), "parcel", &ranges).await;
    let addresses: Vec<String> = instances.iter().map(Seqvend::address).collect();
    let (record, clients) = start_clients(addresses, "parcel", LOAD);
    let dba = pg.connect().await;
    let sequence: String = dba
        .query_one("SELECT pg_sequence::text FROM seqvend.ranges", &[])
        .await
        .unwrap()
        .get(0);

    // Another application draws from the sequence; now and then a DBA skips far ahead.
    let mut theirs: Vec<i64> = Vec::new();
    for round in 0..40 {
        let drawn = dba
            .query(
                "SELECT nextval($1::text::regclass) FROM generate_series(1, 50)",
                &[&sequence],
            )
            .await
            .unwrap();
        theirs.extend(drawn.iter().map(|row| row.get::<_, i64>(0)));
        if round % 8 == 7 {
            dba.query_one(
                &format!("SELECT setval('{sequence}', last_value + 1000000) FROM {sequence}"),
                &[],
            )
            .await
            .unwrap();
        }
        until_more_values(&record, 200).await;
    }
    // Moved back, again and again (the other application no longer draws: after a rewind
    // its own values can come round again, which seqvend cannot prevent).
    for _ in 0..40 {
        dba.query_one(
            &format!("SELECT setval('{sequence}', greatest(1, last_value - 5000)) FROM {sequence}"),
            &[],
        )
        .await
        .unwrap();
        until_more_values(&record, 200).await;
    }
    clients.stop().await;

    let outcome = check(&instances[0].address(), "parcel", &ranges, &record).await;
    let seqvend_values: HashSet<i64> = record.values.lock().unwrap().iter().copied().collect();
    let shared = theirs.iter().filter(|v| seqvend_values.contains(v)).count();
    assert_eq!(
        shared, 0,
        "values both the other application and seqvend handed out"
    );
    assert_eq!(theirs.iter().collect::<HashSet<_>>().len(), theirs.len());
    let repairs: i64 = dba
        .query_one(
            "SELECT count(*) FROM seqvend.events WHERE kind = 'rewind'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(repairs > 0, "the rewinds were seen and repaired");
    report(
        "8-hands-on-dba",
        "2 instances under load; another application draws 2,000 values with nextval and skips ahead 5 times, then 40 rewinds (setval 5,000 back)",
        &outcome,
        &record,
        &format!(
            "none of the other application's {} values vended by seqvend; {repairs} rewinds found and repaired; \
             the gaps are mostly the 5,000,000 values skipped ahead",
            theirs.len()
        ),
    );
}

/// Runs one statement; `ALTER SYSTEM` refuses to share a transaction with anything.
async fn run(pg: &Pg, statement: &str) {
    pg.connect().await.batch_execute(statement).await.unwrap();
}

async fn wait_for(pg: &Pg, query: &str, what: &str) {
    let client = pg.connect().await;
    eventually(Duration::from_secs(30), what, || async {
        client
            .query_one(query, &[])
            .await
            .unwrap()
            .get::<_, bool>(0)
    })
    .await
}

/// A primary and its synchronous standby, both running, and one URL naming both hosts (the
/// primary first): seqvend connects to whichever accepts writes.
async fn synchronous_pair(label: &str) -> (Pg, Pg, String) {
    let primary = Pg::start(&format!("{label}-primary"), &[]).await;
    let standby = primary
        .standby(&format!("{label}-standby"), "standby1")
        .await;
    run(
        &primary,
        "ALTER SYSTEM SET synchronous_standby_names = 'standby1'",
    )
    .await;
    run(&primary, "SELECT pg_reload_conf()").await;
    let synchronous = "SELECT EXISTS (SELECT 1 FROM pg_stat_replication WHERE application_name = 'standby1' AND sync_state = 'sync')";
    wait_for(&primary, synchronous, "the standby is synchronous").await;
    let url = format!(
        "postgres://seqvend:{}@127.0.0.1:{},127.0.0.1:{}/seqvend?target_session_attrs=read-write",
        primary.cluster.password(),
        primary.cluster.port(),
        standby.cluster.port()
    );
    (primary, standby, url)
}

/// Promotes the standby and lets it commit alone.
async fn promote(standby: &Pg) {
    run(standby, "SELECT pg_promote(true, 60)").await;
    // The promoted standby inherits synchronous_standby_names and, with no standby of its
    // own, would block every commit.
    run(standby, "ALTER SYSTEM RESET synchronous_standby_names").await;
    run(standby, "SELECT pg_reload_conf()").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn failover_to_a_synchronous_standby_under_load_never_vends_a_value_twice() {
    let _turn = one_at_a_time().await;
    let (primary, standby, url) = synchronous_pair("failover").await;
    let seqvend = Seqvend::start(&url, &[]).await;
    let ranges = [(1, 400_000), (1_000_001, 1_400_000)];
    create(&seqvend.address(), "parcel", &ranges).await;
    let (record, clients) = start_clients(vec![seqvend.address()], "parcel", LOAD);
    until_more_values(&record, 3_000).await;

    primary.stop(Shutdown::Immediate).await;
    let failed = Instant::now();
    promote(&standby).await;
    let promoted = failed.elapsed();
    until_more_values(&record, 1).await;
    let carried_on = failed.elapsed();
    until_more_values(&record, 3_000).await;
    clients.stop().await;
    // Read back through the registry pool, which must have followed the new primary.
    let outcome = check(&seqvend.address(), "parcel", &ranges, &record).await;
    report(
        "3-failover",
        "primary killed (immediate shutdown) under load; synchronous standby promoted",
        &outcome,
        &record,
        &format!("standby promoted {promoted:?} after the primary died; values flowed again after {carried_on:?}, no restart of seqvend"),
    );
}

/// How long the primary stays frozen before the standby is promoted.
const FROZEN_FOR: Duration = Duration::from_secs(6);
/// seqvend's default vend deadline, and what an answer may take beyond it (two busy cores).
const VEND_DEADLINE: Duration = Duration::from_secs(2);
const SLACK: Duration = Duration::from_millis(1500);

#[tokio::test(flavor = "multi_thread")]
async fn a_frozen_primary_gets_prompt_503s_and_after_failover_values_flow_without_a_restart() {
    let _turn = one_at_a_time().await;
    let (primary, standby, url) = synchronous_pair("frozen").await;
    let seqvend = Seqvend::start(&url, &[]).await;
    let ranges = [(1, 400_000), (1_000_001, 1_400_000)];
    create(&seqvend.address(), "parcel", &ranges).await;
    let (record, clients) = start_clients(vec![seqvend.address()], "parcel", PATIENT);
    until_more_values(&record, 3_000).await;

    let frozen = primary.freeze();
    let froze = Instant::now();
    record.slowest_answer_us.store(0, Ordering::Relaxed);
    let unavailable_before = record.unavailable.load(Ordering::Relaxed);
    while record.unavailable.load(Ordering::Relaxed) == unavailable_before {
        assert!(
            froze.elapsed() < Duration::from_secs(10),
            "no 503 within 10 s of the freeze"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let first_503 = froze.elapsed();
    assert!(
        first_503 < VEND_DEADLINE + SLACK,
        "first 503 after {first_503:?}"
    );
    // The fault lasts a while: every request is answered all the same.
    tokio::time::sleep_until((froze + FROZEN_FOR).into()).await;
    let slowest_frozen = Duration::from_micros(record.slowest_answer_us.load(Ordering::Relaxed));

    promote(&standby).await;
    let promoted = Instant::now();
    let values_at_promotion = record.values.lock().unwrap().len();
    while record.values.lock().unwrap().len() == values_at_promotion {
        assert!(
            promoted.elapsed() < Duration::from_secs(10),
            "no value within 10 s of the promotion"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let flowing = promoted.elapsed();
    until_more_values(&record, 3_000).await;
    clients.stop().await;
    // The vend pool finds the new primary at its next connection; the registry pool follows
    // when the watcher notices the move (it may come second).
    loop {
        let (status, body) =
            admin(&seqvend.address(), Method::GET, "/sequences/parcel", None).await;
        if status == StatusCode::OK {
            break;
        }
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert!(
            promoted.elapsed() < Duration::from_secs(10),
            "the registry did not follow the new primary within 10 s"
        );
    }
    let registry_followed = promoted.elapsed();

    let slowest = Duration::from_micros(record.slowest_answer_us.load(Ordering::Relaxed));
    assert!(
        slowest < VEND_DEADLINE + SLACK,
        "an answer took {slowest:?} after the freeze"
    );
    assert_eq!(
        record.cancelled.load(Ordering::Relaxed),
        0,
        "requests outlasted their clients' 10 s patience"
    );
    // Read back through the registry pool, which must have followed the new primary.
    let outcome = check(&seqvend.address(), "parcel", &ranges, &record).await;
    let processes = frozen.processes();
    drop(frozen);
    primary.stop(Shutdown::Immediate).await;
    report(
        "3b-frozen-primary",
        "primary frozen under load (SIGSTOP of the postmaster and all its processes); synchronous standby promoted",
        &outcome,
        &record,
        &format!(
            "{processes} processes frozen; first 503 {first_503:?} after the freeze; slowest answer {slowest_frozen:?} while frozen, \
             {slowest:?} from the freeze on; values flowed again {flowing:?} after the promotion, reads {registry_followed:?} after it; no restart of seqvend"
        ),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_standby_alone_is_refused_by_both_pools_as_unavailable_before_any_statement() {
    let _turn = one_at_a_time().await;
    let primary = Pg::start("read-only-primary", &[]).await;
    let standby = primary.standby("read-only-standby", "standby1").await;
    let settings = seqvend::settings::DatabaseSettings::default();

    let vend = seqvend::db::vend_pool(&standby.url, &settings).unwrap();
    let err = anyhow::Error::from(vend.get().await.expect_err("the standby was refused"));
    assert!(
        format!("{err:#}").contains("does not allow writes"),
        "{err:#}"
    );
    assert!(seqvend::db::is_unavailable(&err), "{err:#}");

    let registry = seqvend::db::registry_pool(&standby.url, &settings).unwrap();
    let asked = Instant::now();
    let err = sqlx::query("SELECT 1")
        .execute(&registry)
        .await
        .expect_err("the standby was refused");
    let err = anyhow::Error::from(err);
    assert!(seqvend::db::is_unavailable(&err), "{err:#}");
    assert!(
        asked.elapsed() < settings.connect_timeout + SLACK,
        "refused after {:?}",
        asked.elapsed()
    );
}

/// schemathesis (installed by scripts/test.sh into target/schemathesis) fuzzes every operation
/// of the OpenAPI document seqvend serves. Checks: no 5xx, every status, content type, header
/// and body as documented, invalid data rejected, undocumented methods refused with `Allow`.
/// Not checked, by design: that every schema-valid body is accepted (a range's `min < max`
/// and "no overlap" are rules JSON Schema cannot state; seqvend answers 400 and 409), and
/// that a deleted sequence is gone (`DELETE` retires it: it stays readable, with status
/// `retired`, so that its name and ranges are never reused). The stateful phase is left out
/// because it applies that last check even when it is excluded.
#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_no_server_error_and_no_answer_outside_the_document() {
    let _turn = one_at_a_time().await;
    let binary = std::env::var("SEQVEND_SCHEMATHESIS").unwrap_or_else(|_| {
        format!(
            "{}/target/schemathesis/bin/schemathesis",
            env!("CARGO_MANIFEST_DIR")
        )
    });
    assert!(
        std::path::Path::new(&binary).exists(),
        "schemathesis is not installed at {binary}: scripts/test.sh installs it"
    );
    let pg = Pg::start("schemathesis", &[]).await;
    let seqvend = Seqvend::start(&pg.url, &[]).await;
    create(&seqvend.address(), "parcel", &[(1, 1_000_000)]).await;
    let output = tokio::process::Command::new(&binary)
        .arg("run")
        .arg(format!("{}/openapi.json", seqvend.address()))
        .args(["--header", &format!("Authorization: Bearer {ADMIN_TOKEN}")])
        .args([
            "--checks",
            "all",
            "--exclude-checks",
            "positive_data_acceptance",
        ])
        .args([
            "--phases",
            "examples,coverage,fuzzing",
            "--max-examples",
            "60",
        ])
        .args([
            "--seed",
            "20261121",
            "--no-color",
            "--generation-database",
            "none",
        ])
        .env("SCHEMATHESIS_TELEMETRY", "false")
        // It keeps a cache in its working directory: not in the repository.
        .current_dir(std::env::temp_dir())
        .output()
        .await
        .expect("schemathesis runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "schemathesis found problems:\n{stdout}"
    );
    // Its own account of the operations: every one selected and tested, none skipped.
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {name:?} in schemathesis's summary:\n{stdout}"))
    };
    let (selected, tested) = (field("Selected:"), field("Tested:"));
    let (chosen, total) = selected.split_once('/').expect("Selected: n/total");
    assert_eq!(total, "31", "operations in /openapi.json");
    assert_eq!((chosen, tested), (total, total), "operations exercised");
    assert!(
        !stdout.lines().any(|l| l.trim().starts_with("Skipped:")),
        "schemathesis skipped operations:\n{stdout}"
    );
    let summary = stdout
        .lines()
        .find(|l| l.contains(" generated, "))
        .unwrap_or("")
        .trim();
    report_without_values(
        "7-hostile-input",
        "schemathesis: coverage and fuzzing phases over every operation of /openapi.json",
        &format!("{summary}; no 5xx, every answer as documented"),
    );
}
