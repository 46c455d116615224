//! The registry's SQL: creating sequences, adding ranges, reading and retiring them, against
//! `seqvend.sequences` and `seqvend.ranges`.
//!
//! Admin changes to a sequence hold its advisory lock exclusively (vends hold it shared, see
//! the vend migration), so a retirement or a new range never interleaves with a vend.
//! Conflicts (taken names, overlapping ranges) are left to the database's constraints.

use crate::db::{Registry, RegistryTx};

use super::cache::{announce, ChangeKind};
use super::views::{fold_rows, stored_format, RangeView, SequenceRow, SequenceView};
use super::RegistryError;
use crate::carriers::Format;
use crate::ddl;
use crate::domain::{
    AlertThresholds, CachePolicy, Increment, RangeBounds, RangeState, RangeStatus, SequenceName,
    SequenceSpec, SequenceStatus,
};

/// Advisory lock class for a sequence (see the vend migration).
const SEQUENCE_LOCK_CLASS: i32 = 1_398_166_353;

pub async fn get_sequence(
    pool: &Registry,
    name: &SequenceName,
) -> Result<SequenceView, RegistryError> {
    let rows = sqlx::query_as!(
        SequenceRow,
        r#"SELECT s.id, s.name, s.namespace, s.increment, s.status, s.format::text AS format,
                  s.created_at, s.updated_at,
                  s.cache_size, s.cache_buffer_seconds, s.cache_min,
                  s.alert_remaining_below, s.alert_days_left_below, s.alerts_raised,
                  u1.used::text AS "used_1h?", u1.span_seconds AS "span_1h?",
                  u24.used::text AS "used_24h?", u24.span_seconds AS "span_24h?",
                  r.min_value AS "min_value?", r.max_value AS "max_value?",
                  r.start_value AS "start_value?", r.status AS "range_status?",
                  r.pg_sequence::text AS "pg_sequence?",
                  seqvend.range_last_value(r.pg_sequence, m.high_water, s.increment) AS last_value
             FROM seqvend.sequences s
             LEFT JOIN LATERAL seqvend.usage_since(s.id, interval '1 hour') u1 ON true
             LEFT JOIN LATERAL seqvend.usage_since(s.id, interval '1 day') u24 ON true
             LEFT JOIN seqvend.ranges r ON r.sequence_id = s.id
             LEFT JOIN seqvend.range_marks m ON m.range_id = r.id
            WHERE s.name = $1
            ORDER BY r.id"#,
        name.as_str()
    )
    .fetch_all(pool)
    .await
    .map_err(RegistryError::from_db)?;
    fold_rows(rows)?
        .pop()
        .map(|record| record.view)
        .ok_or_else(|| RegistryError::NotFound(name.clone()))
}

pub struct NewSequence {
    pub name: SequenceName,
    pub namespace: SequenceName,
    pub spec: SequenceSpec,
    /// Checked against the spec's bounds by whoever built this.
    pub format: Option<Format>,
    pub cache: CachePolicy,
    pub alerts: AlertThresholds,
}

pub async fn create_sequence(
    pool: &Registry,
    new: NewSequence,
    by: &str,
) -> Result<SequenceView, RegistryError> {
    let mut tx = pool.begin().await.map_err(RegistryError::from_db)?;
    let cache = new.cache.rule();
    let (remaining_below, days_left_below) = new.alerts.stored();
    let sequence_id = sqlx::query_scalar!(
        "INSERT INTO seqvend.sequences
             (name, namespace, increment, format, cache_size, cache_buffer_seconds, cache_min,
              alert_remaining_below, alert_days_left_below)
         VALUES ($1, $2, $3, $4::text::jsonb, $5, $6, $7, $8, $9)
         RETURNING id",
        new.name.as_str(),
        new.namespace.as_str(),
        new.spec.increment.get(),
        new.format.as_ref().map(stored_format) as Option<String>,
        cache.size as i64,
        cache.buffer_seconds as i32,
        cache.min as i64,
        remaining_below,
        days_left_below
    )
    .fetch_one(&mut tx)
    .await
    .map_err(|err| {
        RegistryError::on_constraint(err, "sequences_name_key", || {
            RegistryError::NameTaken(new.name.clone())
        })
    })?;
    let spec = new.spec;
    let range = NewRange {
        bounds: spec.bounds,
        start: spec.start,
        status: RangeStatus::Active,
    };
    let range_id = insert_range(
        &mut tx,
        sequence_id,
        new.namespace.as_str(),
        spec.increment,
        range,
    )
    .await?;
    record_event(&mut tx, sequence_id, Some(range_id), "created", by).await?;
    // Usage is observed from creation on, so the first rates cover the sequence's whole life.
    super::usage::record_first_sample(&mut tx, sequence_id).await?;
    tx.commit().await.map_err(RegistryError::from_db)?;
    get_sequence(pool, &new.name).await
}

/// Adds a range to a sequence: pending behind the active one, or active at once if the
/// sequence had run out (which makes the sequence active again).
pub async fn add_range(
    pool: &Registry,
    name: &SequenceName,
    bounds: RangeBounds,
    by: &str,
) -> Result<RangeView, RegistryError> {
    let mut tx = pool.begin().await.map_err(RegistryError::from_db)?;
    let sequence = lock_sequence(&mut tx, name).await?;
    let status = SequenceStatus::from_db(&sequence.status);
    let range_status = match status {
        SequenceStatus::Retired => return Err(RegistryError::SequenceRetired(name.clone())),
        SequenceStatus::Exhausted => RangeStatus::Active,
        SequenceStatus::Active => RangeStatus::Pending,
    };
    // The stored increment satisfies the same rule as a requested one (a CHECK constraint).
    let increment = Increment::new(sequence.increment)
        .map_err(|err| RegistryError::Internal(anyhow::anyhow!("stored increment: {err}")))?;
    let range = NewRange {
        bounds,
        start: bounds.natural_start(increment),
        status: range_status,
    };
    let range_id =
        insert_range(&mut tx, sequence.id, &sequence.namespace, increment, range).await?;
    if status == SequenceStatus::Exhausted {
        sqlx::query!(
            "UPDATE seqvend.sequences SET status = 'active', updated_at = now() WHERE id = $1",
            sequence.id
        )
        .execute(&mut tx)
        .await
        .map_err(RegistryError::from_db)?;
    }
    record_event(&mut tx, sequence.id, Some(range_id), "range_added", by).await?;
    tx.commit().await.map_err(RegistryError::from_db)?;
    let state = RangeState {
        min: bounds.min(),
        max: bounds.max(),
        start: range.start,
        increment: increment.get(),
        status: range_status,
        last_value: None,
    };
    Ok(RangeView::new(state, ddl::range_sequence_text(range_id)))
}

/// Retires a sequence: once this returns, no instance vends from it. Retiring a retired
/// sequence changes nothing and answers the same.
pub async fn retire_sequence(
    pool: &Registry,
    name: &SequenceName,
    by: &str,
) -> Result<SequenceView, RegistryError> {
    let mut tx = pool.begin().await.map_err(RegistryError::from_db)?;
    let sequence = lock_sequence(&mut tx, name).await?;
    if SequenceStatus::from_db(&sequence.status) != SequenceStatus::Retired {
        sqlx::query!(
            "UPDATE seqvend.sequences SET status = 'retired', updated_at = now() WHERE id = $1",
            sequence.id
        )
        .execute(&mut tx)
        .await
        .map_err(RegistryError::from_db)?;
        record_event(&mut tx, sequence.id, None, "retired", by).await?;
        announce(&mut tx, name, ChangeKind::Retired).await?;
    }
    tx.commit().await.map_err(RegistryError::from_db)?;
    get_sequence(pool, name).await
}

pub(super) struct LockedSequence {
    pub(super) id: i32,
    pub(super) namespace: String,
    pub(super) increment: i64,
    pub(super) status: String,
}

/// Takes the sequence's advisory lock exclusively (waiting for vends in flight to commit),
/// then reads it under a row lock. The advisory lock comes first: a vend holding it shared may
/// need the row to mark the sequence exhausted.
pub(super) async fn lock_sequence(
    tx: &mut RegistryTx,
    name: &SequenceName,
) -> Result<LockedSequence, RegistryError> {
    let id = sqlx::query_scalar!(
        "SELECT id FROM seqvend.sequences WHERE name = $1",
        name.as_str()
    )
    .fetch_optional(&mut *tx)
    .await
    .map_err(RegistryError::from_db)?
    .ok_or_else(|| RegistryError::NotFound(name.clone()))?;
    sqlx::query!(
        "SELECT pg_advisory_xact_lock($1, $2)",
        SEQUENCE_LOCK_CLASS,
        id
    )
    .execute(&mut *tx)
    .await
    .map_err(RegistryError::from_db)?;
    sqlx::query_as!(
        LockedSequence,
        "SELECT id, namespace, increment, status FROM seqvend.sequences WHERE id = $1 FOR UPDATE",
        id
    )
    .fetch_one(&mut *tx)
    .await
    .map_err(RegistryError::from_db)
}

#[derive(Clone, Copy)]
struct NewRange {
    bounds: RangeBounds,
    start: i64,
    status: RangeStatus,
}

async fn insert_range(
    tx: &mut RegistryTx,
    sequence_id: i32,
    namespace: &str,
    increment: Increment,
    range: NewRange,
) -> Result<i32, RegistryError> {
    let range_id = sqlx::query_scalar!(r#"SELECT nextval('seqvend.range_ids')::integer AS "id!""#)
        .fetch_one(&mut *tx)
        .await
        .map_err(RegistryError::from_db)?;
    let oid = ddl::create_range_sequence(tx, range_id, range.bounds, increment, range.start)
        .await
        .map_err(RegistryError::from_db)?;
    sqlx::query!(
        // Its mark row comes with it (the trigger `ranges_have_a_mark`).
        "INSERT INTO seqvend.ranges
             (id, sequence_id, namespace, min_value, max_value, start_value, status, pg_sequence)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::oid)",
        range_id,
        sequence_id,
        namespace,
        range.bounds.min(),
        range.bounds.max(),
        range.start,
        range.status.as_db(),
        oid
    )
    .execute(&mut *tx)
    .await
    .map_err(|err| {
        RegistryError::on_constraint(err, "ranges_no_overlap", || RegistryError::RangeOverlap {
            namespace: namespace.to_string(),
            min: range.bounds.min(),
            max: range.bounds.max(),
        })
    })?;
    Ok(range_id)
}

/// Records an admin's change to a sequence, with the name of the token that made it.
pub(super) async fn record_event(
    tx: &mut RegistryTx,
    sequence_id: i32,
    range_id: Option<i32>,
    kind: &str,
    by: &str,
) -> Result<(), RegistryError> {
    sqlx::query!(
        "INSERT INTO seqvend.events (sequence_id, range_id, kind, actor, token)
         VALUES ($1, $2, $3, 'admin', $4)",
        sequence_id,
        range_id,
        kind,
        by
    )
    .execute(&mut *tx)
    .await
    .map_err(RegistryError::from_db)?;
    Ok(())
}
