//! A private PostgreSQL cluster in a directory of its own, from the server binaries on this
//! machine: what `serve` runs when no `DATABASE_URL` is given, and what the tests run.
//!
//! PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres` user.
//! No cluster outlives its owner, and none ends before its owner is done with it (see
//! `postmaster`). A directory seqvend did not make is never taken over (see `data_dir`).

#![allow(unsafe_code)]

mod data_dir;
mod host;
mod postmaster;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use data_dir::write_private;
pub use host::free_port;
use host::{as_owner, Owner};
use postmaster::Postmaster;

const USER: &str = "seqvend";
const START_PATIENCE: Duration = Duration::from_secs(60);

/// Whether `pid_file` (a cluster's `postmaster.pid`) says that the postmaster `pid` accepts
/// connections: its status line, the eighth, reads `ready`, or `standby` on a hot standby.
fn accepts_connections(pid_file: &str, pid: libc::pid_t) -> bool {
    let lines: Vec<&str> = pid_file.lines().collect();
    lines.first().and_then(|line| line.trim().parse().ok()) == Some(pid)
        && matches!(
            lines.get(7).map(|line| line.trim()),
            Some("ready" | "standby")
        )
}

/// How to stop the postmaster (PostgreSQL's shutdown modes).
#[derive(Debug, Clone, Copy)]
pub enum Shutdown {
    /// Roll back sessions, checkpoint, exit: SIGINT.
    Fast,
    /// Exit at once with no checkpoint, as a crash would; recovery replays the WAL: SIGQUIT.
    Immediate,
}

pub struct LocalCluster {
    dir: PathBuf,
    bin_dir: PathBuf,
    port: u16,
    password: String,
    owner: Owner,
    settings: Vec<String>,
    running: Mutex<Option<Postmaster>>,
}

impl LocalCluster {
    /// Opens the cluster in `dir`, creating it on first use. `settings` are extra
    /// `name=value` server settings.
    pub fn open(dir: &Path, settings: &[&str]) -> anyhow::Result<Self> {
        let bin_dir = host::find_bin_dir()?;
        let owner = host::cluster_owner()?;
        let dir = data_dir::prepare(dir, owner)?;
        let password_file = dir.join("password");
        if !dir.join("pgdata").join("PG_VERSION").exists() {
            let password = random_secret();
            write_private(&password_file, &password, owner)?;
            let status = as_owner(Command::new(bin_dir.join("initdb")), owner)
                .args(["-D", "pgdata", "-U", USER, "-E", "UTF8", "--no-locale"])
                .args([
                    "--auth=scram-sha-256",
                    "--pwfile=password",
                    "--no-instructions",
                ])
                .current_dir(&dir)
                .stdout(Stdio::null())
                .status()
                .context("running initdb")?;
            if !status.success() {
                bail!("initdb failed for {} ({status})", dir.display());
            }
            write_private(&dir.join("port"), &free_port()?.to_string(), owner)?;
        }
        let password = fs::read_to_string(&password_file)?.trim().to_owned();
        let port = fs::read_to_string(dir.join("port"))?
            .trim()
            .parse()
            .context("reading the port file")?;
        Ok(Self {
            dir,
            bin_dir,
            port,
            password,
            owner,
            settings: settings.iter().map(|s| s.to_string()).collect(),
            running: Mutex::new(None),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    /// Where the server's programs (pg_dump, psql, …) are.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A connection URL for `database` as the cluster's superuser.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{USER}:{}@127.0.0.1:{}/{database}",
            self.password, self.port
        )
    }

    /// Makes a streaming standby of this running cluster in `dir`, known to it as `name`
    /// (for `synchronous_standby_names`). The standby is returned stopped.
    pub fn create_standby(&self, dir: &Path, name: &str) -> anyhow::Result<Self> {
        let dir = data_dir::prepare(dir, self.owner)?;
        let status = as_owner(Command::new(self.bin_dir.join("pg_basebackup")), self.owner)
            .args(["-D", "pgdata", "-X", "stream", "--checkpoint=fast"])
            .args(self.connection_args())
            .env("PGPASSWORD", &self.password)
            .current_dir(&dir)
            .status()
            .context("running pg_basebackup")?;
        if !status.success() {
            bail!("pg_basebackup failed ({status})");
        }
        write_private(&dir.join("password"), &self.password, self.owner)?;
        write_private(&dir.join("port"), &free_port()?.to_string(), self.owner)?;
        write_private(&dir.join("pgdata/standby.signal"), "", self.owner)?;
        let conninfo = format!(
            "\nprimary_conninfo = 'host=127.0.0.1 port={} user={USER} password={} application_name={name}'\n",
            self.port, self.password
        );
        fs::OpenOptions::new()
            .append(true)
            .open(dir.join("pgdata/postgresql.auto.conf"))?
            .write_all(conninfo.as_bytes())?;
        let settings: Vec<&str> = self.settings.iter().map(String::as_str).collect();
        Self::open(&dir, &settings)
    }

    /// Starts the postmaster and waits until it accepts connections.
    pub fn start(&self) -> anyhow::Result<()> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running.is_some() {
            return Ok(());
        }
        self.wait_for_previous_postmaster()?;
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("postgres.log"))?;
        // Where this start's lines begin: the log is kept across starts.
        let log_start = log.metadata()?.len();
        let mut command = as_owner(Command::new(self.bin_dir.join("postgres")), self.owner);
        command
            .arg("-D")
            .arg(self.dir.join("pgdata"))
            .args(["-c", &format!("port={}", self.port)])
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "unix_socket_directories=",
            ])
            .args(self.settings.iter().flat_map(|s| ["-c", s.as_str()]))
            // Last, so no setting above can turn them off: without them a power loss (or a
            // crash of the machine) can lose committed WAL, and values already handed out.
            .args(["-c", "fsync=on", "-c", "full_page_writes=on"])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let postmaster = Postmaster::spawn(command).context("starting postgres")?;
        self.wait_until_ready(&postmaster, log_start)?;
        *running = Some(postmaster);
        Ok(())
    }

    /// Stops the postmaster and waits for it to exit.
    pub fn stop(&self, mode: Shutdown) -> anyhow::Result<()> {
        let running = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(postmaster) = running else {
            return Ok(());
        };
        postmaster.signal(match mode {
            Shutdown::Fast => libc::SIGINT,
            Shutdown::Immediate => libc::SIGQUIT,
        });
        if !postmaster.wait_for_exit(START_PATIENCE) {
            bail!("postgres did not stop within {START_PATIENCE:?}");
        }
        Ok(())
    }

    /// How the server's own client programs reach it.
    fn connection_args(&self) -> [String; 6] {
        ["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", USER].map(String::from)
    }

    /// Waits until this postmaster accepts connections. Asked of the postmaster itself, as
    /// `pg_ctl start -w` does, not of whatever answers on the port: another server there
    /// (another cluster, or a copy of this one that kept its port file) would answer while
    /// this postmaster exits for want of the port, and seqvend would use that server's data.
    fn wait_until_ready(&self, postmaster: &Postmaster, log_start: u64) -> anyhow::Result<()> {
        let pid_file = self.dir.join("pgdata").join("postmaster.pid");
        let deadline = Instant::now() + START_PATIENCE;
        loop {
            // Rewritten in place while the postmaster starts: a partial read is "not yet".
            let pid_file = fs::read_to_string(&pid_file).unwrap_or_default();
            if accepts_connections(&pid_file, postmaster.pid()) {
                return Ok(());
            }
            if postmaster.has_exited() {
                return Err(self.startup_failure(log_start));
            }
            if Instant::now() > deadline {
                bail!("postgres did not accept connections within {START_PATIENCE:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Why the postmaster exited during startup, from what it wrote to the log since
    /// `log_start`.
    fn startup_failure(&self, log_start: u64) -> anyhow::Error {
        let log_path = self.dir.join("postgres.log");
        let log = fs::read(&log_path).unwrap_or_default();
        let written = String::from_utf8_lossy(log.get(log_start as usize..).unwrap_or_default());
        let lines: Vec<&str> = written.lines().collect();
        if lines
            .iter()
            .any(|line| line.contains("Address already in use"))
        {
            return anyhow::anyhow!(
                "postgres could not listen on 127.0.0.1:{port}: another server holds that port. \
                 Stop it, or write a free port to {port_file}; see {log}",
                port = self.port,
                port_file = self.dir.join("port").display(),
                log = log_path.display()
            );
        }
        let reason = lines
            .iter()
            .rev()
            .find(|line| line.contains("FATAL:"))
            .map_or(String::new(), |line| format!(" ({})", line.trim()));
        anyhow::anyhow!(
            "postgres exited during startup{reason}; see {}",
            log_path.display()
        )
    }

    /// A postmaster left by an earlier process may still be shutting down; starting a second
    /// one on the same directory would fail, so give it time to go.
    ///
    /// The pid comes from a file and may belong to another process by now, so it is only
    /// probed with signal 0, which delivers nothing; it is never signalled for real. A reused
    /// pid makes this wait in vain (PostgreSQL would refuse that pid file too); one we may not
    /// signal (EPERM) is not our postmaster, which runs as the cluster's owner.
    fn wait_for_previous_postmaster(&self) -> anyhow::Result<()> {
        let pid_file = self.dir.join("pgdata").join("postmaster.pid");
        let deadline = Instant::now() + START_PATIENCE;
        while let Some(pid) = fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.lines().next()?.trim().parse::<i32>().ok())
        {
            // SAFETY: kill has no memory-safety preconditions; signal 0 only checks that the
            // process exists.
            if unsafe { libc::kill(pid, 0) } != 0 {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "postgres (pid {pid}) is already running on {}",
                    self.dir.display()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        let _ = self.stop(Shutdown::Fast);
    }
}

/// Creates `database` if it does not exist yet.
// A one-off session on the maintenance database, not the registry.
#[allow(clippy::disallowed_types)]
pub async fn ensure_database(cluster: &LocalCluster, database: &str) -> anyhow::Result<()> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&cluster.url("postgres")).await?;
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(database)
            .fetch_one(&mut conn)
            .await?;
    if !exists {
        // A fixed, validated name; quoted anyway.
        sqlx::raw_sql(&format!(
            "CREATE DATABASE \"{}\"",
            database.replace('"', "\"\"")
        ))
        .execute(&mut conn)
        .await?;
    }
    Ok(())
}

fn random_secret() -> String {
    use rand::distributions::{Alphanumeric, DistString};
    Alphanumeric.sample_string(&mut rand::thread_rng(), 32)
}

#[cfg(test)]
mod tests {
    use super::accepts_connections;

    /// A postmaster.pid as PostgreSQL 15 writes it, with `pid` and `status`.
    fn pid_file(pid: &str, status: &str) -> String {
        format!(
            "{pid}\n/data/pgdata\n1764000000\n5432\n\n127.0.0.1\n  5432001    131072\n{status}\n"
        )
    }

    #[test]
    fn only_this_postmaster_ready_or_a_hot_standby_accepts_connections() {
        assert!(accepts_connections(&pid_file("4242", "ready   "), 4242));
        assert!(accepts_connections(&pid_file("4242", "standby "), 4242));
        assert!(!accepts_connections(&pid_file("4242", "starting"), 4242));
        assert!(!accepts_connections(&pid_file("4242", "stopping"), 4242));
        assert!(!accepts_connections(&pid_file("4343", "ready   "), 4242));
        assert!(!accepts_connections("4242\n/data/pgdata\n", 4242));
        assert!(!accepts_connections("", 4242));
    }
}
