//! One cached sequence's values in this instance: leased blocks in vend order, what is held,
//! the rate of use, and whether a refill is under way. Everything here runs under one short
//! lock and never waits on I/O; `InstanceCache` does the waiting and the refills.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use seqvend_blocks::{Block, RateWindow, RefillRule};
use tokio::sync::futures::Notified;
use tokio::sync::Notify;

use crate::vend::{Lease, Outcome};

pub struct Reservoir {
    state: Mutex<State>,
    /// Woken when a refill ends, whatever it brought.
    refilled: Notify,
}

struct State {
    rule: RefillRule,
    blocks: VecDeque<Held>,
    held: u64,
    window: RateWindow,
    started: Instant,
    refilling: bool,
    /// No refill starts before this after one found the database unavailable.
    retry_at: Option<Instant>,
    failures: u32,
    /// Counts ended refills, so a waiter knows the one it waited for has ended.
    generation: u64,
    last_end: Option<RefillEnd>,
    closed: Option<Closed>,
    /// The newest lease this reservoir held, its blocks handed out or not.
    newest_lease: Option<i64>,
}

/// A leased block and how far into it this instance has handed out.
struct Held {
    block: Block,
    taken: u64,
    lease: i64,
    /// Past this, by this instance's clock, the lease may have expired: the rest is dropped.
    trusted_until: Instant,
}

/// How a refill ended.
#[derive(Debug, Clone)]
pub enum RefillEnd {
    Granted { clipped: bool },
    Answered(Outcome),
    Unavailable,
}

/// What a closed reservoir leaves behind: values dropped, and the leases to release.
#[derive(Debug, PartialEq, Eq)]
pub struct Dropped {
    pub values: u64,
    /// Every lease this reservoir held has an id up to this one, and none of its successor's
    /// does (see `InstanceCache::evict`). `None`: it never held a lease.
    pub leases_up_to: Option<i64>,
}

/// Why a reservoir hands out nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    Retired,
    /// Its policy changed or the instance is stopping: a new reservoir takes over.
    Replaced,
}

/// What a request gets from the reservoir now.
pub enum Step<'a> {
    /// Values, all asked for, or fewer when the sequence ran out.
    Served(Vec<i64>),
    /// The sequence's answer with nothing cached to serve (exhausted, retired, …).
    Answer(Outcome),
    Unavailable,
    Closed(Closed),
    /// Short: wait for the refill under way (started by this call if `start_refill`), then
    /// ask again with the generation given.
    Wait {
        ended: Notified<'a>,
        generation: u64,
    },
}

/// A step, whether the caller must start a refill now, and values dropped as expired.
pub struct Taken<'a> {
    pub step: Step<'a>,
    pub start_refill: bool,
    pub discarded: u64,
}

const BACKOFF_BASE: Duration = Duration::from_millis(100);
const BACKOFF_CAP: Duration = Duration::from_secs(5);

impl Reservoir {
    pub fn new(rule: RefillRule, now: Instant) -> Self {
        Self {
            state: Mutex::new(State {
                rule,
                blocks: VecDeque::new(),
                held: 0,
                window: RateWindow::default(),
                started: now,
                refilling: false,
                retry_at: None,
                failures: 0,
                generation: 0,
                last_end: None,
                closed: None,
                newest_lease: None,
            }),
            refilled: Notify::new(),
        }
    }

    /// Takes `count` values (at most the policy's size). `seen` is the generation a previous
    /// `Wait` gave, if this request already waited.
    pub fn take(&self, count: u64, seen: Option<u64>, now: Instant) -> Taken<'_> {
        let mut state = self.lock();
        let discarded = state.drop_expired(now);
        let step = state.step(count, seen, now, &self.refilled);
        let start_refill = state.should_refill(now, matches!(step, Step::Wait { .. }));
        if start_refill {
            state.refilling = true;
        }
        Taken {
            step,
            start_refill,
            discarded,
        }
    }

    /// How many values a refill should draw now; `None` if the reservoir closed meanwhile.
    pub fn refill_size(&self) -> Option<u64> {
        let state = self.lock();
        match state.closed {
            Some(_) => None,
            None => Some(state.rule.top_up(state.held).max(1)),
        }
    }

    /// Ends a refill. A granted lease is kept unless the reservoir closed meanwhile: then it
    /// is returned, for the caller to release. Waiters are woken either way.
    pub fn end_refill(&self, end: RefillEnd, lease: Option<(Lease, Duration)>) -> Option<Lease> {
        let mut state = self.lock();
        let mut rejected = None;
        if let Some((lease, trust)) = lease {
            if state.closed.is_some() {
                rejected = Some(lease);
            } else {
                state.hold(&lease, lease.sent_at + trust);
            }
        }
        let now = Instant::now();
        match &end {
            RefillEnd::Unavailable => {
                state.failures = state.failures.saturating_add(1);
                state.retry_at = Some(now + backoff(state.failures));
            }
            RefillEnd::Answered(Outcome::Retired) => {
                state.closed.get_or_insert(Closed::Retired);
            }
            _ => {
                state.failures = 0;
                state.retry_at = None;
            }
        }
        state.last_end = Some(end);
        state.generation += 1;
        state.refilling = false;
        drop(state);
        self.refilled.notify_waiters();
        rejected
    }

    /// Values held and not yet handed out.
    pub fn held(&self) -> u64 {
        self.lock().held
    }

    /// Hands out nothing more; returns what it held.
    pub fn close(&self, why: Closed) -> Dropped {
        let mut state = self.lock();
        state.closed.get_or_insert(why);
        let dropped = Dropped {
            values: state.held,
            leases_up_to: state.newest_lease,
        };
        state.blocks.clear();
        state.held = 0;
        drop(state);
        self.refilled.notify_waiters();
        dropped
    }

    /// The leases whose blocks still hold values: the ones worth renewing. A lease whose
    /// values were all handed out is left to expire.
    pub fn leases_in_use(&self) -> impl Iterator<Item = i64> {
        let state = self.lock();
        let mut leases: Vec<i64> = state.blocks.iter().map(|held| held.lease).collect();
        leases.dedup();
        leases.into_iter()
    }

    pub fn set_rule(&self, rule: RefillRule) {
        self.lock().rule = rule;
    }

    /// A renewal extended these leases, from a statement sent before `trusted_until` less the
    /// fenced lease length. A block whose trust lapsed before `now` is dropped, renewed or not:
    /// once lapsed, its lease may have expired in the database and a retirement may have
    /// answered, so nothing revives it. Returns the values dropped.
    pub fn renewed(&self, leases: &HashSet<i64>, trusted_until: Instant, now: Instant) -> u64 {
        let mut state = self.lock();
        let dropped = state.drop_expired(now);
        for held in state.blocks.iter_mut() {
            if leases.contains(&held.lease) {
                held.trusted_until = held.trusted_until.max(trusted_until);
            }
        }
        dropped
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Every change under the lock leaves the state whole, even if a panic cut it short.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl State {
    fn step<'a>(
        &mut self,
        count: u64,
        seen: Option<u64>,
        now: Instant,
        notify: &'a Notify,
    ) -> Step<'a> {
        if let Some(closed) = self.closed {
            return Step::Closed(closed);
        }
        if self.held >= count {
            return Step::Served(self.serve(count, now));
        }
        let ended_since_seen = seen.is_some_and(|seen| self.generation > seen);
        let last_failed = matches!(self.last_end, Some(RefillEnd::Unavailable));
        let backing_off = self.retry_at.is_some_and(|at| now < at);
        if ended_since_seen || (last_failed && backing_off && !self.refilling) {
            match &self.last_end {
                Some(RefillEnd::Granted { clipped: false }) | None => {}
                Some(RefillEnd::Granted { clipped: true })
                | Some(RefillEnd::Answered(Outcome::Exhausted)) => {
                    return match self.held {
                        0 => Step::Answer(Outcome::Exhausted),
                        all => Step::Served(self.serve(all, now)),
                    };
                }
                Some(RefillEnd::Answered(outcome)) => return Step::Answer(outcome.clone()),
                Some(RefillEnd::Unavailable) => return Step::Unavailable,
            }
        }
        Step::Wait {
            ended: notify.notified(),
            generation: self.generation,
        }
    }

    fn should_refill(&self, now: Instant, short: bool) -> bool {
        if self.refilling || self.closed.is_some() {
            return false;
        }
        if self.retry_at.is_some_and(|at| now < at) {
            return false;
        }
        short || self.rule.needs_refill(self.held, || self.rate(now))
    }

    fn serve(&mut self, count: u64, now: Instant) -> Vec<i64> {
        let mut values = Vec::with_capacity(count as usize);
        while (values.len() as u64) < count {
            let Some(front) = self.blocks.front_mut() else {
                break;
            };
            let wanted = count - values.len() as u64;
            let available = front.block.len() - front.taken;
            let n = wanted.min(available);
            values.extend((front.taken..front.taken + n).filter_map(|i| front.block.value_at(i)));
            front.taken += n;
            if front.taken == front.block.len() {
                self.blocks.pop_front();
            }
        }
        self.held -= values.len() as u64;
        let second = now.duration_since(self.started).as_secs();
        self.window.record(second, values.len() as u64);
        values
    }

    fn hold(&mut self, lease: &Lease, trusted_until: Instant) {
        self.newest_lease = self.newest_lease.max(Some(lease.id));
        for block in &lease.blocks {
            self.blocks.push_back(Held {
                block: *block,
                taken: 0,
                lease: lease.id,
                trusted_until,
            });
            self.held += block.len();
        }
    }

    /// Drops blocks whose lease this instance can no longer trust; returns the values dropped.
    fn drop_expired(&mut self, now: Instant) -> u64 {
        let mut dropped = 0;
        self.blocks.retain(|held| {
            let keep = now < held.trusted_until;
            if !keep {
                dropped += held.block.len() - held.taken;
            }
            keep
        });
        self.held -= dropped;
        dropped
    }

    fn rate(&self, now: Instant) -> f64 {
        self.window
            .per_second(now.duration_since(self.started).as_secs())
    }
}

/// Exponential backoff with full jitter: anywhere up to base × 2^failures, capped.
fn backoff(failures: u32) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1 << failures.min(16))
        .min(BACKOFF_CAP);
    ceiling.mul_f64(rand::random::<f64>())
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: RefillRule = RefillRule {
        size: 100,
        buffer_seconds: 0,
        min: 0,
    };

    /// A reservoir holding lease 7 (values 1-10), trusted until `trusted_until`.
    fn holding_lease(now: Instant, trusted_until: Instant) -> Reservoir {
        let reservoir = Reservoir::new(RULE, now);
        grant(&reservoir, 7, 1, now, trusted_until);
        reservoir
    }

    /// Ends a refill with lease `id` of values first..first+9.
    fn grant(reservoir: &Reservoir, id: i64, first: i64, now: Instant, trusted_until: Instant) {
        let lease = Lease {
            id,
            blocks: vec![Block::new(first, first + 9, 1).unwrap()],
            count: 10,
            expires_at: chrono::Utc::now(),
            sent_at: now,
            clipped: false,
        };
        let trust = trusted_until.duration_since(now);
        assert!(reservoir
            .end_refill(RefillEnd::Granted { clipped: false }, Some((lease, trust)))
            .is_none());
    }

    fn served(reservoir: &Reservoir, now: Instant) -> Option<Vec<i64>> {
        match reservoir.take(1, None, now).step {
            Step::Served(values) => Some(values),
            _ => None,
        }
    }

    #[test]
    fn a_renewal_extends_a_block_still_trusted() {
        let start = Instant::now();
        let reservoir = holding_lease(start, start + Duration::from_secs(10));
        let renewed = HashSet::from([7]);
        let dropped = reservoir.renewed(&renewed, start + Duration::from_secs(30), start);
        assert_eq!(dropped, 0);
        assert_eq!(
            served(&reservoir, start + Duration::from_secs(20)),
            Some(vec![1])
        );
    }

    #[test]
    fn a_renewal_never_revives_a_block_whose_trust_lapsed() {
        let start = Instant::now();
        let reservoir = holding_lease(start, start + Duration::from_secs(10));
        // The renewal's answer arrives after the block's trust lapsed: its lease may have
        // expired in the database and a retirement may have answered meanwhile.
        let late = start + Duration::from_secs(12);
        let renewed = HashSet::from([7]);
        let dropped = reservoir.renewed(&renewed, start + Duration::from_secs(40), late);
        assert_eq!(dropped, 10);
        assert_eq!(reservoir.held(), 0);
        assert_eq!(served(&reservoir, late), None);
    }

    #[test]
    fn a_lease_handed_out_whole_is_not_renewed_but_is_released_on_closing() {
        let start = Instant::now();
        let until = start + Duration::from_secs(10);
        let reservoir = holding_lease(start, until);
        grant(&reservoir, 9, 11, start, until);
        assert_eq!(reservoir.leases_in_use().collect::<Vec<_>>(), vec![7, 9]);
        match reservoir.take(12, None, start).step {
            Step::Served(values) => assert_eq!(values, (1..=12).collect::<Vec<_>>()),
            _ => panic!("12 of 20 values held were not served"),
        }
        assert_eq!(reservoir.leases_in_use().collect::<Vec<_>>(), vec![9]);
        assert_eq!(
            reservoir.close(Closed::Replaced),
            Dropped {
                values: 8,
                leases_up_to: Some(9)
            }
        );
        assert_eq!(reservoir.leases_in_use().count(), 0);
    }
}
