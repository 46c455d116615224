//! Prometheus metrics, one registry per running application (so tests can run many).
//! Names follow Prometheus conventions: `seqvend_` prefix, `_total` counters, `_seconds`.
//! Labels are bounded: routes are matched templates, sequences are the registry's names.

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

/// Request latencies we actually see: sub-millisecond coalesced vends up to 503s at ~1 s.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

pub struct Metrics {
    registry: Registry,
    pub http_requests: HistogramVec,
    pub values_vended: IntCounterVec,
    pub remaining: IntGaugeVec,
    pub capacity: IntGaugeVec,
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
}

impl Metrics {
    pub fn new() -> Self {
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
                "Values handed out, per sequence.",
            ),
            &["sequence"],
        )
        .expect("valid metric");
        let remaining = IntGaugeVec::new(
            Opts::new(
                "seqvend_sequence_remaining_values",
                "Values still to vend across a sequence's active and pending ranges \
                 (refreshed periodically; saturates at i64::MAX).",
            ),
            &["sequence"],
        )
        .expect("valid metric");
        let capacity = IntGaugeVec::new(
            Opts::new(
                "seqvend_sequence_capacity_values",
                "Values a sequence's ranges held when added (saturates at i64::MAX).",
            ),
            &["sequence"],
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
        let metrics = Self {
            registry,
            http_requests,
            values_vended,
            remaining,
            capacity,
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
        };
        metrics.register_all();
        metrics
    }

    fn register_all(&self) {
        let collectors: [Box<dyn prometheus::core::Collector>; 18] = [
            Box::new(self.http_requests.clone()),
            Box::new(self.values_vended.clone()),
            Box::new(self.remaining.clone()),
            Box::new(self.capacity.clone()),
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
