//! A sequence with a long history: its page shows the newest events at once (read newest
//! first from the events API), and "Older events" reads the page before.

use std::time::Instant;

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::browser::Browser;
use crate::common::ADMIN_TOKEN;
use crate::setup::Served;

/// Events laid down before the latest one.
const OLD_EVENTS: i64 = 50_000;

#[tokio::test]
async fn a_sequence_with_50000_events_shows_its_latest_first_and_pages_back() {
    let served = Served::start("console-history", &[]).await;
    served.plain("long-lived", 1, 1_000).await;
    // A long history, written straight into the log (50,000 API calls would take minutes).
    let db = served.pg.connect().await;
    db.execute(
        "INSERT INTO seqvend.events (sequence_id, kind, actor, detail)
         SELECT s.id, 'alert_raised', 'seqvend', 'old event ' || n
           FROM seqvend.sequences s, generate_series(1, $1::bigint) n
          WHERE s.name = 'long-lived'",
        &[&OLD_EVENTS],
    )
    .await
    .unwrap();
    let body = json!({"min": 5_000, "max": 5_999});
    served
        .call(
            Method::POST,
            "/sequences/long-lived/ranges",
            Some(body),
            StatusCode::CREATED,
        )
        .await;

    let browser = Browser::start(&served.address()).await;
    browser.sign_in(ADMIN_TOKEN).await;
    let asked = Instant::now();
    browser.open("#/sequences/long-lived").await;
    browser
        .text_of("table.events tbody tr:first-child", "range added")
        .await;
    eprintln!(
        "latest of {} events shown after {:?}",
        OLD_EVENTS + 2,
        asked.elapsed()
    );
    browser
        .text_of(
            "table.events tbody tr:nth-child(2)",
            &format!("old event {OLD_EVENTS}"),
        )
        .await;
    assert_eq!(browser.all("table.events tbody tr").await.len(), 100);

    browser.click("button.older-events").await;
    browser
        .text_of(
            "table.events tbody tr:nth-child(101)",
            &format!("old event {}", OLD_EVENTS - 99),
        )
        .await;
    assert_eq!(browser.all("table.events tbody tr").await.len(), 200);
    browser
        .text_of("section p[role=status]", "200 newest events shown")
        .await;
}
