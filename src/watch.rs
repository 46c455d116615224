//! Keeps the remaining-values gauges current and warns, long before a sequence runs out,
//! when it is down to its low-water mark.

use std::collections::HashSet;
use std::sync::Arc;

use prometheus::core::Collector;
use prometheus::IntGaugeVec;
use sqlx::PgPool;

use crate::domain::{RangeState, SequenceStatus};
use crate::metrics::{saturating_gauge, Metrics};
use crate::registry::{self, RegistryError, SequenceRecord};
use crate::settings::WatchSettings;

pub fn spawn(pool: PgPool, metrics: Arc<Metrics>, settings: WatchSettings) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(settings.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            // Bounded by the interval: a query sent to a server that then froze would
            // otherwise hold the watcher (sqlx has no client-side query timeout).
            let refreshed = tokio::time::timeout(
                settings.interval,
                refresh(&pool, &metrics, settings.low_water),
            );
            match refreshed.await {
                Ok(Ok(())) => {}
                Ok(Err(err)) => {
                    tracing::debug!(error = %err, "could not refresh the remaining-values gauges");
                }
                Err(_) => tracing::warn!(
                    "refreshing the remaining-values gauges outlasted its interval: abandoned"
                ),
            }
        }
    });
}

/// Sequences read per query.
const PAGE: i64 = 500;

async fn refresh(pool: &PgPool, metrics: &Metrics, low_water: f64) -> Result<(), RegistryError> {
    let mut after = String::new();
    let mut seen = HashSet::new();
    loop {
        let records = registry::live_sequences(pool, &after, PAGE).await?;
        let Some(last) = records.last() else { break };
        after = last.view.name.clone();
        for record in &records {
            observe(metrics, record, low_water);
            seen.insert(record.view.name.clone());
        }
    }
    // Forget sequences that were retired since the last refresh.
    for family in [&metrics.remaining, &metrics.capacity] {
        for stale in gauge_labels(family)
            .into_iter()
            .filter(|name| !seen.contains(name))
        {
            let _ = family.remove_label_values(&[&stale]);
        }
    }
    Ok(())
}

fn observe(metrics: &Metrics, record: &SequenceRecord, low_water: f64) {
    let sequence = &record.view;
    let capacity: u128 = record.states.iter().map(RangeState::capacity).sum();
    let name = sequence.name.as_str();
    metrics
        .remaining
        .with_label_values(&[name])
        .set(saturating_gauge(sequence.remaining));
    metrics
        .capacity
        .with_label_values(&[name])
        .set(saturating_gauge(capacity));
    if sequence.status == SequenceStatus::Exhausted {
        tracing::error!(sequence = name, "sequence is exhausted: add a range");
    } else if (sequence.remaining as f64) <= low_water * capacity as f64 {
        tracing::warn!(
            sequence = name,
            remaining = %sequence.remaining,
            capacity = %capacity,
            "sequence is running low: add a range before it runs out"
        );
    }
}

/// The `sequence` label values a gauge family currently has.
fn gauge_labels(family: &IntGaugeVec) -> Vec<String> {
    family
        .collect()
        .iter()
        .flat_map(|mf| mf.get_metric().iter())
        .filter_map(|m| m.get_label().first().map(|l| l.get_value().to_owned()))
        .collect()
}
