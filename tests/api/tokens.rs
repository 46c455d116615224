//! Tokens managed at run time: created with scopes (the secret shown once), checked on every
//! route, revoked everywhere within 2 s, audited, and never logged.

use std::time::{Duration, Instant};

use rand::Rng;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::*;
use crate::serve::Served;

/// The bootstrap admin token's name, as events and token lists show it: a fingerprint of
/// its secret, not its place in `SEQVEND_ADMIN_TOKENS`.
pub fn bootstrap_admin_name() -> String {
    let tokens = seqvend::auth::Tokens::new(ADMIN_TOKEN, "", false);
    let (_, name) = tokens.role_of(ADMIN_TOKEN.as_bytes()).unwrap();
    assert!(name.starts_with("bootstrap-admin-"), "{name}");
    name
}

/// Creates a token with `scopes` as the bootstrap admin; returns its id and secret.
async fn token(app: &TestApp, name: &str, scopes: &[&str]) -> (i64, String) {
    app.create_token(name, scopes).await
}

async fn as_token(
    app: &TestApp,
    secret: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Reply {
    app.request(method, path, Some(secret), body).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_is_shown_once_listed_without_its_secret_and_refused_once_revoked() {
    let app = spawn_app().await;
    app.create_ok("fedex-1", 1, 100).await;
    let (id, secret) = token(&app, "merchant-a", &["vend:fedex-*"]).await;
    assert!(secret.starts_with(&format!("svt_{id}_")), "{secret}");
    let reply = as_token(&app, &secret, Method::POST, "/sequences/fedex-1/next", None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);

    // Its use is recorded (in the background, at most once a minute per instance).
    let listed = eventually_some(Duration::from_secs(10), "last_used_at is set", || async {
        let listed = app
            .request(Method::GET, "/tokens", Some(ADMIN_TOKEN), None)
            .await;
        (!listed.body["tokens"][0]["last_used_at"].is_null()).then_some(listed)
    })
    .await;
    assert_eq!(listed.status, StatusCode::OK);
    let text = listed.body.to_string();
    assert!(!text.contains(&secret[secret.len() - 64..]), "{text}");
    let tokens = listed.body["tokens"].as_array().unwrap();
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0]["name"], "merchant-a");
    assert_eq!(tokens[0]["scopes"], json!(["vend:fedex-*"]));
    assert_eq!(tokens[0]["created_by"], json!(bootstrap_admin_name()));
    assert_eq!(tokens[0]["revoked_at"], Value::Null);

    // A wrong secret for the right id, and the right secret for another id.
    let wrong = format!("svt_{id}_{}", "0".repeat(64));
    as_token(&app, &wrong, Method::GET, "/sequences/fedex-1", None)
        .await
        .assert_error(401, "unauthorized");
    let other = secret.replacen(&format!("svt_{id}_"), &format!("svt_{}_", id + 1), 1);
    as_token(&app, &other, Method::GET, "/sequences/fedex-1", None)
        .await
        .assert_error(401, "unauthorized");

    let revoked = app
        .request(
            Method::DELETE,
            &format!("/tokens/{id}"),
            Some(ADMIN_TOKEN),
            None,
        )
        .await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.body);
    assert_ne!(revoked.body["revoked_at"], Value::Null);
    assert_eq!(revoked.body["revoked_by"], json!(bootstrap_admin_name()));
    let again = app
        .request(
            Method::DELETE,
            &format!("/tokens/{id}"),
            Some(ADMIN_TOKEN),
            None,
        )
        .await;
    assert_eq!(again.body["revoked_at"], revoked.body["revoked_at"]);
    eventually(
        Duration::from_secs(2),
        "the revoked token is refused",
        || async {
            as_token(&app, &secret, Method::POST, "/sequences/fedex-1/next", None)
                .await
                .status
                == StatusCode::UNAUTHORIZED
        },
    )
    .await;
    app.request(Method::DELETE, "/tokens/99999", Some(ADMIN_TOKEN), None)
        .await
        .assert_error(404, "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_token_requests_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    let create = |body: Value| app.request(Method::POST, "/tokens", Some(ADMIN_TOKEN), Some(body));
    for body in [
        json!({"name": "x", "scopes": []}),
        json!({"name": "x", "scopes": ["write:*"]}),
        json!({"name": "x", "scopes": ["vend:a b"]}),
        json!({"name": "x", "scopes": ["vend"]}),
        json!({"name": "-x", "scopes": ["vend:*"]}),
        json!({"name": "bootstrap-admin-9", "scopes": ["admin:*"]}),
        json!({"name": "x", "scopes": ["vend:*"], "secret": "mine"}),
        json!({"name": "x", "scopes": vec!["vend:*"; 101]}),
        // An object only: serde would read the body from an array of its fields in order.
        json!(["x", ["vend:*"]]),
    ] {
        let reply = create(body.clone()).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            reply.body
        );
    }
    let listed = app
        .request(Method::GET, "/tokens", Some(ADMIN_TOKEN), None)
        .await;
    assert_eq!(listed.body["tokens"], json!([]));
    app.create(json!(["arr", 1, 10, null, null, null, null, null, null]))
        .await
        .assert_error(400, "invalid_request");
    assert_eq!(app.get("arr").await.status, StatusCode::NOT_FOUND);
    token(&app, "once", &["read:*"]).await;
    create(json!({"name": "once", "scopes": ["vend:*"]}))
        .await
        .assert_error(409, "token_name_taken");
    app.request(Method::DELETE, "/tokens/abc", Some(ADMIN_TOKEN), None)
        .await
        .assert_error(400, "invalid_request");
    // A vend token administers no tokens.
    app.request(Method::GET, "/tokens", Some(VEND_TOKEN), None)
        .await
        .assert_error(403, "forbidden");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revocation_reaches_a_second_instance_within_two_seconds() {
    let db = TestDb::shared().await;
    let first = spawn_app_on(&db, test_settings()).await;
    let second = spawn_app_on(&db, test_settings()).await;
    first.create_ok("busy", 1, 1_000_000).await;
    let (id, secret) = token(&first, "short-lived", &["vend:busy"]).await;
    // The second instance has read the token and keeps it.
    for _ in 0..3 {
        let reply = as_token(&second, &secret, Method::POST, "/sequences/busy/next", None).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    }
    let revoked_at = Instant::now();
    let revoked = first
        .request(
            Method::DELETE,
            &format!("/tokens/{id}"),
            Some(ADMIN_TOKEN),
            None,
        )
        .await;
    assert_eq!(revoked.status, StatusCode::OK);
    let mut answered = 0;
    loop {
        let reply = as_token(&second, &secret, Method::POST, "/sequences/busy/next", None).await;
        if reply.status == StatusCode::UNAUTHORIZED {
            break;
        }
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        answered += 1;
        assert!(
            revoked_at.elapsed() < Duration::from_secs(2),
            "still served {answered} requests {:?} after the revocation",
            revoked_at.elapsed()
        );
    }
    eprintln!(
        "refused {:?} after the revocation answered ({answered} served meanwhile)",
        revoked_at.elapsed()
    );
}

/// Every route, and which scopes let it through.
#[tokio::test(flavor = "multi_thread")]
async fn each_route_lets_through_exactly_the_scopes_that_cover_it() {
    let app = spawn_app().await;
    for (name, namespace, min) in [
        ("fedex-1", "carrier-a", 1),
        ("fedex-2", "fedex-2", 1),
        ("ups-1", "carrier-a", 2001),
    ] {
        let reply = app
            .create(json!({"name": name, "namespace": namespace, "min": min, "max": min + 999}))
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    }
    let scopes = [
        "read:*",
        "vend:*",
        "admin:*",
        "read:fedex-1",
        "vend:fedex-1",
        "vend:fedex-*",
        "vend:namespace:carrier-a",
        "admin:fedex-*",
        "admin:namespace:carrier-a",
        "lease:*",
        "lease:fedex-1",
    ];
    let mut secrets = Vec::new();
    for (i, scope) in scopes.iter().enumerate() {
        secrets.push(token(&app, &format!("t{i}"), &[scope]).await.1);
    }
    // The bootstrap vend token holds `lease:*`.
    let worker = app
        .request(Method::POST, "/workers/lease", Some(VEND_TOKEN), None)
        .await;
    let renew = format!(
        "/workers/{}/renew",
        worker.body["worker_id"].as_i64().unwrap()
    );
    let renew_body = json!({"holder": worker.body["holder"]});
    // (method, path, body, which of `scopes` may: one letter per scope, in order)
    let routes: Vec<(Method, String, Option<Value>, &str)> = vec![
        (
            Method::POST,
            "/sequences/fedex-1/next".into(),
            None,
            "-YY-YYYYYYY",
        ),
        (
            Method::POST,
            "/sequences/ups-1/next".into(),
            None,
            "-YY---Y-YY-",
        ),
        (
            Method::POST,
            "/sequences/fedex-2/next".into(),
            None,
            "-YY--Y-Y-Y-",
        ),
        (
            Method::POST,
            "/sequences/fedex-1/leases?count=1".into(),
            None,
            "--Y----YYYY",
        ),
        (
            Method::GET,
            "/sequences/fedex-1".into(),
            None,
            "YYYYYYYYYYY",
        ),
        (
            Method::GET,
            "/sequences/fedex-2".into(),
            None,
            "YYY--Y-Y-Y-",
        ),
        (
            Method::GET,
            "/sequences/ups-1/events".into(),
            None,
            "YYY---Y-YY-",
        ),
        (Method::GET, "/sequences".into(), None, "YYYYYYYYYYY"),
        (
            Method::GET,
            "/tracking-numbers/1Z5R89390357567127".into(),
            None,
            "YYYYYYYYYYY",
        ),
        (
            Method::PATCH,
            "/sequences/fedex-1".into(),
            Some(json!({"alerts": {"days_left_below": 3}})),
            "--Y----YY--",
        ),
        (
            Method::POST,
            "/sequences/ups-1/ranges".into(),
            Some(json!({"min": 1, "max": 2})),
            "--Y-----Y--",
        ),
        (
            Method::POST,
            "/sequences".into(),
            Some(json!({"name": "fedex-9", "namespace": "carrier-a", "min": 5001, "max": 5002})),
            "--Y--------",
        ),
        // No such sequence: a namespace scope cannot cover it, a name or prefix can.
        (
            Method::DELETE,
            "/sequences/fedex-gone".into(),
            None,
            "--Y----Y---",
        ),
        (Method::POST, "/ids/snowflake".into(), None, "-YY-YYYYYYY"),
        (Method::POST, "/ids/uuidv7".into(), None, "-YY-YYYYYYY"),
        (Method::GET, "/ids/snowflake/1".into(), None, "YYYYYYYYYYY"),
        (Method::POST, "/workers/lease".into(), None, "--Y----YYYY"),
        (Method::POST, renew, Some(renew_body), "--Y----YYYY"),
        (Method::GET, "/events".into(), None, "--Y--------"),
        (Method::GET, "/tokens".into(), None, "--Y--------"),
        (
            Method::POST,
            "/tokens".into(),
            Some(json!({"name": "made", "scopes": ["read:*"]})),
            "--Y--------",
        ),
        (Method::DELETE, "/tokens/999".into(), None, "--Y--------"),
    ];
    let mut checked = 0;
    for (method, path, body, allowed) in &routes {
        assert_eq!(allowed.len(), scopes.len(), "{method} {path}");
        for ((scope, secret), may) in scopes.iter().zip(&secrets).zip(allowed.chars()) {
            let reply = as_token(&app, secret, method.clone(), path, body.clone()).await;
            let what = format!("{method} {path} with {scope}: {}", reply.body);
            if may == 'Y' {
                assert!(
                    ![StatusCode::UNAUTHORIZED, StatusCode::FORBIDDEN].contains(&reply.status)
                        && !reply.status.is_server_error(),
                    "allowed, yet {what}"
                );
            } else {
                reply.assert_error(403, "forbidden");
                let message = reply.body["message"].as_str().unwrap();
                assert!(message.contains("lacks the scope"), "{what}");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, routes.len() * scopes.len());
    // The list shows only what a scoped token may read.
    let listed = as_token(&app, &secrets[6], Method::GET, "/sequences", None).await;
    let names: Vec<&str> = listed.body["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fedex-1", "fedex-9", "ups-1"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn admin_actions_and_token_changes_are_audited_with_the_token_name() {
    let app = spawn_app().await;
    let (id, secret) = token(&app, "ops-admin", &["admin:*"]).await;
    let reply = app
        .request(
            Method::POST,
            "/sequences",
            Some(&secret),
            Some(json!({"name": "audited", "min": 1, "max": 10})),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    as_token(
        &app,
        &secret,
        Method::DELETE,
        &format!("/tokens/{id}"),
        None,
    )
    .await;
    let log = app
        .request(Method::GET, "/events", Some(ADMIN_TOKEN), None)
        .await;
    assert_eq!(log.status, StatusCode::OK, "{}", log.body);
    let events: Vec<(String, Value, Value)> = log.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_owned(),
                e["sequence"].clone(),
                e["token"].clone(),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            (
                "token_created".to_owned(),
                Value::Null,
                json!(bootstrap_admin_name())
            ),
            ("created".to_owned(), json!("audited"), json!("ops-admin")),
            ("token_revoked".to_owned(), Value::Null, json!("ops-admin")),
        ]
    );
    let own = app
        .request(
            Method::GET,
            "/sequences/audited/events",
            Some(VEND_TOKEN),
            None,
        )
        .await;
    assert_eq!(own.body["events"][0]["token"], "ops-admin");
    app.request(Method::GET, "/events", Some(VEND_TOKEN), None)
        .await
        .assert_error(403, "forbidden");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fuzzed_authorization_header_is_refused_never_a_server_error() {
    let app = spawn_app().await;
    app.create_ok("fuzzed", 1, 10).await;
    let (id, _) = token(&app, "real", &["vend:*"]).await;
    let mut rng = rand::thread_rng();
    let printable = |rng: &mut rand::rngs::ThreadRng, len: usize| -> String {
        (0..len)
            .map(|_| rng.gen_range(0x20u8..0x7f) as char)
            .collect()
    };
    let mut headers: Vec<Vec<u8>> = vec![
        b"Bearer".to_vec(),
        b"Bearer ".to_vec(),
        b"bearer test-admin-token".to_vec(),
        b"Basic dGVzdDp0ZXN0".to_vec(),
        format!("Bearer svt_{id}_").into_bytes(),
        format!("Bearer svt_{id}_{}", "f".repeat(64)).into_bytes(),
        format!("Bearer svt_{}_{}", i64::MAX, "0".repeat(64)).into_bytes(),
        format!("Bearer {}", "x".repeat(8000)).into_bytes(),
        b"Bearer \xff\xfe\x80".to_vec(),
    ];
    for _ in 0..300 {
        let len = rng.gen_range(0..200);
        headers.push(match rng.gen_range(0..4) {
            0 => printable(&mut rng, len).into_bytes(),
            1 => format!("Bearer {}", printable(&mut rng, len)).into_bytes(),
            2 => {
                let (id, digits) = (rng.gen_range(-5i64..1_000_000), rng.gen_range(60..68));
                format!("Bearer svt_{id}_{}", hex_of(&mut rng, digits)).into_bytes()
            }
            _ => {
                let mut raw = b"Bearer ".to_vec();
                raw.extend((0..len).map(|_| rng.gen_range(0x80u8..=0xff)));
                raw
            }
        });
    }
    for header in &headers {
        let Ok(value) = reqwest::header::HeaderValue::from_bytes(header) else {
            continue;
        };
        let response = app
            .http
            .post(format!("{}/sequences/fuzzed/next", app.address))
            .header(reqwest::header::AUTHORIZATION, value)
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::UNAUTHORIZED,
            "{:?}",
            String::from_utf8_lossy(header)
        );
    }
    assert_eq!(app.next_value("fuzzed").await, 1, "nothing was vended");
}

fn hex_of(rng: &mut rand::rngs::ThreadRng, len: usize) -> String {
    (0..len)
        .map(|_| char::from_digit(rng.gen_range(0..16), 16).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn no_secret_reaches_the_log() {
    let served = Served::start_logging(&scratch_dir("token-log"), "debug").await;
    let http = reqwest::Client::new();
    let created: Value = http
        .post(format!("{}/tokens", served.address))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"name": "logged", "scopes": ["admin:*"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let secret = created["token"].as_str().unwrap().to_owned();
    let id = created["id"].as_i64().unwrap();
    for (token, status) in [
        (secret.clone(), StatusCode::CREATED),
        (
            format!("svt_{id}_{}", "a".repeat(64)),
            StatusCode::UNAUTHORIZED,
        ),
    ] {
        let reply = http
            .post(format!("{}/sequences", served.address))
            .bearer_auth(&token)
            .json(&json!({"name": "logged", "min": 1, "max": 10}))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), status);
    }
    let revoked = http
        .delete(format!("{}/tokens/{id}", served.address))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), StatusCode::OK);
    let log = served.log_text();
    let hex = &secret[secret.len() - 64..];
    assert!(!log.contains(hex), "the secret is in the log");
    assert!(
        !log.contains(ADMIN_TOKEN),
        "a bootstrap token is in the log"
    );
    // The name is logged: each request says which token made it.
    assert!(
        log.contains("token=logged") || log.contains("token: logged"),
        "{log}"
    );
    served.terminate_cleanly();
}
