//! One tenant's tokens never reach another's: who owns an idempotency key across a token
//! rotation, who may claim a namespace (a carrier account included), who may take values
//! and worker ids in bulk, and what a scoped token's pages of names show.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::process::{create, Seqvend};
use crate::helpers::*;

/// A `seqvend serve` process on `db` whose vend tokens are `vend_tokens` (a rotation).
async fn instance(db: &TestDb, vend_tokens: &str) -> Seqvend {
    let env = [
        ("SEQVEND_VEND_TOKENS", vend_tokens),
        ("SEQVEND_VEND_DEADLINE_MS", "30000"),
    ];
    Seqvend::start(&db.url, &env).await
}

/// A keyed vend of 2 values from `instance`; the reply and whether it says it is a replay.
async fn keyed_next(instance: &Seqvend, token: &str, key: &str) -> (Reply, bool) {
    let response = reqwest::Client::new()
        .post(format!(
            "{}/sequences/labels/next?count=2",
            instance.address()
        ))
        .bearer_auth(token)
        .header("Idempotency-Key", key)
        .send()
        .await
        .unwrap();
    let replayed = response.headers().contains_key("idempotent-replayed");
    (Reply::from(response).await, replayed)
}

#[tokio::test(flavor = "multi_thread")]
async fn two_bootstrap_tokens_in_a_rotation_never_share_an_idempotency_key_and_one_token_keeps_its_own(
) {
    let db = TestDb::shared().await;
    // Half-way through a rotation: one instance knows both secrets, the other only the new.
    let rotating = instance(&db, "old-vend-secret,new-vend-secret").await;
    let rotated = instance(&db, "new-vend-secret").await;
    create(&rotated.address(), "labels", &[(1, 1000)]).await;

    // Two clients, two secrets, one key: two answers, each its own values.
    let (old_client, _) = keyed_next(&rotating, "old-vend-secret", "order-1").await;
    assert_eq!(old_client.status, StatusCode::OK, "{}", old_client.body);
    let (new_client, replayed) = keyed_next(&rotated, "new-vend-secret", "order-1").await;
    assert_eq!(new_client.status, StatusCode::OK, "{}", new_client.body);
    assert!(
        !replayed,
        "another token's answer was replayed: {}",
        new_client.body
    );
    assert_ne!(values_of(&old_client), values_of(&new_client));

    // One secret is one caller on either instance, wherever it stands in the list.
    let (first, _) = keyed_next(&rotating, "new-vend-secret", "order-2").await;
    let (again, replayed) = keyed_next(&rotated, "new-vend-secret", "order-2").await;
    assert!(replayed, "the same token's retry was not a replay");
    assert_eq!(first.body, again.body);
}

/// A run-time token with `scopes`, made by the bootstrap admin; its secret.
async fn token(app: &TestApp, name: &str, scopes: &[&str]) -> String {
    app.create_token(name, scopes).await.1
}

async fn create_as(app: &TestApp, secret: &str, body: Value) -> Reply {
    app.request(Method::POST, "/sequences", Some(secret), Some(body))
        .await
}

fn ups(account: &str) -> Value {
    json!({"kind": "ups_1z", "account": account, "service": "03"})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_admin_cannot_put_a_sequence_into_another_tenants_namespace_or_carrier_account() {
    let app = spawn_app().await;
    let tenant_a = token(&app, "tenant-a", &["admin:tenanta-*"]).await;
    let attempts = [
        json!({"name": "tenanta-squat", "namespace": "tenantb-ns", "min": 1, "max": 100}),
        json!({"name": "tenanta-ups", "min": 5756712, "max": 9999999, "format": ups("5R8939")}),
    ];
    for body in attempts {
        let reply = create_as(&app, &tenant_a, body.clone()).await;
        reply.assert_error(403, "forbidden");
        assert!(
            reply.body["message"]
                .as_str()
                .unwrap()
                .contains("namespace:"),
            "the refusal names the namespace scope needed: {}",
            reply.body
        );
        let name = body["name"].as_str().unwrap();
        app.get(name).await.assert_error(404, "not_found");
    }
    // Its own names, in its own namespaces, it may create.
    for body in [
        json!({"name": "tenanta-1", "min": 1, "max": 100}),
        json!({"name": "tenanta-2", "namespace": "tenanta-shared", "min": 1, "max": 100}),
    ] {
        let reply = create_as(&app, &tenant_a, body).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_namespace_scope_alone_cannot_take_a_name_another_tenants_scopes_cover() {
    let app = spawn_app().await;
    let tenant_b = token(&app, "tenant-b", &["admin:namespace:tenantb-ns"]).await;
    let reply = create_as(
        &app,
        &tenant_b,
        json!({"name": "tenanta-labels", "namespace": "tenantb-ns", "min": 1, "max": 100}),
    )
    .await;
    reply.assert_error(403, "forbidden");
    app.get("tenanta-labels")
        .await
        .assert_error(404, "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_carrier_account_is_claimed_with_a_namespace_scope_on_its_number_space() {
    let app = spawn_app().await;
    let owner = token(
        &app,
        "ups-owner",
        &["admin:tenanta-*", "admin:namespace:ups_1z.5R8939.*"],
    )
    .await;
    let reply = create_as(
        &app,
        &owner,
        json!({"name": "tenanta-ups", "min": 5756712, "max": 7000000, "format": ups("5R8939")}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let reply = create_as(
        &app,
        &owner,
        json!({"name": "tenanta-ups-b", "min": 5756712, "max": 7000000, "format": ups("5R8940")}),
    )
    .await;
    reply.assert_error(403, "forbidden");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_scope_spelt_like_a_carrier_account_claims_none_of_it() {
    let app = spawn_app().await;
    let u_names = token(&app, "u-names", &["admin:u*"]).await;
    for body in [
        json!({"name": "u-labels", "min": 5756712, "max": 7000000, "format": ups("5R8939")}),
        // A plain sequence's namespace is its name: here, UPS account 5R8939's space.
        json!({"name": "ups_1z.5R8939.03", "min": 5756712, "max": 7000000}),
    ] {
        create_as(&app, &u_names, body.clone())
            .await
            .assert_error(403, "forbidden");
        let name = body["name"].as_str().unwrap();
        app.get(name).await.assert_error(404, "not_found");
    }
    // A UPS sequence the operator made for it: the name is covered, the account is not.
    let made = app
        .create(json!({"name": "u-ops", "min": 5756712, "max": 6000000, "format": ups("5R8939")}))
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    app.request(
        Method::POST,
        "/sequences/u-ops/ranges",
        Some(&u_names),
        Some(json!({"min": 6000001, "max": 7000000})),
    )
    .await
    .assert_error(403, "forbidden");
    // With the account's namespace scope, it may.
    let owner = token(
        &app,
        "u-owner",
        &["admin:u*", "admin:namespace:ups_1z.5R8939.*"],
    )
    .await;
    let reply = create_as(
        &app,
        &owner,
        json!({"name": "u-labels", "min": 7000001, "max": 8000000, "format": ups("5R8939")}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn adding_a_range_needs_admin_over_the_sequences_namespace_as_well_as_its_name() {
    let app = spawn_app().await;
    // Made by the operator for tenant A, in tenant B's namespace.
    let made = app
        .create(json!({"name": "tenanta-shared", "namespace": "tenantb-ns", "min": 1, "max": 10}))
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let tenant_a = token(&app, "tenant-a", &["admin:tenanta-*"]).await;
    let reply = app
        .request(
            Method::POST,
            "/sequences/tenanta-shared/ranges",
            Some(&tenant_a),
            Some(json!({"min": 100, "max": 200})),
        )
        .await;
    reply.assert_error(403, "forbidden");
    let ranges = app.get("tenanta-shared").await.body["ranges"].clone();
    assert_eq!(ranges.as_array().unwrap().len(), 1, "{ranges}");
    // Over its own namespace, it may.
    app.create_ok("tenanta-own", 1, 10).await;
    let reply = app
        .request(
            Method::POST,
            "/sequences/tenanta-own/ranges",
            Some(&tenant_a),
            Some(json!({"min": 100, "max": 200})),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
}

/// Hammers `POST /sequences/<name>/ranges` as `secret` until an answer other than 404 comes
/// back; every answer's status.
async fn add_range_until_found(address: String, name: String, secret: String) -> Vec<u16> {
    let http = reqwest::Client::new();
    let mut statuses = Vec::new();
    loop {
        let status = http
            .post(format!("{address}/sequences/{name}/ranges"))
            .bearer_auth(&secret)
            .json(&json!({"min": 1, "max": 10}))
            .send()
            .await
            .expect("request sent")
            .status()
            .as_u16();
        statuses.push(status);
        if status != 404 {
            return statuses;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_range_added_as_its_sequence_is_created_still_needs_the_namespace_and_fits_the_format() {
    let app = spawn_app().await;
    // Admin over the names, not over the UPS account their sequences are created in.
    let squatter = token(&app, "squatter", &["admin:race-*"]).await;
    for round in 0..25 {
        let name = format!("race-{round}");
        let hammers: Vec<_> = (0..4)
            .map(|_| {
                tokio::spawn(add_range_until_found(
                    app.address.clone(),
                    name.clone(),
                    squatter.clone(),
                ))
            })
            .collect();
        let min = 5_000_000 + round * 1_000;
        let made = app
            .create(json!({"name": name, "min": min, "max": min + 999, "format": ups("5R8939")}))
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
        for hammer in hammers {
            let statuses = hammer.await.unwrap();
            // Before the sequence exists: 404; once it does: 403 (no scope on its namespace).
            // Never a range outside the format, in an account the token does not hold.
            assert_eq!(
                statuses.last(),
                Some(&403),
                "round {round}: answers {statuses:?} (a 201, or a 409 for another hammer's \
                 range: a range went in unchecked)"
            );
        }
        let ranges = app.get(&name).await.body["ranges"].clone();
        assert_eq!(
            ranges.as_array().unwrap().len(),
            1,
            "round {round}: {ranges}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_admin_creates_only_families_its_names_cover() {
    let app = spawn_app().await;
    let tenant_a = token(
        &app,
        "tenant-a",
        &["admin:tenanta-*", "admin:namespace:tenantb-ns"],
    )
    .await;
    let reply = app
        .request(
            Method::POST,
            "/families",
            Some(&tenant_a),
            Some(json!({"name": "tenantb-orders"})),
        )
        .await;
    reply.assert_error(403, "forbidden");
    let reply = app
        .request(
            Method::POST,
            "/families",
            Some(&tenant_a),
            Some(json!({"name": "tenanta-orders"})),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_vend_scope_neither_leases_values_nor_worker_ids_and_a_lease_scope_does() {
    let app = spawn_app().await;
    app.create_ok("orders-1", 1, 1_000_000).await;
    let vend_only = token(&app, "vend-only", &["vend:*"]).await;

    let path = "/sequences/orders-1/leases?count=100000";
    let reply = app
        .request(Method::POST, path, Some(&vend_only), None)
        .await;
    reply.assert_error(403, "forbidden");
    assert!(
        reply.body["message"].as_str().unwrap().contains("lease:"),
        "{}",
        reply.body
    );
    let reply = app
        .request(Method::POST, "/workers/lease", Some(&vend_only), None)
        .await;
    reply.assert_error(403, "forbidden");
    let reply = app
        .request(
            Method::POST,
            "/workers/0/renew",
            Some(&vend_only),
            Some(json!({"holder": "x"})),
        )
        .await;
    reply.assert_error(403, "forbidden");
    assert_eq!(
        app.next_value("orders-1").await,
        1,
        "nothing was drawn by a refused lease"
    );

    // A lease scope leases (and vends), and the bootstrap vend token keeps leasing.
    let leaser = token(&app, "leaser", &["lease:orders-*"]).await;
    let reply = app
        .request(
            Method::POST,
            "/sequences/orders-1/leases?count=10",
            Some(&leaser),
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let reply = app
        .request(
            Method::POST,
            "/sequences/orders-1/next",
            Some(&leaser),
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let reply = app
        .request(Method::POST, "/workers/lease", Some(&leaser), None)
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let reply = app
        .request(
            Method::POST,
            "/sequences/orders-1/leases?count=10",
            Some(VEND_TOKEN),
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

/// Every page of `list` (`/sequences` or `/families`) for `secret`, one name a page: the names
/// listed, and every `next` given.
async fn walk(app: &TestApp, list: &str, secret: &str) -> (Vec<String>, Vec<String>) {
    let (mut names, mut cursors) = (Vec::new(), Vec::new());
    let mut after = String::new();
    loop {
        let path = format!("/{list}?limit=1{after}");
        let page = app.request(Method::GET, &path, Some(secret), None).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        for item in page.body[list].as_array().unwrap() {
            names.push(item["name"].as_str().unwrap().to_owned());
        }
        let Some(next) = page.body["next"].as_str() else {
            return (names, cursors);
        };
        cursors.push(next.to_owned());
        after = format!("&after={next}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scoped_tokens_pages_name_nothing_outside_its_scope() {
    let app = spawn_app().await;
    for name in ["a-other", "b-1", "b-2", "c-other"] {
        app.create_ok(name, 1, 1000).await;
        app.create_family_ok(json!({"name": name})).await;
    }
    let secret = token(&app, "tenant-b", &["read:b-*"]).await;
    for list in ["sequences", "families"] {
        let (names, cursors) = walk(&app, list, &secret).await;
        assert_eq!(names, ["b-1", "b-2"], "{list}");
        // Each page's `next` is a name the token may read (a hidden one would let it walk
        // every other tenant's names, a page at a time).
        assert!(
            cursors.iter().all(|next| next.starts_with("b-")),
            "{list}: {cursors:?}"
        );
        // The bootstrap admin still walks them all.
        let (all, _) = walk(&app, list, ADMIN_TOKEN).await;
        assert_eq!(all, ["a-other", "b-1", "b-2", "c-other"], "{list}");
    }
}
