//! Each sequence's format, kept in memory so that printing vended values costs the vend path
//! no round trip: a format is set when its sequence is created and never changes, and a name
//! is never reused, so an entry can never go stale. A miss reads the registry once.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use sqlx::PgPool;

use super::{format_of, RegistryError};
use crate::carriers::Format;
use crate::domain::SequenceName;

pub struct FormatCache {
    known: RwLock<HashMap<String, Option<Arc<Format>>>>,
    /// How long a miss may wait for the registry (sqlx has no timeout for a query sent to
    /// a server that then freezes).
    deadline: Duration,
}

/// What the cache knows of a name.
#[derive(Debug, Clone)]
pub enum Known {
    /// An existing sequence, with its format (`None`: a plain sequence).
    Sequence(Option<Arc<Format>>),
    /// No sequence has the name yet; nothing is remembered, since one may be created.
    NoSuchSequence,
}

impl FormatCache {
    pub fn new(deadline: Duration) -> Self {
        Self {
            known: RwLock::new(HashMap::new()),
            deadline,
        }
    }

    pub async fn lookup(&self, pool: &PgPool, name: &SequenceName) -> Result<Known, RegistryError> {
        if let Some(format) = self.read().get(name.as_str()) {
            return Ok(Known::Sequence(format.clone()));
        }
        let read = tokio::time::timeout(self.deadline, format_of(pool, name))
            .await
            .map_err(|_| {
                RegistryError::Unavailable(anyhow::anyhow!(
                    "reading the format of {:?} took over {:?}",
                    name.as_str(),
                    self.deadline
                ))
            })??;
        Ok(match read {
            Some(format) => {
                let format = format.map(Arc::new);
                let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
                known.insert(name.as_str().to_owned(), format.clone());
                Known::Sequence(format)
            }
            None => Known::NoSuchSequence,
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Option<Arc<Format>>>> {
        // A panic while holding the lock cannot leave an entry half-written.
        self.known.read().unwrap_or_else(|p| p.into_inner())
    }
}
