//! Keeps the remaining-values gauges current and warns, long before a sequence runs out,
//! when it is down to its low-water mark.

use std::sync::Arc;

use sqlx::PgPool;

use crate::domain::{RangeState, SequenceStatus};
use crate::metrics::{saturating_gauge, Metrics};
use crate::ranges;
use crate::settings::WatchSettings;

pub fn spawn(pool: PgPool, metrics: Arc<Metrics>, settings: WatchSettings) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(settings.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(err) = refresh(&pool, &metrics, settings.low_water).await {
                tracing::debug!(error = %err, "could not refresh the remaining-values gauges");
            }
        }
    });
}

async fn refresh(
    pool: &PgPool,
    metrics: &Metrics,
    low_water: f64,
) -> Result<(), crate::error::ApiError> {
    let records = ranges::live_sequences(pool).await?;
    metrics.remaining.reset();
    metrics.capacity.reset();
    for record in records {
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
    Ok(())
}
