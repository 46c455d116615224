//! What can go wrong issuing ids or leasing worker ids, said without HTTP: the edge decides
//! statuses and the words a client sees.

use super::layout::Layout;
use crate::db::DbFailure;

#[derive(Debug, thiserror::Error)]
pub enum IdError {
    /// This instance holds no worker id: none was free, or its lease was taken over.
    #[error("this instance holds no worker id")]
    NoWorkerId,
    /// The lease was not renewed in time; issuing resumes after a renewal gets through.
    #[error("this instance's worker-id lease was not renewed in time")]
    LeaseLapsed,
    #[error("the clock moved back by {by_ms} ms")]
    ClockMovedBackwards { by_ms: i64 },
    /// The clock ran past the bound the last renewal made durable.
    #[error("the clock is ahead of the time the worker-id lease covers")]
    ClockAheadOfLease,
    #[error("the clock reads {now_ms} ms since 1970, outside the Snowflake layout's time span")]
    OutsideLayout { now_ms: i64 },
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Every worker id is leased, and no lease has expired.
    #[error("every worker id is leased")]
    NoneFree,
    /// The holder does not hold this worker id (it expired and was taken, or never was held).
    #[error("worker id {worker_id} is not held by this holder")]
    Lost { worker_id: i64 },
    #[error(
        "the Snowflake layout configured ({}/{}/{} bits, epoch {}) differs from the one ids were \
         issued with ({}/{}/{} bits, epoch {}); ids would collide or mis-decode. Set \
         SEQVEND_SNOWFLAKE_LAYOUT and SEQVEND_SNOWFLAKE_EPOCH to the stored layout",
        .configured.bits().0, .configured.bits().1, .configured.bits().2, super::epoch(.configured).to_rfc3339(),
        .stored.bits().0, .stored.bits().1, .stored.bits().2, super::epoch(.stored).to_rfc3339()
    )]
    LayoutMismatch { configured: Layout, stored: Layout },
    /// The database cannot serve now: down, restarting, failing over, overloaded, too slow.
    #[error("the database is unavailable")]
    Unavailable(#[source] anyhow::Error),
    #[error(transparent)]
    Internal(anyhow::Error),
}

impl LeaseError {
    /// A failed database call, as `DbFailure` judges it.
    pub(super) fn from_db(err: impl Into<anyhow::Error>) -> Self {
        match DbFailure::judge(err) {
            DbFailure::Unavailable(err) | DbFailure::Conflict(err) => Self::Unavailable(err),
            DbFailure::Fault(err) => Self::Internal(err),
        }
    }
}
