//! What a Patroni scenario is judged by: no number twice and none outside its range over the
//! whole run, nothing acknowledged then lost (the registry on the surviving leader lies past
//! every acknowledged value), and the figures reported: values, time from the fault to the
//! first acknowledged value of each kind, 503s vs other failures, the longest request.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::common::process::admin;
use crate::lateness::LatenessFigures;
use crate::load::*;

/// The instants a scenario is measured between.
pub struct Window {
    pub start: Instant,
    pub fault: Instant,
    /// When Patroni's REST API first named a writable leader after the fault (if it changed).
    pub new_leader: Option<Instant>,
    /// When that leader first committed a write durably (a probe of the test's own).
    pub writes_accepted: Option<Instant>,
    pub end: Instant,
}

pub struct Figures {
    pub values: usize,
    pub duplicates: usize,
    pub outside: usize,
    pub lost: usize,
    /// Per kind: from the fault to the first value acknowledged for a request sent after it.
    pub first_value: BTreeMap<Kind, Duration>,
    /// From the new leader (if any) to the first strict value answered after it.
    pub strict_after_leader: Option<Duration>,
    /// From the new leader's first durable commit to the first strict value answered after
    /// it was named (zero when seqvend's commit and the probe's came back together).
    pub strict_after_writes: Option<Duration>,
    /// The longest time without a strict value answered, in the scenario's window.
    pub strict_outage: Duration,
    pub unavailable: usize,
    pub other_failures: Vec<String>,
    pub longest: Duration,
    /// The longest request's kind and how it ended (`ok`, `503`, `failed`).
    pub longest_what: String,
    /// The clients' runtime's latest timer wake-up in the window (see `load::probe_lag`).
    pub harness_lag: Duration,
    /// seqvend's own account of its deadline-bound answers in the window.
    pub lateness: LatenessFigures,
}

/// Checks the whole run's values so far and measures `window`'s share of them.
pub async fn judge(
    journal: &Journal,
    window: &Window,
    address: &str,
    lateness: LatenessFigures,
) -> Figures {
    let maxima = maxima(&journal.acked.lock().unwrap());
    let lost = lost(address, &maxima).await;
    let acked = journal.acked.lock().unwrap();
    let (duplicates, outside) = duplicates_and_outside(&acked);
    let inside = |t: Instant| t >= window.start && t <= window.end;
    let mut first_value = BTreeMap::new();
    for a in acked.iter().filter(|a| a.sent >= window.fault) {
        let took = a.answered - window.fault;
        let first = first_value.entry(a.kind).or_insert(took);
        *first = (*first).min(took);
    }
    let failed = journal.failed.lock().unwrap();
    let failed: Vec<_> = failed.iter().filter(|f| inside(f.sent)).collect();
    let outcome = |f: &Failed| if f.unavailable { "503" } else { "failed" };
    let (longest, longest_what) = acked
        .iter()
        .filter(|a| inside(a.sent))
        .map(|a| (a.answered - a.sent, format!("{:?} ok", a.kind)))
        .chain(
            failed
                .iter()
                .map(|f| (f.ended - f.sent, format!("{:?} {}", f.kind, outcome(f)))),
        )
        .max_by_key(|(took, _)| *took)
        .unwrap_or_default();
    let first_strict_after = |leader: Instant| {
        let after = acked
            .iter()
            .filter(|a| a.kind == Kind::Strict && a.answered >= leader);
        after.map(|a| a.answered).min()
    };
    let first_strict = window.new_leader.and_then(first_strict_after);
    let strict_after_leader = first_strict.zip(window.new_leader).map(|(a, l)| a - l);
    let strict_after_writes = first_strict
        .zip(window.writes_accepted)
        .map(|(a, w)| a.saturating_duration_since(w));
    let strict_outage = longest_gap(&acked, window);
    let lags = journal.lags.lock().unwrap();
    let harness_lag = lags
        .iter()
        .filter(|(t, _)| inside(*t))
        .map(|(_, lag)| *lag)
        .max();
    let harness_lag = harness_lag.unwrap_or_default();
    drop(lags);
    let in_window = acked.iter().filter(|a| inside(a.answered));
    let values = in_window.map(|a| a.values.len()).sum();
    drop(acked);
    Figures {
        values,
        duplicates,
        outside,
        lost,
        first_value,
        strict_after_leader,
        strict_after_writes,
        strict_outage,
        unavailable: failed.iter().filter(|f| f.unavailable).count(),
        other_failures: failed
            .iter()
            .filter(|f| !f.unavailable)
            .map(|f| f.what.clone())
            .collect(),
        longest,
        longest_what,
        harness_lag,
        lateness,
    }
}

/// The longest time between two strict answers within `window`.
fn longest_gap(acked: &[Acked], window: &Window) -> Duration {
    let mut times: Vec<Instant> = acked
        .iter()
        .filter(|a| {
            a.kind == Kind::Strict && a.answered >= window.start && a.answered <= window.end
        })
        .map(|a| a.answered)
        .collect();
    times.sort();
    times
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default()
}

/// Over every value acknowledged so far: how many were repeats (per sequence, per counter
/// key, among Snowflake ids) and how many lay outside their range.
fn duplicates_and_outside(acked: &[Acked]) -> (usize, usize) {
    let mut seen: HashSet<(Kind, usize, i64)> = HashSet::new();
    let (mut duplicates, mut outside) = (0, 0);
    for a in acked {
        for &value in &a.values {
            duplicates += usize::from(!seen.insert((a.kind, a.key, value)));
            let bounded = !matches!(a.kind, Kind::Snowflake | Kind::Counter);
            outside += usize::from(bounded && !(RANGE.0..=RANGE.1).contains(&value));
        }
    }
    (duplicates, outside)
}

/// The largest value acknowledged per sequence and per counter key.
fn maxima(acked: &[Acked]) -> BTreeMap<(Kind, usize), i64> {
    let mut maxima = BTreeMap::new();
    for a in acked.iter().filter(|a| a.kind != Kind::Snowflake) {
        let top = a.values.iter().copied().max().unwrap_or(i64::MIN);
        let entry = maxima.entry((a.kind, a.key)).or_insert(top);
        *entry = (*entry).max(top);
    }
    maxima
}

/// How many sequences and counters the registry on today's leader places at or below a value
/// already acknowledged: each one would vend that value again.
async fn lost(address: &str, maxima: &BTreeMap<(Kind, usize), i64>) -> usize {
    let mut lost = 0;
    for (&(kind, key), &top) in maxima {
        let next = match kind {
            Kind::Strict => sequence_next(address, STRICT).await,
            Kind::Cached => sequence_next(address, CACHED).await,
            Kind::Keyed => sequence_next(address, KEYED).await,
            Kind::Counter => {
                let path = format!("/families/{FAMILY}/counters/k{key}");
                let (status, body) = admin(address, Method::GET, &path, None).await;
                assert_eq!(status, StatusCode::OK, "{body}");
                body["next_value"].as_i64().unwrap()
            }
            Kind::Snowflake => continue,
        };
        if next <= top {
            eprintln!("{kind:?} {key}: the registry's next value {next} is not past the acknowledged {top}");
            lost += 1;
        }
    }
    lost
}

async fn sequence_next(address: &str, name: &str) -> i64 {
    let (status, body) = admin(address, Method::GET, &format!("/sequences/{name}"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["ranges"][0]["next"].as_i64().unwrap()
}

/// The machine's one-minute load average as the scenario ends: the run's figures depend on
/// how much else shared its cores.
fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Writes the scenario's row for `scripts/reliability.sh` (when the run writes a report).
pub fn report(
    order: usize,
    scenario: &str,
    figures: &Figures,
    window: &Window,
    deadline: Duration,
) {
    let Some(dir) = std::env::var_os("SEQVEND_RELIABILITY_DIR") else {
        return;
    };
    let ms = |d: Duration| d.as_millis() as u64;
    let first: BTreeMap<String, u64> = figures
        .first_value
        .iter()
        .map(|(kind, took)| (format!("{kind:?}").to_lowercase(), ms(*took)))
        .collect();
    let leader = window.new_leader.map(|t| ms(t - window.fault));
    let writes = window.writes_accepted.map(|t| ms(t - window.fault));
    let row = json!({
        "scenario": scenario,
        "values": figures.values,
        "duplicates": figures.duplicates,
        "outside": figures.outside,
        "lost": figures.lost,
        "new_leader_ms": leader,
        "first_value_ms": first,
        "writes_accepted_ms": writes,
        "strict_after_leader_ms": figures.strict_after_leader.map(ms),
        "strict_after_writes_ms": figures.strict_after_writes.map(ms),
        "strict_outage_ms": ms(figures.strict_outage),
        "unavailable": figures.unavailable,
        "other_failures": figures.other_failures.len(),
        "longest_ms": ms(figures.longest),
        "longest_what": figures.longest_what,
        "harness_lag_ms": ms(figures.harness_lag),
        "server_answers": figures.lateness.answers,
        "server_late": figures.lateness.late,
        "server_lateness_bound_ms": figures.lateness.bound_ms,
        "deadline_ms": ms(deadline),
        "load_average": load_average(),
    });
    let dir = PathBuf::from(dir).join("patroni");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{order}.json"));
    std::fs::write(path, serde_json::to_string_pretty(&row).unwrap()).unwrap();
}
