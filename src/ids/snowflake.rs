//! This instance's Snowflake issuer: the generator of the worker id it leased, fenced by the
//! lease. Before each issue the lease is checked by the monotonic clock, so an instance whose
//! renewals stopped getting through stops issuing on its own, before the database lets
//! anyone else take its worker id.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seqvend_blocks::snowflake::{Generator, Hold, Layout};

use super::clock::Clock;
use super::error::IdError;
use super::worker_lease::Lease;
use crate::metrics::Metrics;

pub struct Snowflake {
    layout: Layout,
    clock: Clock,
    tolerance_ms: i64,
    metrics: Arc<Metrics>,
    held: Mutex<Option<Held>>,
    /// Set for good by `give_up`: nothing is held again, whatever a late renewal answers.
    given_up: AtomicBool,
}

struct Held {
    generator: Generator,
    holder: String,
    /// The lease is ours until then, by the monotonic clock.
    valid_until: Instant,
}

impl Snowflake {
    pub fn new(layout: Layout, clock: Clock, tolerance: Duration, metrics: Arc<Metrics>) -> Self {
        Self {
            layout,
            clock,
            tolerance_ms: tolerance.as_millis() as i64,
            metrics,
            held: Mutex::new(None),
            given_up: AtomicBool::new(false),
        }
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The worker id and holder token of the lease held, if any.
    pub fn lease(&self) -> Option<(u32, String)> {
        let held = self.held.lock().expect("not poisoned");
        held.as_ref()
            .map(|h| (h.generator.worker_id(), h.holder.clone()))
    }

    /// A lease was taken at `sent_at` (when its statement left; the database counted the
    /// lease from later than that): issuing starts afresh under it. Refused once given up.
    pub fn hold(&self, lease: &Lease, valid_for: Duration, sent_at: Instant) {
        let mut held = self.held.lock().expect("not poisoned");
        if self.given_up.load(Ordering::SeqCst) {
            return;
        }
        *held = Some(Held {
            generator: Generator::new(
                self.layout,
                lease.worker_id,
                lease.not_before_ms,
                lease.not_after_ms,
            ),
            holder: lease.holder.clone(),
            valid_until: sent_at + valid_for,
        });
    }

    /// A renewal sent at `sent_at` extended `lease`. Only the lease still held is extended:
    /// a renewal answering after the lease was dropped or given up must not start a new
    /// generator, which would stamp again the milliseconds the old one used. Returns whether
    /// it extended anything.
    pub fn renewed(&self, lease: &Lease, valid_for: Duration, sent_at: Instant) -> bool {
        let mut held = self.held.lock().expect("not poisoned");
        match held.as_mut() {
            Some(h) if h.generator.worker_id() == lease.worker_id && h.holder == lease.holder => {
                h.generator.extend(lease.not_after_ms);
                h.valid_until = sent_at + valid_for;
                true
            }
            _ => false,
        }
    }

    /// The lease is gone (taken by another holder).
    pub fn release(&self) {
        *self.held.lock().expect("not poisoned") = None;
    }

    /// Stops issuing for good (the instance is stopping): returns the worker id, the holder
    /// token and the last millisecond stamped, so the lease can be handed back.
    pub fn give_up(&self) -> Option<(u32, String, i64)> {
        let mut held = self.held.lock().expect("not poisoned");
        self.given_up.store(true, Ordering::SeqCst);
        let held = held.take()?;
        Some((
            held.generator.worker_id(),
            held.holder,
            held.generator.last_ms(),
        ))
    }

    /// `count` ids, strictly increasing. Waits out a full millisecond and small steps of the
    /// clock back; refuses larger steps, and any issue outside the lease.
    pub async fn issue(&self, count: usize) -> Result<Vec<i64>, IdError> {
        let mut ids = Vec::with_capacity(count);
        loop {
            let wait_for = match self.issue_now(count, &mut ids)? {
                None => return Ok(ids),
                Some(ms) => ms,
            };
            tokio::time::sleep(Duration::from_millis(wait_for.max(1))).await;
        }
    }

    /// Issues into `ids` until it holds `count` (None) or the clock must move first (Some:
    /// the milliseconds to wait).
    fn issue_now(&self, count: usize, ids: &mut Vec<i64>) -> Result<Option<u64>, IdError> {
        let mut held = self.held.lock().expect("not poisoned");
        let held = held.as_mut().ok_or(IdError::NoWorkerId)?;
        if Instant::now() >= held.valid_until {
            return Err(IdError::LeaseLapsed);
        }
        let now_ms = self.clock.now_ms();
        while ids.len() < count {
            match held.generator.next(now_ms, self.tolerance_ms) {
                Ok(id) => ids.push(id),
                Err(Hold::Until(ms)) => return Ok(Some((ms - now_ms) as u64)),
                Err(Hold::Backwards { by_ms }) => {
                    self.metrics.clock_moved_backwards.inc();
                    tracing::warn!(by_ms, "the clock moved back: Snowflake ids refused");
                    return Err(IdError::ClockMovedBackwards { by_ms });
                }
                Err(Hold::PastLease) => return Err(IdError::ClockAheadOfLease),
                Err(Hold::OutsideLayout) => return Err(IdError::OutsideLayout { now_ms }),
            }
        }
        self.metrics
            .ids_issued
            .with_label_values(&["snowflake"])
            .inc_by(count as u64);
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str) -> Lease {
        Lease {
            worker_id: 3,
            holder: holder.to_owned(),
            expires_at: chrono::Utc::now(),
            not_before_ms: 0,
            not_after_ms: i64::MAX / 4,
        }
    }

    fn snowflake() -> Snowflake {
        let metrics = Arc::new(Metrics::new());
        Snowflake::new(Layout::DEFAULT, Clock::system(), Duration::ZERO, metrics)
    }

    #[tokio::test]
    async fn a_renewal_answering_after_the_lease_was_given_up_issues_nothing() {
        let snowflake = snowflake();
        let valid = Duration::from_secs(30);
        snowflake.hold(&lease("a"), valid, Instant::now());
        snowflake.issue(3).await.unwrap();
        assert!(snowflake.give_up().is_some());
        assert!(!snowflake.renewed(&lease("a"), valid, Instant::now()));
        snowflake.hold(&lease("b"), valid, Instant::now());
        assert!(matches!(snowflake.issue(1).await, Err(IdError::NoWorkerId)));
    }

    #[tokio::test]
    async fn a_renewal_extends_only_the_lease_still_held() {
        let snowflake = snowflake();
        let valid = Duration::from_secs(30);
        assert!(!snowflake.renewed(&lease("a"), valid, Instant::now()));
        snowflake.hold(&lease("a"), valid, Instant::now());
        assert!(!snowflake.renewed(&lease("b"), valid, Instant::now()));
        assert!(snowflake.renewed(&lease("a"), valid, Instant::now()));
        snowflake.issue(1).await.unwrap();
    }
}
