//! PostgreSQL clusters of a test's own, for tests that stop, crash, freeze or replicate one:
//! started in a scratch directory, with a database `seqvend` for the processes under test.

use std::process::{Command, Stdio};
use std::sync::Arc;

use seqvend::local_pg::{self, LocalCluster, Shutdown};

use super::scratch::scratch_dir;

/// A PostgreSQL cluster of the test's own, and its database `seqvend`.
pub struct Pg {
    pub cluster: Arc<LocalCluster>,
    /// The URL of the database `seqvend`.
    pub url: String,
}

impl Pg {
    /// A new cluster with `settings` (`name=value`, as in postgresql.conf), started.
    pub async fn start(label: &str, settings: &[&str]) -> Self {
        let dir = scratch_dir(label);
        let settings: Vec<String> = settings.iter().map(|s| s.to_string()).collect();
        let cluster = tokio::task::spawn_blocking(move || {
            let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
            let cluster = LocalCluster::open(&dir, &settings).expect("cluster prepared");
            cluster.start().expect("cluster started");
            cluster
        })
        .await
        .unwrap();
        local_pg::ensure_database(&cluster, "seqvend")
            .await
            .unwrap();
        Self::of(cluster)
    }

    fn of(cluster: LocalCluster) -> Self {
        let url = cluster.url("seqvend");
        Self {
            cluster: Arc::new(cluster),
            url,
        }
    }

    /// A streaming standby of this cluster, started, known to it as `name`.
    pub async fn standby(&self, label: &str, name: &str) -> Pg {
        let (primary, dir, name) = (self.cluster.clone(), scratch_dir(label), name.to_owned());
        let cluster = tokio::task::spawn_blocking(move || {
            let standby = primary
                .create_standby(&dir, &name)
                .expect("standby created");
            standby.start().expect("standby started");
            standby
        })
        .await
        .unwrap();
        Self::of(cluster)
    }

    pub async fn stop(&self, mode: Shutdown) {
        let cluster = self.cluster.clone();
        tokio::task::spawn_blocking(move || cluster.stop(mode))
            .await
            .unwrap()
            .expect("stopped");
    }

    /// Starts the cluster again after `stop`.
    pub async fn start_again(&self) {
        let cluster = self.cluster.clone();
        tokio::task::spawn_blocking(move || cluster.start())
            .await
            .unwrap()
            .expect("started again");
    }

    /// A plain session on the database `seqvend`.
    pub async fn connect(&self) -> tokio_postgres::Client {
        connect(&self.url).await
    }

    /// Stops the server's every process with SIGSTOP: the postmaster first (so that it forks
    /// no more), then whatever runs under it, until nothing new turns up. The server then
    /// answers nothing, yet its kernel still completes TCP handshakes and acknowledges what is
    /// sent, so neither connect timeouts nor keepalives notice. Continued when dropped.
    pub fn freeze(&self) -> Frozen {
        let pid_file = self.cluster.dir().join("pgdata/postmaster.pid");
        let postmaster: u32 = std::fs::read_to_string(pid_file)
            .unwrap()
            .lines()
            .next()
            .and_then(|line| line.trim().parse().ok())
            .expect("the postmaster's pid");
        let mut frozen = Frozen { pids: Vec::new() };
        loop {
            let new: Vec<u32> = process_tree(postmaster)
                .into_iter()
                .filter(|pid| !frozen.pids.contains(pid))
                .collect();
            if new.is_empty() {
                return frozen;
            }
            signal("-STOP", &new);
            frozen.pids.extend(new);
        }
    }
}

/// A plain session on the database at `url`, for looking behind seqvend's back.
pub async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connected");
    tokio::spawn(connection);
    client
}

/// A frozen server's processes, continued (SIGCONT) when dropped, so that a failing scenario
/// leaves nothing stopped behind it.
pub struct Frozen {
    pids: Vec<u32>,
}

impl Frozen {
    pub fn processes(&self) -> usize {
        self.pids.len()
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        signal("-CONT", &self.pids);
    }
}

fn signal(which: &str, pids: &[u32]) {
    // A process that exited meanwhile makes kill fail; the others are signalled all the same.
    let _ = Command::new("kill")
        .arg(which)
        .args(pids.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status();
}

/// `root` and every process descended from it, parents before children, from /proc.
fn process_tree(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(pid, _)| *pid),
        );
        i += 1;
    }
    tree
}
