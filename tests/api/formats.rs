//! Formatted sequences: the carrier number vended beside each value, formats shown on the
//! sequence, and every way a format or a range that does not fit it is refused.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::*;

fn ups() -> Value {
    json!({"kind": "ups_1z", "account": "5R8939", "service": "03"})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_formatted_sequence_vends_the_full_number_beside_each_value() {
    let app = spawn_app().await;
    let reply = app
        .create(json!({"name": "ups", "min": 5756712, "max": 9999999, "format": ups()}))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["format"], ups());
    let reply = app.next("ups").await;
    assert_eq!(
        reply.body,
        json!({"sequence": "ups", "value": 5756712, "formatted": "1Z5R89390357567127"})
    );
    let reply = app.next_batch("ups", 2).await;
    assert_eq!(
        reply.body,
        json!({"sequence": "ups", "values": [5756713, 5756714],
               "formatted": ["1Z5R89390357567136", "1Z5R89390357567145"], "exhausted": false})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_format_is_shown_by_get_and_list_and_absent_on_a_plain_sequence() {
    let app = spawn_app().await;
    let express = json!({"kind": "fedex_express"});
    app.create(json!({"name": "a", "min": 1, "max": 99, "format": express}))
        .await;
    app.create_ok("b", 1, 99).await;
    assert_eq!(app.get("a").await.body["format"], express);
    assert!(app.get("b").await.body.get("format").is_none());
    let list = app
        .request(Method::GET, "/sequences", Some(VEND_TOKEN), None)
        .await;
    assert_eq!(list.body["sequences"][0]["format"], express);
    assert!(list.body["sequences"][1].get("format").is_none());
    // A plain sequence vends as it always did.
    assert_eq!(
        app.next("b").await.body,
        json!({"sequence": "b", "value": 1})
    );
}

/// For every valid public number of a kind seqvend prints, a sequence whose range starts at
/// that number's serial vends exactly that number first.
#[tokio::test(flavor = "multi_thread")]
async fn every_valid_vector_seqvend_can_print_is_what_a_sequence_starting_at_its_serial_vends() {
    let mut app = spawn_app().await;
    let mut vended = 0;
    for (i, vector) in vectors().iter().filter(|v| v.expected_valid()).enumerate() {
        let number = seqvend::carriers::normalise(&vector.number).unwrap();
        for (j, origin) in seqvend::carriers::recognise(&number)
            .origins
            .into_iter()
            .enumerate()
        {
            let name = format!("v{i}-{j}");
            let (lowest, highest) = origin.format.serial_span();
            let (min, max) = if origin.serial < highest {
                (origin.serial, origin.serial + 1)
            } else {
                (lowest, highest)
            };
            let format = serde_json::to_value(&origin.format).unwrap();
            let body = json!({"name": name, "min": min, "max": max,
                              "start": origin.serial, "format": format});
            let mut reply = app.create(body.clone()).await;
            if reply.status == StatusCode::CONFLICT && reply.code() == "range_overlap" {
                // An earlier vector printed from the same number space with this serial: as
                // it should, the space refuses a second range over it. A fresh database.
                app = spawn_app().await;
                reply = app.create(body).await;
            }
            assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
            let reply = app.next(&name).await;
            let printed = reply.body["formatted"].as_str().unwrap_or_default();
            // A routed USPS barcode (420 + ZIP + PIC) ends in the number seqvend prints.
            assert!(
                !printed.is_empty() && number.ends_with(printed),
                "{number} from {format}: vended {}",
                reply.body
            );
            vended += 1;
        }
    }
    assert!(vended >= 30, "only {vended} vectors vended");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_bad_format_is_400_invalid_format_naming_what_is_wrong_and_creates_nothing() {
    let app = spawn_app().await;
    let cases = [
        (json!("ups_1z"), "`format` must be an object"),
        (json!({"account": "5R8939"}), "`format.kind`"),
        (json!({"kind": "dhl"}), "`format.kind`"),
        (
            json!({"kind": "ups_1z", "service": "03"}),
            "`format.account`",
        ),
        (
            json!({"kind": "ups_1z", "account": "5r8939", "service": "03"}),
            "`format.account`",
        ),
        (
            json!({"kind": "ups_1z", "account": "5R8939", "service": 3}),
            "`format.service`",
        ),
        (
            json!({"kind": "ups_1z", "account": "5R8939", "service": "03", "x": "1"}),
            "`format.x`",
        ),
        (
            json!({"kind": "fedex_express", "account": "1"}),
            "`format.account`",
        ),
        (
            json!({"kind": "fedex_ground", "shipper_id": "12345"}),
            "`format.shipper_id`",
        ),
        (
            json!({"kind": "fedex_ground_96", "scnc": "11", "service": "20", "shipper_id": "9876543"}),
            "`format.service`",
        ),
        (
            json!({"kind": "sscc18", "extension": "10", "company_prefix": "0012345"}),
            "`format.extension`",
        ),
        (
            json!({"kind": "sscc18", "extension": "0", "company_prefix": "00123456789"}),
            "`format.company_prefix`",
        ),
        (
            json!({"kind": "usps_impb", "service_type": "123", "mailer_id": "812345678"}),
            "`format.mailer_id`",
        ),
        (
            json!({"kind": "usps_impb", "service_type": "123", "mailer_id": "912345678", "length": 30}),
            "`format.length`",
        ),
        (
            json!({"kind": "usps_impb", "mailer_id": "912345678"}),
            "`format.service_type`",
        ),
        (
            json!({"kind": "s10", "service": "RB", "country": "XX"}),
            "`format.country`",
        ),
        (
            json!({"kind": "s10", "service": "R", "country": "US"}),
            "`format.service`",
        ),
        (json!({"kind": "ontrac", "prefix": "c"}), "`format.prefix`"),
        (
            json!({"kind": "canada_post", "origin_id": "A073938"}),
            "`format.origin_id`",
        ),
    ];
    for (format, named) in cases {
        let reply = app
            .create(json!({"name": "f", "min": 1, "max": 9, "format": format}))
            .await;
        reply.assert_error(400, "invalid_format");
        let message = reply.body["message"].as_str().unwrap();
        assert!(message.contains(named), "{format}: {message}");
    }
    app.get("f").await.assert_error(404, "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_range_that_does_not_fit_the_serial_is_refused_at_creation_and_when_added() {
    let app = spawn_app().await;
    let refused = [
        (ups(), -1, 5, "`min` (-1)"),
        (ups(), 0, 10_000_000, "`max` (10000000)"),
        (json!({"kind": "dhl_express"}), 1, 1_000_000_000, "`max`"),
        (json!({"kind": "fedex_express"}), 0, 9, "`min` (0)"),
        (
            json!({"kind": "sscc18", "extension": "0", "company_prefix": "0012345678"}),
            0,
            1_000_000,
            "`max`",
        ),
    ];
    for (format, min, max, named) in refused {
        let reply = app
            .create(json!({"name": "r", "min": min, "max": max, "format": format}))
            .await;
        reply.assert_error(400, "invalid_format");
        assert!(
            reply.body["message"].as_str().unwrap().contains(named),
            "{}",
            reply.body
        );
    }
    app.get("r").await.assert_error(404, "not_found");

    app.create(json!({"name": "r", "min": 0, "max": 9, "format": ups()}))
        .await;
    app.add_range("r", 9_999_000, 10_000_000)
        .await
        .assert_error(400, "invalid_format");
    app.add_range("r", -5, 5)
        .await
        .assert_error(400, "invalid_format");
    assert_eq!(
        app.get("r").await.body["ranges"].as_array().unwrap().len(),
        1
    );
    let reply = app.add_range("r", 9_999_000, 9_999_999).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
}

/// Two sequences that would print the same numbers share a namespace, the format's number
/// space, so their ranges cannot overlap: no tracking number can be vended twice.
#[tokio::test(flavor = "multi_thread")]
async fn sequences_printing_the_same_numbers_share_a_number_space_and_cannot_overlap() {
    let app = spawn_app().await;
    let ground = json!({"kind": "fedex_ground", "shipper_id": "1234567"});
    let created = app
        .create(json!({"name": "ground-a", "min": 1, "max": 1000, "format": ground}))
        .await;
    assert_eq!(created.status.as_u16(), 201, "{}", created.body);
    assert_eq!(created.body["namespace"], "fedex_ground.1234567");
    // The 96 barcode carries the same 15-digit number: the same space.
    let barcode = json!({"kind": "fedex_ground_96", "scnc": "12", "service": "345",
                         "shipper_id": "1234567"});
    app.create(json!({"name": "ground-b", "min": 900, "max": 2000, "format": barcode}))
        .await
        .assert_error(409, "range_overlap");
    app.create(
        json!({"name": "ground-c", "min": 1, "max": 1000, "format": ground,
                      "namespace": "mine"}),
    )
    .await
    .assert_error(400, "invalid_format");
    let other_shipper = json!({"kind": "fedex_ground", "shipper_id": "7654321"});
    let apart = app
        .create(json!({"name": "ground-d", "min": 1, "max": 1000, "format": other_shipper}))
        .await;
    assert_eq!(apart.status.as_u16(), 201, "{}", apart.body);
    for name in ["ground-b", "ground-c"] {
        app.get(name).await.assert_error(404, "not_found");
    }
}
