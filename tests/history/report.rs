//! The report of one run: its seed and phases, operations by kind and what became of them,
//! values handed out, faults injected by kind, and the violations in full.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::check::{Claim, Violations};
use crate::history::{Fault, History, Kind, Op, Outcome};

pub fn write(
    history: &History,
    ops: &[Op],
    faults: &[Fault],
    claims: &[Claim],
    violations: &Violations,
) -> String {
    let mut out = String::new();
    let seed = history.seed;
    let _ = writeln!(
        out,
        "history seed {seed} (replay: SEQVEND_HISTORY_SEED={seed})"
    );
    for (name, from, to) in history.phases.lock().unwrap().iter() {
        let _ = writeln!(
            out,
            "  phase {:>6.1}s – {:>6.1}s  {name}",
            from.as_secs_f64(),
            to.as_secs_f64()
        );
    }
    operations(&mut out, ops);
    let ids: usize = ops
        .iter()
        .filter(|op| matches!(op.kind, Kind::Snowflake | Kind::ThickSnowflake))
        .map(|op| op.values().len())
        .sum();
    let counted: usize = ops
        .iter()
        .filter(|op| op.kind == Kind::Counter)
        .map(|op| op.values().len())
        .sum();
    let drawn: usize = history
        .drawn
        .lock()
        .unwrap()
        .iter()
        .map(|d| d.values.len())
        .sum();
    let _ = writeln!(
        out,
        "values: {} of sequences, {counted} of counters, {ids} Snowflake ids; \
         {drawn} drawn by another application; {} sequences retired",
        claims.len(),
        history.retirements.lock().unwrap().len()
    );
    // Per kind: applied, refused, and the first example (applied if any was).
    let mut by_kind: BTreeMap<&str, (usize, usize, Option<&Fault>)> = BTreeMap::new();
    for fault in faults {
        let entry = by_kind.entry(fault.kind).or_default();
        if fault.applied {
            entry.0 += 1;
            if entry.2.is_none_or(|f| !f.applied) {
                entry.2 = Some(fault);
            }
        } else {
            entry.1 += 1;
            entry.2.get_or_insert(fault);
        }
    }
    let _ = writeln!(out, "faults injected: {}", faults.len());
    for (kind, (applied, refused, example)) in by_kind {
        let _ = write!(
            out,
            "  {kind:<22} {applied:>7} applied, {refused:>4} refused or failed"
        );
        if let Some(f) = example {
            let _ = write!(
                out,
                "  (e.g. {} at {:.3}s: {})",
                f.target,
                f.started.as_secs_f64(),
                f.detail
            );
        }
        out.push('\n');
    }
    retirements(&mut out, history, faults);
    let _ = writeln!(out, "violations: {}", violations.total());
    for (kind, (count, shown)) in &violations.by_kind {
        let _ = writeln!(out, "  {kind}: {count}");
        for detail in shown {
            let _ = writeln!(out, "    - {detail}");
        }
    }
    out
}

/// Operations by kind: answered with values, refused (by status and code), unknown.
fn operations(out: &mut String, ops: &[Op]) {
    #[derive(Default)]
    struct Tally {
        ok: usize,
        values: usize,
        refused: BTreeMap<String, usize>,
        unknown: BTreeMap<String, usize>,
    }
    let mut tallies: BTreeMap<Kind, Tally> = BTreeMap::new();
    for op in ops {
        let tally = tallies.entry(op.kind).or_default();
        match &op.outcome {
            Outcome::Values(values) => {
                tally.ok += 1;
                tally.values += values.len();
            }
            Outcome::Refused(why) => *tally.refused.entry(clip(why)).or_default() += 1,
            Outcome::Unknown(why) => *tally.unknown.entry(why.clone()).or_default() += 1,
        }
    }
    let _ = writeln!(out, "operations: {}", ops.len());
    for (kind, tally) in tallies {
        let refused: usize = tally.refused.values().sum();
        let unknown: usize = tally.unknown.values().sum();
        let _ = writeln!(
            out,
            "  {:<34} {:>7} answered ({} values), {refused} refused, {unknown} unknown",
            kind.name(),
            tally.ok,
            tally.values,
        );
        for (why, count) in tally.refused {
            let _ = writeln!(out, "      {count:>6} × refused: {why}");
        }
        for (why, count) in tally.unknown {
            let _ = writeln!(out, "      {count:>6} × unknown: {why}");
        }
    }
}

/// A refusal's reason, cut short: the thick client's errors carry their detail.
fn clip(why: &str) -> String {
    why.chars().take(70).collect()
}

/// Every retirement tried: how many answered 200 (and so were checked), and each attempt's
/// answer — a 503 says why.
fn retirements(out: &mut String, history: &History, faults: &[Fault]) {
    let tried: Vec<&Fault> = faults
        .iter()
        .filter(|f| f.kind == "sequence retired")
        .collect();
    let checked = history.retirements.lock().unwrap().len();
    let _ = writeln!(
        out,
        "retirements: {} tried, {checked} answered 200 and checked",
        tried.len()
    );
    for f in tried {
        let _ = writeln!(
            out,
            "  {} at {:.3}s–{:.3}s: {}",
            f.target,
            f.started.as_secs_f64(),
            f.ended.as_secs_f64(),
            f.detail
        );
    }
}
