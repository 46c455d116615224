//! One sequence's state, shared by its handles, its refill task and the client's ticker.
//! Callers take values here; only a call that finds the cache empty waits, and only for a
//! refill, never for the ticker.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{watch, Notify};

use crate::builder::Options;
use crate::cache::BlockCache;
use crate::clock::Now;
use crate::growth::Growth;
use crate::metrics::{Counters, Metrics};
use crate::policy::Planner;
use crate::service::Lease;
use crate::Error;

/// The outcome of the last lease request.
#[derive(Debug, Clone)]
pub(crate) enum Status {
    Fine,
    Failed { error: Error, at: Instant },
}

/// How long a lease is trusted from the moment its request left: a tenth short of its ttl,
/// for seqvend's clock and ours running at slightly other rates (the instance cache keeps the
/// same fence). The expiry margin comes off this too, for the ticker's and the takers' delay.
pub(crate) fn fenced(ttl: Duration) -> Duration {
    ttl - ttl / 10
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub name: Arc<str>,
    pub cache: BlockCache,
    pub counters: Counters,
    pub options: Arc<Options>,
    planner: Mutex<Planner>,
    /// Wakes the refill task: the cache wants values, or a caller waits.
    pub wake: Notify,
    /// Changed after every lease request, once its blocks are queued.
    pub status: watch::Sender<Status>,
    /// Values a `prefetch` wants held, beyond the refill rule.
    floor: AtomicU64,
    /// The client's start: the planner counts time from it.
    started: Instant,
}

impl Shared {
    pub fn new(name: &str, options: Arc<Options>, started: Instant) -> Self {
        let now = Instant::now();
        let mut planner = Planner::new(options.limits);
        // Use is counted from here: the first refill decision then sees a rate.
        planner.sample(now.saturating_duration_since(started), 0);
        Self {
            name: name.into(),
            cache: BlockCache::new(now),
            counters: Counters::default(),
            planner: Mutex::new(planner),
            options,
            wake: Notify::new(),
            status: watch::channel(Status::Fine).0,
            floor: AtomicU64::new(0),
            started,
        }
    }

    /// The fast path, then the slow one; never waits.
    #[inline]
    pub fn try_next(&self) -> Result<i64, Error> {
        match self.cache.take_one(Now::Live) {
            Some(value) => Ok(value),
            None => self.try_next_slow(Instant::now()),
        }
    }

    #[cold]
    fn try_next_slow(&self, now: Instant) -> Result<i64, Error> {
        while self.advance(now) {
            if let Some(value) = self.cache.take_one(Now::At(now)) {
                return Ok(value);
            }
        }
        match &*self.status.borrow() {
            Status::Failed { error, .. } => Err(error.clone()),
            Status::Fine => Err(Error::Empty),
        }
    }

    /// Moves to the next queued block, and wakes the refill task to weigh a refill: blocks are
    /// queued in pieces (`cache::PIECE`), so a fast taker has it weighed every piece rather
    /// than only each tick, when a tick's use may exceed what the cache holds above its mark.
    fn advance(&self, now: Instant) -> bool {
        let advanced = self.cache.advance(now, self.options.expiry_margin);
        self.wake.notify_one();
        advanced
    }

    /// Takes values into `out` until it holds `count`, waiting for refills while nothing is
    /// cached, up to the wait timeout. On failure, values already taken are discarded.
    pub async fn fill(&self, count: usize, out: &mut Vec<i64>) -> Result<(), Error> {
        let deadline = tokio::time::Instant::now() + self.options.wait_timeout;
        let mut status = self.status.subscribe();
        let mut waited = false;
        loop {
            // Marked seen before taking: a refill queued after the take changes it again.
            let seen = status.borrow_and_update().clone();
            let now = Instant::now();
            if self.take_cached(count, out, now) {
                if waited {
                    Counters::bump(&self.counters.waited_values, count as u64);
                }
                return Ok(());
            }
            if let Some(error) = self.definite_error(&seen, now) {
                return Err(self.abandon(out, error));
            }
            if !waited {
                waited = true;
                Counters::bump(&self.counters.waits, 1);
            }
            self.wake.notify_one();
            if tokio::time::timeout_at(deadline, status.changed())
                .await
                .is_err()
            {
                let error = match &*status.borrow() {
                    Status::Failed { error, .. } => error.clone(),
                    Status::Fine => Error::Timeout,
                };
                return Err(self.abandon(out, error));
            }
        }
    }

    /// True once `out` holds `count` values.
    fn take_cached(&self, count: usize, out: &mut Vec<i64>, now: Instant) -> bool {
        loop {
            let missing = (count - out.len()) as u64;
            if missing == 0 {
                return true;
            }
            if self.cache.take_into(missing, out, Now::At(now)) < missing && !self.advance(now) {
                return false;
            }
        }
    }

    /// A refusal the service gave within the quiet period: repeated without asking again.
    /// Once closed, always that.
    fn definite_error(&self, status: &Status, now: Instant) -> Option<Error> {
        match status {
            Status::Failed {
                error: Error::Closed,
                ..
            } => Some(Error::Closed),
            Status::Failed { error, at }
                if !error.is_transient() && now < *at + self.options.backoff.cap =>
            {
                Some(error.clone())
            }
            _ => None,
        }
    }

    fn abandon(&self, out: &mut Vec<i64>, error: Error) -> Error {
        Counters::bump(&self.counters.abandoned, out.len() as u64);
        out.clear();
        error
    }

    /// Waits until `values` are held, leasing beyond the refill rule if needed.
    pub async fn prefetch(&self, values: u64) -> Result<(), Error> {
        self.floor.fetch_max(values, Ordering::Relaxed);
        let result = self.await_held(values).await;
        let _ = self
            .floor
            .compare_exchange(values, 0, Ordering::Relaxed, Ordering::Relaxed);
        result
    }

    async fn await_held(&self, values: u64) -> Result<(), Error> {
        let mut status = self.status.subscribe();
        let mut deadline = tokio::time::Instant::now() + self.options.wait_timeout;
        loop {
            let seen = status.borrow_and_update().clone();
            let now = Instant::now();
            if self.cache.held(now, Duration::ZERO) >= values {
                return Ok(());
            }
            match seen {
                Status::Fine => deadline = tokio::time::Instant::now() + self.options.wait_timeout,
                Status::Failed { error, .. } if !error.is_transient() => return Err(error),
                Status::Failed { .. } => {}
            }
            self.wake.notify_one();
            if tokio::time::timeout_at(deadline, status.changed())
                .await
                .is_err()
            {
                return match &*status.borrow() {
                    Status::Failed { error, .. } => Err(error.clone()),
                    Status::Fine => Err(Error::Timeout),
                };
            }
        }
    }

    /// How many values to lease now, if any: none while a definite refusal is fresh.
    pub fn lease_wanted(&self, now: Instant) -> Option<u64> {
        if self.definite_error(&self.status.borrow(), now).is_some() {
            return None;
        }
        let planner = self.planner();
        let rate = planner.rate(now.saturating_duration_since(self.started));
        let held = self.cache.held(now, planner.horizon());
        planner.lease_count(held, rate, self.floor.load(Ordering::Relaxed))
    }

    /// The refill task's decision: like `lease_wanted`, but under the adaptive rule use is
    /// sampled first, so a cold start at full speed is seen after its first lease rather
    /// than at the next tick.
    pub fn next_lease(&self, now: Instant) -> Option<u64> {
        if self.planner().growth() != Growth::Fixed {
            self.sample(now);
        }
        self.lease_wanted(now)
    }

    fn sample(&self, now: Instant) {
        let taken = self.cache.taken();
        self.planner()
            .sample(now.saturating_duration_since(self.started), taken);
    }

    /// The ticker's round: expire, sample use, wake the refill task if the cache is low.
    pub fn tick(&self, now: Instant) {
        self.cache.expire(now, self.options.expiry_margin);
        self.sample(now);
        if self.lease_wanted(now).is_some() {
            self.wake.notify_one();
        }
    }

    /// Queues a lease's values (usable until `sent` plus the fenced ttl), then tells the
    /// waiters.
    pub fn accept(&self, lease: Lease, sent: Instant) {
        self.cache.push(&lease.blocks, sent + fenced(lease.ttl));
        let mut planner = self.planner();
        planner.learn(lease.cache, lease.ttl);
        planner.refilled(sent.elapsed());
        drop(planner);
        Counters::bump(&self.counters.refills, 1);
        self.report(Status::Fine);
    }

    /// The service refused a lease of `count` as invalid: if that count was above its
    /// documented limit, later leases keep to the limit and the refusal is not reported.
    pub fn refused_as_too_large(&self, count: u64, error: &Error) -> bool {
        matches!(error, Error::Service { status: 400, code, .. } if code == "invalid_request")
            && self.planner().refused_as_too_large(count)
    }

    pub fn fail(&self, error: Error, at: Instant) {
        self.report(Status::Failed { error, at });
    }

    /// Publishes a lease request's outcome, unless the client was closed: that stays.
    fn report(&self, outcome: Status) {
        self.status.send_if_modified(|status| {
            let open = !matches!(
                status,
                Status::Failed {
                    error: Error::Closed,
                    ..
                }
            );
            if open {
                *status = outcome;
            }
            open
        });
    }

    /// Hands out nothing more: what the cache held, and any lease still to come, is counted
    /// as discarded; callers are answered `Closed`.
    pub fn close(&self) {
        self.cache.close();
        self.status.send_replace(Status::Failed {
            error: Error::Closed,
            at: Instant::now(),
        });
    }

    pub fn metrics(&self) -> Metrics {
        self.counters
            .snapshot(self.cache.taken(), self.cache.expired())
    }

    fn planner(&self) -> MutexGuard<'_, Planner> {
        self.planner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use seqvend_blocks::Block;

    use super::*;
    use crate::builder::ClientBuilder;

    fn lease(first: i64, last: i64, ttl: Duration) -> Lease {
        Lease {
            blocks: vec![Block::new(first, last, 1).unwrap()],
            exhausted: false,
            ttl,
            cache: None,
        }
    }

    /// A large lease from a slow service came back long after it left: its values are still
    /// trusted only until its request's departure plus the fenced ttl, never from its arrival.
    #[test]
    fn a_lease_that_took_long_is_trusted_from_before_its_request_left_not_from_its_answer() {
        let options = Arc::new(ClientBuilder::default_options());
        let margin = options.expiry_margin;
        let shared = Shared::new("orders", options, Instant::now());
        let ttl = Duration::from_secs(10);
        let sent = Instant::now().checked_sub(Duration::from_secs(3)).unwrap();
        shared.accept(lease(1, 100_000, ttl), sent);
        let last_take = sent + fenced(ttl) - margin;
        assert!(shared.cache.advance(Instant::now(), margin));
        assert_eq!(shared.cache.take_one(Now::At(last_take)), Some(1));
        let late = last_take + Duration::from_nanos(1);
        assert_eq!(shared.cache.take_one(Now::At(late)), None);
        assert!(!shared.cache.advance(late, margin), "nothing else is held");
    }

    /// Whether the refill task was woken since last asked (a stored permit, taken here).
    async fn woken(shared: &Shared) -> bool {
        tokio::time::timeout(Duration::ZERO, shared.wake.notified())
            .await
            .is_ok()
    }

    /// A taker at 10 M/s uses more in a tick than a small cache holds above its mark: the end
    /// of each piece of a lease has the refill weighed, not only the ticker.
    #[tokio::test]
    async fn each_piece_of_a_lease_a_taker_moves_to_wakes_the_refill_task() {
        let options = Arc::new(ClientBuilder::default_options());
        let shared = Shared::new("orders", options, Instant::now());
        let piece = crate::cache::PIECE as i64;
        shared.accept(
            lease(1, 2 * piece, Duration::from_secs(600)),
            Instant::now(),
        );
        assert!(!woken(&shared).await, "a lease alone wakes nothing");
        assert_eq!(shared.try_next(), Ok(1));
        assert!(woken(&shared).await, "the first piece");
        for expected in 2..=piece {
            assert_eq!(shared.try_next(), Ok(expected));
        }
        assert!(
            !woken(&shared).await,
            "takes inside a piece stay on the fast path"
        );
        assert_eq!(shared.try_next(), Ok(piece + 1));
        assert!(woken(&shared).await, "the second piece");
    }

    #[test]
    fn a_closed_sequence_answers_closed_and_counts_what_it_held_and_what_came_after() {
        let options = Arc::new(ClientBuilder::default_options());
        let shared = Shared::new("orders", options, Instant::now());
        let ttl = Duration::from_secs(600);
        shared.accept(lease(1, 1000, ttl), Instant::now());
        assert_eq!(shared.try_next(), Ok(1));
        shared.close();
        assert_eq!(shared.try_next(), Err(Error::Closed));
        shared.accept(lease(1001, 1500, ttl), Instant::now());
        assert_eq!(
            shared.try_next(),
            Err(Error::Closed),
            "a late lease changes nothing"
        );
        assert_eq!(shared.lease_wanted(Instant::now()), None);
        let metrics = shared.metrics();
        assert_eq!((metrics.hits, metrics.discarded), (1, 999 + 500));
    }
}
