//! Knowing before a sequence runs out. Every instance, once per interval, reads every live
//! sequence with its usage rates (from the samples PostgreSQL keeps) and refreshes the
//! per-sequence gauges. The one instance that claims the round also stores new samples,
//! judges the alert thresholds (recording an event per crossing) and, every few minutes,
//! thins old samples.

mod gauges;

use std::sync::Arc;

use crate::db::Registry;
use tokio::task::JoinHandle;

use crate::domain::{AlertKind, Crossing};
use crate::metrics::Metrics;
use crate::registry::{self, AlertEvent, RegistryError, SequenceRecord};
use crate::settings::WatchSettings;
pub use gauges::SequenceGauge;

pub fn spawn(pool: Registry, metrics: Arc<Metrics>, settings: WatchSettings) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(settings.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            // Bounded by the interval: a query sent to a server that then froze would
            // otherwise hold the round (sqlx has no client-side query timeout).
            let round = tokio::time::timeout(settings.interval, round(&pool, &metrics, &settings));
            match round.await {
                Ok(Ok(())) => {}
                Ok(Err(err)) => {
                    tracing::debug!(error = %err, "could not sample usage or refresh the sequence gauges");
                }
                Err(_) => tracing::warn!("a usage round outlasted its interval: abandoned"),
            }
        }
    })
}

/// Sequences read per query: no transaction opens thousands of sequence relations at once.
const PAGE: i64 = 500;

async fn round(
    pool: &Registry,
    metrics: &Metrics,
    settings: &WatchSettings,
) -> Result<(), RegistryError> {
    let sampling = registry::claim_sampling_round(pool, settings.interval).await?;
    let mut after = String::new();
    let mut observed = Vec::new();
    loop {
        let records = registry::live_sequences(pool, &after, PAGE).await?;
        let Some(last) = records.last() else { break };
        after = last.view.name.clone();
        if sampling {
            let samples: Vec<(i32, u128)> = records.iter().map(|r| (r.id, r.used())).collect();
            registry::record_samples(pool, &samples).await?;
        }
        for record in &records {
            let raised = if sampling {
                judge_alerts(pool, record).await?
            } else {
                record.view.alerts.raised.clone()
            };
            observed.push(SequenceGauge::new(record, raised));
        }
    }
    gauges::publish(metrics, observed);
    if sampling {
        if let Some(deleted) = registry::thin_samples_if_due(pool).await? {
            tracing::debug!(deleted, "thinned old usage samples");
        }
    }
    Ok(())
}

/// Raises and clears `record`'s alerts as its state now stands; returns those raised.
async fn judge_alerts(
    pool: &Registry,
    record: &SequenceRecord,
) -> Result<Vec<AlertKind>, RegistryError> {
    let was = &record.view.alerts.raised;
    let crossed: Vec<Crossing> = record.thresholds.crossed(
        record.view.remaining,
        record.capacity_in_play(),
        &record.usage,
    );
    let now: Vec<AlertKind> = crossed.iter().map(|c| c.kind).collect();
    if &now == was {
        return Ok(now);
    }
    let name = record.view.name.as_str();
    let mut events = Vec::new();
    for crossing in crossed.iter().filter(|c| !was.contains(&c.kind)) {
        tracing::warn!(
            sequence = name,
            alert = crossing.kind.as_str(),
            "{}: add a range before it runs out",
            crossing.detail
        );
        events.push(AlertEvent {
            kind: crossing.kind,
            raised: true,
            detail: crossing.detail.clone(),
        });
    }
    for &kind in was.iter().filter(|kind| !now.contains(kind)) {
        tracing::info!(sequence = name, alert = kind.as_str(), "alert cleared");
        events.push(AlertEvent {
            kind,
            raised: false,
            detail: format!(
                "back within the threshold: {} values left",
                record.view.remaining
            ),
        });
    }
    if registry::record_alerts(pool, record.id, was, &now, &events).await? {
        Ok(now)
    } else {
        // Another round judged it meanwhile; the next round reads what it stored.
        Ok(was.clone())
    }
}
