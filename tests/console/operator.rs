//! An operator's morning in the console: sign in, find a carrier sequence, read its page,
//! add a range (an overlap and a wrong width refused inline, changing nothing), change an
//! alert threshold, retire it after typing its name; make and revoke a token; look up a
//! number; and a read-only token that is shown no actions. Each page is checked by axe-core
//! and photographed at laptop and phone sizes.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::browser::Browser;
use crate::common::wait::eventually;
use crate::common::ADMIN_TOKEN;
use crate::setup::Served;

const UPS: &str = "ups-ground";

/// A UPS sequence with ten numbers vended, and two plain ones.
async fn registry(served: &Served) {
    served
        .create(json!({
            "name": UPS, "min": 1_000_000, "max": 1_000_999,
            "format": {"kind": "ups_1z", "account": "5R8939", "service": "03"},
        }))
        .await;
    served.plain("fedex-1", 1, 1000).await;
    served.plain("orders", 1, 1_000_000).await;
    served.vend(UPS, 10).await;
    served.vend("fedex-1", 3).await;
}

/// Waits until seqvend has sampled `name`'s use: its chart then has a line to draw.
async fn until_sampled(served: &Served, name: &str) {
    let path = format!("/sequences/{name}/usage");
    eventually(Duration::from_secs(15), "two usage samples", || async {
        let usage = served.call(Method::GET, &path, None, StatusCode::OK).await;
        usage["samples"].as_array().unwrap().len() >= 2
    })
    .await;
}

async fn assert_accessible(browser: &Browser, page: &str) {
    let violations = browser.accessibility_violations().await;
    assert!(violations.is_empty(), "{page}: {violations:#?}");
}

async fn ranges_of(served: &Served, name: &str) -> usize {
    served.sequence(name).await["ranges"]
        .as_array()
        .unwrap()
        .len()
}

/// Submits the action form titled `title` on a sequence's page.
async fn submit(browser: &Browser, title: &str) {
    browser
        .click(&format!("form[aria-label=\"{title}\"] button[type=submit]"))
        .await;
}

async fn add_range(browser: &Browser, min: i64, max: i64) {
    browser.fill("input[name=min]", &min.to_string()).await;
    browser.fill("input[name=max]", &max.to_string()).await;
    submit(browser, "Add a range").await;
}

#[tokio::test]
async fn an_operator_reads_a_sequence_and_adds_a_range_changes_an_alert_and_retires_it() {
    let served = Served::start("console-operator", &[]).await;
    registry(&served).await;
    until_sampled(&served, UPS).await;
    let browser = Browser::start(&served.address()).await;
    browser.sign_in(ADMIN_TOKEN).await;

    browser.text_of("table.sequences", UPS).await;
    browser.text_of("table.sequences", "ups_1z").await;
    assert_accessible(&browser, "overview").await;
    browser.screenshots("overview").await;
    browser.fill("#filter", "ups").await;
    browser.text_of("#shown", "1–1 of 1").await;

    browser
        .click(&format!("a[href=\"#/sequences/{UPS}\"]"))
        .await;
    browser.text_of("h1", UPS).await;
    let number = browser.text_of("code.number", "1Z5R893903").await;
    assert_eq!(number.len(), 18, "{number}");
    browser.text_of(".timeline", "seqvend_ranges.").await;
    browser.find("figure.chart svg path.used").await;
    browser.text_of("table.events", "created").await;
    assert_accessible(&browser, "sequence").await;
    browser.screenshots("sequence").await;

    // Refused inline, and nothing changed: an overlap with its own range, then a range wider
    // than the UPS serial's seven digits.
    add_range(&browser, 1_000_500, 1_001_500).await;
    browser.text_of(".problem .error", "range_overlap").await;
    add_range(&browser, 10_000_000, 10_000_010).await;
    browser.text_of(".problem .error", "invalid_format").await;
    assert_eq!(ranges_of(&served, UPS).await, 1);
    add_range(&browser, 1_001_000, 1_001_999).await;
    browser.text_of("#status", "Range added.").await;
    browser.text_of(".timeline", "1,001,000").await;
    assert_eq!(ranges_of(&served, UPS).await, 2);

    browser.fill("input[name=days_left_below]", "30").await;
    submit(&browser, "Alerts").await;
    browser.text_of("#status", "Alert settings saved.").await;
    assert_eq!(
        served.sequence(UPS).await["alerts"]["days_left_below"],
        json!(30.0)
    );

    retire_after_typing_the_name(&browser, &served).await;
}

async fn retire_after_typing_the_name(browser: &Browser, served: &Served) {
    let retire = "form[aria-label=\"Retire\"] button[type=submit]";
    assert!(!browser.find(retire).await.is_enabled().await.unwrap());
    browser.fill("input[name=confirm]", "ups-groun").await;
    assert!(!browser.find(retire).await.is_enabled().await.unwrap());
    browser.fill("input[name=confirm]", UPS).await;
    assert!(browser.find(retire).await.is_enabled().await.unwrap());
    browser.click(retire).await;
    browser.text_of("#status", "Sequence retired.").await;
    browser.text_of(".facts", "retired").await;
    assert_eq!(served.sequence(UPS).await["status"], "retired");
    assert!(browser.all("section.actions").await.is_empty());
}

async fn whoami(served: &Served, token: &str) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .get(format!("{}/whoami", served.address()))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_token_is_made_with_its_secret_shown_once_then_revoked() {
    let served = Served::start("console-tokens", &[]).await;
    let browser = Browser::start(&served.address()).await;
    browser.sign_in(ADMIN_TOKEN).await;
    browser.click("a[href=\"#/tokens\"]").await;
    browser.fill("input[name=token_name]", "carrier-desk").await;
    browser
        .fill("textarea[name=scopes]", "read:*\nadmin:ups-*")
        .await;
    browser
        .click("form[aria-labelledby=create-title] button[type=submit]")
        .await;
    let secret_box = browser.find("#new-secret").await;
    let secret = secret_box.prop("value").await.unwrap().unwrap();
    assert!(secret.starts_with("svt_"), "{secret}");
    let (status, me) = whoami(&served, &secret).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        me,
        json!({"name": "carrier-desk", "scopes": ["read:*", "admin:ups-*"]})
    );
    browser.text_of("table.tokens", "carrier-desk").await;
    assert_accessible(&browser, "tokens, the secret shown").await;

    // Away and back: the secret is gone from the page for good.
    browser.click("a[href=\"#/\"]").await;
    browser.click("a[href=\"#/tokens\"]").await;
    browser.text_of("table.tokens", "carrier-desk").await;
    let page = browser.client.source().await.unwrap();
    assert!(!page.contains(&secret), "the secret is shown again");
    browser.screenshots("tokens").await;

    browser
        .click("button[aria-label=\"Revoke carrier-desk\"]")
        .await;
    browser
        .text_of(
            "button[aria-label=\"Revoke carrier-desk\"]",
            "Confirm revoke",
        )
        .await;
    browser
        .click("button[aria-label=\"Revoke carrier-desk\"]")
        .await;
    browser
        .text_of("#status", "Token carrier-desk revoked.")
        .await;
    browser.text_of("table.tokens", "revoked").await;
    eventually(
        Duration::from_secs(5),
        "the revoked token is refused",
        || async { whoami(&served, &secret).await.0 == StatusCode::UNAUTHORIZED },
    )
    .await;
}

#[tokio::test]
async fn a_number_is_looked_up_as_issued_and_a_wrong_check_digit_as_invalid() {
    let served = Served::start("console-lookup", &[]).await;
    registry(&served).await;
    let vended = served.vend(UPS, 1).await;
    let number = vended["formatted"][0]
        .as_str()
        .expect("a UPS number")
        .to_owned();
    let browser = Browser::start(&served.address()).await;
    browser.sign_in(ADMIN_TOKEN).await;
    browser.click("a[href=\"#/lookup\"]").await;
    // As a person might paste it: in lower case, with spaces.
    let pasted = format!("{} {}", &number[..8], &number[8..]).to_lowercase();
    browser.fill("input[name=number]", &pasted).await;
    browser.click("form[role=search] button[type=submit]").await;
    browser
        .text_of("#lookup-result", "Yes, by ups-ground")
        .await;
    browser
        .text_of("#lookup-result", "Yes: a known layout, check digit right")
        .await;
    browser.text_of("#lookup-result", "UPS").await;
    assert_accessible(&browser, "lookup").await;
    browser.screenshots("lookup").await;

    let last = number.chars().last().unwrap().to_digit(10).unwrap();
    let wrong = format!("{}{}", &number[..17], (last + 1) % 10);
    browser.fill("input[name=number]", &wrong).await;
    browser.click("form[role=search] button[type=submit]").await;
    browser.text_of("#lookup-result", "✗ No").await;
}

#[tokio::test]
async fn a_read_only_token_is_shown_no_actions_and_signing_out_forgets_it() {
    let served = Served::start("console-readonly", &[]).await;
    registry(&served).await;
    let made = served
        .call(
            Method::POST,
            "/tokens",
            Some(json!({"name": "viewer", "scopes": ["read:*"]})),
            StatusCode::CREATED,
        )
        .await;
    let browser = Browser::start(&served.address()).await;
    browser.open("#/").await;
    browser.find("input[name=token]").await;
    assert_accessible(&browser, "sign-in").await;
    browser.screenshots("sign-in").await;
    browser.fill("input[name=token]", "svt_1_not-a-token").await;
    browser.click("form button[type=submit]").await;
    browser.text_of(".error", "does not know this token").await;

    browser.sign_in(made["token"].as_str().unwrap()).await;
    browser.text_of("#who-name", "viewer").await;
    assert!(!browser
        .find("#nav-tokens")
        .await
        .is_displayed()
        .await
        .unwrap());
    browser
        .click(&format!("a[href=\"#/sequences/{UPS}\"]"))
        .await;
    browser.text_of("h2", "Events").await;
    assert!(browser.all("section.actions").await.is_empty());

    browser.click("#sign-out").await;
    browser.find("input[name=token]").await;
    assert_eq!(
        browser.script("return sessionStorage.length").await,
        json!(0)
    );
}
