//! Metrics of counter families: per family, never per key (a family may hold millions).

use prometheus::{Histogram, HistogramOpts, IntCounterVec, Opts, Registry};

use super::labels::BoundedLabels;

pub struct CounterMetrics {
    families: BoundedLabels,
    values_vended: IntCounterVec,
    created: IntCounterVec,
    exhausted: IntCounterVec,
    pub statement_seconds: Histogram,
    pub batch_requests: Histogram,
}

/// What one family's requests got from one statement.
pub struct FamilyDraw<'a> {
    pub family: &'a str,
    pub values: u64,
    pub created: u64,
    pub exhausted: u64,
}

impl CounterMetrics {
    pub fn new(family_limit: usize, registry: &Registry) -> Self {
        let per_family = |name: &str, help: &str| {
            let metric = IntCounterVec::new(Opts::new(name, help), &["family"]).expect("valid");
            registry
                .register(Box::new(metric.clone()))
                .expect("metric names are unique");
            metric
        };
        let histogram = |opts: HistogramOpts| {
            let metric = Histogram::with_opts(opts).expect("valid metric");
            registry
                .register(Box::new(metric.clone()))
                .expect("metric names are unique");
            metric
        };
        Self {
            families: BoundedLabels::new(family_limit),
            values_vended: per_family(
                "seqvend_counter_values_vended_total",
                "Values handed out of a family's counters (the first families this instance \
                 served, up to the sequence limit; the rest under family=\"_other\").",
            ),
            created: per_family(
                "seqvend_counters_created_total",
                "Counters created by their key's first draw, per family.",
            ),
            exhausted: per_family(
                "seqvend_counter_exhausted_total",
                "Requests answered counter_exhausted, per family.",
            ),
            statement_seconds: histogram(
                HistogramOpts::new(
                    "seqvend_counter_statement_duration_seconds",
                    "Time of one counter statement, durable commit included.",
                )
                .buckets(vec![
                    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0,
                ]),
            ),
            batch_requests: histogram(
                HistogramOpts::new(
                    "seqvend_counter_batch_requests",
                    "Counter requests served by one statement.",
                )
                .buckets(vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]),
            ),
        }
    }

    pub fn record(&self, draw: FamilyDraw<'_>) {
        let family = [self.families.label(draw.family)];
        for (metric, count) in [
            (&self.values_vended, draw.values),
            (&self.created, draw.created),
            (&self.exhausted, draw.exhausted),
        ] {
            if count > 0 {
                metric.with_label_values(&family).inc_by(count);
            }
        }
    }
}
