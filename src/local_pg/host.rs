//! What the machine provides for a cluster: PostgreSQL's server binaries, the user to run
//! them as, a free port.

use std::fs;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

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

/// A port for a server to listen on: free now, and outside the range the kernel draws the
/// local ports of outgoing connections from (`ip_local_port_range`). A port the kernel hands
/// out (bind to port 0) can be taken by any client connection between this choice and the
/// server's bind, or before a later restart of a cluster that keeps its port. Each call tries
/// the next port from a point that depends on the process, so that calls in one process never
/// repeat a port and processes started together rarely meet.
pub fn free_port() -> anyhow::Result<u16> {
    const LOWEST: u32 = 20_000;
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let below = outgoing_ports_start().unwrap_or(32_768);
    if below <= LOWEST + 1_000 {
        // No room below the outgoing range: let the kernel choose.
        return Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port());
    }
    let span = below - LOWEST;
    let start = std::process::id().wrapping_mul(7_919);
    for _ in 0..span {
        let offset = start.wrapping_add(CALLS.fetch_add(1, Ordering::Relaxed)) % span;
        let port = u16::try_from(LOWEST + offset)?;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    bail!("no free port between {LOWEST} and {below}")
}

/// The first port of the kernel's range for outgoing connections, if it says.
fn outgoing_ports_start() -> Option<u32> {
    fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_outside_the_outgoing_range_and_never_repeat_in_a_process() {
        let below = outgoing_ports_start().expect("Linux says its outgoing range");
        let ports: Vec<u16> = (0..200).map(|_| free_port().unwrap()).collect();
        let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        assert!(
            ports.iter().all(|&p| u32::from(p) < below),
            "{ports:?} against {below}"
        );
    }
}
