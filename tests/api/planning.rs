//! The hot path's statements are planned once per session, not on every call: re-planning
//! them was a third of a small batch's time in PostgreSQL.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::{spawn_app_on, test_settings, TestDb, ADMIN_TOKEN};

/// A hot-path function, and its call as the `n`th of a session.
type Call = (&'static str, fn(usize) -> String);

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

#[tokio::test]
async fn the_hot_path_is_planned_once_per_session() {
    let db = TestDb::shared().await;
    let app = spawn_app_on(&db, test_settings()).await;
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

    let calls: [Call; 6] = [
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
    ];
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
