//! The registry through PgBouncer in transaction mode: admin requests, the catalog, tokens,
//! worker ids and the instance cache's policy from several clients at once, on PgBouncer's
//! server pool of two connections, so that their statements share server connections (a
//! statement split across two of them, or one left behind on one, fails there). None of
//! seqvend's registry or vend connections reaches PostgreSQL except through PgBouncer.

use std::collections::HashSet;

use futures_util::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::bouncer::Pooled;
use crate::helpers::*;

const CLIENTS: usize = 6;

/// Sends a request and insists on `expected`: its body.
async fn answered(
    app: &TestApp,
    (method, path, token): (Method, &str, &str),
    body: Option<Value>,
    expected: StatusCode,
) -> Value {
    let reply = app.request(method.clone(), path, Some(token), body).await;
    assert_eq!(reply.status, expected, "{method} {path}: {}", reply.body);
    reply.body
}

/// One client's round of registry requests, each checked to have succeeded.
async fn registry_round(app: &TestApp, client: usize) {
    let (name, ok) = (format!("reg-{client}"), StatusCode::OK);
    app.create_ok(&name, 1, 100).await;
    app.add_range_ok(&name, 1001, 1100).await;
    let path = format!("/sequences/{name}");
    let cache = Some(json!({"cache": {"size": 10}}));
    answered(app, (Method::PATCH, &path, ADMIN_TOKEN), cache, ok).await;
    let read = answered(app, (Method::GET, &path, VEND_TOKEN), None, ok).await;
    assert_eq!(read["ranges"].as_array().map(Vec::len), Some(2));
    for listing in [
        "/sequences",
        &format!("{path}/events"),
        "/events",
        "/tokens",
    ] {
        answered(app, (Method::GET, listing, ADMIN_TOKEN), None, ok).await;
    }
    let family = Some(json!({ "name": format!("fam-{client}") }));
    let created = StatusCode::CREATED;
    answered(
        app,
        (Method::POST, "/families", ADMIN_TOKEN),
        family,
        created,
    )
    .await;
    let (id, _) = app.create_token(&format!("t-{client}"), &["vend:*"]).await;
    let token_path = format!("/tokens/{id}");
    answered(app, (Method::DELETE, &token_path, ADMIN_TOKEN), None, ok).await;
    let lease = answered(app, (Method::POST, "/workers/lease", VEND_TOKEN), None, ok).await;
    let renew = format!("/workers/{}/renew", lease["worker_id"]);
    let holder = Some(json!({ "holder": lease["holder"] }));
    answered(app, (Method::POST, &renew, VEND_TOKEN), holder, ok).await;
    answered(app, (Method::DELETE, &path, ADMIN_TOKEN), None, ok).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn registry_requests_from_concurrent_clients_share_pgbouncers_two_server_connections() {
    let pooled = Pooled::with_test_settings().await;
    let before = pooled.pooled_transactions().await;
    for round in 0..2 {
        let rounds =
            (0..CLIENTS).map(|client| registry_round(&pooled.app, round * CLIENTS + client));
        join_all(rounds).await;
    }
    let after = pooled.pooled_transactions().await;
    // Each round is at least a dozen registry statements, each in a transaction of its own
    // or of its request's.
    assert!(
        after >= before + 2 * (CLIENTS as u64) * 12,
        "the registry went through PgBouncer: {before} → {after} transactions"
    );
    assert!(
        pooled.pooled_backends().await.len() <= 2,
        "PgBouncer's server pool is two connections"
    );
    assert_no_direct_seqvend_connection(&pooled).await;
}

/// Every backend of the test's database that says it is seqvend's registry or vend pool
/// (`application_name` seqvend) is one of PgBouncer's server connections: only the
/// listener's and migrations' sessions (`seqvend-session`) reach PostgreSQL directly.
async fn assert_no_direct_seqvend_connection(pooled: &Pooled) {
    let client = pooled.db.connect().await;
    // Read before PgBouncer's list: a server connection seen here is still listed there.
    let rows = client
        .query(
            "SELECT pid, application_name FROM pg_stat_activity \
              WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    let through_pgbouncer: HashSet<i32> = pooled.pooled_backends().await.into_iter().collect();
    let direct: Vec<(i32, String)> = rows
        .iter()
        .map(|row| {
            (
                row.get(0),
                row.get::<_, Option<String>>(1).unwrap_or_default(),
            )
        })
        .filter(|(pid, _)| !through_pgbouncer.contains(pid))
        .collect();
    assert!(
        direct.iter().all(|(_, name)| name != "seqvend"),
        "seqvend's pools reached PostgreSQL without PgBouncer: {direct:?}"
    );
    assert!(
        direct.iter().any(|(_, name)| name == "seqvend-session"),
        "the listener's session is direct: {direct:?}"
    );
}
