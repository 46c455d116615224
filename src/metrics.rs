//! Prometheus metrics, one registry per running application (so tests can run many).
//! Names follow Prometheus conventions: `seqvend_` prefix, `_total` counters, `_seconds`.
//! Labels are bounded: routes are matched templates, and at most `sequence_limit` sequences
//! get series of their own (the rest share `sequence="_other"`). Each family is declared once,
//! with its name, help, labels and buckets, in a `metric_families!` block (`declare.rs`).

mod counters;
mod declare;
mod labels;

use prometheus::{
    Encoder, GaugeVec, Histogram, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
    Registry, TextEncoder,
};

/// The `sequence` label of whatever is summed beyond the sequences with series of their own
/// (not a valid sequence name, so it never collides with one).
pub const OTHER_SEQUENCES: &str = "_other";

/// Sequences with series of their own unless configured otherwise.
pub const DEFAULT_SEQUENCE_LIMIT: usize = 100;

pub use counters::{CounterMetrics, FamilyDraw};
use declare::metric_families;
use labels::BoundedLabels;

/// Request latencies we actually see: sub-millisecond coalesced vends up to 503s at ~1 s.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// How late an answer is past its deadline: the first bucket holds those in time; the
/// others tell a timer that fired late on a starved machine from a deadline not applied.
const LATENESS_BUCKETS: &[f64] = &[0.0, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0];

metric_families! {
    /// Every family one running application exports, each declared once below (the unit
    /// test in `tests.rs` holds them to the list in `exported.txt`).
    pub struct Metrics {
        registry: Registry,
        sequence_limit: usize,
        /// The sequences `values_vended` counts under their own name: the first
        /// `sequence_limit` this instance vended.
        vended_labels: BoundedLabels,
        /// Counter families, bounded by the same limit as sequences.
        pub counters: CounterMetrics,
    }
    families {
        pub http_requests: HistogramVec {
            name: "seqvend_http_request_duration_seconds",
            help: "HTTP requests by method, matched route and status, with their latency.",
            labels: ["method", "route", "status"],
            buckets: LATENCY_BUCKETS,
        },
        pub http_request_lateness: HistogramVec {
            name: "seqvend_http_request_lateness_seconds",
            help: "Requests with a deadline (vend, counter, lease, Snowflake: the vend deadline; \
                   registry routes: the registry deadline), by matched route: how long after \
                   its deadline, counted from the request's arrival, each answer was ready \
                   (0: in time).",
            labels: ["route"],
            buckets: LATENESS_BUCKETS,
        },
        values_vended: IntCounterVec {
            name: "seqvend_values_vended_total",
            help: "Values handed out, per sequence (the first sequences this instance vended, up \
                   to the sequence limit; the rest under sequence=\"_other\").",
            labels: ["sequence"],
        },
        pub remaining: IntGaugeVec {
            name: "seqvend_sequence_remaining",
            help: "Values still to vend across a sequence's active and pending ranges \
                   (refreshed every sampling round; saturates at i64::MAX).",
            labels: ["sequence"],
        },
        pub capacity: IntGaugeVec {
            name: "seqvend_sequence_capacity",
            help: "Values a sequence's active and pending ranges held when added \
                   (saturates at i64::MAX).",
            labels: ["sequence"],
        },
        pub usage_per_second: GaugeVec {
            name: "seqvend_sequence_usage_per_second",
            help: "Values a sequence used per second over the window (1h, 24h), counted from \
                   PostgreSQL: every block lease of an instance or a client included.",
            labels: ["sequence", "window"],
        },
        pub seconds_until_exhausted: GaugeVec {
            name: "seqvend_sequence_seconds_until_exhausted",
            help: "When a sequence's active and pending ranges run out at the last day's rate; \
                   absent while it is not being used.",
            labels: ["sequence"],
        },
        pub alert: IntGaugeVec {
            name: "seqvend_sequence_alert",
            help: "1 while a sequence crosses its alert threshold of this kind (remaining_below, \
                   days_left_below), else 0; for sequence=\"_other\", how many of the rest do.",
            labels: ["sequence", "kind"],
        },
        pub cache_held: IntGauge {
            name: "seqvend_cache_held_values",
            help: "Values this instance holds in its instance cache, leased in blocks and not \
                   yet handed out.",
        },
        pub vend_batch_requests: Histogram {
            name: "seqvend_vend_batch_requests",
            help: "Vend requests served by one database statement.",
            buckets: &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0],
        },
        pub vend_statement_seconds: Histogram {
            name: "seqvend_vend_statement_duration_seconds",
            help: "Time for one vend statement, WAL flush at commit included.",
            buckets: LATENCY_BUCKETS,
        },
        pub vend_rejected: IntCounter {
            name: "seqvend_vend_rejected_total",
            help: "Vend requests answered 503 at once because the vend queue was full.",
        },
        pub sequence_repairs: IntCounterVec {
            name: "seqvend_sequence_repairs_total",
            help: "Times a range's PostgreSQL sequence was found moved back behind values \
                   seqvend had handed out (or out of its range) and was moved forward.",
            labels: ["sequence"],
        },
        pub sequence_failures: IntCounterVec {
            name: "seqvend_sequence_failures_total",
            help: "Vend statements in which one sequence failed on its own (its PostgreSQL \
                   sequence missing or altered beyond repair); its requests answered 500.",
            labels: ["sequence"],
        },
        pub vend_queue_depth: IntGauge {
            name: "seqvend_vend_queue_depth",
            help: "Vend requests waiting for a database statement.",
        },
        pub pool_connections: IntGaugeVec {
            name: "seqvend_db_pool_connections",
            help: "Database pool connections by pool (vend, registry) and state \
                   (open, idle, max, waiting).",
            labels: ["pool", "state"],
        },
        pub ids_issued: IntCounterVec {
            name: "seqvend_ids_issued_total",
            help: "Time-ordered ids issued by this instance, by kind (snowflake, uuidv7).",
            labels: ["kind"],
        },
        pub clock_moved_backwards: IntCounter {
            name: "seqvend_clock_moved_backwards_total",
            help: "Snowflake requests refused because the clock read further below the last \
                   millisecond issued (or the worker lease's first) than the tolerance allows.",
        },
        pub leases_granted: IntCounterVec {
            name: "seqvend_leases_granted_total",
            help: "Block leases granted, by holder kind: instance (for this instance's instance \
                   cache) or client (POST /sequences/{name}/leases).",
            labels: ["kind"],
        },
        pub idempotency_purges: IntCounterVec {
            name: "seqvend_idempotency_purges_total",
            help: "Purges of stored idempotency answers run by this instance, by step (expired: \
                   answers past their time to live; crowded: each token's oldest beyond \
                   SEQVEND_IDEMPOTENCY_KEYS_PER_TOKEN) and result (ok; failed, logged at warn; \
                   left_to_another: another instance's purge was running).",
            labels: ["step", "result"],
        },
        pub idempotency_answers_purged: IntCounterVec {
            name: "seqvend_idempotency_answers_purged_total",
            help: "Stored idempotency answers removed by this instance's purges, by step.",
            labels: ["step"],
        },
        pub cache_hits: IntCounter {
            name: "seqvend_cache_hits_total",
            help: "Vend requests of cached sequences answered from the instance cache at once.",
        },
        pub cache_waits: IntCounter {
            name: "seqvend_cache_waits_total",
            help: "Vend requests of cached sequences that found the instance cache short and \
                   waited for a refill.",
        },
        pub cache_refills: IntCounterVec {
            name: "seqvend_cache_refills_total",
            help: "Refills of the instance cache, by result (granted, exhausted, retired, \
                   not_found, failed, unavailable).",
            labels: ["result"],
        },
        pub cache_discarded: IntCounter {
            name: "seqvend_cache_discarded_values_total",
            help: "Values of the instance cache never handed out: their block lease expired, \
                   the sequence was retired or its cache policy changed, or the instance \
                   stopped. Gaps, never duplicates.",
        },
    }
}

impl Metrics {
    pub fn new() -> Self {
        Self::with_sequence_limit(DEFAULT_SEQUENCE_LIMIT)
    }

    /// At most `sequence_limit` sequences get series of their own in each per-sequence
    /// family (`SEQVEND_METRICS_SEQUENCES`).
    pub fn with_sequence_limit(sequence_limit: usize) -> Self {
        let registry = Registry::new();
        Self::register(
            &registry,
            // A `Registry` is a shared handle: the clone kept is the one registered in.
            registry.clone(),
            sequence_limit,
            BoundedLabels::new(sequence_limit),
            CounterMetrics::new(sequence_limit, &registry),
        )
    }

    /// Most sequences with series of their own in each per-sequence family.
    pub fn sequence_limit(&self) -> usize {
        self.sequence_limit
    }

    /// Counts `values` handed out of `sequence`.
    pub fn count_vended(&self, sequence: &str, values: u64) {
        self.values_vended
            .with_label_values(&[self.vended_labels.label(sequence)])
            .inc_by(values);
    }

    /// Every family in the text format Prometheus scrapes.
    pub fn render(&self) -> String {
        let mut buffer = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buffer)
            .expect("text encoding cannot fail");
        String::from_utf8(buffer).expect("the text format is UTF-8")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Gauges are i64; counts of values can reach 2^64.
pub fn saturating_gauge(count: u128) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests;
