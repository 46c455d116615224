//! The Patroni cluster a test runs against: `scripts/patroni.sh` starts it (the same script
//! and configs an operator uses), this reads its `cluster.env`, asks Patroni's REST API who
//! leads, and injects the faults: signals to a node's Patroni, its PostgreSQL or etcd.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_postgres::config::TargetSessionAttrs;

use crate::common::scratch::scratch_dir;
use crate::common::wait::eventually_some;

pub struct Patroni {
    dir: PathBuf,
    env: HashMap<String, String>,
}

/// One member of the cluster as `/cluster` reports it.
#[derive(Clone, Debug)]
pub struct Member {
    pub name: String,
    pub role: String,
}

impl Patroni {
    /// Starts etcd and three nodes, and waits for a leader and a synchronous standby.
    pub fn start() -> Self {
        // Under /tmp-like scratch space: the cluster's user must be able to reach it.
        let dir = scratch_dir("patroni");
        let status = Command::new(script_path())
            .arg("start")
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success(), "scripts/patroni.sh start failed");
        let text = std::fs::read_to_string(dir.join("cluster.env")).unwrap();
        let env = text
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))
            .collect();
        Self { dir, env }
    }

    /// The multi-host URL seqvend is given: every node, `target_session_attrs=read-write`.
    pub fn database_url(&self) -> &str {
        &self.env["DATABASE_URL"]
    }

    pub fn nodes(&self) -> Vec<String> {
        self.env["NODES"].split(' ').map(str::to_owned).collect()
    }

    fn rest(&self, node: &str) -> String {
        format!(
            "http://127.0.0.1:{}",
            self.env[&format!("REST_PORT_{node}")]
        )
    }

    /// The members as the first answering node's `/cluster` says.
    pub async fn members(&self) -> Option<Vec<Member>> {
        let http = reqwest::Client::new();
        for node in self.nodes() {
            let reply = http
                .get(format!("{}/cluster", self.rest(&node)))
                .timeout(Duration::from_secs(1))
                .send()
                .await;
            let Ok(reply) = reply else { continue };
            let Ok(body) = reply.json::<Value>().await else {
                continue;
            };
            let members = body["members"].as_array()?.iter().map(|m| Member {
                name: m["name"].as_str().unwrap().to_owned(),
                role: m["role"].as_str().unwrap().to_owned(),
            });
            return Some(members.collect());
        }
        None
    }

    /// The node whose `/primary` answers 200 (Patroni's own check: it leads and its
    /// PostgreSQL runs as a primary), other than `except`.
    pub async fn primary_other_than(&self, except: Option<&str>) -> Option<String> {
        let http = reqwest::Client::new();
        for node in self.nodes() {
            if Some(node.as_str()) == except {
                continue;
            }
            let reply = http
                .get(format!("{}/primary", self.rest(&node)))
                .timeout(Duration::from_secs(1))
                .send()
                .await;
            if reply.is_ok_and(|r| r.status().is_success()) {
                return Some(node);
            }
        }
        None
    }

    /// Waits (up to `patience`) for a leader other than `except`; returns it.
    pub async fn until_new_leader(&self, except: Option<&str>, patience: Duration) -> String {
        eventually_some(patience, "Patroni has a (new) primary", || {
            self.primary_other_than(except)
        })
        .await
    }

    /// A session straight to `node`'s PostgreSQL as seqvend's role, read-write only, with
    /// commits that wait for the synchronous standby and are never cancelled by a timeout.
    pub fn node_config(&self, node: &str) -> tokio_postgres::Config {
        let url: tokio_postgres::Config = self.database_url().parse().unwrap();
        let port = self.env[&format!("PG_PORT_{node}")].parse().unwrap();
        let mut config = tokio_postgres::Config::new();
        config
            .host("127.0.0.1")
            .port(port)
            .user(url.get_user().unwrap())
            .password(url.get_password().unwrap())
            .dbname(url.get_dbname().unwrap())
            .application_name("patroni-test-probe")
            .target_session_attrs(TargetSessionAttrs::ReadWrite)
            .options("-c synchronous_commit=on -c statement_timeout=0");
        config
    }

    /// The leader and its synchronous standby, once the cluster is whole. Polled: Patroni may
    /// name the synchronous standby a loop after the cluster looked whole.
    pub async fn leader_and_sync(&self) -> (String, String) {
        self.wait_whole().await;
        eventually_some(
            Duration::from_secs(60),
            "Patroni names a leader and a synchronous standby",
            || async {
                let members = self.members().await?;
                let role = |r: &str| members.iter().find(|m| m.role == r).map(|m| m.name.clone());
                Some((role("leader")?, role("sync_standby")?))
            },
        )
        .await
    }

    /// Waits until the cluster is whole again: a leader, a synchronous standby, every node up.
    pub async fn wait_whole(&self) {
        self.run(&["wait"]).await;
    }

    /// `scripts/patroni.sh COMMAND DIR ARGS...`, which must succeed.
    async fn run(&self, args: &[&str]) {
        let (command, rest) = args.split_first().unwrap();
        let status = tokio::process::Command::new(script_path())
            .arg(command)
            .arg(&self.dir)
            .args(rest)
            .status()
            .await
            .unwrap();
        assert!(status.success(), "scripts/patroni.sh {args:?} failed");
    }

    /// `POST /switchover` on the leader's REST API; the answer's status and text.
    pub async fn switchover(&self, leader: &str, candidate: &str) -> (u16, String) {
        let reply = reqwest::Client::new()
            .post(format!("{}/switchover", self.rest(leader)))
            .json(&serde_json::json!({"leader": leader, "candidate": candidate}))
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .unwrap();
        (reply.status().as_u16(), reply.text().await.unwrap())
    }

    pub fn patroni_pid(&self, node: &str) -> u32 {
        read_pid(&self.dir.join(node).join("patroni.pid"))
    }

    /// The node's postmaster and its children (backends, walsender, checkpointer...).
    pub fn postgres_pids(&self, node: &str) -> Vec<u32> {
        let postmaster = read_pid(&self.dir.join(node).join("data/postmaster.pid"));
        let children = Command::new("pgrep")
            .args(["-P", &postmaster.to_string()])
            .output()
            .unwrap();
        let children = String::from_utf8(children.stdout).unwrap();
        std::iter::once(postmaster)
            .chain(children.lines().map(|l| l.parse().unwrap()))
            .collect()
    }

    /// Starts Patroni on `node` again (after its process was killed).
    pub async fn start_node(&self, node: &str) {
        self.run(&["node-start", node]).await;
    }

    pub async fn stop_etcd(&self) {
        self.run(&["etcd-stop"]).await;
    }

    pub async fn start_etcd(&self) {
        self.run(&["etcd-start"]).await;
    }

    /// Commits a write on `node` alone, with `synchronous_commit = local`: on a former leader
    /// still running as a primary (its Patroni dead), this makes its history diverge from the
    /// new leader's for certain, so that it must be rewound (or cloned) to rejoin.
    pub async fn diverge(&self, node: &str) {
        let mut config = self.node_config(node);
        config.options("-c synchronous_commit=local -c statement_timeout=10s");
        let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        let write = "CREATE TABLE IF NOT EXISTS patroni_divergence (at timestamptz); \
                     INSERT INTO patroni_divergence VALUES (now())";
        client.batch_execute(write).await.unwrap();
    }

    /// From its next start, `node`'s Patroni runs PostgreSQL's programs from a directory where
    /// `pg_rewind` answers `--help` and `--version` (so Patroni counts on it) and fails at
    /// anything else, as a rewind does when the WAL it needs is gone.
    pub fn make_rewind_fail(&self, node: &str) {
        let config_path = self.dir.join(node).join("patroni.yml");
        let config = std::fs::read_to_string(&config_path).unwrap();
        let bin_dir_line = config
            .lines()
            .find(|l| l.trim_start().starts_with("bin_dir:"))
            .unwrap();
        let (indent, real) = bin_dir_line.split_once("bin_dir:").unwrap();
        let real = Path::new(real.trim());
        let failing = self.dir.join(node).join("bin-with-failing-rewind");
        std::fs::create_dir_all(&failing).unwrap();
        for program in std::fs::read_dir(real).unwrap() {
            let program = program.unwrap();
            if program.file_name() != "pg_rewind" {
                std::os::unix::fs::symlink(program.path(), failing.join(program.file_name()))
                    .unwrap();
            }
        }
        let rewind = failing.join("pg_rewind");
        let script = format!(
            "#!/bin/sh\ncase \"$1\" in --help|--version) exec {} \"$@\";; esac\n\
             echo 'pg_rewind: error: this test makes every rewind fail' >&2\nexit 1\n",
            real.join("pg_rewind").display()
        );
        std::fs::write(&rewind, script).unwrap();
        std::fs::set_permissions(&rewind, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let config = config.replace(
            bin_dir_line,
            &format!("{indent}bin_dir: {}", failing.display()),
        );
        std::fs::write(&config_path, config).unwrap();
    }

    /// `node`'s log: Patroni's lines and its PostgreSQL's.
    pub fn log(&self, node: &str) -> String {
        let log = std::fs::read_to_string(self.dir.join(node).join("patroni.log"));
        log.unwrap_or_else(|error| format!("(unreadable: {error})"))
    }

    /// Each node's log (Patroni's lines and its PostgreSQL's) since the cluster started, without
    /// the lines Patroni repeats every loop: the directory is removed once the test ends, and
    /// a failure's cause is in there.
    fn print_logs(&self) {
        for node in self.nodes() {
            let log = self.log(&node);
            let lines: Vec<&str> = log
                .lines()
                .filter(|l| !l.contains("INFO: no action"))
                .collect();
            let tail = &lines[lines.len().saturating_sub(LOG_LINES_ON_FAILURE)..];
            eprintln!(
                "==> {node}'s log, its last {} lines:\n{}",
                tail.len(),
                tail.join("\n")
            );
        }
    }
}

/// How much of each node's log a failed test prints.
const LOG_LINES_ON_FAILURE: usize = 150;

impl Drop for Patroni {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.print_logs();
        }
        let _ = Command::new(script_path())
            .args(["stop", self.dir.to_str().unwrap()])
            .status();
    }
}

/// Sends `signal` (`KILL`, `STOP`, `CONT`) to each of `pids`; returns when it was delivered.
pub fn signal(signal: &str, pids: &[u32]) -> Instant {
    for pid in pids {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .unwrap();
        // A backend may exit between being listed and being signalled: only a process still
        // there that did not take the signal is a failure.
        let gone = !Path::new(&format!("/proc/{pid}")).exists();
        assert!(status.success() || gone, "kill -{signal} {pid}");
    }
    Instant::now()
}

/// When the node `config` reaches first commits a write durably: flushed and confirmed by a
/// synchronous standby. Patroni's `/primary` answers as soon as the node is promoted; in
/// strict synchronous mode a commit then waits until a standby attaches to it. A commit made
/// while the node named no synchronous standby (it would not have waited) does not count.
/// (`pg_stat_replication`'s states are hidden from seqvend's role, so the commit's wait is
/// the test.)
/// This is when the leader can take seqvend's writes: seqvend's own recovery is measured
/// from it.
pub async fn until_writes_accepted(config: tokio_postgres::Config, patience: Duration) -> Instant {
    let attempt = || async {
        let connect = config.connect(tokio_postgres::NoTls);
        let (client, connection) = tokio::time::timeout(Duration::from_secs(1), connect)
            .await
            .ok()?
            .ok()?;
        tokio::spawn(connection);
        // A commit waits for the synchronous standby only if its transaction wrote WAL (an
        // xid alone does not): a temporary table's catalog rows do.
        let write = "BEGIN; CREATE TEMP TABLE patroni_probe (x int); COMMIT";
        client.batch_execute(write).await.ok()?;
        let committed = Instant::now();
        // Strict synchronous mode names a standby (or `*`) before the node takes writes;
        // a commit while none was named would not have waited.
        let names = "SELECT current_setting('synchronous_standby_names')";
        let names: String = client.query_one(names, &[]).await.ok()?.get(0);
        (!names.is_empty()).then_some(committed)
    };
    let what = "the new leader commits a write durably";
    let probe = eventually_some(patience, what, attempt);
    tokio::time::timeout(patience, probe).await.expect(what)
}

fn read_pid(path: &Path) -> u32 {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().next().unwrap().trim().parse().unwrap()
}

fn script_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/patroni.sh")
}
