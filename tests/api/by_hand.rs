//! What a DBA or another application does to a range's PostgreSQL sequence by the normal
//! PostgreSQL means, and what seqvend does about it: it draws with nextval, so nextval
//! elsewhere and restarts forward interleave; it keeps a high-water mark, so a sequence moved
//! back never hands a value out twice; it checks the registry's bounds, so widening the
//! sequence's own never leaks values outside the range.

use std::collections::HashSet;
use std::time::Duration;

use crate::helpers::*;

/// The range's PostgreSQL sequence as the API shows it.
async fn pg_sequence(app: &TestApp, name: &str) -> String {
    let reply = app.get(name).await;
    reply.body["ranges"][0]["pg_sequence"]
        .as_str()
        .expect("a range names its sequence")
        .to_owned()
}

/// Runs SQL through psql and returns what it printed, one line per row.
async fn psql(db: &TestDb, sql: String) -> Vec<String> {
    let mut psql = db.psql();
    psql.args(["-c", &sql]);
    let output = tokio::task::spawn_blocking(move || psql.output().expect("psql runs"))
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "psql failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

async fn rewinds_recorded(db: &TestDb, name: &str) -> Vec<String> {
    db.connect()
        .await
        .query(
            "SELECT e.detail FROM seqvend.events e JOIN seqvend.sequences s ON s.id = e.sequence_id \
             WHERE s.name = $1 AND e.kind = 'rewind' ORDER BY e.id",
            &[&name],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_forward_skips_ahead_and_nextval_elsewhere_interleaves() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("legacy", 1, 1_000_000).await;
    let sequence = pg_sequence(&app, "legacy").await;
    assert_eq!(values_of(&app.next_batch("legacy", 3).await), [1, 2, 3]);

    // A legacy system used the numbers below 5000.
    psql(&db, format!("ALTER SEQUENCE {sequence} RESTART WITH 5000")).await;
    let range = &app.get("legacy").await.body["ranges"][0];
    assert_eq!(
        (range["next"].as_i64(), range["remaining"].as_i64()),
        (Some(5000), Some(995_001))
    );
    assert_eq!(values_of(&app.next_batch("legacy", 2).await), [5000, 5001]);

    // Another application draws from the same sequence the PostgreSQL way.
    let theirs = psql(
        &db,
        format!("SELECT nextval('{sequence}') FROM generate_series(1, 3)"),
    )
    .await;
    assert_eq!(theirs, ["5002", "5003", "5004"]);
    assert_eq!(app.next_value("legacy").await, 5005);
    assert!(rewinds_recorded(&db, "legacy").await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sequence_moved_back_never_hands_out_a_value_twice() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let rewinds = [
        ("setval-unset", "SELECT setval('{seq}', 1, false)"),
        ("setval-lower", "SELECT setval('{seq}', 7)"),
        ("restart-lower", "ALTER SEQUENCE {seq} RESTART WITH 2"),
        ("restart", "ALTER SEQUENCE {seq} RESTART"),
    ];
    for (name, rewind) in rewinds {
        app.create_ok(name, 1, 1000).await;
        let sequence = pg_sequence(&app, name).await;
        let before = values_of(&app.next_batch(name, 20).await);
        assert_eq!(before, (1..=20).collect::<Vec<_>>(), "{name}");

        psql(&db, rewind.replace("{seq}", &sequence)).await;
        let range = &app.get(name).await.body["ranges"][0];
        assert_eq!(
            range["next"], 21,
            "{name}: shown past the mark before the repair"
        );
        let mut after = values_of(&app.next_batch(name, 20).await);
        after.push(app.next_value(name).await);
        assert_eq!(after, (21..=41).collect::<Vec<_>>(), "{name}: {rewind}");

        let recorded = rewinds_recorded(&db, name).await;
        assert_eq!(recorded.len(), 1, "{name}: one rewind event");
        assert!(
            recorded[0].contains("moved back") && recorded[0].contains(&sequence),
            "{name}: {recorded:?}"
        );
    }
    let metrics = app.scrape().await;
    assert!(
        metrics.contains("seqvend_sequence_repairs_total{sequence=\"restart\"} 1"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sequence_moved_back_in_the_middle_of_a_large_batch_is_caught() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("busy", 1, 10_000_000).await;
    let sequence = pg_sequence(&app, "busy").await;
    // Values handed out before any rewind: whatever the race below, the last rewind comes
    // after them, and the last batch (or one before it) must find it.
    let mut seen = values_of(&app.next_batch("busy", 2000).await);
    // Rewinds race with batches: each batch either sees one before it, during it (the
    // batch's own check) or after it; none may hand a value out twice.
    let rewinder = {
        let db_url = db.url.clone();
        let sequence = sequence.clone();
        tokio::spawn(async move {
            let (client, connection) = tokio_postgres::connect(&db_url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            for _ in 0..40 {
                client
                    .query_one("SELECT setval($1::text::regclass, 1, false)", &[&sequence])
                    .await
                    .unwrap();
                tokio::task::yield_now().await;
            }
        })
    };
    while !rewinder.is_finished() {
        seen.extend(values_of(&app.next_batch("busy", 2000).await));
    }
    rewinder.await.unwrap();
    seen.extend(values_of(&app.next_batch("busy", 2000).await));
    assert_unique(&seen);
    assert!(increasing(&seen), "values keep increasing");
    assert!(!rewinds_recorded(&db, "busy").await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn bounds_altered_on_the_sequence_never_let_a_value_out_of_the_range() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;

    // Widened above the range's end: the values past it are not the range's.
    app.create_ok("wide", 1, 1000).await;
    let wide = pg_sequence(&app, "wide").await;
    assert_eq!(app.next_value("wide").await, 1);
    psql(&db, format!("ALTER SEQUENCE {wide} MAXVALUE 100000")).await;
    psql(&db, format!("SELECT setval('{wide}', 997)")).await;
    let reply = app.next_batch("wide", 10).await;
    assert_eq!(values_of(&reply), [998, 999, 1000]);
    assert_eq!(reply.body["exhausted"], true);
    app.next("wide")
        .await
        .assert_error(409, "sequence_exhausted");

    // Restarted below the range's start before any value went out: it starts at its start.
    app.create_ok("low", 100, 200).await;
    let low = pg_sequence(&app, "low").await;
    psql(
        &db,
        format!("ALTER SEQUENCE {low} MINVALUE 1 RESTART WITH 5"),
    )
    .await;
    assert_eq!(values_of(&app.next_batch("low", 2).await), [100, 101]);
    let recorded = rewinds_recorded(&db, "low").await;
    assert!(recorded[0].contains("outside its range"), "{recorded:?}");

    // Narrowed below the range's end: the range ends where its sequence does, and the
    // sequence rolls over to its next range with no value lost from the batch.
    app.create_ok("narrow", 1, 100).await;
    app.add_range_ok("narrow", 1001, 1100).await;
    let narrow = pg_sequence(&app, "narrow").await;
    psql(&db, format!("ALTER SEQUENCE {narrow} MAXVALUE 5")).await;
    assert_eq!(
        values_of(&app.next_batch("narrow", 8).await),
        [1, 2, 3, 4, 5, 1001, 1002, 1003]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sequence_dropped_or_reversed_by_hand_fails_alone_with_a_clear_error() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("reversed", 1, 1000).await;
    app.create_ok("dropped", 2000, 3000).await;
    app.create_ok("fine", 5000, 6000).await;
    let reversed = pg_sequence(&app, "reversed").await;
    let dropped = pg_sequence(&app, "dropped").await;
    psql(&db, format!("ALTER SEQUENCE {reversed} INCREMENT BY -1")).await;
    psql(&db, format!("DROP SEQUENCE {dropped}")).await;

    let reply = app.next("reversed").await;
    reply.assert_error(500, "sequence_failed");
    let message = reply.body["message"].as_str().unwrap();
    assert!(message.contains("INCREMENT BY"), "{message}");
    app.next("dropped")
        .await
        .assert_error(500, "sequence_failed");
    assert_eq!(app.next_value("fine").await, 5000);
    assert_eq!(app.get("dropped").await.status, 200, "reading still works");
    let metrics = app.scrape().await;
    assert!(
        metrics.contains("seqvend_sequence_failures_total{sequence=\"reversed\"} 1"),
        "{metrics}"
    );
}

/// psql sessions calling nextval on a range's sequence while two seqvend instances vend
/// from it: every value, whoever drew it, is unique and inside the range.
#[tokio::test(flavor = "multi_thread")]
async fn nextval_from_psql_beside_two_instances_never_shares_a_value() {
    const MAX: i64 = 1_000_000;
    let db = TestDb::shared().await;
    let first = spawn_app_on(&db, test_settings()).await;
    let second = spawn_app_on(&db, test_settings()).await;
    first.create_ok("shared", 1, MAX).await;
    let sequence = pg_sequence(&first, "shared").await;

    let script = format!("SELECT nextval('{sequence}');\n").repeat(2000);
    let sessions: Vec<_> = (0..4)
        .map(|_| {
            // One -c would run as one transaction; -f runs each statement as its own, as
            // separate callers would.
            let file = scratch_dir("nextval").with_extension("sql");
            std::fs::write(&file, &script).unwrap();
            let mut psql = db.psql();
            psql.arg("-f").arg(&file);
            tokio::task::spawn_blocking(move || {
                let output = psql.output().expect("psql runs");
                let _ = std::fs::remove_file(&file);
                assert!(output.status.success());
                String::from_utf8(output.stdout)
                    .unwrap()
                    .lines()
                    .map(|line| line.parse::<i64>().unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let vends: Vec<_> = [first, second]
        .into_iter()
        .flat_map(|app| {
            let app = std::sync::Arc::new(app);
            (0..4).map(move |client| {
                let app = app.clone();
                tokio::spawn(async move {
                    let mut values = Vec::new();
                    for i in 0..150 {
                        if (i + client) % 3 == 0 {
                            values.push(app.next_value("shared").await);
                        } else {
                            values.extend(values_of(&app.next_batch("shared", 40).await));
                        }
                    }
                    values
                })
            })
        })
        .collect();

    let mut all = Vec::new();
    for session in sessions {
        let drawn = session.await.unwrap();
        assert_eq!(drawn.len(), 2000);
        all.extend(drawn);
    }
    for vend in vends {
        all.extend(vend.await.unwrap());
    }
    let unique: HashSet<i64> = assert_unique(&all);
    assert!(unique.len() > 8000 + 8 * 100, "{} values", unique.len());
    assert!(all.iter().all(|v| (1..=MAX).contains(v)));
}

#[tokio::test(flavor = "multi_thread")]
async fn alter_cache_on_the_sequence_by_hand_costs_gaps_never_duplicates() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("cached", 1, 1000).await;
    let sequence = pg_sequence(&app, "cached").await;
    assert_eq!(values_of(&app.next_batch("cached", 3).await), [1, 2, 3]);
    psql(&db, format!("ALTER SEQUENCE {sequence} CACHE 20")).await;
    let mut seen = values_of(&app.next_batch("cached", 30).await);
    let theirs = psql(&db, format!("SELECT nextval('{sequence}')")).await;
    seen.extend(theirs.iter().map(|v| v.parse::<i64>().unwrap()));
    seen.extend(values_of(&app.next_batch("cached", 30).await));
    assert_eq!(assert_unique(&seen).len(), 61);
    assert!(seen.iter().all(|v| (4..=1000).contains(v)));
    let reply = app.get("cached").await;
    assert_eq!(reply.body["ranges"][0]["status"], "active");
}

/// The usage rounds read in full only the sequences whose registry rows or marks moved, and
/// the rest in turn, each at least once per sweep: a sequence drawn only by another
/// application's `nextval` shows in the gauges within a sweep.
#[tokio::test(flavor = "multi_thread")]
async fn nextval_elsewhere_shows_in_the_gauges_within_a_sweep() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.watch.interval = Duration::from_millis(100);
    settings.watch.sweep = Duration::from_millis(500);
    let app = spawn_app_on(&db, settings).await;
    app.create_ok("elsewhere", 1, 1000).await;
    let sequence = pg_sequence(&app, "elsewhere").await;
    let gauge = |left: u32| format!(r#"seqvend_sequence_remaining{{sequence="elsewhere"}} {left}"#);
    let full = gauge(1000);
    eventually(Duration::from_secs(10), &full, || async {
        app.scrape().await.contains(&full)
    })
    .await;

    psql(
        &db,
        format!("SELECT nextval('{sequence}') FROM generate_series(1, 100)"),
    )
    .await;
    let drawn = gauge(900);
    eventually(Duration::from_secs(10), &drawn, || async {
        app.scrape().await.contains(&drawn)
    })
    .await;
}
