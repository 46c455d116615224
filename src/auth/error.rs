//! What can keep a caller out: no live token, a missing scope, or a token store that cannot
//! answer. The HTTP edge gives each its status.

use crate::registry::RegistryError;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// No bearer token, or none that is live.
    #[error("no live bearer token was presented")]
    Unauthenticated,
    /// The caller lacks `needed` (or a prefix, namespace or `*` scope covering it).
    #[error("the caller lacks the scope {needed}")]
    Forbidden { needed: String },
    /// The token could not be read within the token store's deadline.
    #[error("the database did not answer in time")]
    NoAnswerInTime,
    #[error(transparent)]
    Registry(#[from] RegistryError),
}
