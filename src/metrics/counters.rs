//! Metrics of counter families: per family, never per key (a family may hold millions).

use prometheus::{Histogram, IntCounterVec, Registry};

use super::declare::metric_families;
use super::labels::BoundedLabels;

metric_families! {
    pub struct CounterMetrics {
        families: BoundedLabels,
    }
    families {
        values_vended: IntCounterVec {
            name: "seqvend_counter_values_vended_total",
            help: "Values handed out of a family's counters (the first families this instance \
                   served, up to the sequence limit; the rest under family=\"_other\").",
            labels: ["family"],
        },
        created: IntCounterVec {
            name: "seqvend_counters_created_total",
            help: "Counters created by their key's first draw, per family.",
            labels: ["family"],
        },
        exhausted: IntCounterVec {
            name: "seqvend_counter_exhausted_total",
            help: "Requests answered counter_exhausted, per family.",
            labels: ["family"],
        },
        pub statement_seconds: Histogram {
            name: "seqvend_counter_statement_duration_seconds",
            help: "Time of one counter statement, durable commit included.",
            buckets: &[0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0],
        },
        pub batch_requests: Histogram {
            name: "seqvend_counter_batch_requests",
            help: "Counter requests served by one statement.",
            buckets: &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0],
        },
    }
}

/// What one family's requests got from one statement.
pub struct FamilyDraw<'a> {
    pub family: &'a str,
    pub values: u64,
    pub created: u64,
    pub exhausted: u64,
}

impl CounterMetrics {
    /// At most `family_limit` families get series of their own; registered in `registry`.
    pub fn new(family_limit: usize, registry: &Registry) -> Self {
        Self::register(registry, BoundedLabels::new(family_limit))
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
