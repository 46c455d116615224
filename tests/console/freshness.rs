//! How fresh the overview is, and that nobody waits for it: a reading is taken at start with no
//! request asking, a kept reading is answered (with its time) while a newer one is taken,
//! and an operator's own change shows on their next view even while no new reading can be
//! taken. Readings are held back by an open `ALTER SEQUENCE` on the range's sequence of a
//! retired sequence (its lock stops `pg_sequence_last_value`), which `pg_stat_activity` shows
//! them waiting on: retired, so that only the overview reads it, not the usage rounds.

use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::browser::Browser;
use crate::common::wait::{eventually, eventually_some, sessions_blocked, until_blocked, Blocked};
use crate::common::ADMIN_TOKEN;
use crate::setup::Served;

/// The overview's reading statement, as `pg_stat_activity` shows it (the patch of changed
/// sequences runs it too, but never over the held sequence: it has not changed).
const READING: &str = "%name = ANY($4)%";

/// A blocked reading stays blocked until the test lets it go, however loaded the machine.
const PATIENT: [(&str, &str); 1] = [("SEQVEND_STATEMENT_TIMEOUT_MS", "120000")];

/// `GET /overview?q={filter}`; a caller kept waiting for a reading fails the test instead of
/// hanging it.
async fn overview(served: &Served, filter: &str) -> Value {
    let response = reqwest::Client::new()
        .get(format!("{}/overview?q={filter}", served.address()))
        .bearer_auth(ADMIN_TOKEN)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("GET /overview answered without waiting for a reading");
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

fn as_of(page: &Value) -> DateTime<Utc> {
    page["as_of"].as_str().unwrap().parse().unwrap()
}

/// The overview's row for `name`.
async fn row(served: &Served, name: &str) -> Value {
    let page = overview(served, name).await;
    let rows = page["sequences"].as_array().unwrap();
    rows.iter()
        .find(|row| row["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not in the overview: {page}"))
        .clone()
}

/// The PostgreSQL sequence of `name`'s first range.
async fn range_sequence(served: &Served, name: &str) -> String {
    let sequence = served.sequence(name).await;
    sequence["ranges"][0]["pg_sequence"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A session holding `pg_sequence`'s lock in an open `ALTER SEQUENCE` until `let_go`.
struct Holder(tokio_postgres::Client);

impl Holder {
    async fn hold(served: &Served, pg_sequence: &str) -> Self {
        let session = served.pg.connect().await;
        let sql = format!("BEGIN; ALTER SEQUENCE {pg_sequence} NO CYCLE");
        session.batch_execute(&sql).await.unwrap();
        Self(session)
    }

    async fn let_go(self) {
        self.0.batch_execute("ROLLBACK").await.unwrap();
    }
}

/// Stamps every sequence and range as changed an hour ago, so that none counts as changed
/// since a reading the test waits for.
async fn as_if_changed_an_hour_ago(served: &Served) {
    let session = served.pg.connect().await;
    session
        .batch_execute(
            "UPDATE seqvend.sequences SET updated_at = updated_at - interval '1 hour';
             UPDATE seqvend.ranges SET updated_at = updated_at - interval '1 hour';",
        )
        .await
        .unwrap();
}

/// `name`, used once (so its position is read through `pg_sequence_last_value`) and retired.
async fn used_and_retired(served: &Served, name: &str) {
    served.plain(name, 1, 1000).await;
    served.vend(name, 1).await;
    let path = format!("/sequences/{name}");
    served
        .call(Method::DELETE, &path, None, StatusCode::OK)
        .await;
}

/// A seqvend whose every reading from now on waits on the range of `held` (used and
/// retired), with a reading kept from before: the kept reading's page, and the session
/// holding the lock.
async fn readings_held_back(served: &Served, held: &str) -> (Value, Holder) {
    used_and_retired(served, held).await;
    as_if_changed_an_hour_ago(served).await;
    eventually(
        Duration::from_secs(60),
        "a reading with the sequences",
        || async { overview(served, held).await["total"] == 1 },
    )
    .await;
    let holder = Holder::hold(served, &range_sequence(served, held).await).await;
    let observer = served.pg.connect().await;
    let kept = eventually_some(Duration::from_secs(60), "a reading held back", || async {
        let page = overview(served, "").await;
        let held_back = sessions_blocked(&observer, Blocked::OnALock, READING).await > 0;
        held_back.then_some(page)
    })
    .await;
    (kept, holder)
}

/// The database's clock, which stamps the overview's readings.
async fn database_now(session: &tokio_postgres::Client) -> DateTime<Utc> {
    let sql = r#"SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"#;
    let now: String = session.query_one(sql, &[]).await.unwrap().get(0);
    now.parse().unwrap()
}

#[tokio::test]
async fn the_overview_is_read_at_start_before_anyone_asks() {
    let mut served = Served::start("console-read-at-start", &PATIENT).await;
    used_and_retired(&served, "parcels").await;
    let held = range_sequence(&served, "parcels").await;
    served.seqvend.kill();
    let holder = Holder::hold(&served, &held).await;
    served.seqvend.restart().await;
    // No request has asked for the overview: the reading waiting here began at start.
    let observer = served.pg.connect().await;
    until_blocked(&observer, 1, Blocked::OnALock, READING).await;
    let released_at = database_now(&observer).await;
    holder.let_go().await;

    let page = overview(&served, "").await;
    assert!(
        as_of(&page) < released_at,
        "the first overview answered from the reading taken at start, not one taken for it: {page}"
    );
    assert_eq!(page["total"], 1, "{page}");
}

#[tokio::test]
async fn a_kept_reading_is_answered_with_its_time_while_a_newer_one_is_taken() {
    let served = Served::start("console-stale", &PATIENT).await;
    let (kept, holder) = readings_held_back(&served, "held").await;
    let kept_as_of = as_of(&kept);

    // Answered at once, while the newer reading waits, and saying how old its figures are.
    let page = overview(&served, "").await;
    assert_eq!(as_of(&page), kept_as_of, "{page}");
    assert!(
        Utc::now() - kept_as_of >= chrono::Duration::seconds(1),
        "{page}"
    );
    let browser = Browser::start(&served.address()).await;
    browser.sign_in(ADMIN_TOKEN).await;
    browser.text_of("#as-of", "Figures as of").await;
    let shown = browser
        .script("return document.querySelector('#as-of time').getAttribute('datetime')")
        .await;
    let shown: DateTime<Utc> = shown.as_str().unwrap().parse().unwrap();
    // To the millisecond, a browser's `Date`.
    let off = (shown - kept_as_of).num_microseconds().unwrap().abs();
    assert!(
        off < 1000,
        "the page shows the kept reading's time: {shown}"
    );
    let hover = browser
        .script("return document.querySelector('#as-of time').title")
        .await;
    assert!(hover.as_str().unwrap().ends_with("(UTC)"), "{hover}");

    holder.let_go().await;
    eventually(Duration::from_secs(60), "a newer reading", || async {
        as_of(&overview(&served, "").await) > kept_as_of
    })
    .await;
}

#[tokio::test]
async fn an_operators_change_shows_on_their_next_view_while_no_new_reading_can_be_taken() {
    let served = Served::start("console-own-change", &PATIENT).await;
    served.plain("fedex-ground", 1, 100).await;
    served.vend("fedex-ground", 10).await;
    let (kept, holder) = readings_held_back(&served, "held").await;
    let before = row(&served, "fedex-ground").await;
    assert_eq!(before["capacity"], 100, "{before}");

    let path = "/sequences/fedex-ground";
    let range = json!({"min": 1001, "max": 2000});
    let ranges = format!("{path}/ranges");
    served
        .call(Method::POST, &ranges, Some(range), StatusCode::CREATED)
        .await;
    let after = row(&served, "fedex-ground").await;
    assert_eq!(after["capacity"], 1100, "the added range counts: {after}");
    assert_eq!(after["remaining"], 1090, "{after}");

    let cache = json!({"cache": {"size": 500}});
    served
        .call(Method::PATCH, path, Some(cache), StatusCode::OK)
        .await;
    assert_eq!(row(&served, "fedex-ground").await["cache_size"], 500);

    served
        .call(Method::DELETE, path, None, StatusCode::OK)
        .await;
    assert_eq!(row(&served, "fedex-ground").await["status"], "retired");

    served.plain("ups-new", 1, 50).await;
    assert_eq!(row(&served, "ups-new").await["capacity"], 50);
    // All of it from the kept reading, patched: no newer reading was taken meanwhile.
    let page = overview(&served, "").await;
    assert_eq!(as_of(&page), as_of(&kept), "{page}");
    holder.let_go().await;
}
