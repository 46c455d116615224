//! `seqvend serve` as a real process: started on a free port with the test tokens, ready when
//! `/readyz` says so, killed and restarted as a crash would.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::wait::{eventually, eventually_some};
use super::{ADMIN_TOKEN, VEND_TOKEN};

/// The seqvend binary cargo built for these tests.
pub const BINARY: &str = env!("CARGO_BIN_EXE_seqvend");

/// A port nobody listens on now, for a process to bind, and no client connection of the
/// tests can take before it does (see `seqvend::local_pg::free_port`).
pub fn free_port() -> u16 {
    seqvend::local_pg::free_port().unwrap()
}

/// Waits (up to 60 s) until the seqvend `child` serving at `address` answers `/readyz` with
/// 200; fails at once if it exits first.
pub async fn wait_ready(child: &mut Child, address: &str) {
    let http = reqwest::Client::new();
    eventually(Duration::from_secs(60), "seqvend serve is ready", || {
        assert!(
            child.try_wait().unwrap().is_none(),
            "seqvend exited during startup"
        );
        let request = http.get(format!("{address}/readyz")).send();
        async move { request.await.is_ok_and(|r| r.status() == StatusCode::OK) }
    })
    .await
}

/// Waits (up to 60 s) until the seqvend `child` serving at `address` answers `/readyz` with
/// 200 (true) or exits (false).
async fn ready_or_exited(child: &mut Child, address: &str) -> bool {
    let http = reqwest::Client::new();
    eventually_some(
        Duration::from_secs(60),
        "seqvend serve is ready or exited",
        || {
            let exited = child.try_wait().unwrap().is_some();
            let request = http.get(format!("{address}/readyz")).send();
            async move {
                if exited {
                    return Some(false);
                }
                request
                    .await
                    .is_ok_and(|r| r.status() == StatusCode::OK)
                    .then_some(true)
            }
        },
    )
    .await
}

/// One `seqvend serve` process on a database of the test's, killed when dropped.
pub struct Seqvend {
    child: Child,
    pub port: u16,
    database_url: String,
    env: Vec<(String, String)>,
}

impl Seqvend {
    /// Serves `database_url` with the test tokens, one worker, and `env` on top (which may
    /// replace any of them); returns once ready.
    pub async fn start(database_url: &str, env: &[(&str, &str)]) -> Self {
        let port = free_port();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut seqvend = Self {
            child: spawn(database_url, port, &env),
            port,
            database_url: database_url.into(),
            env,
        };
        let address = seqvend.address();
        wait_ready(&mut seqvend.child, &address).await;
        seqvend
    }

    pub fn address(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// SIGKILL, then a new process on the same port; returns how long until it was ready.
    pub async fn kill_and_restart(&mut self) -> Duration {
        self.kill();
        self.restart().await
    }

    /// SIGKILL: the process vanishes without handing back what it holds.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// A new process on the same port (after `kill`); returns how long until it was ready.
    /// One that exits during startup (PostgreSQL down or slow to accept a connection: it exits
    /// when it cannot migrate) is started again, as a supervisor would, for up to 60 s.
    pub async fn restart(&mut self) -> Duration {
        let started = Instant::now();
        let address = self.address();
        loop {
            self.child = spawn(&self.database_url, self.port, &self.env);
            if ready_or_exited(&mut self.child, &address).await {
                return started.elapsed();
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "seqvend kept exiting during startup for 60 s"
            );
        }
    }

    /// Resident memory in kB.
    pub fn rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap()
    }
}

impl Drop for Seqvend {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(database_url: &str, port: u16, env: &[(String, String)]) -> Child {
    let log = std::env::var_os("TEST_LOG").is_some();
    Command::new(BINARY)
        .arg("serve")
        .env("DATABASE_URL", database_url)
        .env("SEQVEND_LISTEN", format!("127.0.0.1:{port}"))
        .env("SEQVEND_ADMIN_TOKENS", ADMIN_TOKEN)
        .env("SEQVEND_VEND_TOKENS", VEND_TOKEN)
        .env("SEQVEND_WORKERS", "1")
        .env("RUST_LOG", if log { "info" } else { "error" })
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(if log { Stdio::inherit() } else { Stdio::null() })
        .spawn()
        .expect("seqvend starts")
}

/// An admin call to the seqvend at `address`: the status and the JSON body (null if none).
pub async fn admin(
    address: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{address}{path}"))
        .bearer_auth(ADMIN_TOKEN);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Creates `name` over `ranges` (the first given at creation, the others added) at the
/// seqvend at `address`, and checks it worked.
pub async fn create(address: &str, name: &str, ranges: &[(i64, i64)]) {
    let (first, rest) = ranges.split_first().unwrap();
    let (status, body) = admin(
        address,
        reqwest::Method::POST,
        "/sequences",
        Some(json!({"name": name, "min": first.0, "max": first.1})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    for (min, max) in rest {
        let path = format!("/sequences/{name}/ranges");
        let (status, body) = admin(
            address,
            reqwest::Method::POST,
            &path,
            Some(json!({"min": min, "max": max})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
}
