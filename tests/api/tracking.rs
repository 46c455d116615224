//! `GET /tracking-numbers/{number}`: every public vector through HTTP, and `issued` before
//! and after seqvend vends a number.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

impl TestApp {
    pub async fn tracking(&self, number: &str) -> Reply {
        let path = format!("/tracking-numbers/{}", percent_encoded(number));
        self.request(Method::GET, &path, Some(VEND_TOKEN), None)
            .await
    }
}

fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_public_vector_is_judged_as_expected() {
    let app = spawn_app().await;
    for vector in vectors() {
        let reply = app.tracking(&vector.number).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        let normalised: String = vector
            .number
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        assert_eq!(reply.body["number"], normalised.as_str());
        assert_eq!(
            reply.body["valid"],
            vector.expected_valid(),
            "{:?} ({}): {}",
            vector.number,
            vector.format,
            reply.body
        );
        if vector.expected_valid() {
            assert_eq!(reply.body["kind"], vector.kind(), "{}", reply.body);
            assert!(reply.body["carrier"].is_string());
        }
        assert!(reply.body["issued"].is_null());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn issued_names_the_sequence_once_the_number_is_vended_and_not_before() {
    let app = spawn_app().await;
    let format = json!({"kind": "ups_1z", "account": "5R8939", "service": "03"});
    app.create(json!({"name": "ups", "min": 5756712, "max": 5756799, "format": format}))
        .await;
    let reply = app.tracking("1z5r8939 0357567127").await;
    assert_eq!(
        reply.body,
        json!({"number": "1Z5R89390357567127", "valid": true, "carrier": "UPS",
               "kind": "ups_1z", "serial": "5756712", "issued": null})
    );
    assert_eq!(
        app.next("ups").await.body["formatted"],
        "1Z5R89390357567127"
    );
    let reply = app.tracking("1Z5R89390357567127").await;
    assert_eq!(
        reply.body["issued"],
        json!({"sequence": "ups", "value": 5756712})
    );
    // The next one is valid but not vended yet; another account's never by this sequence.
    assert!(app.tracking("1Z5R89390357567136").await.body["issued"].is_null());
    let other = seqvend::carriers::Format::Ups1z {
        account: "879E93".into(),
        service: "03".into(),
    };
    let other = other.render(5756712).unwrap();
    let reply = app.tracking(&other).await;
    assert_eq!(
        (&reply.body["valid"], &reply.body["issued"]),
        (&json!(true), &json!(null))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn issued_follows_the_steps_and_direction_of_the_sequence() {
    let app = spawn_app().await;
    let format = json!({"kind": "dhl_express"});
    app.create(
        json!({"name": "down", "min": 100, "max": 200, "increment": -10,
                      "format": format}),
    )
    .await;
    let first = app.next("down").await.body["formatted"].clone();
    let second = app.next("down").await.body["formatted"].clone();
    assert_eq!(
        (first.as_str(), second.as_str()),
        (Some("0000002004"), Some("0000001901"))
    );
    for (serial, issued) in [(200, true), (190, true), (195, false), (180, false)] {
        let number = seqvend::carriers::Format::DhlExpress
            .render(serial)
            .unwrap();
        let reply = app.tracking(&number).await;
        assert_eq!(
            reply.body["issued"].is_object(),
            issued,
            "{serial}: {}",
            reply.body
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_number_too_long_or_with_other_characters_is_400_invalid_request() {
    let app = spawn_app().await;
    app.tracking(&"1".repeat(65))
        .await
        .assert_error(400, "invalid_request");
    app.tracking("1Z5R8939-0357567127")
        .await
        .assert_error(400, "invalid_request");
    app.tracking("1Z5R8939\u{e9}")
        .await
        .assert_error(400, "invalid_request");
    app.tracking("   ")
        .await
        .assert_error(400, "invalid_request");
    // 64 characters with spaces between them is fine: spaces do not count.
    let reply = app.tracking(&"1 ".repeat(64)).await;
    assert_eq!(
        (reply.status, &reply.body["valid"]),
        (StatusCode::OK, &json!(false))
    );
    let reply = app
        .request(
            Method::GET,
            "/tracking-numbers/1Z5R89390357567127",
            None,
            None,
        )
        .await;
    reply.assert_error(401, "unauthorized");
}
