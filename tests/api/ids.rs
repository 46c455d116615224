//! Time-ordered ids: Snowflake ids from several instances under leased worker ids, clock
//! steps, lease handover and fencing, UUIDv7s, and the worker-lease API for clients.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use seqvend::ids::{Clock, Layout};
use seqvend::local_pg::Shutdown;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::helpers::*;

impl TestApp {
    pub async fn snowflake(&self, count: u32) -> Reply {
        let path = format!("/ids/snowflake?count={count}");
        self.request(Method::POST, &path, Some(VEND_TOKEN), None)
            .await
    }

    /// The ids of a successful `POST /ids/snowflake`, checked against their strings.
    pub async fn snowflake_ids(&self, count: u32) -> Vec<i64> {
        let reply = self.snowflake(count).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        snowflakes_of(&reply)
    }
}

fn snowflakes_of(reply: &Reply) -> Vec<i64> {
    let ids: Vec<i64> = reply.body["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let strings: Vec<String> = reply.body["ids_str"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(strings, ids.iter().map(i64::to_string).collect::<Vec<_>>());
    ids
}

fn assert_increasing(ids: &[i64]) {
    assert!(increasing(ids), "ids not strictly increasing");
}

#[tokio::test(flavor = "multi_thread")]
async fn instances_on_one_database_issue_unique_ids_increasing_per_worker() {
    let db = TestDb::shared().await;
    let mut apps = Vec::new();
    for _ in 0..3 {
        apps.push(Arc::new(spawn_app_on(&db, test_settings()).await));
    }
    let mut tasks = JoinSet::new();
    for app in &apps {
        for client in 0..4u32 {
            let app = app.clone();
            tasks.spawn(async move {
                let mut answers = Vec::new();
                for i in 0..15u32 {
                    let count = [1, 700, 4096, 10_000][((client + i) % 4) as usize];
                    answers.push(app.snowflake_ids(count).await);
                }
                answers
            });
        }
    }
    let mut all = Vec::new();
    let mut workers = HashSet::new();
    while let Some(answers) = tasks.join_next().await {
        let answers = answers.unwrap();
        // Each client asks in turn: every answer ascending, and above the one before. (Answers
        // to concurrent requests may interleave: a batch that waits for the next millisecond
        // lets others in meanwhile.)
        assert_increasing(&answers.concat());
        for ids in answers {
            let worker = worker_of(ids[0]);
            assert!(ids.iter().all(|&id| worker_of(id) == worker));
            workers.insert(worker);
            all.extend(ids);
        }
    }
    assert_eq!(all.len(), 3 * 4 * 15 * (1 + 700 + 4096 + 10_000) / 4);
    assert_unique(&all);
    assert_eq!(workers.len(), 3, "one worker id per instance");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_small_step_of_the_clock_back_is_waited_out() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.ids.clock_step_tolerance = Duration::from_millis(300);
    let clock = Clock::system();
    let app = spawn_app_with_clock(&db, settings, clock.clone()).await;
    let before = app.snowflake_ids(100).await;
    clock.step(-200);
    let started = Instant::now();
    let after = app.snowflake_ids(100).await;
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "answered in {:?}: not waited out",
        started.elapsed()
    );
    assert_increasing(&[before, after].concat());
    assert!(app
        .scrape()
        .await
        .contains("seqvend_clock_moved_backwards_total 0"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_step_of_the_clock_back_is_refused_and_counted_until_the_clock_catches_up() {
    let db = TestDb::shared().await;
    let clock = Clock::system();
    let app = spawn_app_with_clock(&db, test_settings(), clock.clone()).await;
    let before = app.snowflake_ids(1000).await;
    clock.step(-10_000);
    for _ in 0..2 {
        let reply = app.snowflake(1).await;
        reply.assert_error(503, "clock_moved_backwards");
        assert_eq!(reply.headers["retry-after"], "1");
    }
    assert!(app
        .scrape()
        .await
        .contains("seqvend_clock_moved_backwards_total 2"));
    clock.step(10_000);
    let after = app.snowflake_ids(1000).await;
    assert_increasing(&[before, after].concat());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_vanished_instance_s_worker_id_is_taken_only_after_expiry_and_issues_above_its_ids() {
    let db = TestDb::shared().await;
    // Two worker ids: the first instance takes 0, a second 1, and a third has none free.
    let two_workers = Layout::new(51, 1, 11, Layout::DEFAULT.epoch_ms()).unwrap();
    let settings = || {
        let mut settings = short_leases(2000);
        settings.ids.layout = two_workers;
        settings
    };
    let first = spawn_app_on(&db, settings()).await;
    let _second = spawn_app_on(&db, settings()).await;
    let first_ids = first.snowflake_ids(5000).await;
    let worker = two_workers.decompose(first_ids[0]).unwrap().worker_id;
    first.abandon().await;
    // The third's clock is 3 s behind: across the handover, the clock moved back.
    let clock = Clock::system();
    clock.step(-3000);
    let third = spawn_app_with_clock(&db, settings(), clock.clone()).await;
    third.snowflake(1).await.assert_error(503, "no_worker_id");
    let refused = eventually_some(Duration::from_secs(10), "the third leases", || async {
        let reply = third.snowflake(1).await;
        (reply.status != StatusCode::SERVICE_UNAVAILABLE || reply.code() != "no_worker_id")
            .then_some(reply)
    })
    .await;
    // Its clock reads below the first's last renewal plus the lease: nothing is stamped.
    refused.assert_error(503, "clock_moved_backwards");
    clock.step(3000);
    // Its lease's bound was its clock plus the lease when it took it: the next renewal raises
    // the bound to the clock that moved forward.
    let third_ids = eventually_some(Duration::from_secs(5), "the third issues", || async {
        let reply = third.snowflake(5000).await;
        if reply.status == StatusCode::OK {
            return Some(snowflakes_of(&reply));
        }
        reply.assert_error(503, "clock_ahead_of_lease");
        None
    })
    .await;
    assert!(third_ids
        .iter()
        .all(|&id| two_workers.decompose(id).unwrap().worker_id == worker));
    assert!(third_ids[0] > *first_ids.last().unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gracefully_stopped_instance_hands_its_worker_id_back_for_the_next_to_issue_above_its_ids(
) {
    let db = TestDb::shared().await;
    // Two worker ids leased for a minute, one held throughout by another instance: only a
    // handback lets the next instance issue before the minute is out.
    let two_workers = Layout::new(51, 1, 11, Layout::DEFAULT.epoch_ms()).unwrap();
    let settings = || {
        let mut settings = short_leases(60_000);
        settings.ids.layout = two_workers;
        settings
    };
    let first = spawn_app_on(&db, settings()).await;
    let _other = spawn_app_on(&db, settings()).await;
    let first_ids = first.snowflake_ids(5000).await;
    first.stopped().await;
    let second = spawn_app_on(&db, settings()).await;
    let second_ids = second.snowflake_ids(5000).await;
    assert!(second_ids[0] > *first_ids.last().unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_instance_whose_lease_lapses_stops_issuing_and_resumes_after_a_renewal() {
    let pg = Pg::start("lease-fencing", &[]).await;
    let db = TestDb::create(&pg.cluster).await;
    let lease = Duration::from_millis(1500);
    let app = spawn_app_on(&db, short_leases(lease.as_millis() as u64)).await;
    let before = app.snowflake_ids(100).await;
    pg.stop(Shutdown::Immediate).await;
    let stopped = Instant::now();
    // Issuing needs no database: it goes on until the lease lapses by seqvend's own clock.
    let mut last = before.clone();
    loop {
        let reply = app.snowflake(10).await;
        if reply.status != StatusCode::OK {
            reply.assert_error(503, "no_worker_id");
            break;
        }
        let ids = snowflakes_of(&reply);
        assert!(ids[0] > *last.last().unwrap());
        last = ids;
        assert!(
            stopped.elapsed() < Duration::from_secs(5),
            "issuing never stopped"
        );
    }
    assert!(
        stopped.elapsed() <= lease,
        "issued {:?} after the last renewal could have been sent",
        stopped.elapsed()
    );
    pg.start_again().await;
    let after = eventually_some(Duration::from_secs(15), "issuing resumes", || async {
        let reply = app.snowflake(10).await;
        (reply.status == StatusCode::OK).then(|| snowflakes_of(&reply))
    })
    .await;
    assert_increasing(&[before, last, after].concat());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_instance_with_another_layout_refuses_to_start() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.snowflake_ids(1).await;
    let mut settings = test_settings();
    settings.ids.layout = Layout::new(40, 11, 12, Layout::DEFAULT.epoch_ms()).unwrap();
    let err = match seqvend::startup::Application::build(&settings, &db.url).await {
        Ok(_) => panic!("started with another layout"),
        Err(err) => format!("{err:#}"),
    };
    assert!(
        err.contains("41/10/12") && err.contains("SEQVEND_SNOWFLAKE_LAYOUT"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_snowflake_id_decodes_into_its_time_worker_and_sequence() {
    let app = spawn_app().await;
    let ids = app.snowflake_ids(3).await;
    let reply = app
        .request(
            Method::GET,
            &format!("/ids/snowflake/{}", ids[2]),
            Some(VEND_TOKEN),
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let parts = Layout::DEFAULT.decompose(ids[2]).unwrap();
    assert_eq!(reply.body["worker_id"], json!(parts.worker_id));
    assert_eq!(reply.body["sequence"], json!(parts.sequence));
    assert_eq!(reply.body["timestamp_ms"], json!(parts.timestamp_ms));
    let stamped = chrono::DateTime::parse_from_rfc3339(reply.body["timestamp"].as_str().unwrap())
        .unwrap()
        .timestamp_millis();
    assert_eq!(stamped, parts.timestamp_ms);
    assert!((chrono::Utc::now().timestamp_millis() - stamped).abs() < 60_000);
}

#[tokio::test(flavor = "multi_thread")]
async fn uuidv7s_increase_within_an_instance_even_when_its_clock_steps_back() {
    let db = TestDb::shared().await;
    let clock = Clock::system();
    let app = spawn_app_with_clock(&db, test_settings(), clock.clone()).await;
    let mut all: Vec<String> = Vec::new();
    for step in [0, -10_000, 0] {
        clock.step(step);
        let reply = app
            .request(
                Method::POST,
                "/ids/uuidv7?count=5000",
                Some(VEND_TOKEN),
                None,
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        all.extend(
            reply.body["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned()),
        );
    }
    let uuids: Vec<uuid::Uuid> = all.iter().map(|s| s.parse().unwrap()).collect();
    assert!(uuids.iter().all(|u| u.get_version_num() == 7));
    assert!(increasing(&uuids), "not increasing");
    assert_eq!(uuids.iter().collect::<HashSet<_>>().len(), 15_000);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_leases_a_worker_id_of_its_own_and_renews_it_with_its_holder_token() {
    let app = spawn_app().await;
    let own = worker_of(app.snowflake_ids(1).await[0]);
    let lease = app
        .request(Method::POST, "/workers/lease", Some(VEND_TOKEN), None)
        .await;
    assert_eq!(lease.status, StatusCode::OK, "{}", lease.body);
    let worker = lease.body["worker_id"].as_u64().unwrap();
    assert_ne!(worker, u64::from(own));
    assert_eq!(lease.body["layout"]["worker_bits"], 10);
    assert_eq!(lease.body["ttl_seconds"], 30.0);
    assert_eq!(lease.body["layout"]["epoch_ms"], Layout::DEFAULT.epoch_ms());
    let (not_before, not_after) = (
        lease.body["not_before_ms"].as_i64().unwrap(),
        lease.body["not_after_ms"].as_i64().unwrap(),
    );
    assert!(not_before >= 1 && not_after >= chrono::Utc::now().timestamp_millis() + 20_000);
    let renew = |holder: Value| {
        let app = &app;
        async move {
            app.request(
                Method::POST,
                &format!("/workers/{worker}/renew"),
                Some(VEND_TOKEN),
                Some(json!({ "holder": holder })),
            )
            .await
        }
    };
    let renewed = renew(lease.body["holder"].clone()).await;
    assert_eq!(renewed.status, StatusCode::OK, "{}", renewed.body);
    assert_eq!(renewed.body["not_before_ms"], not_before);
    assert!(renewed.body["not_after_ms"].as_i64().unwrap() >= not_after);
    assert!(renewed.body["expires_at"].as_str() >= lease.body["expires_at"].as_str());
    renew(json!("someone-else"))
        .await
        .assert_error(409, "lease_lost");
}

/// Ids and worker-id leases are not stored for replay: an `Idempotency-Key` is refused, so
/// that no client believes a retry gets the same ids or worker id, and the request takes
/// nothing (the next lease gets the lowest free worker id).
#[tokio::test(flavor = "multi_thread")]
async fn an_idempotency_key_on_ids_or_a_worker_lease_is_refused_and_takes_nothing() {
    let app = spawn_app().await;
    let own = worker_of(app.snowflake_ids(1).await[0]);
    let issued = app.scrape().await;
    for path in ["/ids/snowflake?count=3", "/ids/uuidv7", "/workers/lease"] {
        let (reply, _) = app.keyed_post(path, "retry-me", VEND_TOKEN).await;
        reply.assert_error(400, "invalid_request");
        let message = reply.body["message"].as_str().unwrap();
        assert!(message.contains("Idempotency-Key"), "{message}");
    }
    let snowflakes = |text: &str| {
        text.lines()
            .find(|l| l.starts_with(r#"seqvend_ids_issued_total{kind="snowflake"}"#))
            .map(str::to_owned)
    };
    assert_eq!(snowflakes(&app.scrape().await), snowflakes(&issued));
    let lease = app
        .request(Method::POST, "/workers/lease", Some(VEND_TOKEN), None)
        .await;
    assert_eq!(lease.status, StatusCode::OK, "{}", lease.body);
    assert_eq!(
        lease.body["worker_id"],
        own + 1,
        "the lowest free worker id"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_id_requests_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    let before = app.snowflake_ids(10).await;
    let issued = app.scrape().await;
    for path in [
        "/ids/snowflake?count=0",
        "/ids/snowflake?count=10001",
        "/ids/snowflake?count=abc",
        "/ids/snowflake?count=-1",
        "/ids/snowflake?cnt=5",
        "/ids/uuidv7?count=0",
        "/ids/uuidv7?count=10001",
    ] {
        let reply = app
            .request(Method::POST, path, Some(VEND_TOKEN), None)
            .await;
        reply.assert_error(400, "invalid_request");
    }
    for id in ["abc", "-1", "1.5", "+5", "99999999999999999999", "%20"] {
        let path = format!("/ids/snowflake/{id}");
        let reply = app
            .request(Method::GET, &path, Some(VEND_TOKEN), None)
            .await;
        reply.assert_error(400, "invalid_request");
    }
    for (worker, body) in [
        ("x", json!({"holder": "h"})),
        ("1024", json!({"holder": "h"})),
        ("0", json!({"holder": 5})),
        ("0", json!({})),
    ] {
        let path = format!("/workers/{worker}/renew");
        let reply = app
            .request(Method::POST, &path, Some(VEND_TOKEN), Some(body))
            .await;
        reply.assert_error(400, "invalid_request");
    }
    app.request(Method::POST, "/ids/snowflake", None, None)
        .await
        .assert_error(401, "unauthorized");
    app.request(Method::POST, "/workers/lease", None, None)
        .await
        .assert_error(401, "unauthorized");
    let metric = |text: &str| {
        text.lines()
            .find(|l| l.starts_with(r#"seqvend_ids_issued_total{kind="snowflake"}"#))
            .map(str::to_owned)
    };
    assert_eq!(metric(&app.scrape().await), metric(&issued));
    assert_increasing(&[before, app.snowflake_ids(10).await].concat());
}
