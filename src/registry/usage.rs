//! Usage samples and raised alerts as PostgreSQL keeps them: one instance per round records
//! how many values each sequence has used and which alerts it crosses, so a restart forgets
//! nothing and every instance reads the same rates (see the usage migration).

use std::time::Duration;

use crate::db::{Registry, RegistryTx};

use super::RegistryError;
use crate::domain::AlertKind;

/// Every sequence's usage is observed from its creation: a first sample of 0 values.
pub(super) async fn record_first_sample(
    tx: &mut RegistryTx,
    sequence_id: i32,
) -> Result<(), RegistryError> {
    sqlx::query!(
        "INSERT INTO seqvend.usage_samples (sequence_id, at, used) VALUES ($1, now(), 0)
         ON CONFLICT DO NOTHING",
        sequence_id
    )
    .execute(&mut *tx)
    .await
    .map_err(RegistryError::from_db)?;
    Ok(())
}

/// Claims this round of sampling for this instance if no instance started one within the
/// last `every` (less a tenth, so that instances ticking at the same pace never skip one).
pub async fn claim_sampling_round(pool: &Registry, every: Duration) -> Result<bool, RegistryError> {
    let claimed = sqlx::query_scalar!(
        r#"UPDATE seqvend.usage_rounds SET sampled_at = now()
            WHERE sampled_at <= now() - make_interval(secs => $1)
        RETURNING true AS "claimed!""#,
        every.as_secs_f64() * 0.9
    )
    .fetch_optional(pool)
    .await
    .map_err(RegistryError::from_db)?;
    Ok(claimed.is_some())
}

/// Records `(sequence id, values used so far)` for each sequence whose count changed since
/// its latest sample; returns how many samples were stored.
pub async fn record_samples(
    pool: &Registry,
    samples: &[(i32, u128)],
) -> Result<u64, RegistryError> {
    let ids: Vec<i32> = samples.iter().map(|(id, _)| *id).collect();
    let used: Vec<String> = samples.iter().map(|(_, used)| used.to_string()).collect();
    let stored = sqlx::query!(
        "INSERT INTO seqvend.usage_samples (sequence_id, at, used)
         SELECT t.id, now(), t.used::numeric
           FROM unnest($1::int[], $2::text[]) AS t(id, used)
          WHERE NOT EXISTS (SELECT 1
                              FROM (SELECT used FROM seqvend.usage_samples
                                     WHERE sequence_id = t.id
                                     ORDER BY at DESC LIMIT 1) latest
                             WHERE latest.used = t.used::numeric)
         ON CONFLICT DO NOTHING",
        &ids,
        &used
    )
    .execute(pool)
    .await
    .map_err(RegistryError::from_db)?;
    Ok(stored.rows_affected())
}

/// Every five minutes (across all instances), thins old samples; returns how many were
/// deleted, or None when it was not yet time.
pub async fn thin_samples_if_due(pool: &Registry) -> Result<Option<i64>, RegistryError> {
    let mut tx = pool.begin().await.map_err(RegistryError::from_db)?;
    let due = sqlx::query_scalar!(
        r#"UPDATE seqvend.usage_rounds SET thinned_at = now()
            WHERE thinned_at <= now() - interval '5 minutes'
        RETURNING true AS "due!""#
    )
    .fetch_optional(&mut tx)
    .await
    .map_err(RegistryError::from_db)?;
    if due.is_none() {
        return Ok(None);
    }
    let deleted = sqlx::query_scalar!(r#"SELECT seqvend.thin_usage_samples() AS "deleted!""#)
        .fetch_one(&mut tx)
        .await
        .map_err(RegistryError::from_db)?;
    tx.commit().await.map_err(RegistryError::from_db)?;
    Ok(Some(deleted))
}

/// An alert's crossing, for its event.
pub struct AlertEvent {
    pub kind: AlertKind,
    pub raised: bool,
    pub detail: String,
}

/// Stores the alerts a sequence now crosses and records an event per change, if the stored
/// set is still `was` (another round may have judged it meanwhile). Returns whether it did.
pub async fn record_alerts(
    pool: &Registry,
    sequence_id: i32,
    was: &[AlertKind],
    now: &[AlertKind],
    events: &[AlertEvent],
) -> Result<bool, RegistryError> {
    let as_text = |kinds: &[AlertKind]| -> Vec<String> {
        kinds.iter().map(|k| k.as_str().to_owned()).collect()
    };
    let mut tx = pool.begin().await.map_err(RegistryError::from_db)?;
    let updated = sqlx::query!(
        "UPDATE seqvend.sequences SET alerts_raised = $3
          WHERE id = $1 AND alerts_raised = $2 AND status <> 'retired'",
        sequence_id,
        &as_text(was),
        &as_text(now)
    )
    .execute(&mut tx)
    .await
    .map_err(RegistryError::from_db)?;
    if updated.rows_affected() == 0 {
        return Ok(false);
    }
    for event in events {
        let kind = if event.raised {
            "alert_raised"
        } else {
            "alert_cleared"
        };
        sqlx::query!(
            "INSERT INTO seqvend.events (sequence_id, kind, actor, detail)
             VALUES ($1, $2, 'seqvend', $3)",
            sequence_id,
            kind,
            format!("{}: {}", event.kind.as_str(), event.detail)
        )
        .execute(&mut tx)
        .await
        .map_err(RegistryError::from_db)?;
    }
    tx.commit().await.map_err(RegistryError::from_db)?;
    Ok(true)
}
