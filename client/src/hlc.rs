//! A hybrid logical clock (Kulkarni et al., 2014): timestamps that follow the wall clock
//! when it moves forward, never go back when it does not, and order an event after every
//! timestamp its process had seen, its own or a remote one.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::Error;

const COUNTER_BITS: u32 = 16;
const MAX_MS: u64 = (1 << 48) - 1;

/// A hybrid logical clock timestamp: 48 bits of milliseconds since the Unix epoch (until the
/// year 10889), then a 16-bit counter. Ordered as its `u64`, which is how it travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HlcTimestamp(u64);

impl HlcTimestamp {
    pub fn new(ms: u64, counter: u16) -> Self {
        Self((ms.min(MAX_MS) << COUNTER_BITS) | u64::from(counter))
    }

    pub fn from_u64(encoded: u64) -> Self {
        Self(encoded)
    }

    pub fn as_u64(self) -> u64 {
        self.0
    }

    /// Milliseconds since the Unix epoch: the wall-clock time it stands for, or a little
    /// later when events came faster than the counter or from a clock ahead.
    pub fn ms(self) -> u64 {
        self.0 >> COUNTER_BITS
    }

    pub fn counter(self) -> u16 {
        self.0 as u16
    }
}

impl fmt::Display for HlcTimestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:05}", self.ms(), self.counter())
    }
}

/// The physical clock an [`Hlc`] reads: milliseconds since the Unix epoch.
pub type PhysicalClock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// A hybrid logical clock, shared by threads (one atomic; no lock).
///
/// ```
/// use seqvend_client::Hlc;
///
/// let here = Hlc::new();
/// let sent = here.now();                     // stamp an outgoing message with it
/// let there = Hlc::new();
/// let received = there.observe(sent).unwrap(); // on receipt
/// assert!(received > sent && there.now() > received);
/// ```
///
/// # Rules
/// - `now()` is above every timestamp this clock gave or observed before, and at least the
///   physical clock: `max(last + 1, physical)` in the 64-bit encoding. A physical clock
///   behind the last timestamp (stepped back, or a remote ahead) leaves the milliseconds
///   where they were and advances the counter; a full counter moves to the next millisecond.
/// - `observe(remote)` records a received timestamp: the result (the receive event) is
///   above both `remote` and everything this clock gave before. A remote more than the
///   allowed drift (default 60 s, [`Hlc::max_drift`]) ahead of the physical clock is
///   refused with [`Error::RemoteClockAhead`] and changes nothing: one machine with a wild
///   clock must not drag every clock it talks to along.
pub struct Hlc {
    last: AtomicU64,
    clock: PhysicalClock,
    max_drift_ms: u64,
}

impl fmt::Debug for Hlc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hlc")
            .field("last", &HlcTimestamp(self.last.load(Ordering::Relaxed)))
            .field("max_drift_ms", &self.max_drift_ms)
            .finish_non_exhaustive()
    }
}

impl Default for Hlc {
    fn default() -> Self {
        Self::new()
    }
}

impl Hlc {
    /// A clock reading the system's wall clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_millis() as u64)
        }))
    }

    /// A clock reading `clock` (milliseconds since the Unix epoch) instead: for tests, or a
    /// time source of your own.
    pub fn with_clock(clock: PhysicalClock) -> Self {
        Self {
            last: AtomicU64::new(0),
            clock,
            max_drift_ms: 60_000,
        }
    }

    /// How far ahead of the physical clock a remote timestamp may be (default 60 s).
    pub fn max_drift(mut self, drift: Duration) -> Self {
        self.max_drift_ms = u64::try_from(drift.as_millis()).unwrap_or(u64::MAX);
        self
    }

    fn physical(&self) -> HlcTimestamp {
        HlcTimestamp::new((self.clock)(), 0)
    }

    /// A timestamp for a local event or an outgoing message.
    pub fn now(&self) -> HlcTimestamp {
        let physical = self.physical().0;
        self.advance(|last| (last + 1).max(physical))
    }

    /// Records a timestamp received from another process; returns the receive event's.
    pub fn observe(&self, remote: HlcTimestamp) -> Result<HlcTimestamp, Error> {
        let physical = self.physical();
        let ahead_ms = remote.ms().saturating_sub(physical.ms());
        if ahead_ms > self.max_drift_ms {
            return Err(Error::RemoteClockAhead { by_ms: ahead_ms });
        }
        Ok(self.advance(|last| (last.max(remote.0) + 1).max(physical.0)))
    }

    fn advance(&self, next: impl Fn(u64) -> u64) -> HlcTimestamp {
        let mut last = self.last.load(Ordering::Acquire);
        loop {
            let new = next(last);
            match self
                .last
                .compare_exchange_weak(last, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return HlcTimestamp(new),
                Err(actual) => last = actual,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use super::*;

    const T: u64 = 1_790_000_000_000;

    /// A clock the test sets, and an HLC reading it.
    fn hlc_at(ms: u64) -> (Arc<AtomicU64>, Hlc) {
        let time = Arc::new(AtomicU64::new(ms));
        let read = time.clone();
        let hlc = Hlc::with_clock(Arc::new(move || read.load(Ordering::Relaxed)));
        (time, hlc)
    }

    #[test]
    fn the_encoding_is_48_bits_of_milliseconds_then_a_16_bit_counter() {
        let ts = HlcTimestamp::new(T, 7);
        assert_eq!(ts.as_u64(), T << 16 | 7);
        assert_eq!((ts.ms(), ts.counter()), (T, 7));
        assert_eq!(HlcTimestamp::from_u64(ts.as_u64()), ts);
        assert!(HlcTimestamp::new(T, u16::MAX) < HlcTimestamp::new(T + 1, 0));
    }

    #[test]
    fn now_follows_the_physical_clock_and_strictly_increases_within_a_millisecond() {
        let (time, hlc) = hlc_at(T);
        let first = hlc.now();
        assert_eq!(first, HlcTimestamp::new(T, 0));
        let second = hlc.now();
        assert_eq!(second, HlcTimestamp::new(T, 1));
        time.store(T + 5, Ordering::Relaxed);
        assert_eq!(hlc.now(), HlcTimestamp::new(T + 5, 0));
    }

    #[test]
    fn a_physical_clock_behind_the_last_timestamp_does_not_move_it_back() {
        let (time, hlc) = hlc_at(T);
        let before = hlc.now();
        time.store(T - 10_000, Ordering::Relaxed);
        let after = hlc.now();
        assert!(after > before);
        assert_eq!((after.ms(), after.counter()), (T, 1));
    }

    #[test]
    fn a_full_counter_moves_to_the_next_millisecond() {
        let (_, hlc) = hlc_at(T);
        let mut last = hlc.now();
        for _ in 0..u16::MAX {
            let next = hlc.now();
            assert!(next > last);
            last = next;
        }
        assert_eq!(last, HlcTimestamp::new(T, u16::MAX));
        assert_eq!(hlc.now(), HlcTimestamp::new(T + 1, 0));
    }

    #[test]
    fn an_event_after_observing_a_remote_timestamp_is_above_it() {
        let (_, hlc) = hlc_at(T);
        let local = hlc.now();
        // A remote ahead by 3 s, whose counter had run.
        let remote = HlcTimestamp::new(T + 3_000, 40);
        let received = hlc.observe(remote).unwrap();
        assert!(received > remote && received > local);
        assert_eq!(received, HlcTimestamp::new(T + 3_000, 41));
        assert!(hlc.now() > received);
        // A remote behind changes nothing but the counter.
        let old = HlcTimestamp::new(T - 1_000, 9);
        let next = hlc.observe(old).unwrap();
        assert!(next > received && next.ms() == T + 3_000);
    }

    #[test]
    fn the_physical_clock_wins_once_it_passes_what_was_observed() {
        let (time, hlc) = hlc_at(T);
        hlc.observe(HlcTimestamp::new(T + 100, 5)).unwrap();
        time.store(T + 200, Ordering::Relaxed);
        assert_eq!(hlc.now(), HlcTimestamp::new(T + 200, 0));
    }

    #[test]
    fn a_remote_too_far_ahead_is_refused_and_changes_nothing() {
        let (_, hlc) = hlc_at(T);
        let hlc = hlc.max_drift(Duration::from_secs(1));
        let before = hlc.now();
        let wild = HlcTimestamp::new(T + 1_001, 0);
        assert_eq!(
            hlc.observe(wild),
            Err(Error::RemoteClockAhead { by_ms: 1_001 })
        );
        assert_eq!(hlc.now(), HlcTimestamp::new(before.ms(), 1));
        assert!(hlc.observe(HlcTimestamp::new(T + 1_000, 0)).is_ok());
    }

    #[test]
    fn threads_sharing_a_clock_never_get_one_timestamp_twice() {
        let (_, hlc) = hlc_at(T);
        let hlc = Arc::new(hlc);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let hlc = hlc.clone();
                std::thread::spawn(move || (0..50_000).map(|_| hlc.now()).collect::<Vec<_>>())
            })
            .collect();
        let mut all = Vec::new();
        for thread in threads {
            let stamps = thread.join().unwrap();
            assert!(stamps.windows(2).all(|w| w[0] < w[1]));
            all.extend(stamps);
        }
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count);
    }
}
