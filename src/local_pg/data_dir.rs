//! The cluster's directory, private to the cluster's owner.

use std::fs;
use std::os::unix::fs::{chown, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use super::host::{as_owner, Owner};

/// Creates the cluster's directory, private to its owner, and returns its absolute path.
pub(super) fn prepare(dir: &Path, owner: Owner) -> anyhow::Result<PathBuf> {
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
fn ensure_reachable(dir: &Path, owner: Owner) -> anyhow::Result<()> {
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

/// Writes a file only the cluster's owner may read (its password, port).
pub(super) fn write_private(path: &Path, contents: &str, owner: Owner) -> anyhow::Result<()> {
    fs::write(path, contents).with_context(|| format!("writing {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
    if let Some((uid, gid)) = owner {
        chown(path, Some(uid), Some(gid))?;
    }
    Ok(())
}
