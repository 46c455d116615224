//! What can go wrong with a vend, said without HTTP: the edge decides statuses and the words
//! a client sees.

use crate::db::is_unavailable;

#[derive(Debug, thiserror::Error)]
pub enum VendError {
    /// The queue is full: refused at once, nothing was sent to the database.
    #[error("seqvend is at capacity")]
    AtCapacity,
    /// The values did not arrive within the vend deadline.
    #[error("the database did not answer in time")]
    NoAnswerInTime,
    /// The statement failed because the database cannot serve now: down, restarting, failing
    /// over, overloaded, too slow.
    #[error("the database is unavailable")]
    Unavailable,
    /// A fault in the statement or in seqvend.
    #[error(transparent)]
    Internal(anyhow::Error),
}

impl VendError {
    /// Judges a failed statement, once for all the requests it served: the one place the vend
    /// path tells "the database is unavailable" from a fault. The cause is logged here with its
    /// whole chain, once per statement; each request is then answered with the verdict alone
    /// (call the returned function once per request).
    pub(super) fn judge_failed_statement(err: &anyhow::Error) -> fn() -> Self {
        if is_unavailable(err) {
            tracing::warn!(error = %format!("{err:#}"), "vend statement failed: database unavailable");
            || Self::Unavailable
        } else {
            tracing::error!(error = %format!("{err:#}"), "vend statement failed");
            || Self::Internal(anyhow::anyhow!("the vend statement failed"))
        }
    }
}
