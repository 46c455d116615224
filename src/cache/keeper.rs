//! Keeps this instance's leases honest: renews the ones it still holds, re-reads the policy
//! of every sequence it caches (in case a notification was missed), and releases leases when
//! told to. Old lease rows are swept after a day.

use std::collections::HashSet;
use std::time::Instant;

use sqlx::PgPool;

use super::reservoir::Closed;
use super::InstanceCache;
use crate::domain::CachePolicy;

pub fn spawn(cache: InstanceCache) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let every = cache.shared.settings.renew_every;
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            // Bounded by the interval: a statement sent to a server that then froze would
            // otherwise hold the keeper, and the leases would lapse unnoticed.
            if tokio::time::timeout(every, cache.keep()).await.is_err() {
                tracing::warn!("renewing cached leases outlasted its interval: abandoned");
            }
        }
    })
}

impl InstanceCache {
    async fn keep(&self) {
        if let Err(err) = self.renew().await {
            tracing::warn!(error = %err, "could not renew cached leases; cached values are handed out until they lapse");
        }
        if let Err(err) = self.resync().await {
            tracing::debug!(error = %err, "could not re-read the cache policies");
        }
        if let Err(err) = sweep(&self.shared.registry).await {
            tracing::debug!(error = %err, "could not sweep old leases");
        }
    }

    async fn renew(&self) -> Result<(), sqlx::Error> {
        let shared = &self.shared;
        let sent_at = Instant::now();
        let renewed: HashSet<i64> = sqlx::query_scalar!(
            "UPDATE seqvend.leases l
                SET expires_at = now() + make_interval(secs => $2)
               FROM seqvend.sequences s
              WHERE l.holder = $1 AND l.released_at IS NULL AND l.expires_at > now()
                AND s.id = l.sequence_id AND s.status <> 'retired'
              RETURNING l.id",
            &*shared.holder_name,
            shared.settings.instance_lease.as_secs_f64()
        )
        .fetch_all(&shared.registry)
        .await?
        .into_iter()
        .collect();
        let trusted_until = sent_at + shared.settings.fenced_lease();
        for reservoir in self.read().values() {
            reservoir.renewed(&renewed, trusted_until);
        }
        Ok(())
    }

    /// Applies the registry's current policy and status to every sequence cached here.
    pub(super) async fn resync(&self) -> Result<(), sqlx::Error> {
        let names: Vec<String> = self.read().keys().cloned().collect();
        if names.is_empty() {
            return Ok(());
        }
        let rows = sqlx::query!(
            "SELECT name, status, cache_size, cache_buffer_seconds, cache_min
               FROM seqvend.sequences WHERE name = ANY ($1)",
            &names
        )
        .fetch_all(&self.shared.registry)
        .await?;
        for row in rows {
            let policy =
                CachePolicy::from_db(row.cache_size, row.cache_buffer_seconds, row.cache_min);
            if row.status == "retired" {
                self.evict(&row.name, Closed::Retired).await;
            } else if policy.is_strict() {
                self.evict(&row.name, Closed::Replaced).await;
            } else {
                self.update_policy(&row.name, policy);
            }
        }
        Ok(())
    }
}

pub(super) async fn release_sequence(
    registry: &PgPool,
    holder: &str,
    sequence: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE seqvend.leases l SET released_at = now()
           FROM seqvend.sequences s
          WHERE l.holder = $1 AND l.released_at IS NULL AND s.id = l.sequence_id AND s.name = $2",
        holder,
        sequence
    )
    .execute(registry)
    .await?;
    Ok(())
}

pub(super) async fn release_lease(registry: &PgPool, lease: i64) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE seqvend.leases SET released_at = now() WHERE id = $1 AND released_at IS NULL",
        lease
    )
    .execute(registry)
    .await?;
    Ok(())
}

pub(super) async fn release_all(registry: &PgPool, holder: &str) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE seqvend.leases SET released_at = now() WHERE holder = $1 AND released_at IS NULL",
        holder
    )
    .execute(registry)
    .await?;
    Ok(())
}

/// Lease rows are kept a day after they end, for whoever investigates a gap.
async fn sweep(registry: &PgPool) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "DELETE FROM seqvend.leases
          WHERE coalesce(released_at, expires_at) < now() - interval '1 day'"
    )
    .execute(registry)
    .await?;
    Ok(())
}
