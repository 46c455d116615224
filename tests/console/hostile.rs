//! Hostile text shown as text: an event whose detail and token hold markup, quotes and
//! unicode (written straight into the registry, as a DBA or a future version might), and a
//! link whose sequence name is markup. Nothing of it may run: each payload sets
//! `window.__pwned`, which must stay undefined.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::browser::Browser;
use crate::common::cluster::connect;
use crate::common::ADMIN_TOKEN;
use crate::setup::Served;

const DETAIL: &str =
    "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\"> \
                      'quotes' & \"double\" — ünïcödé 🚚 \u{202e}txet tfel-ot-thgir";
const TOKEN: &str = "\"><svg onload=\"window.__pwned = 3\">";

async fn assert_nothing_ran(browser: &Browser) {
    assert_eq!(
        browser.script("return typeof window.__pwned").await,
        json!("undefined")
    );
    assert!(browser
        .all("main img, main svg[onload], main script")
        .await
        .is_empty());
}

#[tokio::test]
async fn hostile_text_in_events_and_links_is_shown_as_text_and_runs_nothing() {
    let served = Served::start("console-hostile", &[]).await;
    served.plain("shipments", 1, 1000).await;
    let db = connect(&served.pg.url).await;
    db.execute(
        "INSERT INTO seqvend.events (sequence_id, kind, actor, token, detail)
         SELECT id, 'rewind', 'vend', $1, $2 FROM seqvend.sequences WHERE name = 'shipments'",
        &[&TOKEN, &DETAIL],
    )
    .await
    .unwrap();
    let events = served
        .call(
            Method::GET,
            "/sequences/shipments/events",
            None,
            StatusCode::OK,
        )
        .await;
    assert!(events.to_string().contains("ünïcödé"), "{events}");

    let browser = Browser::start(&served.address()).await;
    browser.sign_in(ADMIN_TOKEN).await;
    browser.click("a[href=\"#/sequences/shipments\"]").await;
    let shown = browser.text_of("table.events", "rewind detected").await;
    assert!(
        shown.contains(DETAIL),
        "the detail is shown as written: {shown}"
    );
    assert!(
        shown.contains(TOKEN),
        "the token is shown as written: {shown}"
    );
    assert_nothing_ran(&browser).await;

    // A link whose name is markup: shown as text, and refused by the API as a name.
    let markup = "<img src=x onerror=\"window.__pwned=4\">";
    let encoded: String = url_encode(markup);
    browser.open(&format!("#/sequences/{encoded}")).await;
    browser.text_of("h1", markup).await;
    browser.text_of(".error", "invalid_name").await;
    assert_nothing_ran(&browser).await;
    browser.open(&format!("#/lookup/{encoded}")).await;
    browser.text_of(".error", "invalid_request").await;
    assert_nothing_ran(&browser).await;
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}
