//! Every sequence at once, for the console's overview: read from the registry in pages and
//! kept, so that sorting, filtering and paging by several viewers cost one read of the
//! registry between them. A reading older than `FRESH_FOR` is still answered (up to
//! `SERVE_STALE_FOR`) while a new one is taken in the background: with 10,000 sequences a
//! reading takes seconds, and a person paging through the list should not wait for it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::{watch, Mutex};

use super::Service;
use crate::domain::SequenceName;
use crate::registry::{self, RegistryError, SequenceView};

/// How long a reading is answered as it is.
const FRESH_FOR: Duration = Duration::from_secs(2);

/// How long a reading is answered while a newer one is taken; past it, callers wait for one.
const SERVE_STALE_FOR: Duration = Duration::from_secs(300);

/// Sequences read per statement: each opens its ranges' PostgreSQL sequences, so a bounded
/// number per transaction.
const READ_PAGE: u32 = 1000;

/// Every sequence in name order, and when they were read.
#[derive(Clone)]
pub struct Reading {
    pub sequences: Arc<Vec<SequenceView>>,
    pub taken_at: DateTime<Utc>,
    taken: Instant,
}

/// The latest reading (watched by callers waiting for one), and the lock that lets one
/// reading be taken at a time.
pub struct Snapshot {
    latest: watch::Sender<Option<Reading>>,
    reading: Arc<Mutex<()>>,
}

impl Default for Snapshot {
    fn default() -> Self {
        Self {
            latest: watch::Sender::new(None),
            reading: Arc::default(),
        }
    }
}

impl Snapshot {
    fn latest_within(&self, age: Duration) -> Option<Reading> {
        within(self.latest.borrow().as_ref(), age).cloned()
    }
}

fn within(reading: Option<&Reading>, age: Duration) -> Option<&Reading> {
    reading.filter(|reading| reading.taken.elapsed() < age)
}

impl Service {
    /// Every sequence: read at most `FRESH_FOR` ago, or (while a newer reading is taken in the
    /// background) at most `SERVE_STALE_FOR` ago; else as soon as a reading is taken. The
    /// reading runs on a task of its own, so a caller that gives up (its request's deadline)
    /// leaves it to finish for the next.
    pub async fn all_sequences(self: &Arc<Self>) -> Result<Reading, RegistryError> {
        if let Some(fresh) = self.overview.latest_within(FRESH_FOR) {
            return Ok(fresh);
        }
        if let Some(stale) = self.overview.latest_within(SERVE_STALE_FOR) {
            self.refresh_in_background();
            return Ok(stale);
        }
        let mut taken = self.overview.latest.subscribe();
        self.refresh_in_background();
        let reading = taken
            .wait_for(|latest| within(latest.as_ref(), SERVE_STALE_FOR).is_some())
            .await
            .map_err(|_| RegistryError::Internal(anyhow::anyhow!("the overview is gone")))?;
        Ok(reading.clone().expect("waited for a reading"))
    }

    /// Starts a reading unless one is being taken.
    fn refresh_in_background(self: &Arc<Self>) {
        let Ok(one_at_a_time) = self.overview.reading.clone().try_lock_owned() else {
            return;
        };
        let service = self.clone();
        tokio::spawn(async move {
            if let Err(err) = service.take_reading().await {
                tracing::warn!(error = %err, "could not read the sequences for the overview");
            }
            drop(one_at_a_time);
        });
    }

    async fn take_reading(&self) -> Result<Reading, RegistryError> {
        let (taken, taken_at) = (Instant::now(), Utc::now());
        let sequences = Arc::new(self.read_all_sequences().await?);
        let reading = Reading {
            sequences,
            taken_at,
            taken,
        };
        self.overview.latest.send_replace(Some(reading.clone()));
        Ok(reading)
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
