//! The clock a take reads: the coarse monotonic clock while a block's last take is far, the
//! precise one near it.
//!
//! `Instant::now` (`CLOCK_MONOTONIC`) costs 20–60 ns even through the vDSO: more than all the
//! rest of a take. The coarse clock (`CLOCK_MONOTONIC_COARSE` on Linux, read by `coarsetime`)
//! is a vDSO load of the time at the kernel's last tick, 5–15 ns. It lags, never leads: its
//! reading is the precise time less a lag, which is one or two ticks (4–8 ms at 250 Hz) and
//! longer when the timekeeping CPU is held up (35 ms seen on a busy two-core VM). A lagging
//! clock says "earlier" than it is, so alone it would let takes run past the last take, and
//! the least expiry margin (two 1 ms ticks) does not cover the lag. So the coarse clock only
//! answers "still far": a take reads it, and only when it says the last take is within
//! `PRECISE_WITHIN` does the take read the precise clock and compare with the last take
//! itself. A lag shorter than `PRECISE_WITHIN` can only send takes to the precise clock
//! early, never let one past the last take; a lag that long would mean the kernel's
//! timekeeping stopped for a second while this thread ran.

use std::time::{Duration, Instant};

/// How long before a block's last take the takes stop trusting the coarse clock: far more
/// than its lag, and a sliver of a lease's life (600 s by default).
pub(crate) const PRECISE_WITHIN: Duration = Duration::from_secs(1);

/// When a take happens: now, read by the take as cheaply as the block allows, or a moment
/// the caller read already (the slow path, which reads the precise clock anyway; tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Now {
    Live,
    At(Instant),
}

/// The coarse clock, in `coarsetime`'s ticks (2^-32 s). Not `coarsetime::Instant::now`,
/// which also stores the reading in a global every thread would write to.
#[inline]
pub(crate) fn coarse() -> u64 {
    coarsetime::Instant::now_without_cache_update().as_ticks()
}

/// The coarse reading below which a take at that reading is surely `PRECISE_WITHIN` or more
/// before `last_take`; 0 (no reading is below it) when it is nearer already.
///
/// The coarse clock is read before the precise one, so the anchor `coarse` is at most the
/// precise time of the `precise` read, and a later reading `r` below the result means a
/// precise time under `r + lag ≤ last_take - PRECISE_WITHIN + lag`. Converting to ticks
/// rounds down (stricter).
pub(crate) fn coarse_until(last_take: Instant) -> u64 {
    let coarse = coarse();
    let precise = Instant::now();
    let far = last_take
        .checked_duration_since(precise)
        .and_then(|left| left.checked_sub(PRECISE_WITHIN));
    match far {
        Some(far) => {
            let far = coarsetime::Duration::new(far.as_secs(), far.subsec_nanos());
            coarse.saturating_add(far.as_ticks())
        }
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_last_take_within_the_precise_window_is_never_left_to_the_coarse_clock() {
        let soon = Instant::now() + PRECISE_WITHIN - Duration::from_millis(1);
        assert_eq!(coarse_until(soon), 0);
        assert_eq!(coarse_until(Instant::now()), 0, "a last take now");
    }

    #[test]
    fn a_far_last_take_is_trusted_to_the_coarse_clock_until_the_precise_window() {
        let before = coarse();
        let until = coarse_until(Instant::now() + Duration::from_secs(60));
        let left = coarsetime::Duration::from_ticks(until - before);
        let (secs, within) = (left.as_f64(), PRECISE_WITHIN.as_secs_f64());
        assert!((secs - (60.0 - within)).abs() < 0.1, "{secs} s");
    }
}
