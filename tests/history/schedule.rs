//! The seed and the schedule it fixes: which phases run for how long, and a random number
//! generator for each client task and the operator in each phase. Concurrency still makes two
//! runs of one seed differ in detail; the seed fixes what is tried and when.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The seed CI always runs, beside a random one.
pub const FIXED_SEED: u64 = 20_261_121;

/// What a phase does. Busy phases hide narrow races, so focused ones alternate with chaos.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    /// Only high-rate batches of 1–64 from `hot`, while the operator rewinds its active range's
    /// sequence to the range's start in a tight loop.
    Rewind,
    /// Keyed leases and vends of `zigzag` and their retries, while the operator keeps adding
    /// ranges high, low, high: leases roll over into lower ranges and back.
    KeyedRollover,
    /// Every kind of client and every kind of fault at once.
    Chaos,
}

impl Focus {
    pub fn name(self) -> &'static str {
        match self {
            Focus::Rewind => "focused: rewinds under small batches",
            Focus::KeyedRollover => "focused: keyed leases rolling over",
            Focus::Chaos => "chaos: every client, every fault",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Phase {
    pub focus: Focus,
    pub length: Duration,
}

/// The seed of this run: `SEQVEND_HISTORY_SEED` if set, else `default`.
pub fn seed_from_env() -> Option<u64> {
    let text = std::env::var("SEQVEND_HISTORY_SEED").ok()?;
    Some(
        text.trim()
            .parse()
            .expect("SEQVEND_HISTORY_SEED is an unsigned 64-bit integer"),
    )
}

/// How long one seed runs: `SEQVEND_HISTORY_SECONDS`, else 30 s.
pub fn run_length() -> Duration {
    let seconds = std::env::var("SEQVEND_HISTORY_SECONDS")
        .map(|s| {
            s.trim()
                .parse()
                .expect("SEQVEND_HISTORY_SECONDS is a number of seconds")
        })
        .unwrap_or(30);
    Duration::from_secs(seconds)
}

/// `SEQVEND_HISTORY_FOCUS` (`rewind`, `keyed` or `chaos`): every phase of that one kind, to
/// hunt one race.
pub fn focus_from_env() -> Option<Focus> {
    let text = std::env::var("SEQVEND_HISTORY_FOCUS").ok()?;
    Some(match text.trim() {
        "rewind" => Focus::Rewind,
        "keyed" => Focus::KeyedRollover,
        "chaos" => Focus::Chaos,
        other => panic!("SEQVEND_HISTORY_FOCUS is rewind, keyed or chaos, not {other:?}"),
    })
}

/// Phases filling `total`: a focused one, chaos, the other focus, chaos, … — which focus
/// comes first, and each phase's length (8–15 s), drawn from the seed. With `only`, every
/// phase is of that kind.
pub fn plan(seed: u64, total: Duration, only: Option<Focus>) -> Vec<Phase> {
    let mut rng = rng(seed, "plan", 0);
    let foci = if rng.gen_bool(0.5) {
        [Focus::Rewind, Focus::KeyedRollover]
    } else {
        [Focus::KeyedRollover, Focus::Rewind]
    };
    let mut phases = Vec::new();
    let mut planned = Duration::ZERO;
    let mut i = 0;
    while planned < total {
        let focus = if let Some(only) = only {
            only
        } else if i % 2 == 1 {
            Focus::Chaos
        } else {
            foci[(i / 2) % 2]
        };
        let length = Duration::from_secs(rng.gen_range(8..=15)).min(total - planned);
        phases.push(Phase { focus, length });
        planned += length;
        i += 1;
    }
    phases
}

/// The generator of one actor (`who`, number `n`) in one phase: a function of the seed alone.
pub fn rng(seed: u64, who: &str, n: u64) -> StdRng {
    // FNV-1a over the actor's name, mixed with the seed and its number.
    let name = who.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    StdRng::seed_from_u64(seed ^ name ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// A seed of the operating system's randomness, for the run that tries something new.
pub fn random_seed() -> u64 {
    rand::thread_rng().gen()
}
