//! What can go wrong in the registry, said without HTTP: the edge decides statuses and the
//! words a client sees.

use crate::db::DbFailure;
use crate::domain::SequenceName;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("no sequence is named {:?}", .0.as_str())]
    NotFound(SequenceName),
    /// Names are never reused, even after retirement.
    #[error("the name {:?} is taken", .0.as_str())]
    NameTaken(SequenceName),
    #[error("[{min}, {max}] overlaps a range already allocated in namespace {namespace:?}")]
    RangeOverlap {
        namespace: String,
        min: i64,
        max: i64,
    },
    #[error("sequence {:?} is retired", .0.as_str())]
    SequenceRetired(SequenceName),
    #[error("no counter family is named {:?}", .0.as_str())]
    FamilyNotFound(SequenceName),
    #[error("counter family {:?} is retired", .0.as_str())]
    FamilyRetired(SequenceName),
    #[error("family {:?} has no counter {key:?}", .family.as_str())]
    CounterNotFound { family: SequenceName, key: String },
    #[error("a token is already named {0:?}")]
    TokenNameTaken(String),
    #[error("no token has id {0}")]
    TokenNotFound(i64),
    /// The database cannot serve now: down, restarting, failing over, overloaded, too slow.
    #[error("the database is unavailable")]
    Unavailable(#[source] anyhow::Error),
    /// A fault in the query or in seqvend; the cause is kept for the log.
    #[error(transparent)]
    Internal(anyhow::Error),
}

impl RegistryError {
    /// Turns a violation of the named constraint into `conflict`; anything else is judged
    /// as `from_db` does.
    pub(super) fn on_constraint(
        err: sqlx::Error,
        constraint: &str,
        conflict: impl FnOnce() -> Self,
    ) -> Self {
        match &err {
            sqlx::Error::Database(db) if db.constraint() == Some(constraint) => conflict(),
            _ => Self::from_db(err),
        }
    }

    /// A failed database call, as `DbFailure` judges it: unavailable (or a transient
    /// conflict) or internal. Unavailability is logged here, with its whole cause chain, so
    /// that every caller (a request or the watcher) leaves the same trace of it.
    pub(super) fn from_db(err: impl Into<anyhow::Error>) -> Self {
        match DbFailure::judge(err) {
            DbFailure::Unavailable(err) | DbFailure::Conflict(err) => {
                tracing::warn!(error = %format!("{err:#}"), "database unavailable");
                Self::Unavailable(err)
            }
            DbFailure::Fault(err) => Self::Internal(err),
        }
    }
}
