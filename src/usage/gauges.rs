//! The per-sequence gauges, bounded: the most urgent sequences (alerts raised first, then the
//! soonest to run out, then the least left) get series of their own, up to the metrics'
//! sequence limit, and the rest are summed under `sequence="_other"`, so 10,000 sequences
//! cost no more series than 100.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use prometheus::core::{Collector, MetricVec, MetricVecBuilder};

use crate::domain::{AlertKind, Usage};
use crate::metrics::{saturating_gauge, Metrics, OTHER_SEQUENCES};
use crate::registry::SequenceRecord;

/// What the gauges show of one sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceGauge {
    pub name: String,
    pub remaining: u128,
    pub capacity: u128,
    pub usage: Usage,
    /// None while the sequence is not being used.
    pub seconds_left: Option<f64>,
    pub raised: Vec<AlertKind>,
}

impl SequenceGauge {
    pub fn new(record: &SequenceRecord, raised: Vec<AlertKind>) -> Self {
        Self {
            name: record.view.name.clone(),
            remaining: record.view.remaining,
            capacity: record.capacity_in_play(),
            usage: record.usage,
            seconds_left: record.usage.seconds_left(record.view.remaining),
            raised,
        }
    }

    fn exhausted(&self) -> bool {
        self.remaining == 0
    }

    /// More urgent first: exhausted, then more alerts raised, then sooner to run out, then
    /// a smaller share left, then by name (so the choice is stable).
    fn urgency(&self, other: &Self) -> Ordering {
        let share = |g: &Self| g.remaining as f64 / g.capacity.max(1) as f64;
        other
            .exhausted()
            .cmp(&self.exhausted())
            .then(other.raised.len().cmp(&self.raised.len()))
            .then_with(|| {
                let left = |g: &Self| g.seconds_left.unwrap_or(f64::INFINITY);
                left(self).total_cmp(&left(other))
            })
            .then_with(|| share(self).total_cmp(&share(other)))
            .then_with(|| self.name.cmp(&other.name))
    }
}

/// Sets the gauges to `observed` and removes the series of sequences no longer shown.
pub fn publish(metrics: &Metrics, mut observed: Vec<SequenceGauge>) {
    observed.sort_by(SequenceGauge::urgency);
    let limit = metrics.sequence_limit();
    let rest = observed.split_off(limit.min(observed.len()));
    let mut shown: HashSet<String> = HashSet::new();
    for gauge in &observed {
        show(metrics, &gauge.name, gauge);
        shown.insert(gauge.name.clone());
    }
    if let Some(other) = aggregate(&rest) {
        show(metrics, OTHER_SEQUENCES, &other);
        shown.insert(OTHER_SEQUENCES.to_owned());
    }
    forget_others(metrics, &shown);
}

fn show(metrics: &Metrics, label: &str, gauge: &SequenceGauge) {
    metrics
        .remaining
        .with_label_values(&[label])
        .set(saturating_gauge(gauge.remaining));
    metrics
        .capacity
        .with_label_values(&[label])
        .set(saturating_gauge(gauge.capacity));
    let usage = &metrics.usage_per_second;
    usage
        .with_label_values(&[label, "1h"])
        .set(gauge.usage.per_second_1h);
    usage
        .with_label_values(&[label, "24h"])
        .set(gauge.usage.per_second_24h);
    match gauge.seconds_left {
        Some(seconds) => metrics
            .seconds_until_exhausted
            .with_label_values(&[label])
            .set(seconds),
        None => {
            let _ = metrics
                .seconds_until_exhausted
                .remove_label_values(&[label]);
        }
    }
    for kind in AlertKind::ALL {
        let raised = gauge.raised.iter().filter(|&&k| k == kind).count();
        metrics
            .alert
            .with_label_values(&[label, kind.as_str()])
            .set(raised as i64);
    }
}

/// The sequences beyond the limit as one: counts and rates summed, and alerts counted. Its
/// forecast is the soonest of theirs (sums of rates and counts would forecast the pool, not
/// the first sequence to stop shipping).
fn aggregate(rest: &[SequenceGauge]) -> Option<SequenceGauge> {
    if rest.is_empty() {
        return None;
    }
    let mut sum = SequenceGauge {
        name: OTHER_SEQUENCES.to_owned(),
        remaining: 0,
        capacity: 0,
        usage: Usage::default(),
        seconds_left: None,
        raised: Vec::new(),
    };
    for gauge in rest {
        sum.remaining += gauge.remaining;
        sum.capacity += gauge.capacity;
        sum.usage.per_second_1h += gauge.usage.per_second_1h;
        sum.usage.per_second_24h += gauge.usage.per_second_24h;
        sum.raised.extend(&gauge.raised);
        sum.seconds_left = match (sum.seconds_left, gauge.seconds_left) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    Some(sum)
}

/// Removes every series whose `sequence` label is not in `shown`.
fn forget_others(metrics: &Metrics, shown: &HashSet<String>) {
    forget(&metrics.remaining, shown);
    forget(&metrics.capacity, shown);
    forget(&metrics.alert, shown);
    forget(&metrics.usage_per_second, shown);
    forget(&metrics.seconds_until_exhausted, shown);
}

fn forget<T: MetricVecBuilder>(family: &MetricVec<T>, shown: &HashSet<String>) {
    for labels in stale_label_sets(family.collect(), shown) {
        let labels: HashMap<&str, &str> = labels
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let _ = family.remove(&labels);
    }
}

/// The label sets (name → value) of the series whose `sequence` is not in `shown`.
fn stale_label_sets(
    families: Vec<prometheus::proto::MetricFamily>,
    shown: &HashSet<String>,
) -> Vec<Vec<(String, String)>> {
    families
        .iter()
        .flat_map(|family| family.get_metric().iter())
        .map(|metric| {
            metric
                .get_label()
                .iter()
                .map(|label| (label.get_name().to_owned(), label.get_value().to_owned()))
                .collect::<Vec<_>>()
        })
        .filter(|labels| {
            labels
                .iter()
                .any(|(name, value)| name == "sequence" && !shown.contains(value))
        })
        .collect()
}
