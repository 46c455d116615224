//! The API tests' harness: the PostgreSQL cluster they share, a fresh database per test,
//! seqvend applications served in-process over real TCP, and typed request helpers. What every
//! test binary shares (clusters of a test's own, processes, waits) comes from `tests/common`.
//! Set TEST_LOG=1 to see seqvend's logs.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use seqvend::ids::Clock;
use seqvend::local_pg::LocalCluster;
use seqvend::settings::BootstrapTokens as Tokens;
use seqvend::settings::{
    CacheSettings, DatabaseSettings, IdSettings, Settings, VendSettings, WatchSettings,
};
use seqvend::startup::Application;
use serde_json::{json, Value};

pub use crate::common::carrier_vectors::vectors;
pub use crate::common::cluster::Pg;
pub use crate::common::scratch::scratch_dir;
pub use crate::common::values::{increasing, stderr, worker_of};
pub use crate::common::wait::{
    eventually, eventually_some, sessions_blocked, until_blocked,
    until_retirement_waits_then_commit, within, Blocked,
};
pub use crate::common::{ADMIN_TOKEN, VEND_TOKEN};

/// The longest a test waits for an instance to start: beyond the bounds `Application::build`
/// gives each of its steps, so that a step that does not end fails naming itself.
const STARTUP_PATIENCE: Duration = Duration::from_secs(180);

/// The longest a test waits for an instance to stop: a graceful stop lets the requests in
/// flight finish (actix gives them 30 s), then hands back what the instance holds (5 s).
const STOP_PATIENCE: Duration = Duration::from_secs(90);

/// The longest a request of the harness's client may take: beyond any wait a test means a
/// request to make (some hold one on a lock or a synchronous standby for up to 60 s).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(180);

/// How long the harness's client reuses an idle connection: well within the 5 s after which
/// actix closes one (its default keep-alive). A request sent on a connection just as the
/// server closes it fails (`IncompleteMessage`), which a loaded machine made happen.
const IDLE_CONNECTION_REUSE: Duration = Duration::from_secs(2);

/// The cluster most tests share; each test gets its own database in it.
fn shared_cluster() -> &'static LocalCluster {
    static CLUSTER: OnceLock<LocalCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let cluster = LocalCluster::open(&scratch_dir("shared"), &[]).expect("cluster prepared");
        cluster.start().expect("cluster started");
        cluster
    })
}

pub fn init_logging() {
    if std::env::var_os("TEST_LOG").is_some() {
        seqvend::telemetry::init(false);
    }
}

pub fn test_settings() -> Settings {
    Settings {
        database_url: None,
        data_dir: PathBuf::new(),
        listen: "127.0.0.1:0".parse().unwrap(),
        metrics_listen: None,
        workers: 2,
        tokens: Tokens::new(ADMIN_TOKEN, VEND_TOKEN, false),
        log_json: false,
        database: DatabaseSettings {
            vend_pool_size: 4,
            admin_pool_size: 4,
            // Many tests hold a vend statement on a range's lock until they let it go; the
            // lock timeout has tests of its own (never_twice.rs), which set it.
            lock_timeout: Duration::ZERO,
            ..Default::default()
        },
        // Tests are about what is vended, not how fast: on a loaded machine a slow answer must
        // not turn into a 503. Tests of the deadlines set their own.
        vend: patient_vend_settings(),
        // One usage round at start, then none a test would see: a round raises alerts and
        // records events, which tests of event logs must not find by chance. Tests of the
        // rounds set their own interval.
        watch: WatchSettings {
            interval: Duration::from_secs(3600),
            sweep: Duration::from_secs(3600),
            metrics_sequences: 10_000,
        },
        ids: IdSettings::default(),
        cache: CacheSettings::default(),
        console: true,
    }
}

/// Test settings with short worker-id leases, so that tests see them lapse and expire.
pub fn short_leases(lease_ms: u64) -> Settings {
    let mut settings = test_settings();
    settings.ids.lease = Duration::from_millis(lease_ms);
    settings.ids.renew_every = Duration::from_millis(lease_ms / 5);
    settings
}

/// Vend settings for tests: the defaults, with a deadline no loaded machine reaches.
pub fn patient_vend_settings() -> VendSettings {
    VendSettings {
        deadline: Duration::from_secs(30),
        ..Default::default()
    }
}

/// A database of its own in `cluster`, migrated by the first application started on it.
pub struct TestDb {
    pub url: String,
}

impl TestDb {
    pub async fn create(cluster: &LocalCluster) -> Self {
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        let create = seqvend::local_pg::ensure_database(cluster, &name);
        within(STARTUP_PATIENCE, "creating the test's database", create)
            .await
            .expect("database created");
        Self {
            url: cluster.url(&name),
        }
    }

    pub async fn shared() -> Self {
        Self::create(shared_cluster()).await
    }

    /// A real psql session on this database (quiet, unaligned, tuples only), the way a DBA
    /// or another application reaches it.
    pub fn psql(&self) -> std::process::Command {
        let mut psql = std::process::Command::new(shared_cluster().bin_dir().join("psql"));
        psql.args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            &self.url,
        ]);
        psql
    }

    /// A plain connection for looking behind seqvend's back.
    pub async fn connect(&self) -> tokio_postgres::Client {
        crate::common::cluster::connect(&self.url).await
    }
}

/// One running seqvend instance.
pub struct TestApp {
    pub address: String,
    /// Where `/metrics` is served: `address` unless it was given its own listener.
    pub metrics_address: String,
    pub http: reqwest::Client,
    handle: actix_web::dev::ServerHandle,
    /// Serves, then hands back what the instance holds once the server stops.
    running: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        tokio::spawn(async move { handle.stop(false).await });
    }
}

/// A fresh database and one seqvend instance on it.
pub async fn spawn_app() -> TestApp {
    let db = TestDb::shared().await;
    spawn_app_on(&db, test_settings()).await
}

pub async fn spawn_app_on(db: &TestDb, settings: Settings) -> TestApp {
    spawn_app_with_clock(db, settings, Clock::system()).await
}

/// An instance whose ids are stamped by `clock`, which the test may step.
pub async fn spawn_app_with_clock(db: &TestDb, settings: Settings, clock: Clock) -> TestApp {
    init_logging();
    let build = Application::build_with_clock(&settings, &db.url, clock);
    let app = within(STARTUP_PATIENCE, "building the application", build)
        .await
        .expect("application built");
    let address = format!("http://127.0.0.1:{}", app.port());
    let metrics_address = app.metrics_port().map_or_else(
        || address.clone(),
        |port| format!("http://127.0.0.1:{port}"),
    );
    let handle = app.handle();
    let running = tokio::spawn(app.run_until_stopped());
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .pool_idle_timeout(IDLE_CONNECTION_REUSE)
        .timeout(REQUEST_TIMEOUT)
        .build()
        .unwrap();
    TestApp {
        address,
        metrics_address,
        http,
        handle,
        running,
    }
}

/// A response's status, headers and JSON body.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Reply {
    pub async fn from(response: reqwest::Response) -> Self {
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body read");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    /// The stable error code of an error body.
    pub fn code(&self) -> &str {
        self.body["error"]
            .as_str()
            .unwrap_or_else(|| panic!("not an error body: {}", self.body))
    }

    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(
            (self.status.as_u16(), self.code()),
            (status, code),
            "body: {}",
            self.body
        );
        assert!(
            self.body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "an error needs a message: {}",
            self.body
        );
    }
}

impl TestApp {
    /// Stops serving, the way SIGTERM does: what the instance holds (its worker id, its cached
    /// leases) is handed back after the server stops; `stopped` waits for that too.
    pub async fn stop(&self) {
        within(
            STOP_PATIENCE,
            "stopping the server",
            self.handle.stop(false),
        )
        .await;
    }

    /// Stops serving and waits until the instance has handed back what it holds.
    pub async fn stopped(mut self) {
        self.stop().await;
        let handed_back = &mut self.running;
        let what = "the stopped instance handing back what it holds";
        within(STOP_PATIENCE, what, handed_back)
            .await
            .expect("ran")
            .expect("served");
    }

    /// Vanishes the way a killed process does: stops serving without handing back anything
    /// it holds (its worker id and cached leases are left to expire). Returns once the
    /// instance is gone: its listener closed, its background tasks ended.
    pub async fn abandon(&self) {
        self.running.abort();
        self.stop().await;
        let what = "the abandoned instance's task ending";
        eventually(STOP_PATIENCE, what, || async { self.running.is_finished() }).await;
    }

    pub async fn request(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut request = self.http.request(method, format!("{}{path}", self.address));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        Reply::from(request.send().await.expect("request sent")).await
    }

    /// A POST with an `Idempotency-Key`: the reply, and whether it says it is a replay.
    pub async fn keyed_post(&self, path: &str, key: &str, token: &str) -> (Reply, bool) {
        let response = self
            .http
            .post(format!("{}{path}", self.address))
            .bearer_auth(token)
            .header("Idempotency-Key", key)
            .send()
            .await
            .expect("request sent");
        let replayed = response
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true");
        (Reply::from(response).await, replayed)
    }

    /// A run-time token with `scopes`, made by the bootstrap admin: its id and secret.
    pub async fn create_token(&self, name: &str, scopes: &[&str]) -> (i64, String) {
        let reply = self
            .request(
                Method::POST,
                "/tokens",
                Some(ADMIN_TOKEN),
                Some(json!({"name": name, "scopes": scopes})),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        let secret = reply.body["token"].as_str().unwrap().to_owned();
        (reply.body["id"].as_i64().unwrap(), secret)
    }

    pub async fn create(&self, body: Value) -> Reply {
        self.request(Method::POST, "/sequences", Some(ADMIN_TOKEN), Some(body))
            .await
    }

    /// POST /sequences with a body sent as is.
    pub async fn create_raw(&self, body: &str) -> Reply {
        let request = self
            .http
            .post(format!("{}/sequences", self.address))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/json")
            .body(body.to_owned());
        Reply::from(request.send().await.expect("request sent")).await
    }

    /// Creates `name` over [min, max] and checks it worked.
    pub async fn create_ok(&self, name: &str, min: i64, max: i64) -> Value {
        let reply = self
            .create(json!({"name": name, "min": min, "max": max}))
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        reply.body
    }

    pub async fn add_range(&self, name: &str, min: i64, max: i64) -> Reply {
        let path = format!("/sequences/{name}/ranges");
        self.request(
            Method::POST,
            &path,
            Some(ADMIN_TOKEN),
            Some(json!({"min": min, "max": max})),
        )
        .await
    }

    /// Adds [min, max] to `name` and checks it worked.
    pub async fn add_range_ok(&self, name: &str, min: i64, max: i64) -> Value {
        let reply = self.add_range(name, min, max).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        reply.body
    }

    /// Creates a sequence from `body` as is (an increment, a cache...) and checks it worked.
    pub async fn create_body_ok(&self, body: Value) -> Value {
        let reply = self.create(body).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        reply.body
    }

    pub async fn get(&self, name: &str) -> Reply {
        self.request(
            Method::GET,
            &format!("/sequences/{name}"),
            Some(VEND_TOKEN),
            None,
        )
        .await
    }

    pub async fn retire(&self, name: &str) -> Reply {
        self.request(
            Method::DELETE,
            &format!("/sequences/{name}"),
            Some(ADMIN_TOKEN),
            None,
        )
        .await
    }

    pub async fn next(&self, name: &str) -> Reply {
        self.request(
            Method::POST,
            &format!("/sequences/{name}/next"),
            Some(VEND_TOKEN),
            None,
        )
        .await
    }

    pub async fn next_batch(&self, name: &str, count: u32) -> Reply {
        let path = format!("/sequences/{name}/next?count={count}");
        self.request(Method::POST, &path, Some(VEND_TOKEN), None)
            .await
    }

    /// The Prometheus metrics, as text.
    pub async fn scrape(&self) -> String {
        self.http
            .get(format!("{}/metrics", self.metrics_address))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// A seqvend-client of this instance, patient enough for a loaded machine: tests of
    /// timeouts build their own.
    pub fn client(&self) -> seqvend_client::Client {
        seqvend_client::Client::builder(&self.address, VEND_TOKEN)
            .wait_timeout(Duration::from_secs(30))
            .build()
            .expect("client built")
    }

    /// The single value of a successful `next`.
    pub async fn next_value(&self, name: &str) -> i64 {
        let reply = self.next(name).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        reply.body["value"].as_i64().unwrap()
    }
}

/// The values of a batch reply.
pub fn values_of(reply: &Reply) -> Vec<i64> {
    reply.body["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect()
}

/// Every value `reply` carries (single or batch); none for an error.
pub fn carried_values(reply: &Reply) -> Vec<i64> {
    if reply.status != StatusCode::OK {
        return Vec::new();
    }
    match reply.body.get("value") {
        Some(v) => vec![v.as_i64().unwrap()],
        None => values_of(reply),
    }
}

/// Asserts no value repeats and returns them as a set.
pub fn assert_unique(values: &[i64]) -> HashSet<i64> {
    let set: HashSet<i64> = values.iter().copied().collect();
    assert_eq!(
        set.len(),
        values.len(),
        "{} values were vended twice",
        values.len() - set.len()
    );
    set
}

/// A WARNING that reaches sqlx outside any durable commit (as other tests' may, in the same
/// process), after the instance's first durable commit: the notice call site's `tracing`
/// interest is then settled where no catcher listens, and must not stay deaf to the catcher.
/// A bare sqlx connection on purpose: it must reach sqlx's notice call site, not seqvend's.
#[allow(clippy::disallowed_types)]
pub async fn a_warning_outside_any_durable_commit(url: &str) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::raw_sql("DO $$ BEGIN RAISE WARNING 'a warning outside any durable commit'; END $$")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
}

/// Cancels every commit of this database waiting for a synchronous standby; how many.
pub async fn cancel_commits_waiting_for_the_standby(dba: &tokio_postgres::Client) -> i64 {
    dba.query_one(
        "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity \
         WHERE datname = current_database() AND wait_event = 'SyncRep'",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// Drops the synchronous standby a test named, and lets every commit still waiting for it go.
pub async fn forget_the_absent_standby(dba: &tokio_postgres::Client) {
    dba.batch_execute("ALTER SYSTEM RESET synchronous_standby_names")
        .await
        .unwrap();
    dba.batch_execute("SELECT pg_reload_conf()").await.unwrap();
    cancel_commits_waiting_for_the_standby(dba).await;
}
