//! Knowing before a sequence runs out: usage rates and forecasts from samples PostgreSQL
//! keeps, alert thresholds raised and cleared with their events, and bounded per-sequence
//! metrics.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::*;

/// Settings whose usage rounds come often enough for a test to watch them.
fn sampled_settings() -> seqvend::settings::Settings {
    let mut settings = test_settings();
    settings.watch.interval = Duration::from_millis(100);
    settings
}

fn usage(reply: &Reply) -> (f64, f64, Value) {
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let usage = &reply.body["usage"];
    (
        usage["per_second_1h"].as_f64().expect("per_second_1h"),
        usage["per_second_24h"].as_f64().expect("per_second_24h"),
        usage["exhausts_at"].clone(),
    )
}

fn assert_within_tenth(measured: f64, expected: f64, what: &str) {
    let error = (measured - expected).abs() / expected;
    eprintln!(
        "{what}: {measured:.1}/s against {expected:.1}/s vended ({:.2}% off)",
        error * 100.0
    );
    assert!(
        error <= 0.10,
        "{what}: seqvend says {measured:.1}/s, the test vended {expected:.1}/s ({:.1}% off)",
        error * 100.0
    );
}

/// Vends `per_tick` values every 50 ms for `ticks` ticks, alternating between `apps`.
async fn vend_steadily(apps: &[&TestApp], name: &str, per_tick: u32, ticks: u32) {
    let mut pace = tokio::time::interval(Duration::from_millis(50));
    for tick in 0..ticks {
        pace.tick().await;
        let app = apps[tick as usize % apps.len()];
        let reply = app.next_batch(name, per_tick).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rate_follows_a_steady_vend_across_two_instances_and_a_restart() {
    let db = TestDb::shared().await;
    let first = spawn_app_on(&db, sampled_settings()).await;
    let second = spawn_app_on(&db, sampled_settings()).await;
    first.create_ok("steady", 1, 10_000_000).await;
    let created = Instant::now();
    let (rate, _, exhausts_at) = usage(&first.get("steady").await);
    assert_eq!(rate, 0.0);
    assert_eq!(exhausts_at, Value::Null, "nothing used, nothing forecast");

    // 20 values every 50 ms: 400 a second, from both instances.
    vend_steadily(&[&first, &second], "steady", 20, 60).await;
    let expected = 1200.0 / created.elapsed().as_secs_f64();
    for app in [&first, &second] {
        let (per_1h, per_24h, exhausts_at) = usage(&app.get("steady").await);
        assert_within_tenth(per_1h, expected, "1h rate");
        assert_within_tenth(per_24h, expected, "24h rate");
        let exhausts_at: chrono::DateTime<chrono::Utc> =
            serde_json::from_value(exhausts_at).expect("a forecast");
        let days = (exhausts_at - chrono::Utc::now()).num_seconds() as f64 / 86_400.0;
        let expected_days = (10_000_000.0 - 1200.0) / expected / 86_400.0;
        assert!(
            (days - expected_days).abs() / expected_days <= 0.10,
            "runs out in {days:.3} days, expected {expected_days:.3}"
        );
    }

    // Both instances stop; a new one reads the same history from PostgreSQL.
    first.stopped().await;
    second.stopped().await;
    let third = spawn_app_on(&db, sampled_settings()).await;
    vend_steadily(&[&third], "steady", 20, 40).await;
    let expected = 2000.0 / created.elapsed().as_secs_f64();
    let (per_1h, _, _) = usage(&third.get("steady").await);
    assert_within_tenth(per_1h, expected, "1h rate after the restart");
    let listed = third
        .request(Method::GET, "/sequences", Some(VEND_TOKEN), None)
        .await;
    let in_list = &listed.body["sequences"][0];
    assert_eq!(in_list["name"], "steady");
    assert_within_tenth(
        in_list["usage"]["per_second_1h"].as_f64().unwrap(),
        expected,
        "1h rate in the list",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn each_window_starts_from_the_sample_at_its_start() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("windows", 1, 100_000_000).await;
    for _ in 0..5 {
        app.next_batch("windows", 10_000).await;
    }
    // A history as a long-running service would have kept: 36,000 values used in the last
    // hour and 864,000 in the last day, so 10/s either way. The sample at creation (50,000
    // values ago) is moved back two days; samples between the window starts and now would
    // not change a rate, so there are none.
    let client = db.connect().await;
    client
        .batch_execute(
            "UPDATE seqvend.usage_samples SET at = at - interval '2 days';
             INSERT INTO seqvend.usage_samples (sequence_id, at, used)
             SELECT id, now() - interval '1 hour 1 minute', 50000 - 36000 - 600
               FROM seqvend.sequences WHERE name = 'windows';
             INSERT INTO seqvend.usage_samples (sequence_id, at, used)
             SELECT id, now() - interval '1 day 1 minute', 0
               FROM seqvend.sequences WHERE name = 'windows';",
        )
        .await
        .unwrap();
    let (per_1h, per_24h, exhausts_at) = usage(&app.get("windows").await);
    // The hour's window starts from the sample a minute before it (the count then held
    // until the window opened): (50,000 - 13,400) / 3600 s.
    assert!((per_1h - 36_600.0 / 3600.0).abs() < 0.01, "{per_1h}");
    // The day's, likewise: 50,000 / 86,400 s.
    assert!((per_24h - 50_000.0 / 86_400.0).abs() < 0.001, "{per_24h}");
    let exhausts_at: chrono::DateTime<chrono::Utc> = serde_json::from_value(exhausts_at).unwrap();
    let expected = chrono::Utc::now()
        + chrono::Duration::seconds(((100_000_000.0 - 50_000.0) / per_24h) as i64);
    assert!(
        (exhausts_at - expected).num_seconds().abs() < 60,
        "{exhausts_at} vs {expected}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn samples_are_stored_when_the_count_changes_and_thinned_to_a_bound() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, sampled_settings()).await;
    app.create_ok("sampled", 1, 1_000_000).await;
    let client = db.connect().await;
    let samples = || async {
        let row = client
            .query_one(
                "SELECT count(*), max(used)::text FROM seqvend.usage_samples u
                   JOIN seqvend.sequences s ON s.id = u.sequence_id WHERE s.name = 'sampled'",
                &[],
            )
            .await
            .unwrap();
        (row.get::<_, i64>(0), row.get::<_, Option<String>>(1))
    };
    // When the last round was claimed, in milliseconds since the epoch.
    let rounds = || async {
        client
            .query_one(
                "SELECT (extract(epoch FROM sampled_at) * 1000)::float8 FROM seqvend.usage_rounds",
                &[],
            )
            .await
            .unwrap()
            .get::<_, f64>(0)
    };
    app.next_batch("sampled", 123).await;
    eventually(
        Duration::from_secs(10),
        "a sample of 123 values",
        || async { samples().await.1.as_deref() == Some("123") },
    )
    .await;
    // Idle: rounds go on, and no sample is added.
    let (count, _) = samples().await;
    let since = rounds().await;
    eventually(Duration::from_secs(10), "two more rounds", || async {
        rounds().await > since + 150.0
    })
    .await;
    assert_eq!(samples().await.0, count, "an idle sequence costs no rows");

    // Thirty hours of samples every 10 s, thinned.
    client
        .batch_execute(
            "INSERT INTO seqvend.usage_samples (sequence_id, at, used)
             SELECT s.id, now() - make_interval(secs => 10 * n), 123
               FROM seqvend.sequences s, generate_series(1, 10800) n
              WHERE s.name = 'sampled'
             ON CONFLICT DO NOTHING",
        )
        .await
        .unwrap();
    client
        .query_one("SELECT seqvend.thin_usage_samples()", &[])
        .await
        .unwrap();
    let count_where = |condition: &'static str| {
        let client = &client;
        async move {
            let query = format!(
                "SELECT count(*) FROM seqvend.usage_samples u
                   JOIN seqvend.sequences s ON s.id = u.sequence_id
                  WHERE s.name = 'sampled' AND {condition}"
            );
            client
                .query_one(&query, &[])
                .await
                .unwrap()
                .get::<_, i64>(0)
        }
    };
    // The last 70 minutes whole (7 minutes of margin either way for the clock), one per
    // 5 minutes of the rest of the day, and a single anchor before it.
    let recent = count_where("u.at >= now() - interval '69 minutes'").await;
    assert!(recent >= 69 * 6, "{recent} recent samples kept");
    let day =
        count_where("u.at < now() - interval '71 minutes' AND u.at > now() - interval '1 day'")
            .await;
    assert!(
        (270..=275).contains(&day),
        "{day} samples in the rest of the day"
    );
    let older = count_where("u.at <= now() - interval '1 day'").await;
    assert_eq!(older, 1, "one anchor for the day's window");
    let total = count_where("true").await;
    assert!(total <= 720, "{total} samples for one busy sequence");
}

async fn events_of(app: &TestApp, name: &str) -> Vec<(String, String, String)> {
    let reply = app
        .request(
            Method::GET,
            &format!("/sequences/{name}/events"),
            Some(VEND_TOKEN),
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"].as_str().unwrap().starts_with("alert_"))
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_owned(),
                e["actor"].as_str().unwrap().to_owned(),
                e["detail"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn raised(app: &TestApp, name: &str) -> Vec<String> {
    let reply = app.get(name).await;
    serde_json::from_value(reply.body["alerts"]["raised"].clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_alert_is_raised_once_by_two_instances_and_cleared_by_a_new_range() {
    let db = TestDb::shared().await;
    let first = spawn_app_on(&db, sampled_settings()).await;
    let second = spawn_app_on(&db, sampled_settings()).await;
    let created = first
        .create(json!({"name": "low", "min": 1, "max": 1000,
                       "alerts": {"remaining_below": 100, "days_left_below": 0}}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(
        created.body["alerts"],
        json!({"remaining_below": 100, "days_left_below": 0.0, "raised": []})
    );
    first.next_batch("low", 900).await;
    assert!(
        raised(&first, "low").await.is_empty(),
        "100 left is not below 100"
    );
    second.next_value("low").await;
    eventually(Duration::from_secs(10), "the alert is raised", || async {
        raised(&second, "low").await == ["remaining_below"]
    })
    .await;
    let raised_metric = r#"seqvend_sequence_alert{kind="remaining_below",sequence="low"} 1"#;
    for app in [&first, &second] {
        eventually(Duration::from_secs(10), raised_metric, || async {
            app.scrape().await.contains(raised_metric)
        })
        .await;
    }

    assert_eq!(
        first.add_range("low", 2001, 3000).await.status,
        StatusCode::CREATED
    );
    eventually(Duration::from_secs(10), "the alert is cleared", || async {
        raised(&first, "low").await.is_empty()
    })
    .await;
    let cleared_metric = r#"seqvend_sequence_alert{kind="remaining_below",sequence="low"} 0"#;
    eventually(Duration::from_secs(10), cleared_metric, || async {
        second.scrape().await.contains(cleared_metric)
    })
    .await;
    let events = events_of(&first, "low").await;
    let kinds: Vec<&str> = events.iter().map(|(kind, _, _)| kind.as_str()).collect();
    assert_eq!(kinds, ["alert_raised", "alert_cleared"], "{events:?}");
    assert!(events.iter().all(|(_, actor, _)| actor == "seqvend"));
    assert!(
        events[0].2.starts_with("remaining_below: 99 values left"),
        "{}",
        events[0].2
    );
    assert!(events[1].2.contains("1099 values left"), "{}", events[1].2);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_days_left_alert_follows_the_rate_and_its_threshold() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, sampled_settings()).await;
    // At hundreds a second, a million values last minutes: under 1 day.
    let created = app
        .create(json!({"name": "soon", "min": 1, "max": 1_000_000,
                       "alerts": {"remaining_below": 0, "days_left_below": 1}}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    vend_steadily(&[&app], "soon", 50, 20).await;
    eventually(
        Duration::from_secs(10),
        "days_left_below is raised",
        || async { raised(&app, "soon").await == ["days_left_below"] },
    )
    .await;
    let events = events_of(&app, "soon").await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(
        events[0].2.starts_with("days_left_below: 0.0 days left at"),
        "{}",
        events[0].2
    );
    // Turned off: cleared at the next round.
    let patched = app
        .request(
            Method::PATCH,
            "/sequences/soon",
            Some(ADMIN_TOKEN),
            Some(json!({"alerts": {"remaining_below": 0, "days_left_below": 0}})),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    assert_eq!(patched.body["alerts"]["days_left_below"], 0.0);
    eventually(Duration::from_secs(10), "the alert is cleared", || async {
        raised(&app, "soon").await.is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_thresholds_are_a_tenth_of_the_ranges_in_play_and_fourteen_days() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, sampled_settings()).await;
    let created = app.create_ok("defaults", 1, 100).await;
    assert_eq!(
        created["alerts"],
        json!({"remaining_below": 10, "days_left_below": 14.0, "raised": []})
    );
    app.add_range("defaults", 201, 300).await;
    assert_eq!(
        app.get("defaults").await.body["alerts"]["remaining_below"],
        20
    );
    // Past the first range: only the second is in play.
    app.next_batch("defaults", 100).await;
    app.next_value("defaults").await;
    assert_eq!(
        app.get("defaults").await.body["alerts"]["remaining_below"],
        10
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_alert_thresholds_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    for alerts in [
        json!({"remaining_below": -1}),
        json!({"days_left_below": -0.5}),
        json!({"days_left_below": 3651}),
        json!({"remaining_below": 9_223_372_036_854_775_808_u64}),
        json!({"days_left_below": "soon"}),
        json!({"remaining": 5}),
    ] {
        let reply = app
            .create(json!({"name": "refused", "min": 1, "max": 10, "alerts": alerts}))
            .await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{alerts}: {}",
            reply.body
        );
    }
    assert_eq!(app.get("refused").await.status, StatusCode::NOT_FOUND);
    let reply = app
        .create(json!({"name": "refused", "min": 1, "max": 10,
                       "alerts": {"days_left_below": 3651}}))
        .await;
    reply.assert_error(400, "invalid_alerts");
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap()
            .contains("days_left_below"),
        "{}",
        reply.body
    );

    app.create(
        json!({"name": "kept", "min": 1, "max": 10, "cache": {"size": 5},
                      "alerts": {"remaining_below": 3}}),
    )
    .await;
    let patch = |body: Value| {
        app.request(
            Method::PATCH,
            "/sequences/kept",
            Some(ADMIN_TOKEN),
            Some(body),
        )
    };
    patch(json!({"alerts": {"remaining_below": 9_223_372_036_854_775_808_u64}}))
        .await
        .assert_error(400, "invalid_alerts");
    patch(json!({})).await.assert_error(400, "invalid_request");
    // Objects only: serde would read a struct from an array of its fields.
    patch(json!({"alerts": [null, null]}))
        .await
        .assert_error(400, "invalid_request");
    patch(json!({"cache": [5]}))
        .await
        .assert_error(400, "invalid_request");
    let kept = app.get("kept").await.body;
    assert_eq!(kept["alerts"]["remaining_below"], 3);
    assert_eq!(kept["cache"]["size"], 5);
    // Alerts alone leave the cache policy as it was.
    let changed = patch(json!({"alerts": {"days_left_below": 30}})).await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.body);
    assert_eq!(changed.body["cache"]["size"], 5);
    assert_eq!(
        changed.body["alerts"],
        json!({"remaining_below": 1, "days_left_below": 30.0, "raised": []})
    );
}

/// Series whose metric and `sequence` label are given, one per label set.
fn series<'a>(scrape: &'a str, metric: &str) -> Vec<&'a str> {
    scrape
        .lines()
        .filter(|line| line.starts_with(&format!("{metric}{{")))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn per_sequence_series_are_bounded_to_the_most_urgent_plus_the_rest() {
    let db = TestDb::shared().await;
    let mut settings = sampled_settings();
    settings.watch.metrics_sequences = 2;
    let app = spawn_app_on(&db, settings).await;
    // "a" runs out, "b" is nearly out, the rest are untouched.
    for (name, take) in [("a", 10), ("b", 9), ("c", 0), ("d", 0), ("e", 0)] {
        app.create_ok(name, 1, 10).await;
        if take > 0 {
            app.next_batch(name, take).await;
        }
    }
    // Alerts are judged in sampling rounds only; the rounds between publish the counts fresh
    // and the alerts as last judged. So wait for both.
    let scrape = eventually_some(Duration::from_secs(10), "the bounded gauges", || async {
        let scrape = app.scrape().await;
        (scrape.contains(r#"seqvend_sequence_remaining{sequence="_other"} 30"#)
            && scrape.contains(r#"seqvend_sequence_alert{kind="remaining_below",sequence="a"} 1"#))
        .then_some(scrape)
    })
    .await;
    let remaining = series(&scrape, "seqvend_sequence_remaining");
    assert_eq!(
        remaining,
        [
            r#"seqvend_sequence_remaining{sequence="_other"} 30"#,
            r#"seqvend_sequence_remaining{sequence="a"} 0"#,
            r#"seqvend_sequence_remaining{sequence="b"} 1"#,
        ]
    );
    assert!(scrape.contains(r#"seqvend_sequence_alert{kind="remaining_below",sequence="a"} 1"#));
    assert!(scrape.contains(r#"seqvend_sequence_alert{kind="remaining_below",sequence="b"} 0"#));
    assert!(
        scrape.contains(r#"seqvend_sequence_alert{kind="remaining_below",sequence="_other"} 0"#)
    );
    assert_eq!(
        series(&scrape, "seqvend_sequence_usage_per_second").len(),
        6
    );
    // Values vended are counted under the first two sequences' names, then "_other".
    let vended = series(&scrape, "seqvend_values_vended_total");
    assert_eq!(
        vended,
        [
            r#"seqvend_values_vended_total{sequence="a"} 10"#,
            r#"seqvend_values_vended_total{sequence="b"} 9"#,
        ]
    );
    app.next_value("c").await;
    assert!(app
        .scrape()
        .await
        .contains(r#"seqvend_values_vended_total{sequence="_other"} 1"#));
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_can_be_served_on_their_own_address_only() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    let app = spawn_app_on(&db, settings).await;
    assert_ne!(app.metrics_address, app.address);
    app.create_ok("apart", 1, 10).await;
    app.next_value("apart").await;
    let scrape = app.scrape().await;
    assert!(
        scrape.contains(r#"seqvend_values_vended_total{sequence="apart"} 1"#),
        "{scrape}"
    );
    assert!(scrape.contains("seqvend_cache_held_values 0"), "{scrape}");
    let main = app
        .http
        .get(format!("{}/metrics", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(main.status(), StatusCode::NOT_FOUND);
    let other = app
        .http
        .get(format!("{}/sequences", app.metrics_address))
        .bearer_auth(VEND_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::NOT_FOUND, "only /metrics there");
}

/// The usage round reads the registry's marks a page at a time (`SEQVEND_WATCH_*`): paging
/// must neither skip nor repeat a live sequence, and never return a retired one.
#[tokio::test(flavor = "multi_thread")]
async fn the_rounds_pages_of_live_sequences_cover_each_once_in_id_order() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let names = ["paged-a", "paged-b", "paged-c", "paged-d", "paged-e"];
    for name in names {
        app.create_ok(name, 1, 1000).await;
    }
    assert_eq!(app.retire("paged-c").await.status, StatusCode::OK);
    let client = db.connect().await;
    let id_of =
        |rows: Vec<tokio_postgres::Row>| -> Vec<i32> { rows.iter().map(|r| r.get(0)).collect() };
    let live_ids = id_of(
        client
            .query(
                "SELECT id FROM seqvend.sequences WHERE name = ANY($1) AND status <> 'retired'",
                &[&names.to_vec()],
            )
            .await
            .unwrap(),
    );
    let retired = id_of(
        client
            .query(
                "SELECT id FROM seqvend.sequences WHERE name = 'paged-c'",
                &[],
            )
            .await
            .unwrap(),
    );
    assert_eq!(live_ids.len(), 4);

    let pool = seqvend::db::Registry::from_pool(sqlx::PgPool::connect(&db.url).await.unwrap());
    let mut seen: Vec<i32> = Vec::new();
    loop {
        let after = seen.last().copied().unwrap_or(i32::MIN);
        let page = seqvend::registry::live_sequence_marks(&pool, after, 2)
            .await
            .unwrap();
        assert!(page.len() <= 2, "a page holds at most its limit");
        seen.extend(page.iter().map(|s| s.id));
        if page.len() < 2 {
            break;
        }
    }
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "in id order, none twice: {seen:?}"
    );
    for id in &live_ids {
        assert!(seen.contains(id), "live sequence {id} was skipped");
    }
    assert!(!seen.contains(&retired[0]), "a retired sequence was read");
}
