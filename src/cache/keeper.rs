//! Keeps this instance's leases honest: renews the ones whose blocks it still hands out from
//! (a lease handed out whole is left to expire), re-reads the policy
//! of every sequence it caches (in case a notification was missed), and releases leases when
//! told to. Old lease rows are swept after a day. The statements are in
//! `registry::leases`.

use std::time::Instant;

use super::reservoir::Closed;
use super::InstanceCache;
use crate::domain::CachePolicy;
use crate::registry;

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
        if let Err(err) = registry::sweep_leases(&self.shared.registry).await {
            tracing::debug!(error = %err, "could not sweep old leases");
        }
    }

    async fn renew(&self) -> Result<(), sqlx::Error> {
        let shared = &self.shared;
        let sent_at = Instant::now();
        let in_use: Vec<i64> = self
            .read()
            .values()
            .flat_map(|reservoir| reservoir.leases_in_use())
            .collect();
        if in_use.is_empty() {
            return Ok(());
        }
        let renewed = registry::renew_instance_leases(
            &shared.registry,
            &shared.holder_name,
            &in_use,
            shared.settings.instance_lease,
        )
        .await?;
        let trusted_until = sent_at + shared.settings.fenced_lease();
        let now = Instant::now();
        for reservoir in self.read().values() {
            let dropped = reservoir.renewed(&renewed, trusted_until, now);
            shared.metrics.cache_discarded.inc_by(dropped);
        }
        Ok(())
    }

    /// Applies the registry's current policy and status to every sequence cached here.
    pub(crate) async fn resync(&self) -> Result<(), sqlx::Error> {
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
