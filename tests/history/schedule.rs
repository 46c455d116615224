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
    /// Keyed vends and leases of `hot` with the two tokens of a rotation, through instances
    /// that list them in different places, each token's clients often reusing the other's
    /// keys: a key belongs to its token, never to a place in a list.
    Rotation,
    /// The live doomed sequence vended, leased and cached from every side while the operator
    /// retires it (and the next, and the next; some just after its cache policy went strict
    /// and back) and holds locks on `hot` beside it.
    Retirement,
    /// Every kind of client and every kind of fault at once.
    Chaos,
}

impl Focus {
    /// Its label (as `SEQVEND_HISTORY_FOCUS` names it), a colon, what it does.
    pub fn name(self) -> &'static str {
        match self {
            Focus::Rewind => "rewind: small batches while the range is rewound",
            Focus::KeyedRollover => "keyed: keyed leases rolling over",
            Focus::Rotation => "rotation: keys reused across a token rotation",
            Focus::Retirement => "retire: retirements under every kind of client",
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

/// `SEQVEND_HISTORY_FOCUS` (`rewind`, `keyed`, `rotation`, `retire` or `chaos`): every phase
/// of that one kind, to hunt one race.
pub fn focus_from_env() -> Option<Focus> {
    let text = std::env::var("SEQVEND_HISTORY_FOCUS").ok()?;
    Some(match text.trim() {
        "rewind" => Focus::Rewind,
        "keyed" => Focus::KeyedRollover,
        "rotation" => Focus::Rotation,
        "retire" => Focus::Retirement,
        "chaos" => Focus::Chaos,
        other => panic!(
            "SEQVEND_HISTORY_FOCUS is rewind, keyed, rotation, retire or chaos, not {other:?}"
        ),
    })
}

/// Phases filling `total`: a focused one, chaos, the next focus, chaos, … — the foci taken in
/// turn from a point the seed draws, each phase 6–10 s long (also drawn). Thirty seconds hold
/// two foci, so CI's two seeds try up to four. With `only`, every phase is of that kind.
pub fn plan(seed: u64, total: Duration, only: Option<Focus>) -> Vec<Phase> {
    const FOCI: [Focus; 4] = [
        Focus::Rewind,
        Focus::KeyedRollover,
        Focus::Rotation,
        Focus::Retirement,
    ];
    let mut rng = rng(seed, "plan", 0);
    let first = rng.gen_range(0..FOCI.len());
    let mut phases = Vec::new();
    let mut planned = Duration::ZERO;
    let mut i = 0;
    while planned < total {
        let focus = if let Some(only) = only {
            only
        } else if i % 2 == 1 {
            Focus::Chaos
        } else {
            FOCI[(first + i / 2) % FOCI.len()]
        };
        let length = Duration::from_secs(rng.gen_range(6..=10)).min(total - planned);
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
