//! Keeps this instance's worker-id lease: renews it every `renew_every`, and takes a new one
//! when it holds none (none was free at start, or the lease was taken over). Renewals that
//! fail leave the lease to lapse by the monotonic clock (see `Snowflake`); nothing here has
//! to succeed for issuing to stop in time.

use std::sync::Arc;
use std::time::Instant;

use crate::db::Registry;
use tokio::task::JoinHandle;

use super::error::LeaseError;
use super::snowflake::Snowflake;
use super::worker_lease;
use crate::settings::IdSettings;

pub fn spawn(pool: Registry, snowflake: Arc<Snowflake>, settings: IdSettings) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(settings.renew_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            // Bounded: a renewal stuck on a frozen server must not hold back the next.
            let kept =
                tokio::time::timeout(settings.renew_every, keep(&pool, &snowflake, &settings));
            if kept.await.is_err() {
                tracing::warn!("renewing the worker-id lease outlasted its interval: abandoned");
            }
        }
    })
}

/// Renews the lease held, or takes one. Public for startup, which takes the first.
pub async fn keep(pool: &Registry, snowflake: &Snowflake, settings: &IdSettings) {
    let sent_at = Instant::now();
    let now_ms = snowflake.clock().now_ms();
    let outcome = match snowflake.lease() {
        Some((worker_id, holder)) => {
            worker_lease::renew(pool, worker_id.into(), &holder, now_ms, settings.lease)
                .await
                .map(|lease| (lease, true))
        }
        None => worker_lease::take(pool, now_ms, settings.lease)
            .await
            .map(|lease| (lease, false)),
    };
    match outcome {
        Ok((lease, true)) => {
            if !snowflake.renewed(&lease, settings.fenced_lease(), sent_at) {
                tracing::debug!(
                    worker_id = lease.worker_id,
                    "a renewal answered after the lease was dropped: not held again"
                );
            }
        }
        Ok((lease, false)) => {
            tracing::info!(worker_id = lease.worker_id, "took a worker-id lease");
            snowflake.hold(&lease, settings.fenced_lease(), sent_at);
        }
        Err(LeaseError::Lost { worker_id }) => {
            tracing::warn!(
                worker_id,
                "the worker-id lease was taken over: no Snowflake ids until a new one"
            );
            snowflake.release();
        }
        Err(LeaseError::NoneFree) => {
            tracing::warn!("every worker id is leased: no Snowflake ids until one is free");
        }
        Err(err) => {
            tracing::warn!(error = %format!("{err:#}"), "could not keep the worker-id lease")
        }
    }
}
