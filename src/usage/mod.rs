//! Knowing before a sequence runs out. Every instance, once per interval, looks at every live
//! sequence, reads in full (position and usage rates, from the samples PostgreSQL keeps)
//! those that can have changed (see `known`), and refreshes the per-sequence gauges. The one
//! instance that claims the round also stores new samples, judges the alert thresholds
//! (recording an event per crossing) and, every few minutes, thins old samples.

mod gauges;
mod known;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::db::{Pace, Registry};
use tokio::task::JoinHandle;

use crate::domain::{AlertKind, Crossing};
use crate::metrics::Metrics;
use crate::registry::{self, AlertEvent, RegistryError, SequenceRecord};
use crate::settings::WatchSettings;
pub use gauges::SequenceGauge;
use known::KnownSequences;

pub fn spawn(pool: Registry, metrics: Arc<Metrics>, settings: WatchSettings) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(settings.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut known = KnownSequences::new(rounds_per_sweep(settings.interval, settings.sweep));
        loop {
            tick.tick().await;
            // Bounded by the interval: a query sent to a server that then froze would
            // otherwise hold the round (sqlx has no client-side query timeout).
            let round = round(&pool, &metrics, &settings, &mut known);
            match tokio::time::timeout(settings.interval, round).await {
                Ok(Ok(())) => {}
                Ok(Err(err)) => {
                    tracing::debug!(error = %err, "could not sample usage or refresh the sequence gauges");
                }
                Err(_) => tracing::warn!("a usage round outlasted its interval: abandoned"),
            }
        }
    })
}

/// Rounds in which every live sequence is read in full once, whatever moved: the positions
/// other applications' `nextval` calls reach, and usage windows that slide with time.
fn rounds_per_sweep(interval: Duration, sweep: Duration) -> u64 {
    let interval = interval.as_secs_f64().max(f64::EPSILON);
    (sweep.as_secs_f64() / interval).ceil() as u64
}

/// Sequences read in full per query, each query followed by a rest (`Pace`): a page holds
/// a lock on each sequence it reads until it ends, and takes about 4 ms of PostgreSQL's CPU.
const PAGE: usize = 100;

/// Sequences looked at per query of the registry's own tables (no sequence opened): a few
/// milliseconds of PostgreSQL's time a page, paced the same way.
const MARKS_PAGE: i64 = 1000;

async fn round(
    pool: &Registry,
    metrics: &Metrics,
    settings: &WatchSettings,
    known: &mut KnownSequences,
) -> Result<(), RegistryError> {
    let pace = Pace::new(settings.interval);
    let sampling = registry::claim_sampling_round(pool, settings.interval).await?;
    let live = every_live_sequence(pool, &pace).await?;
    for page in known.start_round(&live).chunks(PAGE) {
        let mut fingerprints: HashMap<i32, u64> =
            page.iter().map(|s| (s.id, s.fingerprint)).collect();
        let ids: Vec<i32> = fingerprints.keys().copied().collect();
        for record in pace.page(registry::live_sequences(pool, &ids)).await? {
            if let Some(fingerprint) = fingerprints.remove(&record.id) {
                known.keep(record, fingerprint);
            }
        }
        for gone in fingerprints.into_keys() {
            known.forget(gone); // retired or deleted since the round started
        }
    }
    if sampling {
        for samples in known.unsampled().chunks(PAGE) {
            pace.page(registry::record_samples(pool, samples)).await?;
            known.sampled(samples);
        }
    }
    known.age_to(chrono::Utc::now());
    let mut observed = Vec::new();
    for record in known.records() {
        let raised = if sampling {
            judge_alerts(pool, record).await?
        } else {
            record.view.alerts.raised.clone()
        };
        observed.push(SequenceGauge::new(record, raised));
    }
    gauges::publish(metrics, observed);
    if sampling {
        if let Some(deleted) = registry::thin_samples_if_due(pool).await? {
            tracing::debug!(deleted, "thinned old usage samples");
        }
    }
    Ok(())
}

/// Every sequence that is not retired, in id order, read a page at a time.
async fn every_live_sequence(
    pool: &Registry,
    pace: &Pace,
) -> Result<Vec<registry::LiveSequence>, RegistryError> {
    let mut live = Vec::new();
    loop {
        let after = live
            .last()
            .map_or(i32::MIN, |s: &registry::LiveSequence| s.id);
        let page = pace
            .page(registry::live_sequence_marks(pool, after, MARKS_PAGE))
            .await?;
        let last_page = page.len() < MARKS_PAGE as usize;
        live.extend(page);
        if last_page {
            return Ok(live);
        }
    }
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
