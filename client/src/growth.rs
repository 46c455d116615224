//! How a sequence's leases grow with use: the [`Growth`] a client is built with, and for the
//! adaptive rule the window a refill must be started ahead of.
//!
//! Leaf (Meituan's id service) sizes a segment so that it lasts at least a window (15 min):
//! its step doubles when a segment lasted less, halves when one lasted more than twice as
//! long, within bounds, and it fetches the next segment while the current one is still 90 %
//! full. Leaf learns the rate only that way, one segment late. This client measures its rate
//! (each tick, and under the adaptive rule at every refill decision too), so it sizes what it
//! holds directly: `2 × rate × window`, where the window is the longer of the buffer (120 s
//! by default, against outages) and four times the slowest recent refill (against a slow
//! service), bounded by `max_cached`; a refill starts below half of it, and each lease asks
//! for the top-up, at most `max_lease` (the service's limit). A step Leaf would settle at is
//! thus reached after one lease instead of a doubling per segment.
//!
//! The refill time is the slowest recent lease, forgotten by an eighth per lease, so one slow
//! answer raises the window at once and it comes down again over a few leases.

use std::time::Duration;

/// How a client sizes its leases as use grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Growth {
    /// Use is sampled at every refill decision as well as every tick, so a cold start at full
    /// speed is seen after its first lease, and what is held covers four refill times as well
    /// as the buffer; leases of up to `max_lease`.
    #[default]
    Adaptive,
    /// The rule of earlier versions, kept for comparison: use sampled only each tick, so a
    /// cold start leases the base size until the first tick; leases of at most 100,000 (what
    /// services allowed before leases were drawn in constant time).
    Fixed,
}

/// A refill this much slower than the last is believed at once; faster ones lower the
/// estimate by an eighth per lease.
const FORGET: f64 = 0.875;
/// The window is this many refill times.
const SAFETY: u32 = 4;
/// The shortest window (the buffer is never shorter either).
pub(crate) const MIN_WINDOW: Duration = Duration::from_secs(1);

/// The adaptive rule's memory: how long leases take to come back.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RefillTimes {
    slowest: Duration,
}

impl RefillTimes {
    /// A lease came back `took` after its request left.
    pub fn observe(&mut self, took: Duration) {
        self.slowest = took.max(self.slowest.mul_f64(FORGET));
    }

    /// How much use a refill must be started ahead of.
    pub fn window(&self) -> Duration {
        (self.slowest * SAFETY).max(MIN_WINDOW)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_four_refill_times_at_least_a_second_and_forgets_slowly() {
        let mut times = RefillTimes::default();
        assert_eq!(times.window(), MIN_WINDOW);
        times.observe(Duration::from_millis(10));
        assert_eq!(times.window(), MIN_WINDOW);
        times.observe(Duration::from_millis(800));
        assert_eq!(times.window(), Duration::from_millis(3200));
        times.observe(Duration::from_millis(10));
        assert_eq!(times.window(), Duration::from_millis(2800));
        for _ in 0..40 {
            times.observe(Duration::from_millis(10));
        }
        assert_eq!(times.window(), MIN_WINDOW);
    }
}
