//! UUIDv7s (RFC 9562), monotonic within this instance: the `uuid` crate's `ContextV7` keeps a
//! counter in the random bits (§6.2, method 1) and never lets the timestamp go back, even when
//! the clock does. Across instances, UUIDv7s are unique by their random bits, not ordered.

use std::sync::{Arc, Mutex};

use uuid::timestamp::context::ContextV7;
use uuid::{Timestamp, Uuid};

use super::clock::Clock;
use crate::metrics::Metrics;

pub struct UuidV7s {
    clock: Clock,
    context: Mutex<ContextV7>,
    metrics: Arc<Metrics>,
}

impl UuidV7s {
    pub fn new(clock: Clock, metrics: Arc<Metrics>) -> Self {
        Self {
            clock,
            context: Mutex::new(ContextV7::new()),
            metrics,
        }
    }

    /// `count` UUIDs, each above the one before (and above any issued earlier here).
    pub fn issue(&self, count: usize) -> Vec<Uuid> {
        let context = self.context.lock().expect("not poisoned");
        let ids = (0..count)
            .map(|_| {
                let (seconds, nanos) = self.clock.now();
                Uuid::new_v7(Timestamp::from_unix(&*context, seconds, nanos))
            })
            .collect();
        self.metrics
            .ids_issued
            .with_label_values(&["uuidv7"])
            .inc_by(count as u64);
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_keep_increasing_when_the_clock_steps_back() {
        let clock = Clock::system();
        let uuids = UuidV7s::new(clock.clone(), Arc::new(Metrics::new()));
        let mut ids = uuids.issue(1000);
        clock.step(-10_000);
        ids.extend(uuids.issue(1000));
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(ids.iter().all(|id| id.get_version_num() == 7));
    }
}
