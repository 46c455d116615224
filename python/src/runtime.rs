//! The tokio runtime the extension module owns: one per process, made on first use (and
//! again in a forked child, where the parent's has no threads), shared by every client.
//! Its two workers run the clients' background work — refills, the ticker, worker-id
//! renewals, HTTP requests — while Python threads wait on it with the GIL released.

use std::sync::Arc;

use tokio::runtime::Runtime;

use crate::errors::Failure;
use crate::per_process::{Current, PerProcess};

static RUNTIME: PerProcess<Arc<Runtime>> = PerProcess::new();

/// This process's runtime. Asked for only when a client is made (in a process, or again in
/// a forked child), so the process id is checked too: a runtime inherited through a fork
/// that skipped Python's hook has no threads, and anything waiting on it would hang.
pub fn runtime() -> Result<Arc<Runtime>, Failure> {
    let current: Current<Arc<Runtime>> = RUNTIME.get_checked(build)?;
    Ok(Arc::clone(&current))
}

fn build() -> Result<Arc<Runtime>, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("seqvend")
        .enable_all()
        .build()
        .map(Arc::new)
        .map_err(|error| Failure::config(format!("could not start seqvend's runtime: {error}")))
}
