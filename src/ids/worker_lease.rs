//! Worker-id leases in PostgreSQL (`seqvend.worker_ids`): the only code that changes them.
//!
//! Why no id repeats: a holder stamps at most `not_after_ms`, which it raises (to its clock
//! plus the lease length) in the same statement that renews the lease, committed durably
//! (`synchronous_commit = on`, set by each transaction here: see `begin_durable`) before it
//! stamps anything under the new bound. A new holder
//! starts at `not_after_ms + 1`, whatever its own clock says, and takes the id with one
//! `UPDATE` over a row locked `FOR UPDATE SKIP LOCKED`, re-checked as expired once locked,
//! so one id never goes to two holders.

use std::time::Duration;

use crate::db::Registry;
use chrono::{DateTime, Utc};

use super::error::LeaseError;
use super::layout::Layout;
use crate::db::begin_durable;

#[derive(Debug, Clone)]
pub struct Lease {
    pub worker_id: u32,
    /// The secret that renews this lease.
    pub holder: String,
    /// By the database's clock.
    pub expires_at: DateTime<Utc>,
    /// The first millisecond the holder may stamp.
    pub not_before_ms: i64,
    /// The last millisecond the holder may stamp until it renews.
    pub not_after_ms: i64,
}

struct LeaseRow {
    worker_id: i32,
    holder: Option<String>,
    expires_at: Option<DateTime<Utc>>,
    not_before_ms: i64,
    not_after_ms: i64,
}

impl From<LeaseRow> for Lease {
    fn from(row: LeaseRow) -> Self {
        Self {
            worker_id: row.worker_id as u32,
            holder: row.holder.unwrap_or_default(),
            expires_at: row.expires_at.unwrap_or_default(),
            not_before_ms: row.not_before_ms,
            not_after_ms: row.not_after_ms,
        }
    }
}

/// Stores `layout` if none is stored yet (and creates its worker ids); refuses a different one.
pub async fn fix_layout(pool: &Registry, layout: Layout) -> Result<(), LeaseError> {
    let (t, w, s) = layout.bits();
    let mut tx = begin_durable(pool).await.map_err(LeaseError::from_db)?;
    // Instances starting together: the second insert waits for the first's commit, then
    // inserts nothing, and the select reads what the first stored.
    sqlx::query!(
        "INSERT INTO seqvend.snowflake_layout (timestamp_bits, worker_bits, sequence_bits, epoch_ms)
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        i32::from(t),
        i32::from(w),
        i32::from(s),
        layout.epoch_ms()
    )
    .execute(&mut *tx)
    .await
    .map_err(LeaseError::from_db)?;
    let stored = sqlx::query!(
        "SELECT timestamp_bits, worker_bits, sequence_bits, epoch_ms FROM seqvend.snowflake_layout"
    )
    .fetch_one(&mut *tx)
    .await
    .map_err(LeaseError::from_db)?;
    let stored = Layout::new(
        stored.timestamp_bits as u8,
        stored.worker_bits as u8,
        stored.sequence_bits as u8,
        stored.epoch_ms,
    )
    .map_err(|err| LeaseError::Internal(anyhow::anyhow!("the stored layout: {err}")))?;
    if stored != layout {
        return Err(LeaseError::LayoutMismatch {
            configured: layout,
            stored,
        });
    }
    sqlx::query!(
        "INSERT INTO seqvend.worker_ids (worker_id)
         SELECT generate_series(0, $1 - 1) ON CONFLICT DO NOTHING",
        layout.worker_ids() as i32
    )
    .execute(&mut *tx)
    .await
    .map_err(LeaseError::from_db)?;
    tx.commit().await.map_err(LeaseError::from_db)
}

/// Takes a free or expired worker id for `length`, for a holder whose clock reads `now_ms`.
pub async fn take(pool: &Registry, now_ms: i64, length: Duration) -> Result<Lease, LeaseError> {
    let holder = uuid::Uuid::new_v4().to_string();
    let mut tx = begin_durable(pool).await.map_err(LeaseError::from_db)?;
    let taken = sqlx::query_as!(
        LeaseRow,
        r#"UPDATE seqvend.worker_ids w
              SET holder = $1, leased_at = now(),
                  expires_at = now() + make_interval(secs => $2::bigint / 1000.0),
                  not_before_ms = w.not_after_ms + 1,
                  not_after_ms = GREATEST(w.not_after_ms + 1, $3 + $2)
            WHERE w.worker_id = (SELECT worker_id FROM seqvend.worker_ids
                                  WHERE expires_at IS NULL OR expires_at <= now()
                                  ORDER BY worker_id
                                  LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING worker_id, holder, expires_at, not_before_ms, not_after_ms"#,
        holder,
        length.as_millis() as i64,
        now_ms
    )
    .fetch_optional(&mut *tx)
    .await
    .map_err(LeaseError::from_db)?;
    tx.commit().await.map_err(LeaseError::from_db)?;
    taken.map(Lease::from).ok_or(LeaseError::NoneFree)
}

/// Extends `holder`'s lease of `worker_id` by `length` and raises its bound to `now_ms +
/// length`. An expired lease nobody took since is renewed too: no one else stamped with it.
pub async fn renew(
    pool: &Registry,
    worker_id: i64,
    holder: &str,
    now_ms: i64,
    length: Duration,
) -> Result<Lease, LeaseError> {
    let mut tx = begin_durable(pool).await.map_err(LeaseError::from_db)?;
    let renewed = sqlx::query_as!(
        LeaseRow,
        r#"UPDATE seqvend.worker_ids
              SET expires_at = now() + make_interval(secs => $3::bigint / 1000.0),
                  not_after_ms = GREATEST(not_after_ms, $4 + $3)
            WHERE worker_id = $1 AND holder = $2
        RETURNING worker_id, holder, expires_at, not_before_ms, not_after_ms"#,
        i32::try_from(worker_id).unwrap_or(-1),
        holder,
        length.as_millis() as i64,
        now_ms
    )
    .fetch_optional(&mut *tx)
    .await
    .map_err(LeaseError::from_db)?;
    tx.commit().await.map_err(LeaseError::from_db)?;
    renewed
        .map(Lease::from)
        .ok_or(LeaseError::Lost { worker_id })
}

/// Hands `holder`'s lease of `worker_id` back when it will stamp nothing more: the id is free
/// at once, and its bound comes down to the last millisecond it stamped, so the next holder
/// starts right after it instead of waiting out a bound raised for ids never issued.
pub async fn release(
    pool: &Registry,
    worker_id: u32,
    holder: &str,
    last_ms: i64,
) -> Result<(), LeaseError> {
    let mut tx = begin_durable(pool).await.map_err(LeaseError::from_db)?;
    sqlx::query!(
        "UPDATE seqvend.worker_ids
            SET expires_at = now(), not_after_ms = GREATEST(not_before_ms - 1, $3)
          WHERE worker_id = $1 AND holder = $2",
        worker_id as i32,
        holder,
        last_ms
    )
    .execute(&mut *tx)
    .await
    .map_err(LeaseError::from_db)?;
    tx.commit().await.map_err(LeaseError::from_db)
}
