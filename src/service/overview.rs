//! Every sequence at once, for the console's overview: read from the registry in pages and
//! kept for a moment, so that sorting, filtering and paging by several viewers cost one read
//! of the registry between them rather than one each.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::Service;
use crate::domain::SequenceName;
use crate::registry::{self, RegistryError, SequenceView};

/// How long a reading of every sequence is answered again. Short: an operator who just added
/// a range sees it on the overview within this.
const FRESH_FOR: Duration = Duration::from_secs(2);

/// Sequences read per statement: each opens its ranges' PostgreSQL sequences, so a bounded
/// number per transaction.
const READ_PAGE: u32 = 1000;

/// The last reading of every sequence and when it was taken.
#[derive(Default)]
pub struct Snapshot(Mutex<Option<(Instant, Arc<Vec<SequenceView>>)>>);

impl Service {
    /// Every sequence, in name order, as read at most `FRESH_FOR` ago. One reading at a time:
    /// callers arriving meanwhile wait for it rather than start their own.
    pub async fn all_sequences(&self) -> Result<Arc<Vec<SequenceView>>, RegistryError> {
        let mut held = self.overview.0.lock().await;
        if let Some((at, views)) = held.as_ref() {
            if at.elapsed() < FRESH_FOR {
                return Ok(views.clone());
            }
        }
        let views = Arc::new(self.read_all_sequences().await?);
        *held = Some((Instant::now(), views.clone()));
        Ok(views)
    }

    async fn read_all_sequences(&self) -> Result<Vec<SequenceView>, RegistryError> {
        let mut all = Vec::new();
        let mut after: Option<SequenceName> = None;
        loop {
            let page =
                registry::list_sequences(&self.parts.registry, after.as_ref(), READ_PAGE).await?;
            all.extend(page.sequences);
            match page.next {
                None => return Ok(all),
                Some(next) => {
                    let name = SequenceName::parse(&next).map_err(|err| {
                        RegistryError::Internal(anyhow::anyhow!("stored name {next:?}: {err}"))
                    })?;
                    after = Some(name);
                }
            }
        }
    }
}
