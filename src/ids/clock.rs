//! The wall clock ids are stamped with. It is the system clock plus an offset that starts at
//! zero; stepping the offset is how tests move the clock back or forward the way NTP or an
//! operator would, without touching the machine's clock. Lease fencing does not use it: it
//! runs on the monotonic clock (`std::time::Instant`), which no step moves.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Clone, Debug, Default)]
pub struct Clock {
    offset_ms: Arc<AtomicI64>,
}

impl Clock {
    pub fn system() -> Self {
        Self::default()
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        let (seconds, nanos) = self.now();
        seconds as i64 * 1000 + i64::from(nanos / 1_000_000)
    }

    /// Seconds and nanoseconds since the Unix epoch.
    pub fn now(&self) -> (u64, u32) {
        let system = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("the system clock is after 1970");
        let nanos = system.as_nanos() as i128
            + i128::from(self.offset_ms.load(Ordering::Relaxed)) * 1_000_000;
        let nanos = nanos.max(0);
        (
            (nanos / 1_000_000_000) as u64,
            (nanos % 1_000_000_000) as u32,
        )
    }

    /// Moves this clock (and every clone of it) by `ms`, back when negative.
    pub fn step(&self, ms: i64) {
        self.offset_ms.fetch_add(ms, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_moves_every_clone() {
        let clock = Clock::system();
        let clone = clock.clone();
        let before = clone.now_ms();
        clock.step(-60_000);
        let after = clone.now_ms();
        assert!((before - after - 60_000).abs() < 1_000, "{before} {after}");
    }
}
