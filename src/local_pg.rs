//! A private PostgreSQL cluster in a directory of its own, from the server binaries on this
//! machine: what `serve` runs when no `DATABASE_URL` is given, and what the tests run.
//!
//! PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres` user.
//! The postmaster gets SIGQUIT (immediate shutdown) if the thread that started it dies,
//! which happens when seqvend's process ends in any way: no cluster outlives its owner.

#![allow(unsafe_code)]

use std::fs;
use std::io::Write;
use std::os::unix::fs::{chown, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

const USER: &str = "seqvend";
const START_PATIENCE: Duration = Duration::from_secs(60);

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
    owner: Option<(u32, u32)>,
    settings: Vec<String>,
    running: Mutex<Option<Postmaster>>,
}

struct Postmaster {
    pid: i32,
    exited: mpsc::Receiver<()>,
}

impl LocalCluster {
    /// Opens the cluster in `dir`, creating it on first use. `settings` are extra
    /// `name=value` server settings.
    pub fn open(dir: &Path, settings: &[&str]) -> anyhow::Result<Self> {
        let bin_dir = find_bin_dir()?;
        let owner = cluster_owner()?;
        let dir = prepare_dir(dir, owner)?;
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
        let dir = prepare_dir(dir, self.owner)?;
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
        let mut running = self.running.lock().expect("not poisoned");
        if running.is_some() {
            return Ok(());
        }
        self.wait_for_previous_postmaster()?;
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("postgres.log"))?;
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
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        // SAFETY: prctl is async-signal-safe, as required between fork and exec.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let (pid_sender, pid_receiver) = mpsc::channel();
        let (exit_sender, exited) = mpsc::channel();
        // The guardian thread lives exactly as long as the postmaster (see the module docs).
        std::thread::Builder::new()
            .name("postgres-guardian".into())
            .spawn(move || match command.spawn() {
                Ok(mut child) => {
                    let _ = pid_sender.send(Ok(child.id() as i32));
                    let _ = child.wait();
                    let _ = exit_sender.send(());
                }
                Err(err) => {
                    let _ = pid_sender.send(Err(err));
                }
            })?;
        let pid = pid_receiver.recv()?.context("starting postgres")?;
        let postmaster = Postmaster { pid, exited };
        self.wait_until_ready(&postmaster)?;
        *running = Some(postmaster);
        Ok(())
    }

    /// Stops the postmaster and waits for it to exit.
    pub fn stop(&self, mode: Shutdown) -> anyhow::Result<()> {
        let Some(postmaster) = self.running.lock().expect("not poisoned").take() else {
            return Ok(());
        };
        let signal = match mode {
            Shutdown::Fast => libc::SIGINT,
            Shutdown::Immediate => libc::SIGQUIT,
        };
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(postmaster.pid, signal) };
        postmaster
            .exited
            .recv_timeout(START_PATIENCE)
            .context("postgres did not stop in time")?;
        Ok(())
    }

    /// How the server's own client programs reach it.
    fn connection_args(&self) -> [String; 6] {
        ["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", USER].map(String::from)
    }

    fn wait_until_ready(&self, postmaster: &Postmaster) -> anyhow::Result<()> {
        let deadline = Instant::now() + START_PATIENCE;
        loop {
            let ready = Command::new(self.bin_dir.join("pg_isready"))
                .arg("-q")
                .args(self.connection_args())
                .status()?
                .success();
            if ready {
                return Ok(());
            }
            if postmaster.exited.try_recv().is_ok() {
                bail!(
                    "postgres exited during startup; see {}",
                    self.dir.join("postgres.log").display()
                );
            }
            if Instant::now() > deadline {
                bail!("postgres did not accept connections within {START_PATIENCE:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A postmaster left by an earlier process may still be shutting down; starting a second
    /// one on the same directory would fail, so give it time to go.
    fn wait_for_previous_postmaster(&self) -> anyhow::Result<()> {
        let pid_file = self.dir.join("pgdata").join("postmaster.pid");
        let deadline = Instant::now() + START_PATIENCE;
        while let Some(pid) = fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.lines().next()?.trim().parse::<i32>().ok())
        {
            // SAFETY: signal 0 only checks that the process exists.
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

/// PostgreSQL's server binaries: `SEQVEND_PG_BINDIR`, else `pg_config --bindir`, else the
/// newest `/usr/lib/postgresql/*/bin` (Debian and Ubuntu keep them off PATH).
fn find_bin_dir() -> anyhow::Result<PathBuf> {
    let has_server = |dir: &Path| dir.join("postgres").is_file() && dir.join("initdb").is_file();
    if let Ok(dir) = std::env::var("SEQVEND_PG_BINDIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has_server(&dir) {
            return Ok(dir);
        }
    }
    let mut candidates: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            Some((
                entry.file_name().to_str()?.parse().ok()?,
                entry.path().join("bin"),
            ))
        })
        .filter(|(_, dir)| has_server(dir))
        .collect();
    candidates.sort();
    candidates.pop().map(|(_, dir)| dir).context(
        "no PostgreSQL server binaries found: install them (Debian/Ubuntu: apt-get install postgresql), \
         set SEQVEND_PG_BINDIR, or set DATABASE_URL to use an existing server",
    )
}

/// As root, the cluster runs as `postgres`; otherwise as the current user.
fn cluster_owner() -> anyhow::Result<Option<(u32, u32)>> {
    // SAFETY: geteuid cannot fail and has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let id = |flag: &str| -> anyhow::Result<u32> {
        let out = Command::new("id").args([flag, "postgres"]).output()?;
        if !out.status.success() {
            bail!("running as root needs a `postgres` user to own the private cluster (PostgreSQL refuses root)");
        }
        Ok(String::from_utf8(out.stdout)?.trim().parse()?)
    };
    Ok(Some((id("-u")?, id("-g")?)))
}

/// Creates the cluster's directory, private to its owner, and returns its absolute path.
fn prepare_dir(dir: &Path, owner: Option<(u32, u32)>) -> anyhow::Result<PathBuf> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
    if let Some((uid, gid)) = owner {
        chown(&dir, Some(uid), Some(gid))?;
        ensure_reachable(&dir, owner)?;
    }
    Ok(dir)
}

/// The `postgres` user must be able to enter every directory above the cluster's.
fn ensure_reachable(dir: &Path, owner: Option<(u32, u32)>) -> anyhow::Result<()> {
    let reachable = as_owner(Command::new("test"), owner)
        .arg("-x")
        .arg(dir)
        .status()?
        .success();
    if !reachable {
        bail!(
            "the postgres user cannot reach {}: set SEQVEND_DATA_DIR to a directory it can \
             traverse (for example /var/lib/seqvend)",
            dir.display()
        );
    }
    Ok(())
}

fn as_owner(mut command: Command, owner: Option<(u32, u32)>) -> Command {
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid);
    }
    command
}

fn write_private(path: &Path, contents: &str, owner: Option<(u32, u32)>) -> anyhow::Result<()> {
    fs::write(path, contents)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
    if let Some((uid, gid)) = owner {
        chown(path, Some(uid), Some(gid))?;
    }
    Ok(())
}

fn random_secret() -> String {
    use rand::distributions::{Alphanumeric, DistString};
    Alphanumeric.sample_string(&mut rand::thread_rng(), 32)
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
