//! One worker-id lease as the issuing threads see it: the lease's bounds and the last id
//! issued, each in one atomic, so issuing takes no lock. An issuer loads the last id, rebuilds
//! the shared generator around it, computes the next id and claims it with one
//! compare-and-swap; a thread that loses the race recomputes. Times are passed in, so the
//! rules are tested without a clock.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use seqvend_blocks::snowflake::{Generator, Hold, Layout};

use super::lease::WorkerLease;
use crate::Error;

/// `last` before any id was issued (ids are never negative).
const NONE: i64 = -1;

pub(crate) struct Held {
    pub layout: Layout,
    pub worker_id: u32,
    /// The secret that renews the lease.
    pub holder: Arc<str>,
    not_before_ms: i64,
    not_after_ms: AtomicI64,
    /// Issuing stops here, in nanoseconds of the monotonic clock since the issuer's origin.
    valid_until_ns: AtomicU64,
    last: AtomicI64,
}

/// Why no id was issued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Ask again once the clock reads this millisecond.
    Wait {
        until_ms: i64,
    },
    Fail(Error),
}

impl Held {
    pub fn new(lease: WorkerLease, valid_until_ns: u64) -> Self {
        Self {
            layout: lease.layout,
            worker_id: lease.worker_id,
            holder: lease.holder,
            not_before_ms: lease.not_before_ms,
            not_after_ms: AtomicI64::new(lease.not_after_ms),
            valid_until_ns: AtomicU64::new(valid_until_ns),
            last: AtomicI64::new(NONE),
        }
    }

    /// A renewal got through: the bound and the deadline only ever rise.
    pub fn extend(&self, not_after_ms: i64, valid_until_ns: u64) {
        self.not_after_ms.fetch_max(not_after_ms, Ordering::AcqRel);
        self.valid_until_ns
            .fetch_max(valid_until_ns, Ordering::AcqRel);
    }

    /// One id, at monotonic time `mono_ns` and wall-clock millisecond `now_ms`.
    #[inline]
    pub fn issue_one(&self, mono_ns: u64, now_ms: i64, tolerance_ms: i64) -> Result<i64, Refusal> {
        self.check_lease(mono_ns)?;
        loop {
            let (last, mut generator) = self.generator();
            let id = generator
                .next(now_ms, tolerance_ms)
                .map_err(|hold| refusal(hold, now_ms))?;
            if self.claim(last, id) {
                return Ok(id);
            }
        }
    }

    /// Ids appended to `out` under one compare-and-swap until it holds `count` or the
    /// millisecond is full: at least one, or the refusal.
    pub fn issue_many(
        &self,
        mono_ns: u64,
        now_ms: i64,
        tolerance_ms: i64,
        count: usize,
        out: &mut Vec<i64>,
    ) -> Result<(), Refusal> {
        self.check_lease(mono_ns)?;
        let start = out.len();
        if start >= count {
            return Ok(());
        }
        loop {
            let (last, mut generator) = self.generator();
            let mut hold = None;
            while out.len() < count {
                match generator.next(now_ms, tolerance_ms) {
                    Ok(id) => out.push(id),
                    Err(refused) => {
                        hold = Some(refused);
                        break;
                    }
                }
            }
            match (out.last(), hold) {
                (_, Some(hold)) if out.len() == start => return Err(refusal(hold, now_ms)),
                (Some(&newest), _) if self.claim(last, newest) => return Ok(()),
                _ => out.truncate(start),
            }
        }
    }

    fn check_lease(&self, mono_ns: u64) -> Result<(), Refusal> {
        if mono_ns >= self.valid_until_ns.load(Ordering::Acquire) {
            return Err(Refusal::Fail(Error::LeaseLapsed));
        }
        Ok(())
    }

    fn generator(&self) -> (i64, Generator) {
        let last = self.last.load(Ordering::Acquire);
        let not_after_ms = self.not_after_ms.load(Ordering::Acquire);
        let generator = Generator::new(
            self.layout,
            self.worker_id,
            self.not_before_ms,
            not_after_ms,
        );
        match last {
            NONE => (last, generator),
            last => (last, generator.after(last)),
        }
    }

    fn claim(&self, last: i64, id: i64) -> bool {
        self.last
            .compare_exchange_weak(last, id, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

fn refusal(hold: Hold, now_ms: i64) -> Refusal {
    match hold {
        Hold::Until(until_ms) => Refusal::Wait { until_ms },
        Hold::Backwards { by_ms } => Refusal::Fail(Error::ClockMovedBackwards { by_ms }),
        Hold::PastLease => Refusal::Fail(Error::ClockAheadOfLease),
        Hold::OutsideLayout => Refusal::Fail(Error::OutsideLayout { now_ms }),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const T: i64 = Layout::DEFAULT.epoch_ms() + 1_000_000;
    const SECOND: u64 = 1_000_000_000;

    /// Worker id 7, stamping `T ..= T + 30 s`, issuing until 27 s of the monotonic clock.
    fn held() -> Held {
        let lease = WorkerLease {
            layout: Layout::DEFAULT,
            worker_id: 7,
            holder: "h".into(),
            ttl: Duration::from_secs(30),
            not_before_ms: T,
            not_after_ms: T + 30_000,
        };
        Held::new(lease, 27 * SECOND)
    }

    #[test]
    fn ids_increase_and_a_full_millisecond_waits_for_the_next() {
        let held = held();
        let mut ids = Vec::new();
        for _ in 0..=Layout::DEFAULT.max_sequence() {
            ids.push(held.issue_one(0, T, 5).unwrap());
        }
        assert_eq!(
            held.issue_one(0, T, 5),
            Err(Refusal::Wait { until_ms: T + 1 })
        );
        held.issue_many(0, T + 1, 5, 4096 + 10, &mut ids).unwrap();
        assert_eq!(ids.len(), 4096 + 10);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        let parts = Layout::DEFAULT.decompose(ids[4096]).unwrap();
        assert_eq!(
            (parts.timestamp_ms, parts.worker_id, parts.sequence),
            (T + 1, 7, 0)
        );
    }

    #[test]
    fn a_batch_stops_at_the_end_of_a_millisecond_and_goes_on_in_the_next() {
        let held = held();
        let mut ids = Vec::new();
        held.issue_many(0, T, 5, 5000, &mut ids).unwrap();
        assert_eq!(ids.len(), 4096);
        assert_eq!(
            held.issue_many(0, T, 5, 5000, &mut ids),
            Err(Refusal::Wait { until_ms: T + 1 })
        );
        held.issue_many(0, T + 1, 5, 5000, &mut ids).unwrap();
        assert_eq!(ids.len(), 5000);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_small_step_back_is_waited_out_and_a_large_one_refused() {
        let held = held();
        let last = held.issue_one(0, T + 100, 5).unwrap();
        assert_eq!(
            held.issue_one(0, T + 95, 5),
            Err(Refusal::Wait { until_ms: T + 100 })
        );
        assert_eq!(
            held.issue_one(0, T + 94, 5),
            Err(Refusal::Fail(Error::ClockMovedBackwards { by_ms: 6 }))
        );
        assert!(held.issue_one(0, T + 100, 5).unwrap() > last);
    }

    #[test]
    fn nothing_is_stamped_outside_the_lease_s_milliseconds_until_a_renewal_raises_the_bound() {
        let held = held();
        assert_eq!(
            held.issue_one(0, T - 1_000, 5),
            Err(Refusal::Fail(Error::ClockMovedBackwards { by_ms: 999 }))
        );
        assert_eq!(
            held.issue_one(0, T + 30_001, 5),
            Err(Refusal::Fail(Error::ClockAheadOfLease))
        );
        held.extend(T + 40_000, 27 * SECOND);
        assert!(held.issue_one(0, T + 30_001, 5).is_ok());
    }

    #[test]
    fn issuing_stops_at_the_monotonic_deadline_until_a_renewal_moves_it() {
        let held = held();
        assert!(held.issue_one(27 * SECOND - 1, T, 5).is_ok());
        let lapsed = Err(Refusal::Fail(Error::LeaseLapsed));
        assert_eq!(held.issue_one(27 * SECOND, T, 5), lapsed);
        assert_eq!(
            held.issue_many(27 * SECOND, T, 5, 10, &mut Vec::new()),
            Err(Refusal::Fail(Error::LeaseLapsed))
        );
        // A renewal's deadline never lowers one already granted.
        held.extend(T + 30_000, 20 * SECOND);
        assert_eq!(held.issue_one(27 * SECOND, T, 5), lapsed);
        held.extend(T + 30_000, 40 * SECOND);
        assert!(held.issue_one(27 * SECOND, T, 5).is_ok());
    }

    #[test]
    fn threads_racing_on_one_lease_never_issue_an_id_twice() {
        let held = Arc::new(held());
        let threads: Vec<_> = (0..4)
            .map(|thread| {
                let held = held.clone();
                std::thread::spawn(move || {
                    let mut ids = Vec::new();
                    let mut ms = T;
                    while ids.len() < 20_000 {
                        let issued = if thread % 2 == 0 {
                            held.issue_one(0, ms, 5).map(|id| ids.push(id))
                        } else {
                            held.issue_many(0, ms, 5, ids.len() + 100, &mut ids)
                        };
                        // Each thread's clock moves only when it must: to where the others stand.
                        match issued {
                            Err(Refusal::Wait { until_ms }) => ms = ms.max(until_ms),
                            Err(Refusal::Fail(Error::ClockMovedBackwards { by_ms })) => ms += by_ms,
                            _ => {}
                        }
                    }
                    ids
                })
            })
            .collect();
        let mut all = Vec::new();
        for thread in threads {
            let ids = thread.join().unwrap();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "per thread increasing");
            all.extend(ids);
        }
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count, "an id issued twice");
    }
}
