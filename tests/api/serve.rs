//! The `seqvend serve` binary itself: refusing to start unsafely, the one-command start with
//! a private PostgreSQL, persistence across restarts, graceful shutdown.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use seqvend::local_pg::LocalCluster;

use crate::common::process::{free_port, wait_ready, BINARY};
use crate::helpers::*;

#[test]
fn serve_refuses_to_start_without_tokens_unless_auth_is_switched_off() {
    let output = Command::new(BINARY)
        .arg("serve")
        .env_clear()
        .env("SEQVEND_LISTEN", "127.0.0.1:0")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("SEQVEND_AUTH_DISABLED"), "{stderr}");
}

/// A private cluster made in a scratch directory, its port file then pointed at the port the
/// tests' shared cluster listens on: its directory, and that port.
async fn cluster_dir_on_a_taken_port(label: &str) -> (std::path::PathBuf, String) {
    let db = TestDb::shared().await;
    let (_, after_host) = db.url.rsplit_once(':').unwrap();
    let taken = after_host.split('/').next().unwrap().to_string();
    let dir = scratch_dir(label);
    drop(LocalCluster::open(&dir, &[]).expect("cluster prepared"));
    std::fs::write(dir.join("port"), &taken).unwrap();
    (dir, taken)
}

/// A private cluster whose port another PostgreSQL already listens on (here the tests' shared
/// one; a copy of a data directory keeps its port file) does not start, and says which port,
/// rather than take the server answering there for its own.
#[tokio::test]
async fn a_private_cluster_whose_port_another_server_holds_does_not_start() {
    let (dir, taken) = cluster_dir_on_a_taken_port("port-taken").await;

    let cluster = LocalCluster::open(&dir, &[]).unwrap();
    let message = format!(
        "{:#}",
        cluster.start().expect_err("started without its port")
    );
    assert!(
        message.contains(&format!(
            "127.0.0.1:{taken}: another server holds that port"
        )),
        "{message}"
    );
}

/// A start that fails says why from its own lines of the log, which is kept across starts:
/// after a start refused its port, a later one failing on a setting names the setting.
#[tokio::test]
async fn a_failed_start_says_why_from_its_own_lines_of_the_log() {
    let (dir, _) = cluster_dir_on_a_taken_port("failed-start").await;
    let refused = LocalCluster::open(&dir, &[]).unwrap().start();
    assert!(refused.is_err(), "started without its port");
    std::fs::write(dir.join("port"), free_port().to_string()).unwrap();

    let cluster = LocalCluster::open(&dir, &["shared_buffers=nonsense"]).unwrap();
    let message = format!(
        "{:#}",
        cluster
            .start()
            .expect_err("started with a setting PostgreSQL refuses")
    );
    assert!(
        message.contains(r#"FATAL:  invalid value for parameter "shared_buffers": "nonsense""#)
            && !message.contains("another server holds that port"),
        "{message}"
    );
}

#[test]
fn serve_refuses_a_data_dir_it_did_not_make_and_leaves_it_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_dir("foreign");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("thesis.tex"), "months of work").unwrap();
    let mode = |dir: &std::path::Path| std::fs::metadata(dir).unwrap().permissions().mode();
    let mode_before = mode(&dir);

    let child = Command::new(BINARY)
        .arg("serve")
        .env_remove("DATABASE_URL")
        .env("SEQVEND_DATA_DIR", &dir)
        .env("SEQVEND_LISTEN", "127.0.0.1:0")
        .env("SEQVEND_ADMIN_TOKENS", ADMIN_TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = exit_within(child, Duration::from_secs(30));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&dir.display().to_string()), "{stderr}");
    assert!(stderr.contains("not made by seqvend"), "{stderr}");

    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names, ["thesis.tex"], "nothing was added");
    let kept = std::fs::read_to_string(dir.join("thesis.tex")).unwrap();
    assert_eq!(kept, "months of work");
    assert_eq!(mode(&dir), mode_before, "the directory's mode is unchanged");
}

/// The output of `child` once it has exited; if it is still running after `patience` (had it
/// started serving), it is stopped and the test fails.
fn exit_within(mut child: Child, patience: Duration) -> std::process::Output {
    let deadline = std::time::Instant::now() + patience;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let pid = child.id().to_string();
            Command::new("kill").args(["-TERM", &pid]).status().unwrap();
            child.wait().unwrap();
            panic!("seqvend serve was still running after {patience:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A `seqvend serve` process with a private cluster, ready.
pub struct Served {
    child: Child,
    pub address: String,
    pub port: u16,
    /// seqvend's log, for the message of a failed assertion.
    log: std::path::PathBuf,
}

impl Drop for Served {
    /// A test that fails half-way must not leave seqvend running; its PostgreSQL follows it
    /// (parent-death signal). An exited, waited-for child is not signalled again.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    pub async fn start(data_dir: &std::path::Path) -> Self {
        Self::spawn(data_dir, Command::new(BINARY)).await
    }

    /// Logging at `filter` (`RUST_LOG`) instead of info.
    pub async fn start_logging(data_dir: &std::path::Path, filter: &str) -> Self {
        let mut command = Command::new(BINARY);
        command.env("RUST_LOG", filter);
        Self::spawn(data_dir, command).await
    }

    /// Everything seqvend logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Started as a shell starts a job: leader of a process group of its own, the group a
    /// terminal's Ctrl-C goes to.
    async fn start_as_job(data_dir: &std::path::Path) -> Self {
        let mut command = Command::new(BINARY);
        command.process_group(0);
        Self::spawn(data_dir, command).await
    }

    async fn spawn(data_dir: &std::path::Path, mut command: Command) -> Self {
        if !command.get_envs().any(|(key, _)| key == "RUST_LOG") {
            command.env("RUST_LOG", "info");
        }
        let port = free_port();
        let log = data_dir.with_extension("log");
        let log_file = std::fs::File::create(&log).unwrap();
        let mut child = command
            .arg("serve")
            .env_remove("DATABASE_URL")
            .env("SEQVEND_DATA_DIR", data_dir)
            .env("SEQVEND_LISTEN", format!("127.0.0.1:{port}"))
            .env("SEQVEND_ADMIN_TOKENS", ADMIN_TOKEN)
            .env("SEQVEND_VEND_TOKENS", VEND_TOKEN)
            // A request held in flight must outlive the test's steps on a busy machine.
            .env("SEQVEND_VEND_DEADLINE_MS", "30000")
            .env("SEQVEND_STATEMENT_TIMEOUT_MS", "30000")
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .unwrap();
        let address = format!("http://127.0.0.1:{port}");
        wait_ready(&mut child, &address).await;
        Self {
            child,
            address,
            port,
            log,
        }
    }

    /// SIGTERM, then the exit status.
    /// SIGTERM, then the exit status, which must be success (the log says why not).
    pub fn terminate_cleanly(self) {
        self.signal_term();
        let log = self.log.clone();
        let status = self.wait();
        assert!(
            status.success(),
            "seqvend exited with {status} after SIGTERM:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    fn wait(mut self) -> std::process::ExitStatus {
        self.child.wait().unwrap()
    }

    fn signal_term(&self) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    }

    /// What Ctrl-C at a terminal does: SIGINT to every process in the job's group.
    fn interrupt_job(&self) {
        let group = format!("-{}", self.child.id());
        let sent = Command::new("kill")
            .args(["-INT", "--", &group])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -INT -- {group}");
    }

    async fn create(&self) {
        let created = reqwest::Client::new()
            .post(format!("{}/sequences", self.address))
            .bearer_auth(ADMIN_TOKEN)
            .json(&serde_json::json!({"name": "p", "min": 1, "max": 100}))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), StatusCode::CREATED);
    }

    async fn next(&self) -> i64 {
        let response = reqwest::Client::new()
            .post(format!("{}/sequences/p/next", self.address))
            .bearer_auth(VEND_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.json::<serde_json::Value>().await.unwrap()["value"]
            .as_i64()
            .unwrap()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_without_a_database_url_runs_its_own_postgresql_and_values_persist() {
    let dir = scratch_dir("serve");
    // Made empty beforehand, as an operator would; the other tests let serve create it.
    std::fs::create_dir_all(&dir).unwrap();
    let first = Served::start(&dir).await;
    first.create().await;
    assert_eq!((first.next().await, first.next().await), (1, 2));
    first.terminate_cleanly();
    assert!(
        !dir.join("pgdata/postmaster.pid").exists(),
        "the private cluster was stopped"
    );

    let second = Served::start(&dir).await;
    assert_eq!(second.next().await, 3, "the sequence survived the restart");
    // What a power loss needs: every flush reaches the disk, and torn pages can be repaired.
    let private = connect_to_private_cluster(&dir).await;
    for setting in ["fsync", "full_page_writes", "synchronous_commit"] {
        let shown: String = private
            .query_one(&format!("SHOW {setting}"), &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(shown, "on", "{setting} on the private cluster");
    }
    second.terminate_cleanly();
}

/// The settings that make a flush durable cannot be turned off by the settings a cluster is
/// given (the tests' clusters included).
#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_seqvend_starts_keeps_fsync_and_full_page_writes_on() {
    let pg = Pg::start("fsync", &["fsync=off", "full_page_writes=off"]).await;
    let db = TestDb::create(&pg.cluster).await;
    let client = db.connect().await;
    for setting in ["fsync", "full_page_writes"] {
        let shown: String = client
            .query_one(&format!("SHOW {setting}"), &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(shown, "on", "{setting}");
    }
    drop(client);
    // Dropping a cluster stops it, which waits for the postmaster.
    tokio::task::spawn_blocking(move || drop(pg)).await.unwrap();
}

/// A session on the private cluster, read from the files `serve` keeps in its data dir.
async fn connect_to_private_cluster(dir: &std::path::Path) -> tokio_postgres::Client {
    let read = |file: &str| {
        std::fs::read_to_string(dir.join(file))
            .unwrap()
            .trim()
            .to_owned()
    };
    let url = format!(
        "postgres://seqvend:{}@127.0.0.1:{}/seqvend",
        read("password"),
        read("port")
    );
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// A vend request held in flight: a session of the test's own holds the advisory lock the
/// vend statement takes for sequence `p`, so the request waits in PostgreSQL until released.
struct VendInFlight {
    blocker: tokio_postgres::Client,
    request: tokio::task::JoinHandle<reqwest::Result<reqwest::Response>>,
}

impl VendInFlight {
    async fn start(served: &Served, dir: &std::path::Path) -> Self {
        let blocker = connect_to_private_cluster(dir).await;
        blocker
            .batch_execute(
                "SELECT pg_advisory_lock(1398166087, \
                 (SELECT id FROM seqvend.sequences WHERE name = 'p'))",
            )
            .await
            .unwrap();
        let request = tokio::spawn(
            reqwest::Client::new()
                .post(format!("{}/sequences/p/next", served.address))
                .bearer_auth(VEND_TOKEN)
                .send(),
        );
        // The vend waits on the lock.
        until_blocked(&blocker, 1, Blocked::On("advisory"), "%").await;
        Self { blocker, request }
    }

    /// Lets the vend go on and returns its response. If PostgreSQL has ended the blocking
    /// session meanwhile, its lock went with it.
    async fn release(self) -> reqwest::Response {
        let _ = self
            .blocker
            .batch_execute("SELECT pg_advisory_unlock_all()")
            .await;
        self.request
            .await
            .unwrap()
            .expect("the request in flight is answered")
    }
}

/// Waits until seqvend has taken a stop signal in: it no longer accepts connections.
async fn wait_until_not_accepting(served: &Served) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    eventually(
        Duration::from_secs(10),
        "seqvend stops accepting connections",
        || {
            let probe = http.get(format!("{}/healthz", served.address)).send();
            async move { probe.await.is_err_and(|err| err.is_connect()) }
        },
    )
    .await;
}

async fn assert_answered_with_the_first_value(response: reqwest::Response) {
    assert_eq!(response.status(), StatusCode::OK);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["value"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_finishes_the_request_in_flight_before_exiting() {
    let dir = scratch_dir("graceful");
    let served = Served::start(&dir).await;
    served.create().await;
    let vend = VendInFlight::start(&served, &dir).await;
    served.signal_term();
    wait_until_not_accepting(&served).await;
    assert_answered_with_the_first_value(vend.release().await).await;
    assert!(served.wait().success(), "a graceful shutdown exits 0");
}

/// The postmaster's pid, from the first line of its pid file.
fn postmaster_pid(dir: &std::path::Path) -> u32 {
    let pid_file = std::fs::read_to_string(dir.join("pgdata/postmaster.pid")).unwrap();
    pid_file.lines().next().unwrap().trim().parse().unwrap()
}

/// Whether `pid` is a live process: neither gone nor a zombie waiting to be reaped.
fn is_running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses and may hold spaces.
    let state = stat[stat.rfind(')').unwrap() + 2..].chars().next();
    state != Some('Z')
}

/// seqvend started as a terminal's job, a vend in flight when Ctrl-C (SIGINT to the job's
/// process group) reaches it: returns once it stops accepting connections, with its data
/// directory, the postmaster's pid and the vend.
async fn interrupted_with_a_vend_in_flight(
    label: &str,
) -> (std::path::PathBuf, Served, u32, VendInFlight) {
    let dir = scratch_dir(label);
    let served = Served::start_as_job(&dir).await;
    served.create().await;
    let postmaster = postmaster_pid(&dir);
    let vend = VendInFlight::start(&served, &dir).await;
    served.interrupt_job();
    wait_until_not_accepting(&served).await;
    (dir, served, postmaster, vend)
}

/// Checks PostgreSQL is gone (its pid file removed as it shut down, its postmaster exited)
/// and returns its log.
fn postgresql_log_once_stopped(dir: &std::path::Path, postmaster: u32) -> String {
    assert!(
        !dir.join("pgdata/postmaster.pid").exists(),
        "PostgreSQL removed its pid file as it shut down"
    );
    assert!(
        !is_running(postmaster),
        "the postmaster (pid {postmaster}) is gone"
    );
    std::fs::read_to_string(dir.join("postgres.log")).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_finishes_the_request_in_flight_then_stops_postgresql_fast() {
    // Were PostgreSQL in seqvend's process group, this Ctrl-C would start its fast shutdown
    // now, ending the session the vend runs in before it could be answered.
    let (dir, served, postmaster, vend) = interrupted_with_a_vend_in_flight("ctrl-c").await;
    assert_answered_with_the_first_value(vend.release().await).await;
    assert!(
        served.wait().success(),
        "Ctrl-C is a graceful shutdown: exit 0"
    );
    let log = postgresql_log_once_stopped(&dir, postmaster);
    assert!(
        log.contains("received fast shutdown request")
            && log.contains("database system is shut down"),
        "seqvend stopped PostgreSQL with a fast shutdown:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn when_seqvend_is_killed_its_postgresql_goes_too() {
    let dir = scratch_dir("orphan");
    let served = Served::start(&dir).await;
    let postmaster = postmaster_pid(&dir);
    let pid = served.child.id().to_string();
    Command::new("kill").args(["-KILL", &pid]).status().unwrap();
    assert!(!served.wait().success());
    eventually(Duration::from_secs(20), "the postmaster exits", || async {
        !is_running(postmaster)
    })
    .await;
    let log = std::fs::read_to_string(dir.join("postgres.log")).unwrap();
    assert!(
        log.contains("received immediate shutdown request"),
        "the parent-death signal (SIGQUIT) stopped PostgreSQL:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_ctrl_c_stops_at_once_and_still_stops_postgresql_fast() {
    let (dir, served, postmaster, vend) = interrupted_with_a_vend_in_flight("ctrl-c-twice").await;
    let second = std::time::Instant::now();
    served.interrupt_job();
    let status = tokio::task::spawn_blocking(|| served.wait()).await.unwrap();
    assert_eq!(status.code(), Some(1), "a forced stop is not a clean exit");
    assert!(
        second.elapsed() < Duration::from_secs(20),
        "seqvend did not wait for the vend (held for up to 30 s)"
    );
    drop(vend);
    let log = postgresql_log_once_stopped(&dir, postmaster);
    assert!(
        log.contains("received fast shutdown request"),
        "seqvend still stopped PostgreSQL itself:\n{log}"
    );
}
