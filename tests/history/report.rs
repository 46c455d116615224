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
        let during: Vec<&Op> = ops
            .iter()
            .filter(|op| (*from..*to).contains(&op.invoked))
            .collect();
        let internal = during.iter().filter(|op| op.internal_error()).count();
        let _ = writeln!(
            out,
            "  phase {:>6.1}s – {:>6.1}s  {name:<48} {:>7} operations, {internal} answered 500",
            from.as_secs_f64(),
            to.as_secs_f64(),
            during.len()
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
    let figures = Figures {
        ops,
        faults,
        sequence_values: claims.len(),
        counter_values: counted,
        ids,
        retirements: history.retirements.lock().unwrap().len(),
        violations,
    };
    figures.row(&mut out, history);
    out
}

/// The run in one table row, to paste into docs/reliability.md.
struct Figures<'a> {
    ops: &'a [Op],
    faults: &'a [Fault],
    sequence_values: usize,
    counter_values: usize,
    ids: usize,
    retirements: usize,
    violations: &'a Violations,
}

impl Figures<'_> {
    const HEADER: &'static str = "| seed | phases | operations | values | faults injected \
        | retirements checked | 500s answered | violations |\n|---|---|---|---|---|---|---|---|";

    fn row(&self, out: &mut String, history: &History) {
        let phases: Vec<String> = history
            .phases
            .lock()
            .unwrap()
            .iter()
            .map(|(name, from, to)| {
                let kind = name.split(':').next().unwrap_or(name);
                format!("{kind} {:.0} s", (*to - *from).as_secs_f64())
            })
            .collect();
        let mut faults: BTreeMap<&str, usize> = BTreeMap::new();
        for fault in self.faults.iter().filter(|f| f.applied) {
            *faults.entry(fault.kind).or_default() += 1;
        }
        let mut faults: Vec<(&str, usize)> = faults.into_iter().collect();
        faults.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let faults: Vec<String> = faults
            .iter()
            .map(|(kind, n)| format!("{} {kind}", thousands(*n)))
            .collect();
        let applied = self.faults.iter().filter(|f| f.applied).count();
        let violations = if self.violations.total() == 0 {
            "0".to_owned()
        } else {
            let kinds: Vec<String> = self
                .violations
                .by_kind
                .iter()
                .map(|(kind, (n, _))| format!("{} {kind}", thousands(*n)))
                .collect();
            kinds.join(", ")
        };
        let internal = self.ops.iter().filter(|op| op.internal_error()).count();
        let _ = writeln!(out, "figures (for docs/reliability.md):\n{}", Self::HEADER);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} of sequences, {} of counters, {} Snowflake ids | {}: {} | {} \
             | {} | {violations} |",
            history.seed,
            phases.join(", "),
            thousands(self.ops.len()),
            thousands(self.sequence_values),
            thousands(self.counter_values),
            thousands(self.ids),
            thousands(applied),
            faults.join(", "),
            thousands(self.retirements),
            thousands(internal),
        );
    }
}

/// 12345 as "12,345".
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
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
        let _ = write!(
            out,
            "  {} at {:.3}s–{:.3}s: {}",
            f.target,
            f.started.as_secs_f64(),
            f.ended.as_secs_f64(),
            f.detail
        );
        // What else the operator did meanwhile (rewinds aside: there are hundreds), so that
        // a 503 shows whether a fault explains it.
        let beside: Vec<String> = faults
            .iter()
            .filter(|o| o.kind != "rewind" && o.kind != "sequence retired")
            .filter(|o| o.started <= f.ended && o.ended >= f.started)
            .map(|o| {
                format!(
                    "{} at {:.3}s–{:.3}s",
                    o.kind,
                    o.started.as_secs_f64(),
                    o.ended.as_secs_f64()
                )
            })
            .collect();
        if !beside.is_empty() {
            let _ = write!(out, " (meanwhile: {})", beside.join(", "));
        }
        out.push('\n');
    }
}
