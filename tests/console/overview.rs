//! The overview with many sequences: sorted by days left (an exhausted one first, then the
//! soonest to run out), filtered and paged by the server. Run with
//! `SEQVEND_CONSOLE_SEQUENCES=10000` it is the overview's benchmark: it prints the time to
//! interactive the browser measured (see docs/console.md); the test asserts no time.

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::{Method, StatusCode};
use seqvend::domain::{AlertThresholds, CachePolicy, SequenceName, SequenceSpec};
use seqvend::registry::{self, NewSequence};
use sqlx::postgres::PgPoolOptions;

use crate::browser::Browser;
use serde_json::json;

use crate::common::process::admin;
use crate::common::wait::{eventually, eventually_some};
use crate::common::ADMIN_TOKEN;
use crate::setup::Served;

/// How long a usage round may take: with 10,000 sequences on a loaded machine, minutes.
const ROUND_PATIENCE: Duration = Duration::from_secs(180);

fn sequences_wanted() -> usize {
    std::env::var("SEQVEND_CONSOLE_SEQUENCES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300)
}

/// Sequences made at once while laying out the registry.
const MAKERS: u32 = 8;

/// `count` idle sequences `bulk-00000`…, made the way `POST /sequences` makes them (the
/// registry's own create) but without HTTP and token checks in between, `MAKERS` at a time:
/// the overview under test only reads them.
#[allow(clippy::disallowed_types)] // A pool of its own, wrapped as the registry.
async fn bulk(served: &Served, count: usize) {
    let pool = PgPoolOptions::new()
        .max_connections(MAKERS)
        .connect(&served.pg.url)
        .await
        .expect("the registry's database");
    let registry = seqvend::db::Registry::from_pool(pool.clone());
    futures_util::stream::iter(0..count)
        .map(|i| {
            let registry = &registry;
            async move { registry::create_sequence(registry, bulk_sequence(i), "bulk").await }
        })
        .buffer_unordered(MAKERS as usize)
        .for_each(|made| async move {
            made.expect("a bulk sequence made");
        })
        .await;
    pool.close().await;
}

/// `bulk-{i}`: a plain, strict sequence over 1..=1,000,000.
fn bulk_sequence(i: usize) -> NewSequence {
    let name = SequenceName::parse(&format!("bulk-{i:05}")).unwrap();
    let spec = SequenceSpec::parse(&1.into(), &1_000_000.into(), None, None).unwrap();
    NewSequence {
        namespace: name.clone(),
        name,
        spec,
        format: None,
        cache: CachePolicy::STRICT,
        alerts: AlertThresholds::default(),
    }
}

/// Waits until `name` has a forecast: its usage sampled since it was used.
async fn until_forecast(served: &Served, name: &str) {
    eventually(ROUND_PATIENCE, "a forecast", || async {
        let path = format!("/sequences/{name}");
        let sequence = served.call(Method::GET, &path, None, StatusCode::OK).await;
        !sequence["usage"]["exhausts_at"].is_null()
    })
    .await;
}

#[tokio::test]
async fn the_overview_puts_the_soonest_to_run_out_first_and_pages_and_filters_many() {
    let mut served = Served::start("console-overview", &[]).await;
    // Used alike, so the one with less left runs out sooner; `spent` is out already. Used
    // before the bulk is made, so that no vend waits behind thousands of creations.
    served.plain("soon-a", 1, 100).await;
    served.plain("soon-b", 1, 1000).await;
    served.plain("spent", 1, 10).await;
    for name in ["soon-a", "soon-b"] {
        served.vend(name, 60).await;
    }
    served.vend("spent", 10).await;
    let count = sequences_wanted();
    let started = std::time::Instant::now();
    bulk(&served, count).await;
    eprintln!("{count} sequences made in {:?}", started.elapsed());
    until_forecast(&served, "soon-a").await;
    until_forecast(&served, "soon-b").await;
    eventually(ROUND_PATIENCE, "spent's alert raised", || async {
        let spent = served.sequence("spent").await;
        spent["alerts"]["raised"] != json!([])
    })
    .await;
    api_timings(&served, count + 3).await;

    let browser = Browser::start(&served.address()).await;
    browser.sign_in(ADMIN_TOKEN).await;
    // As the page prints it: grouped in the browser's locale ("10,003").
    let script = format!(
        "return new Intl.NumberFormat(undefined, {{ maximumFractionDigits: 0 }}).format({})",
        count + 3
    );
    let total = browser.script(&script).await.as_str().unwrap().to_owned();
    browser.text_of("#shown", &format!("1–50 of {total}")).await;
    let names = browser.all("table.sequences tbody th a").await;
    let mut first = Vec::new();
    for link in names.iter().take(3) {
        first.push(link.text().await.unwrap());
    }
    assert_eq!(first, ["spent", "soon-a", "soon-b"]);
    browser
        .text_of("table.sequences tbody tr", "Few values left")
        .await;

    browser.click(".pager button:last-child").await;
    browser
        .text_of("#shown", &format!("51–100 of {total}"))
        .await;
    browser.fill("#filter", "soon").await;
    browser.text_of("#shown", "1–2 of 2").await;

    // Fresh loads, as a person opening the console: the browser's own measure.
    let shown = format!("of {total}");
    let overview = Page::new("#/", "#shown", &shown, "overview");
    overview.time_fresh_loads(&browser, &total).await;
    let sequence = Page::new(
        "#/sequences/soon-a",
        ".timeline",
        "seqvend_ranges.",
        "sequence",
    );
    sequence.time_fresh_loads(&browser, &total).await;
    let last_token = make_tokens(&served, count / 10).await;
    let tokens = Page::new("#/tokens", "table.tokens", &last_token, "tokens");
    tokens.time_fresh_loads(&browser, &total).await;

    // The first request after a restart: the reading taken at start is read by then, or is
    // being read (a request racing it waits for it, and for nothing else).
    let ready_in = served.seqvend.kill_and_restart().await;
    let started = std::time::Instant::now();
    let page = until_overview(&served).await;
    eprintln!(
        "restarted (ready in {ready_in:?}): the first GET /overview answered after {:?}, as of {}",
        started.elapsed(),
        page["as_of"]
    );
    overview.time_fresh_loads(&browser, &total).await;
}

/// A console page to time: where it is, what shows once it is drawn, and the mark its
/// script sets then (`<name>-interactive`).
struct Page<'a> {
    hash: &'a str,
    css: &'a str,
    expected: &'a str,
    name: &'a str,
}

impl<'a> Page<'a> {
    fn new(hash: &'a str, css: &'a str, expected: &'a str, name: &'a str) -> Self {
        Self {
            hash,
            css,
            expected,
            name,
        }
    }

    /// Three fresh loads, as a person opening the page: the time to interactive the browser
    /// itself recorded, from the start of navigation.
    async fn time_fresh_loads(&self, browser: &Browser, total: &str) {
        browser.open(self.hash).await;
        browser.text_of(self.css, self.expected).await;
        for _ in 0..3 {
            browser.client.refresh().await.unwrap();
            browser.text_of(self.css, self.expected).await;
            let script = format!(
                "return performance.getEntriesByName('{}-interactive')[0].startTime",
                self.name
            );
            let interactive = browser.script(&script).await;
            eprintln!(
                "{} page interactive after {interactive} ms with {total} sequences",
                self.name
            );
        }
    }
}

/// `count` read-only tokens made through the API, two at a time (a 503 — the registry pool
/// busy with the usage rounds every second and the overview's readings — is retried, as a
/// client would); the last one's name.
async fn make_tokens(served: &Served, count: usize) -> String {
    let name = |i: usize| format!("bench-token-{i:05}");
    futures_util::stream::iter(0..count)
        .map(|i| async move {
            let body = json!({"name": name(i), "scopes": ["read:*"]});
            eventually(Duration::from_secs(60), "a token made", || async {
                let address = served.address();
                let body = Some(body.clone());
                let (status, answer) = admin(&address, Method::POST, "/tokens", body).await;
                assert!(
                    [StatusCode::CREATED, StatusCode::SERVICE_UNAVAILABLE].contains(&status),
                    "{answer}"
                );
                status == StatusCode::CREATED
            })
            .await
        })
        .buffer_unordered(2)
        .for_each(|_| async {})
        .await;
    name(count.max(1) - 1)
}

/// The first page of the overview, once answered (a request past its deadline is answered
/// 503 and the reading goes on for the next).
async fn until_overview(served: &Served) -> serde_json::Value {
    let http = reqwest::Client::new();
    let url = format!("{}/overview?limit=50", served.address());
    eventually_some(Duration::from_secs(120), "an overview", || async {
        let response = http.get(&url).bearer_auth(ADMIN_TOKEN).send().await.ok()?;
        if response.status() != StatusCode::OK {
            return None;
        }
        response.json().await.ok()
    })
    .await
}

/// The overview's first page and its median against the plain list's, for the benchmark,
/// once the overview holds all `total` sequences: the bulk was made after the reading taken
/// at start, and far more than the overview re-reads per request, so they show with the
/// first reading taken after them (meanwhile the kept one is answered, with its time).
async fn api_timings(served: &Served, total: usize) {
    let http = reqwest::Client::new();
    let started = std::time::Instant::now();
    eventually(
        Duration::from_secs(120),
        "a reading of every sequence",
        || async { until_overview(served).await["total"] == total },
    )
    .await;
    eprintln!(
        "GET /overview?limit=50 held all {total} sequences {:?} after they were made",
        started.elapsed()
    );
    for path in ["/overview?limit=50", "/sequences?limit=50", "/whoami"] {
        let mut took = Vec::new();
        for _ in 0..7 {
            let started = std::time::Instant::now();
            let response = http
                .get(format!("{}{path}", served.address()))
                .bearer_auth(ADMIN_TOKEN)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            response.bytes().await.unwrap();
            took.push(started.elapsed());
        }
        took.sort();
        eprintln!("GET {path}: median {:?}, slowest {:?}", took[3], took[6]);
    }
}
