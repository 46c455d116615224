//! Health, readiness and Prometheus metrics.

use std::time::Duration;

use reqwest::{Method, StatusCode};

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread")]
async fn health_and_readiness_need_no_token() {
    let app = spawn_app().await;
    let healthz = app.request(Method::GET, "/healthz", None, None).await;
    assert_eq!(
        (healthz.status, &healthz.body["status"]),
        (StatusCode::OK, &"ok".into())
    );
    let readyz = app.request(Method::GET, "/readyz", None, None).await;
    assert_eq!(
        (readyz.status, &readyz.body["status"]),
        (StatusCode::OK, &"ready".into())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_requests_by_route_values_per_sequence_and_remaining_values() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.watch.interval = Duration::from_millis(50);
    let app = spawn_app_on(&db, settings).await;
    app.create_ok("m", 1, 100).await;
    app.next_value("m").await;
    app.next_batch("m", 9).await;
    app.next("unknown").await;
    let scrape = || async {
        let response = app
            .http
            .get(format!("{}/metrics", app.address))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.text().await.unwrap()
    };
    let text = scrape().await;
    for expected in [
        r#"seqvend_values_vended_total{sequence="m"} 10"#,
        r#"seqvend_http_request_duration_seconds_count{method="POST",route="/sequences/{name}/next",status="200"} 2"#,
        r#"seqvend_http_request_duration_seconds_count{method="POST",route="/sequences/{name}/next",status="404"} 1"#,
        r#"seqvend_db_pool_connections{pool="vend",state="max"} 4"#,
        "# HELP seqvend_vend_batch_requests",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    eventually(
        Duration::from_secs(10),
        "the remaining gauge shows 90",
        || async {
            scrape()
                .await
                .contains(r#"seqvend_sequence_remaining{sequence="m"} 90"#)
        },
    )
    .await;
    app.retire("m").await;
    eventually(
        Duration::from_secs(10),
        "a retired sequence's gauges go",
        || async {
            let text = scrape().await;
            !text.contains(r#"seqvend_sequence_remaining{sequence="m"}"#)
                && !text.contains(r#"seqvend_sequence_capacity{sequence="m"}"#)
        },
    )
    .await;
}

/// The document schemathesis fuzzes names every operation seqvend serves, so none escapes it.
#[tokio::test(flavor = "multi_thread")]
async fn the_openapi_document_names_every_operation() {
    let app = spawn_app().await;
    let reply = app.request(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    let mut operations: Vec<String> = reply.body["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| format!("{} {path}", method.to_uppercase()))
        })
        .collect();
    operations.sort();
    assert_eq!(
        operations,
        [
            "DELETE /families/{family}",
            "DELETE /sequences/{name}",
            "DELETE /tokens/{id}",
            "GET /events",
            "GET /families",
            "GET /families/{family}",
            "GET /families/{family}/counters/{key}",
            "GET /healthz",
            "GET /ids/snowflake/{id}",
            "GET /metrics",
            "GET /overview",
            "GET /readyz",
            "GET /sequences",
            "GET /sequences/{name}",
            "GET /sequences/{name}/events",
            "GET /sequences/{name}/usage",
            "GET /tokens",
            "GET /tracking-numbers/{number}",
            "GET /whoami",
            "PATCH /sequences/{name}",
            "POST /families",
            "POST /families/{family}/counters/{key}/next",
            "POST /ids/snowflake",
            "POST /ids/uuidv7",
            "POST /sequences",
            "POST /sequences/{name}/leases",
            "POST /sequences/{name}/next",
            "POST /sequences/{name}/ranges",
            "POST /tokens",
            "POST /workers/lease",
            "POST /workers/{worker_id}/renew",
        ]
    );
}
