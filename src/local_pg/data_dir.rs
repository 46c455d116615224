//! The cluster's directory: private to the cluster's owner and marked as seqvend's. A
//! directory holding anything else is never taken over: a mistyped `SEQVEND_DATA_DIR` must
//! not have its files chmodded, chowned or buried under a new cluster.

use std::fs;
use std::os::unix::fs::{chown, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use super::host::{as_owner, Owner};

/// Written into every directory seqvend makes a cluster in.
const MARKER: &str = "seqvend-cluster";
const MARKER_TEXT: &str = "This directory holds a private PostgreSQL cluster made by seqvend \
     (pgdata/, with its password and port). seqvend reuses it; delete it to start afresh.\n";

/// Makes `dir` ready for a cluster and returns its absolute path: created if missing, taken
/// if empty or made by seqvend, refused (untouched) otherwise.
pub(super) fn prepare(dir: &Path, owner: Owner) -> anyhow::Result<PathBuf> {
    if dir.exists() {
        ensure_ours(dir)?;
    } else {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let dir = dir.canonicalize()?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
    if let Some((uid, gid)) = owner {
        chown(&dir, Some(uid), Some(gid))?;
        ensure_reachable(&dir, owner)?;
    }
    if !dir.join(MARKER).exists() {
        write_private(&dir.join(MARKER), MARKER_TEXT, owner)?;
    }
    Ok(dir)
}

/// Accepts an empty directory, one with seqvend's marker, and one laid out as seqvend laid
/// out clusters before it wrote the marker.
fn ensure_ours(dir: &Path) -> anyhow::Result<()> {
    if !dir.is_dir() {
        bail!(
            "SEQVEND_DATA_DIR {} exists and is not a directory",
            dir.display()
        );
    }
    let mut entries: Vec<String> = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|entry| Ok(entry?.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    // A freshly made file system's root, used as a mount point, holds lost+found.
    entries.retain(|name| name != "lost+found");
    let made_before_the_marker =
        dir.join("pgdata").is_dir() && dir.join("password").is_file() && dir.join("port").is_file();
    if entries.is_empty() || dir.join(MARKER).is_file() || made_before_the_marker {
        return Ok(());
    }
    entries.sort();
    let shown = entries
        .iter()
        .take(3)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let more = if entries.len() > 3 { ", …" } else { "" };
    bail!(
        "SEQVEND_DATA_DIR {} is not empty ({shown}{more}) and was not made by seqvend; \
         refusing to put a PostgreSQL cluster there. Set SEQVEND_DATA_DIR to a new or empty \
         directory, or to one seqvend made before.",
        dir.display()
    )
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

/// Writes a file only the cluster's owner may read (its password, port, marker).
pub(super) fn write_private(path: &Path, contents: &str, owner: Owner) -> anyhow::Result<()> {
    fs::write(path, contents).with_context(|| format!("writing {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
    if let Some((uid, gid)) = owner {
        chown(path, Some(uid), Some(gid))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path under the temp dir that does not exist yet; removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new() -> Self {
            let name = format!("seqvend-data-dir-{}", uuid::Uuid::new_v4().simple());
            Self(std::env::temp_dir().join(name))
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0).or_else(|_| fs::remove_file(&self.0));
        }
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_missing_directory_is_created_private_and_marked() {
        let scratch = Scratch::new();
        let dir = prepare(&scratch.0, None).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert!(dir.join(MARKER).is_file());
    }

    #[test]
    fn an_empty_directory_is_used() {
        let scratch = Scratch::new();
        fs::create_dir(&scratch.0).unwrap();
        let dir = prepare(&scratch.0, None).unwrap();
        assert!(dir.join(MARKER).is_file());
    }

    #[test]
    fn a_directory_seqvend_made_is_reused() {
        let scratch = Scratch::new();
        let dir = prepare(&scratch.0, None).unwrap();
        fs::create_dir(dir.join("pgdata")).unwrap();
        fs::write(dir.join("postgres.log"), "").unwrap();
        assert_eq!(prepare(&scratch.0, None).unwrap(), dir);
    }

    #[test]
    fn a_cluster_directory_from_before_the_marker_is_reused_and_marked() {
        let scratch = Scratch::new();
        fs::create_dir_all(scratch.0.join("pgdata")).unwrap();
        fs::write(scratch.0.join("password"), "secret").unwrap();
        fs::write(scratch.0.join("port"), "5433").unwrap();
        let dir = prepare(&scratch.0, None).unwrap();
        assert!(dir.join(MARKER).is_file());
    }

    #[test]
    fn a_foreign_non_empty_directory_is_refused_and_left_as_it_was() {
        let scratch = Scratch::new();
        fs::create_dir(&scratch.0).unwrap();
        fs::set_permissions(&scratch.0, fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(scratch.0.join("notes.txt"), "mine").unwrap();

        let err = prepare(&scratch.0, None).unwrap_err().to_string();
        assert!(err.contains(&scratch.0.display().to_string()), "{err}");
        assert!(err.contains("notes.txt"), "{err}");
        assert!(err.contains("Set SEQVEND_DATA_DIR"), "{err}");

        let names: Vec<_> = fs::read_dir(&scratch.0)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["notes.txt"]);
        assert_eq!(
            fs::read_to_string(scratch.0.join("notes.txt")).unwrap(),
            "mine"
        );
        assert_eq!(mode(&scratch.0), 0o755);
    }

    #[test]
    fn a_file_is_refused() {
        let scratch = Scratch::new();
        fs::write(&scratch.0, "not a directory").unwrap();
        let err = prepare(&scratch.0, None).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
        assert_eq!(fs::read_to_string(&scratch.0).unwrap(), "not a directory");
    }
}
