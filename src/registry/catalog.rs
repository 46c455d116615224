//! What the vend path needs to know of each sequence, kept in memory so that it costs no round
//! trip: its format (set at creation, never changed) and its cache policy (changed by PATCH;
//! every instance is told by its notification hub, see `service::notification_hub`, and forgets the entry). A name is never
//! reused, so an entry is otherwise never stale. A miss reads the registry once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::db::Registry;

use super::{catalog_entry, RegistryError};
use crate::carriers::Format;
use crate::domain::{CachePolicy, SequenceName};

pub struct Catalog {
    known: RwLock<HashMap<String, Arc<Entry>>>,
    /// Bumped by every `forget`: a read that started before it must not store what it read.
    generation: AtomicU64,
    /// How long a miss may wait for the registry (sqlx has no timeout for a query sent to
    /// a server that then freezes).
    deadline: Duration,
}

#[derive(Debug)]
pub struct Entry {
    /// Never changes: scopes on namespaces are checked against it.
    pub namespace: String,
    /// `None`: a plain sequence.
    pub format: Option<Format>,
    pub cache: CachePolicy,
}

/// What the catalog knows of a name.
#[derive(Debug, Clone)]
pub enum Known {
    Sequence(Arc<Entry>),
    /// No sequence has the name yet; nothing is remembered, since one may be created.
    NoSuchSequence,
}

impl Catalog {
    pub fn new(deadline: Duration) -> Self {
        Self {
            known: RwLock::new(HashMap::new()),
            generation: AtomicU64::new(0),
            deadline,
        }
    }

    pub async fn lookup(
        &self,
        pool: &Registry,
        name: &SequenceName,
    ) -> Result<Known, RegistryError> {
        if let Some(entry) = self.read().get(name.as_str()) {
            return Ok(Known::Sequence(entry.clone()));
        }
        let generation = self.generation.load(Ordering::Acquire);
        let read = tokio::time::timeout(self.deadline, catalog_entry(pool, name))
            .await
            .map_err(|_| {
                RegistryError::Unavailable(anyhow::anyhow!(
                    "reading sequence {:?} took over {:?}",
                    name.as_str(),
                    self.deadline
                ))
            })??;
        let Some(entry) = read else {
            return Ok(Known::NoSuchSequence);
        };
        let entry = Arc::new(entry);
        let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
        if self.generation.load(Ordering::Acquire) == generation {
            known.insert(name.as_str().to_owned(), entry.clone());
        }
        Ok(Known::Sequence(entry))
    }

    /// The sequence changed (its cache policy, or it was retired): read it afresh next time.
    pub fn forget(&self, name: &str) {
        let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        known.remove(name);
    }

    /// Changes may have been missed (the notification connection was lost): forget them all.
    pub fn forget_all(&self) {
        let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        known.clear();
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<Entry>>> {
        // A panic while holding the lock cannot leave an entry half-written.
        self.known.read().unwrap_or_else(|p| p.into_inner())
    }
}
