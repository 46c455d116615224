//! A PgBouncer of a test's own, in transaction mode in front of the API tests' shared
//! cluster (scripts/pgbouncer.sh, deploy/pgbouncer/pgbouncer.ini), stopped when dropped; and
//! a seqvend instance that reaches PostgreSQL through it.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use seqvend::settings::{DirectUrl, Settings};

use crate::common::process::free_port;
use crate::helpers::{scratch_dir, spawn_app_on, test_settings, TestApp, TestDb, ADMIN_TOKEN};

pub struct Bouncer {
    dir: PathBuf,
    pub port: u16,
    /// The URL PgBouncer was put in front of.
    postgres_url: String,
}

impl Bouncer {
    /// A PgBouncer in front of the server of `postgres_url`, answering.
    pub fn start(postgres_url: &str) -> Self {
        Self::start_with(postgres_url, "")
    }

    /// The same, with `extra` appended to its configuration.
    pub fn start_with(postgres_url: &str, extra: &str) -> Self {
        let (dir, port) = (scratch_dir("pgbouncer"), free_port());
        let started = script()
            .args([
                "start",
                dir.to_str().unwrap(),
                postgres_url,
                &port.to_string(),
            ])
            .env("PGBOUNCER_EXTRA", extra)
            .output()
            .expect("scripts/pgbouncer.sh ran");
        assert!(
            started.status.success(),
            "PgBouncer did not start: {}",
            String::from_utf8_lossy(&started.stderr)
        );
        Self {
            dir,
            port,
            postgres_url: postgres_url.to_owned(),
        }
    }

    /// `database_url`'s database, through this PgBouncer.
    pub fn url_for(&self, database_url: &str) -> String {
        self.url_to(database_of(database_url))
    }

    /// `database` through this PgBouncer, as the user of the URL it was put in front of.
    fn url_to(&self, database: &str) -> String {
        let (user, _) = self
            .postgres_url
            .split_once('@')
            .expect("a postgres://user:password@host:port/db URL");
        format!("{user}@127.0.0.1:{}/{database}", self.port)
    }

    /// Stops PgBouncer and starts it again on the same port: every client connection breaks.
    pub fn restart(&self) {
        run_script(&["restart", self.dir.to_str().unwrap()], "");
    }

    /// A session on PgBouncer's admin console.
    pub async fn console(&self) -> tokio_postgres::Client {
        crate::common::cluster::connect(&self.url_to("pgbouncer")).await
    }

    /// Transactions PgBouncer has passed on to `database` so far (`SHOW STATS`).
    pub async fn transactions(&self, database: &str) -> u64 {
        let counts = self.show("STATS", database, "total_xact_count").await;
        counts.first().and_then(|c| c.parse().ok()).unwrap_or(0)
    }

    /// The PostgreSQL backends of PgBouncer's server connections to `database`.
    pub async fn server_pids(&self, database: &str) -> Vec<i32> {
        let pids = self.show("SERVERS", database, "remote_pid").await;
        pids.iter().filter_map(|pid| pid.parse().ok()).collect()
    }

    /// Column `column` of the rows about `database` in the console's `SHOW what`.
    async fn show(&self, what: &str, database: &str, column: &str) -> Vec<String> {
        let console = self.console().await;
        let rows = console.simple_query(&format!("SHOW {what}")).await.unwrap();
        rows.iter()
            .filter_map(|message| match message {
                tokio_postgres::SimpleQueryMessage::Row(row)
                    if row.get("database") == Some(database) =>
                {
                    row.get(column).map(str::to_owned)
                }
                _ => None,
            })
            .collect()
    }
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        let _ = script().args(["stop", self.dir.to_str().unwrap()]).status();
    }
}

fn script() -> Command {
    Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/pgbouncer.sh"))
}

/// Runs scripts/pgbouncer.sh with `args` (and `extra` configuration) and insists it worked.
fn run_script(args: &[&str], extra: &str) {
    let out = script()
        .args(args)
        .env("PGBOUNCER_EXTRA", extra)
        .output()
        .expect("scripts/pgbouncer.sh ran");
    assert!(
        out.status.success(),
        "scripts/pgbouncer.sh {}: {}",
        args[0],
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The database a URL names.
pub fn database_of(url: &str) -> &str {
    url.rsplit('/').next().unwrap().split('?').next().unwrap()
}

/// Two server connections for everything seqvend sends through PgBouncer: concurrent
/// clients' transactions take turns on them, so a statement that outlived its transaction, or
/// was split across two server connections, meets another client's.
const SMALL_SERVER_POOL: &str = "default_pool_size = 2";

/// How long an instance under test may take to connect (to PgBouncer) on a loaded machine.
const PATIENT_CONNECT: Duration = Duration::from_secs(5);

/// `settings` for an instance whose vend and registry pools go through a pooler (found out at
/// startup, as by default) while its listener and migrations use `direct`.
pub fn behind_pooler(mut settings: Settings, direct: &TestDb) -> Settings {
    settings.database.direct_url = Some(DirectUrl(direct.url.clone()));
    settings
}

/// A fresh database, a PgBouncer in front of it and a seqvend instance through it.
pub struct Pooled {
    pub app: TestApp,
    pub bouncer: Bouncer,
    pub db: TestDb,
}

impl Pooled {
    pub async fn start(settings: Settings) -> Self {
        Self::start_on(TestDb::shared().await, settings).await
    }

    /// The same on `db`, e.g. a database in a cluster of the test's own, with room for a
    /// loaded machine to connect through PgBouncer (these tests are not about connect
    /// timeouts).
    pub async fn start_on(db: TestDb, mut settings: Settings) -> Self {
        settings.database.connect_timeout = settings.database.connect_timeout.max(PATIENT_CONNECT);
        let bouncer = Bouncer::start_with(&db.url, SMALL_SERVER_POOL);
        let pooled = TestDb {
            url: bouncer.url_for(&db.url),
        };
        let app = spawn_app_on(&pooled, behind_pooler(settings, &db)).await;
        Self { app, bouncer, db }
    }

    /// With the API tests' settings.
    pub async fn with_test_settings() -> Self {
        Self::start(test_settings()).await
    }

    /// Creates the counter family `name` with the default parameters.
    pub async fn create_family(&self, name: &str) {
        let body = serde_json::json!({ "name": name });
        let reply = self
            .app
            .request(Method::POST, "/families", Some(ADMIN_TOKEN), Some(body))
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    }

    /// Transactions PgBouncer has passed on to this test's database so far.
    pub async fn pooled_transactions(&self) -> u64 {
        self.bouncer.transactions(database_of(&self.db.url)).await
    }

    /// The backends serving this test's database through PgBouncer.
    pub async fn pooled_backends(&self) -> Vec<i32> {
        self.bouncer.server_pids(database_of(&self.db.url)).await
    }
}
