//! Every sequence at once, for the console's overview: read from the registry in pages and
//! kept, so that sorting, filtering and paging by several viewers cost one read of the
//! registry between them. A reading older than `FRESH_FOR` is still answered (up to
//! `SERVE_STALE_FOR`) while a new one is taken in the background: with 10,000 sequences a
//! reading takes seconds, and a person paging through the list should not wait for it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::{watch, Mutex};
use tokio::task::{JoinError, JoinSet};

use super::Service;
use crate::registry::{self, RegistryError, SequenceView};

/// How long a reading is answered as it is.
const FRESH_FOR: Duration = Duration::from_secs(2);

/// How long a reading is answered while a newer one is taken; past it, callers wait for one.
const SERVE_STALE_FOR: Duration = Duration::from_secs(300);

/// Sequences read per statement: each statement opens its ranges' PostgreSQL sequences and
/// holds a lock on each until it ends, so a bounded number per statement.
const SLICE: u32 = 1000;

/// Slices read at once, each on a connection of the registry pool: two halve a reading's
/// time on a database with cores to spare, and leave the rest of the pool (four by default)
/// to the admin requests arriving meanwhile.
const SLICES_AT_ONCE: usize = 2;

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
        tracing::info!(
            sequences = sequences.len(),
            took_ms = taken.elapsed().as_millis() as u64,
            "read every sequence for the overview"
        );
        let reading = Reading {
            sequences,
            taken_at,
            taken,
        };
        self.overview.latest.send_replace(Some(reading.clone()));
        Ok(reading)
    }

    /// Every sequence, in name order: the registry cut into slices by name, read
    /// `SLICES_AT_ONCE` at a time, put back in order.
    async fn read_all_sequences(&self) -> Result<Vec<SequenceView>, RegistryError> {
        let pool = &self.parts.registry;
        let slices = slice_bounds(registry::slice_ends(pool, SLICE).await?);
        let mut read: Vec<Option<Vec<SequenceView>>> = vec![None; slices.len()];
        let mut reading = JoinSet::new();
        for (index, (after, through)) in slices.into_iter().enumerate() {
            if reading.len() >= SLICES_AT_ONCE {
                let (index, slice) = joined(reading.join_next().await)?;
                read[index] = Some(slice);
            }
            let pool = pool.clone();
            reading.spawn(async move {
                let slice = registry::sequences_between(&pool, &after, through.as_deref()).await;
                (index, slice)
            });
        }
        while let Some(done) = reading.join_next().await {
            let (index, slice) = joined(Some(done))?;
            read[index] = Some(slice);
        }
        Ok(read.into_iter().flatten().flatten().collect())
    }
}

/// `(after, through)` for each slice: from the start to the first end, from each end to the
/// next, and from the last end on (which holds the sequences created since the ends were
/// read, too).
fn slice_bounds(ends: Vec<String>) -> Vec<(String, Option<String>)> {
    let afters: Vec<String> = std::iter::once(String::new()).chain(ends.clone()).collect();
    let throughs = ends.into_iter().map(Some).chain(std::iter::once(None));
    afters.into_iter().zip(throughs).collect()
}

type SliceRead = (usize, Result<Vec<SequenceView>, RegistryError>);

/// A slice's reading, once its task ended.
fn joined(
    done: Option<Result<SliceRead, JoinError>>,
) -> Result<(usize, Vec<SequenceView>), RegistryError> {
    let (index, slice) = done
        .expect("a slice was being read")
        .map_err(|err| RegistryError::Internal(anyhow::anyhow!("reading a slice: {err}")))?;
    Ok((index, slice?))
}

#[cfg(test)]
mod tests {
    use super::slice_bounds;

    #[test]
    fn slices_cover_every_name_once_in_order() {
        let ends = vec!["b".to_owned(), "m".to_owned()];
        let bounds = slice_bounds(ends);
        assert_eq!(
            bounds,
            [
                (String::new(), Some("b".to_owned())),
                ("b".to_owned(), Some("m".to_owned())),
                ("m".to_owned(), None),
            ]
        );
        assert_eq!(slice_bounds(Vec::new()), [(String::new(), None)]);
    }
}
