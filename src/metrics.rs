//! Prometheus metrics, one registry per running application (so tests can run many).
//! Names follow Prometheus conventions: `seqvend_` prefix, `_total` counters, `_seconds`.
//! Labels are bounded: routes are matched templates, and at most `sequence_limit` sequences
//! get series of their own (the rest share `sequence="_other"`).

mod counters;
mod labels;

use prometheus::{
    Encoder, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

/// The `sequence` label of whatever is summed beyond the sequences with series of their own
/// (not a valid sequence name, so it never collides with one).
pub const OTHER_SEQUENCES: &str = "_other";

/// Sequences with series of their own unless configured otherwise.
pub const DEFAULT_SEQUENCE_LIMIT: usize = 100;

pub use counters::{CounterMetrics, FamilyDraw};
use labels::BoundedLabels;

/// Request latencies we actually see: sub-millisecond coalesced vends up to 503s at ~1 s.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

pub struct Metrics {
    registry: Registry,
    sequence_limit: usize,
    /// The sequences `values_vended` counts under their own name: the first
    /// `sequence_limit` this instance vended.
    vended_labels: BoundedLabels,
    pub http_requests: HistogramVec,
    values_vended: IntCounterVec,
    pub remaining: IntGaugeVec,
    pub capacity: IntGaugeVec,
    pub usage_per_second: GaugeVec,
    pub seconds_until_exhausted: GaugeVec,
    pub alert: IntGaugeVec,
    pub cache_held: IntGauge,
    pub vend_batch_requests: Histogram,
    pub vend_statement_seconds: Histogram,
    pub vend_rejected: IntCounter,
    pub sequence_repairs: IntCounterVec,
    pub sequence_failures: IntCounterVec,
    pub vend_queue_depth: IntGauge,
    pub pool_connections: IntGaugeVec,
    pub ids_issued: IntCounterVec,
    pub clock_moved_backwards: IntCounter,
    pub leases_granted: IntCounterVec,
    pub cache_hits: IntCounter,
    pub cache_waits: IntCounter,
    pub cache_refills: IntCounterVec,
    pub cache_discarded: IntCounter,
    /// Counter families, bounded by the same limit as sequences.
    pub counters: CounterMetrics,
}

impl Metrics {
    pub fn new() -> Self {
        Self::with_sequence_limit(DEFAULT_SEQUENCE_LIMIT)
    }

    /// At most `sequence_limit` sequences get series of their own in each per-sequence
    /// family (`SEQVEND_METRICS_SEQUENCES`).
    pub fn with_sequence_limit(sequence_limit: usize) -> Self {
        let registry = Registry::new();
        let http_requests = HistogramVec::new(
            HistogramOpts::new(
                "seqvend_http_request_duration_seconds",
                "HTTP requests by method, matched route and status, with their latency.",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            &["method", "route", "status"],
        )
        .expect("valid metric");
        let values_vended = IntCounterVec::new(
            Opts::new(
                "seqvend_values_vended_total",
                "Values handed out, per sequence (the first sequences this instance vended, up \
                 to the sequence limit; the rest under sequence=\"_other\").",
            ),
            &["sequence"],
        )
        .expect("valid metric");
        let remaining = IntGaugeVec::new(
            Opts::new(
                "seqvend_sequence_remaining",
                "Values still to vend across a sequence's active and pending ranges \
                 (refreshed every sampling round; saturates at i64::MAX).",
            ),
            &["sequence"],
        )
        .expect("valid metric");
        let capacity = IntGaugeVec::new(
            Opts::new(
                "seqvend_sequence_capacity",
                "Values a sequence's active and pending ranges held when added \
                 (saturates at i64::MAX).",
            ),
            &["sequence"],
        )
        .expect("valid metric");
        let usage_per_second = GaugeVec::new(
            Opts::new(
                "seqvend_sequence_usage_per_second",
                "Values a sequence used per second over the window (1h, 24h), counted from \
                 PostgreSQL: every instance and client lease included.",
            ),
            &["sequence", "window"],
        )
        .expect("valid metric");
        let seconds_until_exhausted = GaugeVec::new(
            Opts::new(
                "seqvend_sequence_seconds_until_exhausted",
                "When a sequence's active and pending ranges run out at the last day's rate; \
                 absent while it is not being used.",
            ),
            &["sequence"],
        )
        .expect("valid metric");
        let alert = IntGaugeVec::new(
            Opts::new(
                "seqvend_sequence_alert",
                "1 while a sequence crosses its alert threshold of this kind (remaining_below, \
                 days_left_below), else 0; for sequence=\"_other\", how many of the rest do.",
            ),
            &["sequence", "kind"],
        )
        .expect("valid metric");
        let cache_held = IntGauge::new(
            "seqvend_cache_held_values",
            "Values this instance holds in its cache, leased and not yet handed out.",
        )
        .expect("valid metric");
        let vend_batch_requests = Histogram::with_opts(
            HistogramOpts::new(
                "seqvend_vend_batch_requests",
                "Vend requests served by one database statement.",
            )
            .buckets(vec![
                1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
            ]),
        )
        .expect("valid metric");
        let vend_statement_seconds = Histogram::with_opts(
            HistogramOpts::new(
                "seqvend_vend_statement_duration_seconds",
                "Time for one vend statement, WAL flush at commit included.",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
        )
        .expect("valid metric");
        let vend_rejected = IntCounter::new(
            "seqvend_vend_rejected_total",
            "Vend requests answered 503 at once because the vend queue was full.",
        )
        .expect("valid metric");
        let sequence_repairs = IntCounterVec::new(
            Opts::new(
                "seqvend_sequence_repairs_total",
                "Times a range's PostgreSQL sequence was found moved back behind values \
                 seqvend had handed out (or out of its range) and was moved forward.",
            ),
            &["sequence"],
        )
        .expect("valid metric");
        let sequence_failures = IntCounterVec::new(
            Opts::new(
                "seqvend_sequence_failures_total",
                "Vend statements in which one sequence failed on its own (its PostgreSQL \
                 sequence missing or altered beyond repair); its requests answered 500.",
            ),
            &["sequence"],
        )
        .expect("valid metric");
        let vend_queue_depth = IntGauge::new(
            "seqvend_vend_queue_depth",
            "Vend requests waiting for a database statement.",
        )
        .expect("valid metric");
        let pool_connections = IntGaugeVec::new(
            Opts::new(
                "seqvend_db_pool_connections",
                "Database pool connections by pool (vend, registry) and state \
                 (open, idle, max, waiting).",
            ),
            &["pool", "state"],
        )
        .expect("valid metric");
        let ids_issued = IntCounterVec::new(
            Opts::new(
                "seqvend_ids_issued_total",
                "Time-ordered ids issued by this instance, by kind (snowflake, uuidv7).",
            ),
            &["kind"],
        )
        .expect("valid metric");
        let clock_moved_backwards = IntCounter::new(
            "seqvend_clock_moved_backwards_total",
            "Snowflake requests refused because the clock read further below the last \
             millisecond issued (or the lease's first) than the tolerance allows.",
        )
        .expect("valid metric");
        let leases_granted = IntCounterVec::new(
            Opts::new(
                "seqvend_leases_granted_total",
                "Blocks of values leased, by holder kind: instance (this instance's cache) or \
                 client (POST /sequences/{name}/leases).",
            ),
            &["kind"],
        )
        .expect("valid metric");
        let cache_hits = IntCounter::new(
            "seqvend_cache_hits_total",
            "Vend requests of cached sequences answered from this instance's memory at once.",
        )
        .expect("valid metric");
        let cache_waits = IntCounter::new(
            "seqvend_cache_waits_total",
            "Vend requests of cached sequences that found the cache short and waited for a refill.",
        )
        .expect("valid metric");
        let cache_refills = IntCounterVec::new(
            Opts::new(
                "seqvend_cache_refills_total",
                "Refills of this instance's cache, by result (granted, exhausted, retired, \
                 not_found, failed, unavailable).",
            ),
            &["result"],
        )
        .expect("valid metric");
        let cache_discarded = IntCounter::new(
            "seqvend_cache_discarded_values_total",
            "Cached values never handed out: their lease expired, the sequence was retired or \
             its cache policy changed, or the instance stopped. Gaps, never duplicates.",
        )
        .expect("valid metric");
        let counters = CounterMetrics::new(sequence_limit, &registry);
        let metrics = Self {
            registry,
            sequence_limit,
            vended_labels: BoundedLabels::new(sequence_limit),
            http_requests,
            values_vended,
            remaining,
            capacity,
            usage_per_second,
            seconds_until_exhausted,
            alert,
            cache_held,
            vend_batch_requests,
            vend_statement_seconds,
            vend_rejected,
            sequence_repairs,
            sequence_failures,
            vend_queue_depth,
            pool_connections,
            ids_issued,
            clock_moved_backwards,
            leases_granted,
            cache_hits,
            cache_waits,
            cache_refills,
            cache_discarded,
            counters,
        };
        metrics.register_all();
        metrics
    }

    fn register_all(&self) {
        let collectors: [Box<dyn prometheus::core::Collector>; 22] = [
            Box::new(self.http_requests.clone()),
            Box::new(self.values_vended.clone()),
            Box::new(self.remaining.clone()),
            Box::new(self.capacity.clone()),
            Box::new(self.usage_per_second.clone()),
            Box::new(self.seconds_until_exhausted.clone()),
            Box::new(self.alert.clone()),
            Box::new(self.cache_held.clone()),
            Box::new(self.vend_batch_requests.clone()),
            Box::new(self.vend_statement_seconds.clone()),
            Box::new(self.vend_rejected.clone()),
            Box::new(self.sequence_repairs.clone()),
            Box::new(self.sequence_failures.clone()),
            Box::new(self.vend_queue_depth.clone()),
            Box::new(self.pool_connections.clone()),
            Box::new(self.ids_issued.clone()),
            Box::new(self.clock_moved_backwards.clone()),
            Box::new(self.leases_granted.clone()),
            Box::new(self.cache_hits.clone()),
            Box::new(self.cache_waits.clone()),
            Box::new(self.cache_refills.clone()),
            Box::new(self.cache_discarded.clone()),
        ];
        for collector in collectors {
            self.registry
                .register(collector)
                .expect("metric names are unique");
        }
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
