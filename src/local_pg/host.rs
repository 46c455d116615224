//! What the machine provides for a cluster: PostgreSQL's server binaries, the user to run
//! them as, a free port.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

/// The uid and gid the cluster runs as; `None` for the current user.
pub(super) type Owner = Option<(u32, u32)>;

/// PostgreSQL's server binaries: `SEQVEND_PG_BINDIR`, else `pg_config --bindir`, else the
/// newest `/usr/lib/postgresql/*/bin` (Debian and Ubuntu keep them off PATH).
pub(super) fn find_bin_dir() -> anyhow::Result<PathBuf> {
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

/// As root, the cluster runs as `postgres` (PostgreSQL refuses root); otherwise as the
/// current user.
pub(super) fn cluster_owner() -> anyhow::Result<Owner> {
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

pub(super) fn as_owner(mut command: Command, owner: Owner) -> Command {
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid);
    }
    command
}

pub(super) fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
