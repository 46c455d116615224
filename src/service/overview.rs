//! Every sequence at once, for the console's overview: read from the registry in pages and
//! kept, so that sorting, filtering and paging by several viewers cost one read of the
//! registry between them. With 10,000 sequences a reading takes seconds, so nobody waits
//! for one but the first caller after start (and only if it comes before the reading taken
//! at start is done):
//!
//! - while the console is on, a reading is taken at start, and every `KEEP_FRESH_EVERY`
//!   after while the overview has been asked for within `KEEP_FRESH_WHILE_ASKED_WITHIN`,
//!   in the background (a console nobody looks at costs the database nothing);
//! - a caller is answered from the kept reading whatever its age (it says when it was
//!   taken); if it is older than one usage round, a newer one is taken in the background;
//! - the sequences changed since the reading (made, retired, their settings changed, a
//!   range added or rolled over — by this instance or any other) are read afresh for every
//!   caller, so an operator's own change shows on their next view.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::{watch, Mutex};
use tokio::task::{JoinError, JoinHandle, JoinSet};
use tokio::time::MissedTickBehavior;

use super::Service;
use crate::db::{Pace, Registry};
use crate::registry::{self, RegistryError, SequenceView};

/// How often the kept reading is renewed in the background while someone looks (see
/// docs/console.md for what a reading costs the database).
const KEEP_FRESH_EVERY: Duration = Duration::from_secs(60);

/// How long after the overview was last asked for the kept reading is still renewed every
/// `KEEP_FRESH_EVERY`. A reading of 10,000 sequences is about half a second of the database's
/// CPU, which nobody's console should cost; once nobody has looked for this long, the next
/// viewer gets the kept reading (with its time) and has a newer one taken.
const KEEP_FRESH_WHILE_ASKED_WITHIN: Duration = Duration::from_secs(600);

/// How far before a reading began its changes are looked for: a change is stamped with its
/// transaction's start, so one that began before the reading and committed after the
/// reading's statements took their snapshots is stamped earlier than the reading. Registry
/// transactions are short (a statement deadline of seconds); a minute covers them.
const CHANGES_MARGIN: Duration = Duration::from_secs(60);

/// Most changed sequences read afresh for a request: a few statements' worth. More (a bulk
/// import) are left to the next reading, which the request starts: the answer is then as
/// of its reading alone.
const PATCH_AT_MOST: usize = 100;

/// Sequences read per statement: each statement opens its ranges' PostgreSQL sequences and
/// holds a lock on each until it ends, so a bounded number per statement.
const SLICE: u32 = 1000;

/// Sequences read per statement by a renewal, which nobody waits for: each slice a few
/// milliseconds of the database's CPU, with a rest after it.
const PACED_SLICE: u32 = 200;

/// Slices read at once, each on a connection of the registry pool, for the first reading
/// (which a caller may be waiting for): two halve a reading's time on a database with cores
/// to spare, and leave the rest of the pool (four by default) to the admin requests arriving
/// meanwhile. Later readings, which nobody waits for, read one slice at a time.
const FIRST_SLICES_AT_ONCE: usize = 2;

/// Every sequence in name order, and when they were read.
#[derive(Clone)]
pub struct Reading {
    sequences: Arc<Vec<SequenceView>>,
    /// When the reading began, by the database's clock.
    taken_at: DateTime<Utc>,
    taken: Instant,
}

/// A kept reading brought up to date: the sequences changed since, as read now.
pub struct Overview {
    reading: Reading,
    changed: HashMap<String, SequenceView>,
}

impl Overview {
    /// When the registry was read (sequences changed since were read just now).
    pub fn as_of(&self) -> DateTime<Utc> {
        self.reading.taken_at
    }

    /// Every sequence, in no particular order.
    pub fn sequences(&self) -> impl Iterator<Item = &SequenceView> {
        let unchanged = self
            .reading
            .sequences
            .iter()
            .filter(|sequence| !self.changed.contains_key(&sequence.name));
        unchanged.chain(self.changed.values())
    }
}

/// The latest reading (watched by callers waiting for one), the lock that lets one reading
/// be taken at a time, and the age past which a caller has a newer one taken.
pub struct Snapshot {
    latest: watch::Sender<Option<Reading>>,
    reading: Arc<Mutex<()>>,
    fresh_for: Duration,
    /// When the overview was last asked for.
    asked: std::sync::Mutex<Option<Instant>>,
}

impl Snapshot {
    /// `fresh_for`: the usage rounds' interval, since rates, forecasts and alerts change
    /// once a round.
    pub fn new(fresh_for: Duration) -> Self {
        Self {
            latest: watch::Sender::new(None),
            reading: Arc::default(),
            fresh_for,
            asked: std::sync::Mutex::new(None),
        }
    }

    /// Whether the background renewal should take a reading now: when none is kept yet, or
    /// while someone is looking.
    fn worth_renewing(&self) -> bool {
        let kept = self.latest.borrow().is_some();
        let asked = *self
            .asked
            .lock()
            .expect("never poisoned: no panic while held");
        worth_renewing(kept, asked.map(|at| at.elapsed()))
    }
}

/// Whether to renew a reading in the background, given whether one is kept and how long ago
/// the overview was last asked for (never: `None`).
fn worth_renewing(kept: bool, since_asked: Option<Duration>) -> bool {
    !kept || since_asked.is_some_and(|since| since < KEEP_FRESH_WHILE_ASKED_WITHIN)
}

impl Service {
    /// Every sequence: the kept reading, with the sequences changed since it read afresh.
    pub async fn overview(self: &Arc<Self>) -> Result<Overview, RegistryError> {
        *self
            .overview
            .asked
            .lock()
            .expect("never poisoned: no panic while held") = Some(Instant::now());
        let reading = self.kept_reading().await?;
        let since = reading.taken_at - CHANGES_MARGIN;
        let names = registry::changed_since(&self.parts.registry, since, PATCH_AT_MOST).await?;
        let changed = match names.len() {
            0 => HashMap::new(),
            1..=PATCH_AT_MOST => {
                let fresh = registry::sequences_named(&self.parts.registry, &names).await?;
                fresh.into_iter().map(|s| (s.name.clone(), s)).collect()
            }
            many => {
                tracing::debug!(changed = many, "too many changes to patch the overview");
                tokio::spawn(self.clone().refresh());
                HashMap::new()
            }
        };
        Ok(Overview { reading, changed })
    }

    /// The kept reading, whatever its age (a newer one is taken in the background when it
    /// is older than `fresh_for`); the first one when none is kept yet. The reading runs on
    /// a task of its own, so a caller that gives up (its request's deadline) leaves it to
    /// finish for the next.
    async fn kept_reading(self: &Arc<Self>) -> Result<Reading, RegistryError> {
        let kept = self.overview.latest.borrow().clone();
        if let Some(kept) = kept {
            if kept.taken.elapsed() >= self.overview.fresh_for {
                tokio::spawn(self.clone().refresh());
            }
            return Ok(kept);
        }
        let mut taken = self.overview.latest.subscribe();
        tokio::spawn(self.clone().refresh());
        let reading = taken
            .wait_for(Option::is_some)
            .await
            .map_err(|_| RegistryError::Internal(anyhow::anyhow!("the overview is gone")))?;
        Ok(reading.clone().expect("waited for a reading"))
    }

    /// Takes a reading now, and every `KEEP_FRESH_EVERY` after while the overview is being
    /// asked for, until the task is aborted.
    pub fn keep_overview_fresh(self: Arc<Self>) -> JoinHandle<()> {
        tokio::spawn(async move {
            let mut every = tokio::time::interval(KEEP_FRESH_EVERY);
            every.set_missed_tick_behavior(MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                if self.overview.worth_renewing() {
                    self.clone().refresh().await;
                }
            }
        })
    }

    /// Takes a reading unless one is being taken.
    async fn refresh(self: Arc<Self>) {
        let Ok(_one_at_a_time) = self.overview.reading.clone().try_lock_owned() else {
            return;
        };
        if let Err(err) = self.take_reading().await {
            tracing::warn!(error = %err, "could not read the sequences for the overview");
        }
    }

    async fn take_reading(&self) -> Result<(), RegistryError> {
        let taken = Instant::now();
        let (taken_at, sequences) = self.read_all_sequences().await?;
        tracing::info!(
            sequences = sequences.len(),
            took_ms = taken.elapsed().as_millis() as u64,
            "read every sequence for the overview"
        );
        let reading = Reading {
            sequences: Arc::new(sequences),
            taken_at,
            taken,
        };
        self.overview.latest.send_replace(Some(reading));
        Ok(())
    }

    /// Every sequence, in name order, and when the reading began: the registry cut into
    /// slices by name and put back in order. The first reading, which a caller may wait for,
    /// reads `FIRST_SLICES_AT_ONCE` slices at a time; later ones, which nobody waits for, read
    /// smaller slices one at a time, paced, so that a renewal never holds a core of the
    /// database for long.
    async fn read_all_sequences(
        &self,
    ) -> Result<(DateTime<Utc>, Vec<SequenceView>), RegistryError> {
        let pool = &self.parts.registry;
        let first = self.overview.latest.borrow().is_none();
        let slice = if first { SLICE } else { PACED_SLICE };
        let (began, ends) = registry::slice_ends(pool, slice).await?;
        let slices = slice_bounds(ends);
        let sequences = if first {
            read_slices_at_once(pool, slices).await?
        } else {
            read_slices_paced(pool, slices).await?
        };
        Ok((began, sequences))
    }
}

/// Reads `slices` `FIRST_SLICES_AT_ONCE` at a time, each on a connection of its own.
async fn read_slices_at_once(
    pool: &Registry,
    slices: Vec<(String, Option<String>)>,
) -> Result<Vec<SequenceView>, RegistryError> {
    let mut read: Vec<Option<Vec<SequenceView>>> = vec![None; slices.len()];
    let mut reading = JoinSet::new();
    for (index, (after, through)) in slices.into_iter().enumerate() {
        if reading.len() >= FIRST_SLICES_AT_ONCE {
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

/// Reads `slices` one after the other, with a rest after each (`Pace`).
async fn read_slices_paced(
    pool: &Registry,
    slices: Vec<(String, Option<String>)>,
) -> Result<Vec<SequenceView>, RegistryError> {
    let pace = Pace::new(KEEP_FRESH_EVERY);
    let mut read = Vec::new();
    for (after, through) in slices {
        let slice = registry::sequences_between(pool, &after, through.as_deref());
        read.extend(pace.page(slice).await?);
    }
    Ok(read)
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
    use super::*;

    #[test]
    fn readings_are_renewed_only_while_someone_looks() {
        let minute = Duration::from_secs(60);
        assert!(worth_renewing(false, None), "the first reading, at start");
        assert!(!worth_renewing(true, None), "kept, and never asked for");
        assert!(worth_renewing(true, Some(minute)), "asked for a minute ago");
        assert!(!worth_renewing(true, Some(KEEP_FRESH_WHILE_ASKED_WITHIN)));
        assert!(!worth_renewing(true, Some(60 * minute)));
    }

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
