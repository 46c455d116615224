//! This instance's Snowflake issuer: the generator of the worker id it leased, fenced by the
//! lease. Before each issue the lease is checked by the monotonic clock, so an instance whose
//! renewals stopped getting through stops issuing on its own, before the database lets
//! anyone else take its worker id.

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

    /// A lease was taken, or renewed, at `sent_at` (when its statement left; the database
    /// counted the lease from later than that).
    pub fn hold(&self, lease: &Lease, valid_for: Duration, sent_at: Instant) {
        let mut held = self.held.lock().expect("not poisoned");
        let valid_until = sent_at + valid_for;
        match held.as_mut() {
            Some(h) if h.generator.worker_id() == lease.worker_id && h.holder == lease.holder => {
                h.generator.extend(lease.not_after_ms);
                h.valid_until = valid_until;
            }
            _ => {
                *held = Some(Held {
                    generator: Generator::new(
                        self.layout,
                        lease.worker_id,
                        lease.not_before_ms,
                        lease.not_after_ms,
                    ),
                    holder: lease.holder.clone(),
                    valid_until,
                })
            }
        }
    }

    /// The lease is gone (taken by another holder).
    pub fn release(&self) {
        *self.held.lock().expect("not poisoned") = None;
    }

    /// Stops issuing for good (the instance is stopping): returns the worker id, the holder
    /// token and the last millisecond stamped, so the lease can be handed back.
    pub fn give_up(&self) -> Option<(u32, String, i64)> {
        let held = self.held.lock().expect("not poisoned").take()?;
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
