//! How the errors of the layers below HTTP (auth, registry, vend engine) become `ApiError`s: the
//! one place that gives them statuses and the words a client sees.

use super::error::ApiError;
use crate::auth::AuthError;
use crate::ids::{IdError, LeaseError};
use crate::registry::RegistryError;
use crate::service::RetireRefused;
use crate::vend::VendError;

impl From<RegistryError> for ApiError {
    fn from(err: RegistryError) -> Self {
        match err {
            RegistryError::NotFound(name) => Self::sequence_not_found(name.as_str()),
            RegistryError::NameTaken(name) => Self::NameTaken(name.to_string()),
            RegistryError::RangeOverlap {
                namespace,
                min,
                max,
            } => Self::RangeOverlap {
                namespace,
                min,
                max,
            },
            RegistryError::SequenceRetired(name) => Self::SequenceRetired(name.to_string()),
            RegistryError::FamilyNotFound(name) => Self::family_not_found(name.as_str()),
            RegistryError::FamilyRetired(name) => Self::FamilyRetired(name.to_string()),
            RegistryError::CounterNotFound { family, key } => Self::NotFound(format!(
                "family {:?} has no counter {key:?}: a counter is made by its first draw",
                family.as_str()
            )),
            RegistryError::TokenNameTaken(name) => Self::TokenNameTaken(name),
            RegistryError::TokenNotFound(id) => Self::NotFound(format!("no token has id {id}")),
            // Already logged, with its cause, where it was judged (`RegistryError::from_db`).
            RegistryError::Unavailable(_) => Self::Unavailable("the database is unavailable"),
            RegistryError::Internal(cause) => Self::Internal(cause),
        }
    }
}

impl From<VendError> for ApiError {
    fn from(err: VendError) -> Self {
        match err {
            VendError::AtCapacity => Self::Unavailable("seqvend is at capacity"),
            VendError::NoAnswerInTime => Self::Unavailable("the database did not answer in time"),
            // Already logged, with its cause, where the statement failed.
            VendError::Unavailable => Self::Unavailable("the database is unavailable"),
            VendError::Internal(cause) => Self::Internal(cause),
        }
    }
}

impl From<IdError> for ApiError {
    fn from(err: IdError) -> Self {
        match err {
            IdError::NoWorkerId => Self::NoWorkerId("this seqvend holds no worker id"),
            IdError::LeaseLapsed => {
                Self::NoWorkerId("this seqvend could not renew its worker-id lease in time")
            }
            IdError::ClockMovedBackwards { by_ms } => Self::ClockMovedBackwards(by_ms),
            IdError::ClockAheadOfLease => Self::ClockAheadOfLease,
            err @ IdError::OutsideLayout { .. } => Self::Internal(err.into()),
        }
    }
}

impl From<LeaseError> for ApiError {
    fn from(err: LeaseError) -> Self {
        match err {
            LeaseError::NoneFree => Self::WorkerIdsExhausted,
            LeaseError::Lost { worker_id } => Self::LeaseLost(worker_id),
            LeaseError::Unavailable(cause) => {
                tracing::warn!(error = %format!("{cause:#}"), "database unavailable");
                Self::Unavailable("the database is unavailable")
            }
            err @ LeaseError::LayoutMismatch { .. } => Self::Internal(err.into()),
            LeaseError::Internal(cause) => Self::Internal(cause),
        }
    }
}

impl From<AuthError> for ApiError {
    fn from(err: AuthError) -> Self {
        match err {
            AuthError::Unauthenticated => Self::Unauthorized,
            AuthError::Forbidden { needed } => Self::Forbidden { needed },
            AuthError::NoAnswerInTime => Self::Unavailable("the database did not answer in time"),
            AuthError::Registry(err) => err.into(),
        }
    }
}

impl From<RetireRefused> for ApiError {
    fn from(refused: RetireRefused) -> Self {
        match refused {
            RetireRefused::Registry(err) => err.into(),
            RetireRefused::NoAnswerInTime => {
                Self::Unavailable("the database did not answer in time")
            }
            RetireRefused::StillCached => Self::Unavailable(
                "the sequence is retired, but an instance may still hold cached values of it; \
                 DELETE again to wait for them",
            ),
        }
    }
}
