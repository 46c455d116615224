//! The rows of `seqvend.leases` an instance keeps for its cached blocks: renewing, releasing
//! and sweeping them. Every change commits durably (`begin_durable`): a renewal lost in a crash
//! would leave an instance trusting a lease the database lets expire.
//!
//! Never renews a lease of a retired sequence: the renewal holds each sequence row it renews
//! for `FOR SHARE`, which a retirement's `FOR UPDATE` conflicts with. Either the retirement
//! waits for the renewal to commit (and then waits for the renewed lease, see
//! `await_instance_leases`), or the renewal waits for the retirement and, reading the row
//! again once it may lock it, renews nothing of that sequence.

use std::collections::HashSet;
use std::time::Duration;

use crate::db::Registry;

use crate::db::begin_durable;

/// Extends by `length` those of `leases` that `holder` still holds live on a sequence that
/// is not retired; returns the leases extended.
pub async fn renew_instance_leases(
    pool: &Registry,
    holder: &str,
    leases: &[i64],
    length: Duration,
) -> Result<HashSet<i64>, sqlx::Error> {
    let mut tx = begin_durable(pool).await?;
    let renewed = sqlx::query_scalar!(
        "WITH held AS (
             SELECT s.id FROM seqvend.sequences s
              WHERE s.status <> 'retired'
                AND s.id IN (SELECT l.sequence_id FROM seqvend.leases l
                              WHERE l.id = ANY ($3) AND l.holder = $1
                                AND l.released_at IS NULL AND l.expires_at > now())
              ORDER BY s.id
                FOR SHARE OF s
         )
         UPDATE seqvend.leases l
            SET expires_at = now() + make_interval(secs => $2)
           FROM held
          WHERE l.sequence_id = held.id AND l.id = ANY ($3) AND l.holder = $1
            AND l.released_at IS NULL AND l.expires_at > now()
          RETURNING l.id",
        holder,
        length.as_secs_f64(),
        leases
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(renewed.into_iter().collect())
}

/// Releases the leases `holder` holds on `sequence` whose ids are up to `up_to`: those of
/// a closed reservoir, and none of its successor's.
pub async fn release_sequence_leases(
    pool: &Registry,
    holder: &str,
    sequence: &str,
    up_to: i64,
) -> Result<(), sqlx::Error> {
    let mut tx = begin_durable(pool).await?;
    sqlx::query!(
        "UPDATE seqvend.leases l SET released_at = now()
           FROM seqvend.sequences s
          WHERE l.holder = $1 AND l.released_at IS NULL AND l.id <= $3
            AND s.id = l.sequence_id AND s.name = $2",
        holder,
        sequence,
        up_to
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

pub async fn release_lease(pool: &Registry, lease: i64) -> Result<(), sqlx::Error> {
    let mut tx = begin_durable(pool).await?;
    sqlx::query!(
        "UPDATE seqvend.leases SET released_at = now() WHERE id = $1 AND released_at IS NULL",
        lease
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// Releases every lease `holder` holds (at shutdown).
pub async fn release_holder_leases(pool: &Registry, holder: &str) -> Result<(), sqlx::Error> {
    let mut tx = begin_durable(pool).await?;
    sqlx::query!(
        "UPDATE seqvend.leases SET released_at = now() WHERE holder = $1 AND released_at IS NULL",
        holder
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// Lease rows are kept a day after they end, for whoever investigates a gap.
pub async fn sweep_leases(pool: &Registry) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "DELETE FROM seqvend.leases
          WHERE coalesce(released_at, expires_at) < now() - interval '1 day'"
    )
    .execute(pool)
    .await?;
    Ok(())
}
