//! The checker: reads a whole history and the registry as it stands at the end, and lists
//! every broken promise — each with the value, the operations involved and their times.
//! Answers that failed or timed out are unknown: their values were never seen and prove
//! nothing either way.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;
use std::time::Duration;

use crate::history::{Fault, History, Kind, Op, Outcome};
use crate::world::{Token, CLIENT_LEASE_MS};

mod dba_reads;

/// A range of the registry, read after the run (so ranges added during it count).
pub struct RegistryRange {
    pub sequence: String,
    pub min: i64,
    pub max: i64,
    pub pg_sequence: String,
    /// The sequence's instance cache size (0: strict).
    pub cache_size: i64,
}

pub async fn read_registry(db: &tokio_postgres::Client) -> Vec<RegistryRange> {
    db.query(
        "SELECT s.name, r.min_value, r.max_value, r.pg_sequence::text, s.cache_size
           FROM seqvend.ranges r JOIN seqvend.sequences s ON s.id = r.sequence_id",
        &[],
    )
    .await
    .expect("the registry read")
    .iter()
    .map(|row| RegistryRange {
        sequence: row.get(0),
        min: row.get(1),
        max: row.get(2),
        pg_sequence: row.get(3),
        cache_size: row.get(4),
    })
    .collect()
}

/// Violations of one kind: how many, and the first few in full.
#[derive(Default)]
pub struct Violations {
    pub by_kind: BTreeMap<&'static str, (usize, Vec<String>)>,
}

impl Violations {
    const SHOWN: usize = 15;

    fn add(&mut self, kind: &'static str, detail: impl FnOnce() -> String) {
        let (count, shown) = self.by_kind.entry(kind).or_default();
        *count += 1;
        if shown.len() < Self::SHOWN {
            shown.push(detail());
        }
    }

    pub fn total(&self) -> usize {
        self.by_kind.values().map(|(count, _)| count).sum()
    }
}

/// Checks the history; returns the violations and a report of the whole run.
pub fn check(history: &History, registry: &[RegistryRange]) -> (Violations, String) {
    let ops = history.ops.lock().unwrap().clone();
    let faults = history.faults.lock().unwrap().clone();
    let mut violations = Violations::default();
    let claims = claims(&ops, &mut violations);
    keys_are_their_tokens_own(&ops, &mut violations);
    no_internal_errors(&ops, &mut violations);
    let ranges = Ranges::new(registry);
    never_twice(&ops, &claims, &mut violations);
    inside_a_range(&ops, &claims, &ranges, &mut violations);
    none_drawn_by_another_application(history, &ops, &claims, &ranges, &faults, &mut violations);
    none_after_retirement(history, &ops, &claims, &mut violations);
    snowflakes(&ops, &mut violations);
    counters(&ops, &mut violations);
    dba_reads::every_read_found_its_row(&faults, &mut violations);
    let report = crate::report::write(history, &ops, &faults, &claims, &violations);
    (violations, report)
}

/// A value a sequence's answer claimed: the sequence, the value, the operation.
pub struct Claim {
    pub sequence: String,
    pub value: i64,
    pub op: usize,
}

/// Every value of a sequence that some answer handed out, once per handing out: a keyed
/// request's first answer gives its values, and each later answer for the same token and key
/// must equal it (a replay: the same delivery); values a replay gave beyond the first answer's
/// are claimed by the replay. A key is its token's own: an answer to another token with the
/// same key is another delivery, so values it repeats count twice.
fn claims(ops: &[Op], violations: &mut Violations) -> Vec<Claim> {
    let mut claims = Vec::new();
    let mut first: HashMap<(Token, &str), usize> = HashMap::new();
    let mut order: Vec<usize> = (0..ops.len()).collect();
    order.sort_by_key(|&i| (ops[i].completed, ops[i].invoked));
    for i in order {
        let op = &ops[i];
        if !op.kind.of_a_sequence() || !matches!(op.outcome, Outcome::Values(_)) {
            continue;
        }
        let mut fresh: Vec<i64> = op.values().to_vec();
        if let Some(key) = &op.key {
            match first.get(&(op.token, key.as_str())) {
                None => {
                    first.insert((op.token, key), i);
                }
                Some(&f) => {
                    if ops[f].values() != op.values() {
                        violations.add("replay differs from the first answer", || {
                            format!(
                                "key {key}: first {} gave {:?}; {} gave {:?}",
                                describe(f, &ops[f]),
                                ops[f].values(),
                                describe(i, op),
                                op.values()
                            )
                        });
                    }
                    let seen: HashSet<i64> = ops[f].values().iter().copied().collect();
                    fresh.retain(|v| !seen.contains(v));
                }
            }
        }
        claims.extend(fresh.into_iter().map(|value| Claim {
            sequence: op.target.clone(),
            value,
            op: i,
        }));
    }
    claims
}

/// A token's keys are its own: an answer marked as a replay goes only to a token that sent
/// that key before, and `422 idempotency_key_reused` only to a token that sent that key with
/// another request. (Another token's use of the same key must not show at all.)
fn keys_are_their_tokens_own(ops: &[Op], violations: &mut Violations) {
    let mut by_owner: HashMap<(Token, &str), Vec<usize>> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        if let Some(key) = &op.key {
            by_owner.entry((op.token, key)).or_default().push(i);
        }
    }
    for (i, op) in ops.iter().enumerate() {
        let Some(key) = &op.key else { continue };
        let own = &by_owner[&(op.token, key.as_str())];
        if op.replayed && !own.iter().any(|&o| o != i && ops[o].invoked < op.completed) {
            violations.add("replay answered to a token that never sent its key", || {
                format!(
                    "{} was answered {:?} as a replay; its token had not sent {key} before",
                    describe(i, op),
                    op.values()
                )
            });
        }
        let reused = matches!(&op.outcome, Outcome::Refused(why)
                              if why.starts_with("422 idempotency_key_reused"));
        if reused
            && !own
                .iter()
                .any(|&o| ops[o].request != op.request && ops[o].invoked < op.completed)
        {
            violations.add("key refused as reused for another token's request", || {
                let others: Vec<String> = ops
                    .iter()
                    .enumerate()
                    .filter(|(_, o)| o.key.as_ref() == Some(key) && o.token != op.token)
                    .take(2)
                    .map(|(o, other)| describe(o, other))
                    .collect();
                format!(
                    "{} answered 422 though its token sent {key} only with {}; other tokens' \
                     uses: {}",
                    describe(i, op),
                    op.request,
                    others.join(", ")
                )
            });
        }
    }
}

/// A 500 on a vend, lease, counter or id route breaks the promise (docs/api.md) that a lock, a
/// deadlock or a lost session is answered 503 and retried: each is a violation, with its
/// operation (and so its phase and the faults around it).
fn no_internal_errors(ops: &[Op], violations: &mut Violations) {
    for (i, op) in ops.iter().enumerate() {
        if op.internal_error() {
            violations.add("internal error answered (500)", || {
                let Outcome::Refused(why) = &op.outcome else {
                    unreachable!("a 500 is a refusal")
                };
                format!("{} {}: {why}", describe(i, op), op.request)
            });
        }
    }
}

fn never_twice(ops: &[Op], claims: &[Claim], violations: &mut Violations) {
    let mut sorted: Vec<&Claim> = claims.iter().collect();
    sorted.sort_by(|a, b| (&a.sequence, a.value).cmp(&(&b.sequence, b.value)));
    for pair in sorted.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a.sequence == b.sequence && a.value == b.value {
            violations.add("value handed out twice", || {
                format!(
                    "{} value {}: {} and {}",
                    a.sequence,
                    a.value,
                    describe(a.op, &ops[a.op]),
                    describe(b.op, &ops[b.op])
                )
            });
        }
    }
}

/// The registry's ranges per sequence, sorted by `min`.
struct Ranges<'a> {
    by_sequence: HashMap<&'a str, Vec<&'a RegistryRange>>,
}

impl<'a> Ranges<'a> {
    fn new(registry: &'a [RegistryRange]) -> Self {
        let mut by_sequence: HashMap<&str, Vec<&RegistryRange>> = HashMap::new();
        for range in registry {
            by_sequence.entry(&range.sequence).or_default().push(range);
        }
        for ranges in by_sequence.values_mut() {
            ranges.sort_by_key(|r| r.min);
        }
        Self { by_sequence }
    }

    fn find(&self, sequence: &str, value: i64) -> Option<&'a RegistryRange> {
        let ranges = self.by_sequence.get(sequence)?;
        let i = ranges.partition_point(|r| r.min <= value);
        let range = ranges.get(i.checked_sub(1)?)?;
        (value <= range.max).then_some(*range)
    }

    fn cached(&self, sequence: &str) -> bool {
        self.by_sequence
            .get(sequence)
            .is_some_and(|ranges| ranges.iter().any(|r| r.cache_size > 0))
    }
}

fn inside_a_range(ops: &[Op], claims: &[Claim], ranges: &Ranges, violations: &mut Violations) {
    for claim in claims {
        if ranges.find(&claim.sequence, claim.value).is_none() {
            violations.add("value outside every range of its sequence", || {
                format!(
                    "{} value {}: {}",
                    claim.sequence,
                    claim.value,
                    describe(claim.op, &ops[claim.op])
                )
            });
        }
    }
}

/// No value another application drew with `nextval` is handed out — unless the operator moved
/// that sequence back between the two, which makes the other application's draw repeat
/// seqvend's (or erases its trace).
fn none_drawn_by_another_application(
    history: &History,
    ops: &[Op],
    claims: &[Claim],
    ranges: &Ranges,
    faults: &[Fault],
    violations: &mut Violations,
) {
    let mut drawn: HashMap<(&str, i64), Duration> = HashMap::new();
    let all_drawn = history.drawn.lock().unwrap().clone();
    for d in &all_drawn {
        for &value in &d.values {
            drawn.insert((d.pg_sequence.as_str(), value), d.at);
        }
    }
    for claim in claims {
        let Some(range) = ranges.find(&claim.sequence, claim.value) else {
            continue;
        };
        let Some(&at) = drawn.get(&(range.pg_sequence.as_str(), claim.value)) else {
            continue;
        };
        let op = &ops[claim.op];
        // Values of an instance's cache or a client's lease were drawn before they were
        // handed out, at a time the history does not show: any earlier move back excuses.
        let drawn_since = if ranges.cached(&claim.sequence) || op.kind == Kind::ThickClient {
            Duration::ZERO
        } else {
            op.invoked
        };
        let (from, to) = (at.min(drawn_since), at.max(op.completed));
        let excused = faults.iter().any(|f| {
            f.applied
                && f.moves_back()
                && f.target == range.pg_sequence
                && f.started <= to
                && f.ended >= from
        });
        if !excused {
            violations.add("value another application drew handed out", || {
                format!(
                    "{} value {} ({}) drawn by hand at {:?}; handed out by {}",
                    claim.sequence,
                    claim.value,
                    range.pg_sequence,
                    at,
                    describe(claim.op, op)
                )
            });
        }
    }
}

/// No value of a retired sequence is handed out by a request sent after `DELETE` answered;
/// the thick client may hand out what it leased before, until its lease ends.
fn none_after_retirement(
    history: &History,
    ops: &[Op],
    claims: &[Claim],
    violations: &mut Violations,
) {
    let retired: HashMap<String, (Duration, Duration)> = history
        .retirements
        .lock()
        .unwrap()
        .iter()
        .map(|r| (r.sequence.clone(), (r.invoked, r.answered)))
        .collect();
    let mut reported = HashSet::new();
    for claim in claims {
        let Some(&(sent, answered)) = retired.get(&claim.sequence) else {
            continue;
        };
        let op = &ops[claim.op];
        let late = match op.kind {
            Kind::ThickClient => op.completed > answered + Duration::from_millis(CLIENT_LEASE_MS),
            _ => op.invoked > answered,
        };
        if late && reported.insert(claim.op) {
            violations.add("value of a retired sequence handed out", || {
                format!(
                    "{}: DELETE sent at {sent:?}, answered at {answered:?}; {} gave {:?}",
                    claim.sequence,
                    describe(claim.op, op),
                    op.values()
                )
            });
        }
    }
}

/// Snowflake ids: ascending within an answer, unique, and increasing per worker id: an answer
/// that began after another ended has only higher ids of that worker.
fn snowflakes(ops: &[Op], violations: &mut Violations) {
    let mut all: Vec<(i64, usize)> = Vec::new();
    let mut by_worker: HashMap<i64, Vec<(usize, i64, i64)>> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        if !matches!(op.kind, Kind::Snowflake | Kind::ThickSnowflake) {
            continue;
        }
        let ids = op.values();
        if ids.windows(2).any(|w| w[0] >= w[1]) {
            violations.add("Snowflake ids not ascending within an answer", || {
                describe(i, op)
            });
        }
        all.extend(ids.iter().map(|&id| (id, i)));
        let mut per_worker: HashMap<i64, (i64, i64)> = HashMap::new();
        for &id in ids {
            let bounds = per_worker.entry(worker(id)).or_insert((id, id));
            bounds.0 = bounds.0.min(id);
            bounds.1 = bounds.1.max(id);
        }
        for (w, (lo, hi)) in per_worker {
            by_worker.entry(w).or_default().push((i, lo, hi));
        }
    }
    all.sort();
    for pair in all.windows(2) {
        if pair[0].0 == pair[1].0 {
            violations.add("Snowflake id issued twice", || {
                format!(
                    "id {}: {} and {}",
                    pair[0].0,
                    describe(pair[0].1, &ops[pair[0].1]),
                    describe(pair[1].1, &ops[pair[1].1])
                )
            });
        }
    }
    for (w, mut answers) in by_worker {
        answers.sort_by_key(|&(i, _, _)| ops[i].completed);
        // The highest id answered so far, and by whom, in order of completion.
        let mut highest: Vec<(i64, usize)> = Vec::with_capacity(answers.len());
        for &(i, _, hi) in &answers {
            let best = highest.last().copied().unwrap_or((i64::MIN, i));
            highest.push(if hi > best.0 { (hi, i) } else { best });
        }
        for &(i, lo, _) in &answers {
            let before = answers.partition_point(|&(a, _, _)| ops[a].completed < ops[i].invoked);
            let Some(&(max, by)) = before.checked_sub(1).and_then(|b| highest.get(b)) else {
                continue;
            };
            if max >= lo {
                violations.add("Snowflake ids of a worker went backwards", || {
                    format!(
                        "worker {w}: {} answered {max} before {} began, which gave {lo}",
                        describe(by, &ops[by]),
                        describe(i, &ops[i])
                    )
                });
            }
        }
    }
}

/// The worker id of a Snowflake id in the default layout (41/10/12).
fn worker(id: i64) -> i64 {
    (id >> 12) & 0x3ff
}

fn counters(ops: &[Op], violations: &mut Violations) {
    let mut values: Vec<(&str, i64, usize)> = ops
        .iter()
        .enumerate()
        .filter(|(_, op)| op.kind == Kind::Counter)
        .flat_map(|(i, op)| op.values().iter().map(move |&v| (op.target.as_str(), v, i)))
        .collect();
    values.sort();
    for pair in values.windows(2) {
        if (pair[0].0, pair[0].1) == (pair[1].0, pair[1].1) {
            violations.add("counter value handed out twice", || {
                format!(
                    "{} value {}: {} and {}",
                    pair[0].0,
                    pair[0].1,
                    describe(pair[0].2, &ops[pair[0].2]),
                    describe(pair[1].2, &ops[pair[1].2])
                )
            });
        }
    }
}

/// One operation, for a violation's detail.
pub fn describe(i: usize, op: &Op) -> String {
    let mut text = format!("op #{i} [{} {} via {}", op.kind.name(), op.target, op.via);
    if op.token != Token::Vend {
        let _ = write!(text, ", token {}", op.token.name());
    }
    if let Some(key) = &op.key {
        let _ = write!(text, ", key {key}");
    }
    if op.replayed {
        text.push_str(", replayed");
    }
    let values = op.values();
    let _ = write!(
        text,
        ", sent at {:.3}s, answered at {:.3}s, {} values",
        op.invoked.as_secs_f64(),
        op.completed.as_secs_f64(),
        values.len()
    );
    if let (Some(first), Some(last)) = (values.first(), values.last()) {
        let _ = write!(text, " {first}..{last}");
    }
    text.push(']');
    text
}
