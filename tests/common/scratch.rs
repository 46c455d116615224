//! Scratch directories for the PostgreSQL clusters and files of the test binaries.

use std::path::PathBuf;
use std::sync::OnceLock;

/// A directory for one cluster, under the system temp dir (as root, the `postgres` user
/// must be able to reach it). Directories left by earlier runs, whose process is gone, are
/// removed first.
pub fn scratch_dir(label: &str) -> PathBuf {
    static CLEANED: OnceLock<()> = OnceLock::new();
    let root = std::env::temp_dir().join("seqvend-tests");
    CLEANED.get_or_init(|| {
        for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let pid = name
                .to_string_lossy()
                .split('-')
                .next()
                .and_then(|p| p.parse::<u32>().ok());
            if pid.is_some_and(|pid| !PathBuf::from(format!("/proc/{pid}")).exists()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    });
    std::fs::create_dir_all(&root).expect("temp dir");
    std::fs::set_permissions(&root, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    root.join(format!(
        "{}-{label}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ))
}
