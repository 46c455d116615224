//! The exported families, checked against a fixed list: names, types, help, label names and
//! buckets are what dashboards, alert rules and operators rely on, so none changes unnoticed
//! (the list is `exported.txt`).

use std::fmt::Write;

use prometheus::proto::MetricType;

use super::{FamilyDraw, Metrics, OTHER_SEQUENCES};

/// Gives every family one series, so each is gathered. Each label's value is its own name in
/// the order callers pass them, so a reordered declaration shows in the schema.
fn touch_every_family(metrics: &Metrics) {
    let m = metrics;
    m.http_requests
        .with_label_values(&["method", "route", "status"])
        .observe(0.1);
    m.http_request_lateness
        .with_label_values(&["route"])
        .observe(0.0);
    m.count_vended("sequence", 1);
    m.remaining.with_label_values(&["sequence"]).set(1);
    m.capacity.with_label_values(&["sequence"]).set(1);
    m.usage_per_second
        .with_label_values(&["sequence", "window"])
        .set(1.0);
    m.seconds_until_exhausted
        .with_label_values(&["sequence"])
        .set(1.0);
    m.alert.with_label_values(&["sequence", "kind"]).set(1);
    m.cache_held.set(1);
    m.vend_batch_requests.observe(1.0);
    m.vend_statement_seconds.observe(0.1);
    m.vend_rejected.inc();
    m.idempotency_purges
        .with_label_values(&["step", "result"])
        .inc();
    m.idempotency_answers_purged
        .with_label_values(&["step"])
        .inc();
    m.sequence_repairs.with_label_values(&["sequence"]).inc();
    m.sequence_failures.with_label_values(&["sequence"]).inc();
    m.vend_queue_depth.set(1);
    m.pool_connections
        .with_label_values(&["pool", "state"])
        .set(1);
    m.ids_issued.with_label_values(&["kind"]).inc();
    m.clock_moved_backwards.inc();
    m.leases_granted.with_label_values(&["kind"]).inc();
    m.cache_hits.inc();
    m.cache_waits.inc();
    m.cache_refills.with_label_values(&["result"]).inc();
    m.cache_discarded.inc();
    m.counters.record(FamilyDraw {
        family: "family",
        values: 1,
        created: 1,
        exhausted: 1,
    });
    m.counters.statement_seconds.observe(0.1);
    m.counters.batch_requests.observe(1.0);
}

/// One paragraph per family: name, type, label names and buckets, then its help.
fn schema(metrics: &Metrics) -> String {
    let mut schema = String::new();
    for family in metrics.registry.gather() {
        let kind = match family.get_field_type() {
            MetricType::COUNTER => "counter",
            MetricType::GAUGE => "gauge",
            MetricType::HISTOGRAM => "histogram",
            other => panic!("unexpected metric type {other:?}"),
        };
        let series = &family.get_metric()[0];
        let labels: Vec<&str> = series.get_label().iter().map(|l| l.get_name()).collect();
        for label in series.get_label() {
            assert_eq!(label.get_value(), label.get_name(), "labels out of order");
        }
        write!(schema, "{} {kind} {labels:?}", family.get_name()).unwrap();
        if kind == "histogram" {
            let buckets = series.get_histogram().get_bucket().iter();
            let bounds: Vec<f64> = buckets.map(|b| b.get_upper_bound()).collect();
            write!(schema, " {bounds:?}").unwrap();
        }
        writeln!(schema, "\n    {}", family.get_help()).unwrap();
    }
    schema
}

#[test]
fn the_exported_families_are_exactly_these() {
    let metrics = Metrics::new();
    touch_every_family(&metrics);
    assert_eq!(schema(&metrics), EXPECTED);
}

#[test]
fn sequences_beyond_the_limit_are_counted_under_other_and_the_first_keep_their_series() {
    let metrics = Metrics::with_sequence_limit(2);
    for sequence in ["a", "b", "c", "d", "a"] {
        metrics.count_vended(sequence, 1);
    }
    let text = metrics.render();
    for series in [
        r#"seqvend_values_vended_total{sequence="a"} 2"#,
        r#"seqvend_values_vended_total{sequence="b"} 1"#,
        &format!(r#"seqvend_values_vended_total{{sequence="{OTHER_SEQUENCES}"}} 2"#),
    ] {
        assert!(text.contains(series), "{series} missing from\n{text}");
    }
    assert!(!text.contains(r#"sequence="c""#));
    assert_eq!(metrics.sequence_limit(), 2);
}

#[test]
fn families_beyond_the_limit_are_counted_under_other() {
    let metrics = Metrics::with_sequence_limit(1);
    for family in ["f", "g", "f"] {
        metrics.counters.record(FamilyDraw {
            family,
            values: 3,
            created: 1,
            exhausted: 0,
        });
    }
    let text = metrics.render();
    for series in [
        r#"seqvend_counter_values_vended_total{family="f"} 6"#,
        r#"seqvend_counter_values_vended_total{family="_other"} 3"#,
        r#"seqvend_counters_created_total{family="_other"} 1"#,
    ] {
        assert!(text.contains(series), "{series} missing from\n{text}");
    }
    // A count of zero makes no series.
    assert!(!text.contains("seqvend_counter_exhausted_total{"));
}

/// Every exported family, sorted by name as a scrape lists them.
const EXPECTED: &str = include_str!("exported.txt");
