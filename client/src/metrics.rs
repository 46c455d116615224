//! What a client reports about itself, as plain numbers for the application to export.
//!
//! Nothing here is touched per value handed out: how many were taken is read from the
//! blocks themselves (what closed blocks gave, plus the active block's index), and hits are
//! derived from it. Only calls that wait, refills and service calls bump counters.

use std::iter::Sum;
use std::ops::Add;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts since the client was built. Summed over sequences by `Client::metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Metrics {
    /// Values handed out without waiting for a refill.
    pub hits: u64,
    /// Leases that brought values.
    pub refills: u64,
    /// Calls (`next`, `next_n`) that found nothing cached and waited for a refill.
    pub waits: u64,
    /// Values leased but never handed out: their lease expired first, or a call that had
    /// taken them failed before it had all it asked for.
    pub discarded: u64,
    /// Lease requests sent.
    pub service_calls: u64,
    /// Lease requests that failed (any answer but 200, or none).
    pub failed_calls: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub refills: AtomicU64,
    pub waits: AtomicU64,
    pub service_calls: AtomicU64,
    pub failed_calls: AtomicU64,
    /// Values handed to calls that waited.
    pub waited_values: AtomicU64,
    /// Values taken by calls that then failed.
    pub abandoned: AtomicU64,
}

impl Counters {
    pub fn bump(counter: &AtomicU64, by: u64) {
        counter.fetch_add(by, Ordering::Relaxed);
    }

    /// The snapshot, given how many values the blocks say were taken and expired.
    pub fn snapshot(&self, taken: u64, expired: u64) -> Metrics {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let abandoned = read(&self.abandoned);
        Metrics {
            hits: taken.saturating_sub(read(&self.waited_values) + abandoned),
            refills: read(&self.refills),
            waits: read(&self.waits),
            discarded: expired + abandoned,
            service_calls: read(&self.service_calls),
            failed_calls: read(&self.failed_calls),
        }
    }
}

impl Add for Metrics {
    type Output = Metrics;

    fn add(self, other: Metrics) -> Metrics {
        Metrics {
            hits: self.hits + other.hits,
            refills: self.refills + other.refills,
            waits: self.waits + other.waits,
            discarded: self.discarded + other.discarded,
            service_calls: self.service_calls + other.service_calls,
            failed_calls: self.failed_calls + other.failed_calls,
        }
    }
}

impl Sum for Metrics {
    fn sum<I: Iterator<Item = Metrics>>(iter: I) -> Metrics {
        iter.fold(Metrics::default(), Add::add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_are_the_values_taken_less_those_that_waited_or_were_abandoned() {
        let counters = Counters::default();
        Counters::bump(&counters.waited_values, 30);
        Counters::bump(&counters.abandoned, 5);
        Counters::bump(&counters.waits, 3);
        let metrics = counters.snapshot(1000, 40);
        assert_eq!(metrics.hits, 965);
        assert_eq!(metrics.discarded, 45);
        assert_eq!(metrics.waits, 3);
    }

    #[test]
    fn sequences_metrics_add_up_field_by_field() {
        let one = Metrics {
            hits: 1,
            refills: 2,
            waits: 3,
            discarded: 4,
            service_calls: 5,
            failed_calls: 6,
        };
        let total: Metrics = [one, one].into_iter().sum();
        assert_eq!(total.hits + total.failed_calls, 14);
        assert_eq!(total, one + one);
    }
}
