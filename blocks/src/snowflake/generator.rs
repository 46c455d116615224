//! The Snowflake state of one worker id, as pure arithmetic: given the clock's reading, the
//! next id or why none can be issued now. Ids come out strictly increasing: a millisecond
//! below the last one issued is never stamped, and nothing beyond `not_after_ms`, the bound
//! the lease made durable.

use super::Layout;

#[derive(Debug)]
pub struct Generator {
    layout: Layout,
    worker_id: u32,
    last_ms: i64,
    sequence: u32,
    not_after_ms: i64,
}

/// Why no id can be issued at this reading of the clock.
#[derive(Debug, PartialEq, Eq)]
pub enum Hold {
    /// Ask again once the clock reads this millisecond: the sequence ran out within the last
    /// millisecond, or the clock stepped back by no more than the tolerance.
    Until(i64),
    /// The clock reads this much below the last millisecond issued (or the lease's first).
    Backwards { by_ms: i64 },
    /// The clock is past the bound the lease made durable; a renewal raises it.
    PastLease,
    /// The millisecond does not fit the layout (before the epoch or past its end).
    OutsideLayout,
}

impl Generator {
    /// A new holder of `worker_id`, which may stamp `not_before_ms ..= not_after_ms`.
    pub fn new(layout: Layout, worker_id: u32, not_before_ms: i64, not_after_ms: i64) -> Self {
        Self {
            layout,
            worker_id,
            // As if the millisecond before the first allowed one were used up.
            last_ms: not_before_ms - 1,
            sequence: layout.max_sequence(),
            not_after_ms,
        }
    }

    /// This generator once `id`, one of its own, has been issued: for a holder that keeps
    /// only its last id (in one atomic) and rebuilds the generator around it per id.
    pub fn after(mut self, id: i64) -> Self {
        if let Some(parts) = self.layout.decompose(id) {
            debug_assert_eq!(parts.worker_id, self.worker_id, "another worker id's id");
            if parts.timestamp_ms >= self.last_ms {
                (self.last_ms, self.sequence) = (parts.timestamp_ms, parts.sequence);
            }
        }
        self
    }

    pub fn worker_id(&self) -> u32 {
        self.worker_id
    }

    /// The last millisecond stamped (the one before the lease's first if none was).
    pub fn last_ms(&self) -> i64 {
        self.last_ms
    }

    /// A renewal raised the bound.
    pub fn extend(&mut self, not_after_ms: i64) {
        self.not_after_ms = self.not_after_ms.max(not_after_ms);
    }

    pub fn next(&mut self, now_ms: i64, tolerance_ms: i64) -> Result<i64, Hold> {
        if now_ms < self.last_ms {
            let by_ms = self.last_ms - now_ms;
            return Err(if by_ms <= tolerance_ms {
                Hold::Until(self.last_ms)
            } else {
                Hold::Backwards { by_ms }
            });
        }
        let (ms, sequence) = if now_ms == self.last_ms {
            if self.sequence == self.layout.max_sequence() {
                return Err(Hold::Until(self.last_ms + 1));
            }
            (now_ms, self.sequence + 1)
        } else {
            (now_ms, 0)
        };
        if ms > self.not_after_ms {
            return Err(Hold::PastLease);
        }
        let id = self
            .layout
            .compose(ms, self.worker_id, sequence)
            .ok_or(Hold::OutsideLayout)?;
        (self.last_ms, self.sequence) = (ms, sequence);
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = Layout::DEFAULT.epoch_ms() + 1_000_000;

    fn generator() -> Generator {
        Generator::new(Layout::DEFAULT, 7, T, T + 30_000)
    }

    #[test]
    fn ids_increase_within_and_across_milliseconds() {
        let mut g = generator();
        let ids: Vec<i64> = [T, T, T, T + 5, T + 5]
            .iter()
            .map(|&now| g.next(now, 5).unwrap())
            .collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        let parts = Layout::DEFAULT.decompose(ids[2]).unwrap();
        assert_eq!(
            (parts.timestamp_ms, parts.worker_id, parts.sequence),
            (T, 7, 2)
        );
    }

    #[test]
    fn a_full_millisecond_waits_for_the_next() {
        let mut g = generator();
        for _ in 0..=Layout::DEFAULT.max_sequence() {
            g.next(T, 5).unwrap();
        }
        assert_eq!(g.next(T, 5), Err(Hold::Until(T + 1)));
        assert!(g.next(T + 1, 5).is_ok());
    }

    #[test]
    fn a_small_step_back_is_waited_out_and_a_large_one_refused() {
        let mut g = generator();
        let last = g.next(T + 100, 5).unwrap();
        assert_eq!(g.next(T + 95, 5), Err(Hold::Until(T + 100)));
        assert_eq!(g.next(T + 94, 5), Err(Hold::Backwards { by_ms: 6 }));
        assert!(g.next(T + 100, 5).unwrap() > last);
    }

    #[test]
    fn nothing_is_stamped_before_the_lease_or_past_its_bound() {
        let mut g = generator();
        assert_eq!(g.next(T - 1_000, 5), Err(Hold::Backwards { by_ms: 999 }));
        assert_eq!(g.next(T - 1, 5), Err(Hold::Until(T)));
        assert_eq!(g.next(T + 30_001, 5), Err(Hold::PastLease));
        g.extend(T + 40_000);
        assert!(g.next(T + 30_001, 5).is_ok());
    }

    #[test]
    fn a_generator_rebuilt_after_its_last_id_goes_on_where_it_stood() {
        let mut g = generator();
        let last = (0..3).map(|_| g.next(T + 10, 5).unwrap()).last().unwrap();
        let mut rebuilt = generator().after(last);
        assert_eq!(rebuilt.last_ms(), T + 10);
        assert_eq!(rebuilt.next(T + 10, 5), g.next(T + 10, 5));
        assert_eq!(rebuilt.next(T + 4, 5), Err(Hold::Backwards { by_ms: 6 }));
    }
}
