//! Changing a sequence's settings (its cache policy and alert thresholds), telling every
//! instance of a change, and waiting until no instance can hand out a retired sequence's
//! cached values.

use std::time::Duration;

use crate::db::{Registry, RegistryTx};

use super::queries::{get_sequence, lock_sequence, record_event};
use super::{RegistryError, SequenceView};
use crate::domain::{AlertThresholds, CachePolicy, SequenceName, SequenceStatus};

/// The channel instances listen on for changes to cached sequences.
pub const CHANGES_CHANNEL: &str = "seqvend_cache";

/// What changed, as sent on `CHANGES_CHANNEL` (JSON).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Change {
    pub sequence: String,
    pub kind: ChangeKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Policy,
    Retired,
}

/// What `PATCH /sequences/{name}` changes: each part left `None` stays as it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct SettingsChange {
    pub cache: Option<CachePolicy>,
    pub alerts: Option<AlertThresholds>,
}

/// Changes a sequence's settings in one transaction; every instance hears of a new cache
/// policy when this commits, and the next sampling round judges the alerts anew.
pub async fn change_settings(
    pool: &Registry,
    name: &SequenceName,
    change: SettingsChange,
    by: &str,
) -> Result<SequenceView, RegistryError> {
    let mut tx = pool.begin().await.map_err(RegistryError::from_db)?;
    let sequence = lock_sequence(&mut tx, name).await?;
    if SequenceStatus::from_db(&sequence.status) == SequenceStatus::Retired {
        return Err(RegistryError::SequenceRetired(name.clone()));
    }
    if let Some(policy) = change.cache {
        let rule = policy.rule();
        sqlx::query!(
            "UPDATE seqvend.sequences
                SET cache_size = $2, cache_buffer_seconds = $3, cache_min = $4, updated_at = now()
              WHERE id = $1",
            sequence.id,
            rule.size as i64,
            rule.buffer_seconds as i32,
            rule.min as i64
        )
        .execute(&mut tx)
        .await
        .map_err(RegistryError::from_db)?;
        record_event(&mut tx, sequence.id, None, "cache_changed", by).await?;
        announce(&mut tx, name, ChangeKind::Policy).await?;
    }
    if let Some(alerts) = change.alerts {
        let (remaining_below, days_left_below) = alerts.stored();
        sqlx::query!(
            "UPDATE seqvend.sequences
                SET alert_remaining_below = $2, alert_days_left_below = $3, updated_at = now()
              WHERE id = $1",
            sequence.id,
            remaining_below,
            days_left_below
        )
        .execute(&mut tx)
        .await
        .map_err(RegistryError::from_db)?;
        record_event(&mut tx, sequence.id, None, "alerts_changed", by).await?;
    }
    tx.commit().await.map_err(RegistryError::from_db)?;
    get_sequence(pool, name).await
}

/// Tells every instance (at commit) that `name` changed.
pub(super) async fn announce(
    tx: &mut RegistryTx,
    name: &SequenceName,
    kind: ChangeKind,
) -> Result<(), RegistryError> {
    let change = Change {
        sequence: name.as_str().to_owned(),
        kind,
    };
    let payload = serde_json::to_string(&change).expect("a change serialises");
    sqlx::query!("SELECT pg_notify($1, $2)", CHANGES_CHANNEL, payload)
        .execute(&mut *tx)
        .await
        .map_err(RegistryError::from_db)?;
    Ok(())
}

/// Waits until no instance holds a live lease on `name`'s cached values: each released its
/// leases when told of the retirement, or stopped using them when they expired. Returns
/// `false` if that took longer than `patience`.
pub async fn await_instance_leases(
    pool: &Registry,
    name: &SequenceName,
    patience: Duration,
) -> Result<bool, RegistryError> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        let live = sqlx::query_scalar!(
            r#"SELECT count(*) AS "live!"
                 FROM seqvend.leases l JOIN seqvend.sequences s ON s.id = l.sequence_id
                WHERE s.name = $1 AND l.kind = 'instance'
                  AND l.released_at IS NULL AND l.expires_at > now()"#,
            name.as_str()
        )
        .fetch_one(pool)
        .await
        .map_err(RegistryError::from_db)?;
        if live == 0 {
            return Ok(true);
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(false);
        }
        // Releases come within a round trip of the notice; a partitioned instance's lease
        // takes until its expiry. Polling keeps this independent of who is still listening.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
