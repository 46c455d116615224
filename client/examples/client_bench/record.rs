//! What a taker thread keeps: every value it got, as bits (so duplicates are counted
//! exactly at a bit per value), and a sample of per-call latencies.

use std::time::Instant;

/// Values further than this above the base are kept in a list instead of the bitmap.
const SPAN: u64 = 1 << 36;
/// One call in this many is timed.
const SAMPLE_EVERY: u64 = 256;

/// The values one thread got, as offsets from a base all threads share.
pub struct Seen {
    base: i64,
    words: Vec<u64>,
    repeats: u64,
    outside: Vec<i64>,
}

impl Seen {
    pub fn new(base: i64) -> Self {
        Self {
            base,
            words: Vec::new(),
            repeats: 0,
            outside: Vec::new(),
        }
    }

    #[inline]
    pub fn insert(&mut self, value: i64) {
        let offset = value.wrapping_sub(self.base) as u64;
        if offset >= SPAN {
            self.outside.push(value);
            return;
        }
        let (word, bit) = ((offset >> 6) as usize, 1u64 << (offset & 63));
        if word >= self.words.len() {
            self.words.resize((word + 1).next_power_of_two(), 0);
        }
        self.repeats += u64::from(self.words[word] & bit != 0);
        self.words[word] |= bit;
    }
}

/// Values got more than once, within a thread or across threads.
pub fn duplicates(seen: &[&Seen]) -> u64 {
    let within: u64 = seen.iter().map(|s| s.repeats).sum();
    let longest = seen.iter().map(|s| s.words.len()).max().unwrap_or(0);
    let (mut bits, mut distinct) = (0u64, 0u64);
    for index in 0..longest {
        let mut union = 0u64;
        for s in seen {
            let word = s.words.get(index).copied().unwrap_or(0);
            bits += u64::from(word.count_ones());
            union |= word;
        }
        distinct += u64::from(union.count_ones());
    }
    let mut outside: Vec<i64> = seen
        .iter()
        .flat_map(|s| s.outside.iter().copied())
        .collect();
    outside.sort_unstable();
    let outside_repeats = outside.windows(2).filter(|w| w[0] == w[1]).count() as u64;
    within + (bits - distinct) + outside_repeats
}

/// Nanoseconds of one call in `SAMPLE_EVERY`, timer included.
#[derive(Default)]
pub struct Latencies {
    calls: u64,
    nanos: Vec<u32>,
}

impl Latencies {
    /// The start time if this call is one to time.
    #[inline]
    pub fn due(&mut self) -> Option<Instant> {
        self.calls += 1;
        (self.calls % SAMPLE_EVERY == 0).then(Instant::now)
    }

    pub fn record(&mut self, since: Instant) {
        let nanos = since.elapsed().as_nanos();
        self.nanos.push(u32::try_from(nanos).unwrap_or(u32::MAX));
    }

    pub fn merge(&mut self, other: &Latencies) {
        self.nanos.extend_from_slice(&other.nanos);
    }

    pub fn summary(&mut self) -> String {
        self.nanos.sort_unstable();
        let at = |q: f64| {
            let last = self.nanos.len().saturating_sub(1);
            self.nanos
                .get((last as f64 * q) as usize)
                .copied()
                .unwrap_or(0)
        };
        format!(
            "latency_ns_per_id p50={} p99={} p999={} max={} samples={} (one call in {SAMPLE_EVERY}; \
             includes the timer's own ~{} ns)",
            at(0.5),
            at(0.99),
            at(0.999),
            self.nanos.last().copied().unwrap_or(0),
            self.nanos.len(),
            timer_cost(),
        )
    }
}

/// The median cost of reading the clock twice, which every sample includes.
fn timer_cost() -> u128 {
    let mut costs: Vec<u128> = (0..1001)
        .map(|_| Instant::now().elapsed().as_nanos())
        .collect();
    costs.sort_unstable();
    costs[costs.len() / 2]
}
