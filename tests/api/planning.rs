//! The hot path's statements are planned once per session, not on every call: re-planning
//! them was a third of a small batch's time in PostgreSQL.

use reqwest::{Method, StatusCode};
use serde_json::json;

use seqvend::db::VEND_PLANNER_SETTINGS;
use seqvend::settings::Pooler;
use tokio_postgres::types::Type;

use crate::helpers::{spawn_app_on, test_settings, TestApp, TestDb, ADMIN_TOKEN};

/// A hot-path function, and its call as the `n`th of a session.
type Call = (&'static str, fn(usize) -> String);

/// A call, and the settings of the session it runs in.
type CallIn<'a> = (&'static str, &'a [(&'a str, &'a str)], fn(usize) -> String);

/// Calls of each hot-path function before counting: PostgreSQL's plan cache decides between
/// custom and generic plans after five.
const WARM_UP: usize = 7;

/// How many plans PostgreSQL made for the last of `WARM_UP + 1` runs of `call` in one
/// session (psql's own statement included), inside a transaction that is rolled back.
fn plans_of_one_call(db: &TestDb, call: impl Fn(usize) -> String) -> usize {
    let mut script = String::from("BEGIN;\n");
    for n in 0..WARM_UP {
        script += &format!("{};\n", call(n));
    }
    script += "SET LOCAL log_planner_stats = on;\nSET LOCAL client_min_messages = log;\n";
    script += &format!("{};\nROLLBACK;\n", call(WARM_UP));
    let run = db.psql().args(["-c", &script]).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{script}\n{stderr}");
    stderr.matches("PLANNER STATISTICS").count()
}

/// Each hot-path function, called as the `n`th of a session on the sequence `labels` and the
/// family `orders`.
fn hot_path_calls() -> [Call; 6] {
    [
        ("vend", |_| {
            "SELECT * FROM seqvend.vend('{labels}', '{1}')".into()
        }),
        // The general statement, called directly: `vend` hands it a one-name batch only when
        // the common case does not hold, and a one-name filter on an array is what made
        // custom plans look cheaper.
        ("vend_batch", |_| {
            "SELECT * FROM seqvend.vend_batch('{labels}', '{1}')".into()
        }),
        ("vend_keyed", |n| {
            format!(
                "SELECT * FROM seqvend.vend_keyed('{{labels}}', '{{1}}', '{{owner}}', \
                 '{{key-{n}}}', '{{request}}', interval '1 hour')"
            )
        }),
        ("draw_counters", |n| {
            format!("SELECT * FROM seqvend.draw_counters('{{orders}}', '{{key-{n}}}', '{{1}}')")
        }),
        ("lease", |_| {
            "SELECT * FROM seqvend.lease('labels', 10, 'client', 'client', interval '1 minute')"
                .into()
        }),
        ("lease_keyed", |n| {
            format!(
                "SELECT * FROM seqvend.lease_keyed('labels', 10, 'client', 'client', \
                 interval '1 minute', 'owner', 'lease-{n}', 'request', interval '1 hour')"
            )
        }),
    ]
}

/// A seqvend on `db` with what `hot_path_calls` draw from: the sequence `labels` and the
/// family `orders`.
async fn app_with_labels_and_orders(db: &TestDb) -> TestApp {
    let app = spawn_app_on(db, test_settings()).await;
    app.create_ok("labels", 1, 1_000_000).await;
    let family = app
        .request(
            Method::POST,
            "/families",
            Some(ADMIN_TOKEN),
            Some(json!({"name": "orders"})),
        )
        .await;
    assert_eq!(family.status, StatusCode::CREATED, "{}", family.body);
    app
}

#[tokio::test]
async fn the_hot_path_is_planned_once_per_session() {
    let db = TestDb::shared().await;
    let _app = app_with_labels_and_orders(&db).await;

    let calls = hot_path_calls();
    let replanned: Vec<String> = calls
        .iter()
        .map(|(name, call)| (name, plans_of_one_call(&db, call)))
        // psql's own statement is planned each time (the simple query protocol).
        .filter(|(_, plans)| *plans != 1)
        .map(|(name, plans)| format!("{name}: {plans} plans"))
        .collect();
    assert!(
        replanned.is_empty(),
        "statements planned on every call: {replanned:?}"
    );
}

/// Sequential scans of the catalogs that grow with the number of sequences, in the
/// transaction so far.
const CATALOG_SCANS: &str = "SELECT coalesce(sum(seq_scan), 0) FROM pg_stat_xact_all_tables \
     WHERE relid IN ('pg_catalog.pg_sequence'::regclass, 'pg_catalog.pg_class'::regclass)";

/// The last of `WARM_UP + 1` runs of `call` in one session with `session` settings, when 1,000
/// sequences were created after the others, inside a transaction that is rolled back: its
/// sequential scans of pg_sequence and pg_class, and whether a statement of it was compiled
/// with JIT.
fn catalog_scans_after_growth(
    db: &TestDb,
    session: &[(&str, &str)],
    call: impl Fn(usize) -> String,
) -> (String, bool) {
    let mut script = String::from("BEGIN;\n");
    for (name, value) in session {
        script += &format!("SET LOCAL {name} = {value};\n");
    }
    for n in 0..WARM_UP {
        script += &format!("{};\n", call(n));
    }
    // Not temporary sequences: the first one makes a schema that changes the search path,
    // and PostgreSQL plans again on its own.
    script += "DO $$ BEGIN FOR i IN 1 .. 1000 LOOP \
               EXECUTE format('CREATE SEQUENCE public.added_%s', i); END LOOP; END $$;\n";
    script += &format!("SELECT set_config('probe.scans', ({CATALOG_SCANS})::text, true);\n");
    // Each statement's plan, nested ones too, as EXPLAIN ANALYZE prints it: with a "JIT:"
    // section when it was compiled.
    script += "LOAD 'auto_explain';\n\
               SET LOCAL auto_explain.log_min_duration = 0;\n\
               SET LOCAL auto_explain.log_nested_statements = on;\n\
               SET LOCAL auto_explain.log_analyze = on;\n\
               SET LOCAL client_min_messages = log;\n";
    script += &format!("{};\n", call(WARM_UP));
    script +=
        &format!("SELECT ({CATALOG_SCANS}) - current_setting('probe.scans')::bigint;\nROLLBACK;\n");
    let run = db.psql().args(["-c", &script]).output().unwrap();
    assert!(
        run.status.success(),
        "{script}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    let scans = stdout.lines().last().unwrap_or_default().to_string();
    (scans, String::from_utf8_lossy(&run.stderr).contains("JIT:"))
}

#[tokio::test]
async fn plans_made_with_few_sequences_stay_lookups_as_sequences_are_added() {
    // PL/pgSQL keeps a function's plans for the session. A plan made while the database had a
    // few sequences must not become a scan of a catalog that holds thousands: every vend,
    // lease and draw looks its sequence up (in the vend pool's sessions, with their planner
    // settings), and the watch rounds read every live sequence's position with
    // `range_last_value` (in the registry's sessions, without them).
    let db = TestDb::shared().await;
    let _app = app_with_labels_and_orders(&db).await;

    let vend_session: &[(&str, &str)] = &VEND_PLANNER_SETTINGS;
    let mut calls: Vec<CallIn> = hot_path_calls()
        .into_iter()
        .map(|(name, call)| (name, vend_session, call))
        .collect();
    // More than 64 values: a block claimed with one setval, after reading the sequence's own
    // row with EXECUTE.
    calls.push(("lease of a block", vend_session, |_| {
        "SELECT * FROM seqvend.lease('labels', 1000, 'client', 'client', interval '1 minute')"
            .into()
    }));
    calls.push(("range_last_value", &[], |_| {
        "SELECT seqvend.range_last_value(r.pg_sequence, m.high_water, 1) \
         FROM seqvend.ranges r JOIN seqvend.range_marks m ON m.range_id = r.id"
            .into()
    }));
    let mut scanning = Vec::new();
    let mut compiled = Vec::new();
    for (name, session, call) in calls {
        let (scans, jit) = catalog_scans_after_growth(&db, session, call);
        if scans != "0" {
            scanning.push(format!("{name}: {scans} scans"));
        }
        if jit {
            compiled.push(name);
        }
    }
    assert!(
        scanning.is_empty(),
        "pg_sequence or pg_class scanned whole after 1,000 sequences were added: {scanning:?}"
    );
    // A statement that can only scan (a sequence's own row, read with EXECUTE) costs more than
    // jit_above_cost once sequential scans are off, and compiling it took 5 ms.
    assert!(compiled.is_empty(), "compiled with JIT: {compiled:?}");
}

#[tokio::test]
async fn the_vend_pools_sessions_have_its_planner_settings() {
    let db = TestDb::shared().await;
    for pooler in [Pooler::None, Pooler::Transaction] {
        let mut settings = test_settings().database;
        settings.pooler = pooler;
        let pool = seqvend::db::vend_pool(&db.url, &settings).unwrap();
        let connection = pool.get().await.unwrap();
        let names: Vec<&str> = VEND_PLANNER_SETTINGS
            .iter()
            .map(|(name, _)| *name)
            .collect();
        let rows = connection
            .run_statement(
                "SELECT name, setting FROM pg_settings WHERE name = ANY ($1) ORDER BY name",
                &[(&names, Type::TEXT_ARRAY)],
            )
            .await
            .unwrap();
        let mut found: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let mut expected: Vec<(String, String)> = VEND_PLANNER_SETTINGS
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        found.sort();
        expected.sort();
        assert_eq!(found, expected, "the vend pool's sessions, {pooler:?}");
    }
}
