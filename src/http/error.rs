//! The one error type handlers return, and its HTTP form:
//! `{"error": "<stable code>", "message": "<what to do about it>"}`.
//! Server-side failures are logged with their whole cause chain and answered opaquely.
//! It knows nothing of the database: the layers below HTTP have errors of their own,
//! translated in `error_translation`.

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

use crate::carriers::FormatError;
use crate::domain::{AlertsError, CachePolicyError, KeyError, NameError, RangeError};

/// Seconds a client should wait before retrying a 503.
const RETRY_AFTER_SECONDS: &str = "1";

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    InvalidName(#[from] NameError),
    #[error("{0}")]
    InvalidRequest(String),
    #[error("{0}")]
    InvalidRange(#[from] RangeError),
    #[error("{0}")]
    InvalidFormat(#[from] FormatError),
    #[error("{0}")]
    InvalidCachePolicy(#[from] CachePolicyError),
    #[error("{0}")]
    InvalidAlerts(#[from] AlertsError),
    #[error("{0}")]
    InvalidKey(#[from] KeyError),
    #[error("a bearer token is required: send `Authorization: Bearer <token>`")]
    Unauthorized,
    #[error(
        "this token lacks the scope {needed} (or a prefix, namespace or `*` scope covering it)"
    )]
    Forbidden { needed: String },
    #[error("{0}")]
    NotFound(String),
    #[error("{what} does not allow this method; it allows {allowed}")]
    MethodNotAllowed { what: String, allowed: &'static str },
    #[error("the name {0:?} is taken (names are never reused, even after retirement)")]
    NameTaken(String),
    #[error("a token is already named {0:?} (token names are never reused)")]
    TokenNameTaken(String),
    #[error(
        "the Idempotency-Key {0:?} was used with a different request; use a new key for a new          request"
    )]
    IdempotencyKeyReused(String),
    #[error(
        "a request with the Idempotency-Key {0:?} is still being served; retry once it answered"
    )]
    IdempotencyKeyInFlight(String),
    #[error("[{min}, {max}] overlaps a range already allocated in namespace {namespace:?}")]
    RangeOverlap {
        namespace: String,
        min: i64,
        max: i64,
    },
    #[error("sequence {0:?} has no values left: add a range with POST /sequences/{0}/ranges")]
    SequenceExhausted(String),
    #[error("sequence {0:?} is retired and vends nothing")]
    SequenceRetired(String),
    #[error(
        "counter {1:?} of family {0:?} has no values left: its values run from the family's \
         start to its bound; use another key or another family"
    )]
    CounterExhausted(String, String),
    #[error("counter family {0:?} is retired and draws nothing")]
    FamilyRetired(String),
    #[error(
        "sequence {0:?} cannot vend: {1}. Its PostgreSQL sequence was changed in a way seqvend \
         cannot repair; see \"What is safe to do by hand\" in docs/operating.md"
    )]
    SequenceFailed(String, String),
    #[error("the request body is larger than {0} bytes")]
    PayloadTooLarge(usize),
    #[error("{0}; retry shortly")]
    Unavailable(&'static str),
    #[error("{0}; retry shortly, or ask another seqvend instance")]
    NoWorkerId(&'static str),
    #[error(
        "this seqvend's clock reads {0} ms before the last Snowflake id it issued: no id is \
         stamped below it. Retry once the clock has caught up, or ask another seqvend instance"
    )]
    ClockMovedBackwards(i64),
    #[error(
        "this seqvend's clock is ahead of the time its worker-id lease covers; retry shortly \
         (the next renewal extends it)"
    )]
    ClockAheadOfLease,
    #[error(
        "every worker id is leased; retry once a lease expires (unrenewed leases expire after \
         SEQVEND_WORKER_LEASE_MS)"
    )]
    WorkerIdsExhausted,
    #[error(
        "worker id {0} is not held with this holder token (the lease expired and was taken, or \
         never was); stop issuing with it and take a new lease with POST /workers/lease"
    )]
    LeaseLost(i64),
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

/// Every error: a stable code and a message a person can act on.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorBody<'a> {
    /// Stable error code, e.g. `sequence_exhausted`.
    error: &'a str,
    message: String,
}

/// The failures every operation on the registry may answer (a fault, or a database down or
/// too slow), declared once for the OpenAPI document.
#[derive(utoipa::IntoResponses)]
pub enum RegistryFailures<'a> {
    #[response(status = 500, description = "internal")]
    Internal(ErrorBody<'a>),
    #[response(status = 503, description = "unavailable")]
    Unavailable(ErrorBody<'a>),
}

impl ApiError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidName(_) => "invalid_name",
            Self::InvalidRequest(_) => "invalid_request",
            Self::InvalidRange(_) => "invalid_range",
            Self::InvalidFormat(_) => "invalid_format",
            Self::InvalidCachePolicy(_) => "invalid_cache_policy",
            Self::InvalidAlerts(_) => "invalid_alerts",
            Self::InvalidKey(_) => "invalid_key",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden { .. } => "forbidden",
            Self::NotFound(_) => "not_found",
            Self::MethodNotAllowed { .. } => "method_not_allowed",
            Self::NameTaken(_) => "name_taken",
            Self::TokenNameTaken(_) => "token_name_taken",
            Self::IdempotencyKeyReused(_) => "idempotency_key_reused",
            Self::IdempotencyKeyInFlight(_) => "idempotency_key_in_flight",
            Self::RangeOverlap { .. } => "range_overlap",
            Self::SequenceExhausted(_) => "sequence_exhausted",
            Self::SequenceRetired(_) => "sequence_retired",
            Self::CounterExhausted(..) => "counter_exhausted",
            Self::FamilyRetired(_) => "family_retired",
            Self::SequenceFailed(..) => "sequence_failed",
            Self::PayloadTooLarge(_) => "payload_too_large",
            Self::Unavailable(_) => "unavailable",
            Self::NoWorkerId(_) => "no_worker_id",
            Self::ClockMovedBackwards(_) => "clock_moved_backwards",
            Self::ClockAheadOfLease => "clock_ahead_of_lease",
            Self::WorkerIdsExhausted => "worker_ids_exhausted",
            Self::LeaseLost(_) => "lease_lost",
            Self::Internal(_) => "internal",
        }
    }

    pub fn sequence_not_found(name: &str) -> Self {
        Self::NotFound(format!("no sequence is named {name:?}"))
    }

    pub fn family_not_found(name: &str) -> Self {
        Self::NotFound(format!(
            "no counter family is named {name:?}: create it with POST /families"
        ))
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::InvalidName(_)
            | Self::InvalidRequest(_)
            | Self::InvalidRange(_)
            | Self::InvalidFormat(_)
            | Self::InvalidCachePolicy(_)
            | Self::InvalidAlerts(_)
            | Self::InvalidKey(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden { .. } => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::NameTaken(_)
            | Self::TokenNameTaken(_)
            | Self::IdempotencyKeyInFlight(_)
            | Self::RangeOverlap { .. }
            | Self::SequenceExhausted(_)
            | Self::CounterExhausted(..)
            | Self::LeaseLost(_) => StatusCode::CONFLICT,
            Self::SequenceRetired(_) | Self::FamilyRetired(_) => StatusCode::GONE,
            Self::IdempotencyKeyReused(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Unavailable(_)
            | Self::NoWorkerId(_)
            | Self::ClockMovedBackwards(_)
            | Self::ClockAheadOfLease
            | Self::WorkerIdsExhausted => StatusCode::SERVICE_UNAVAILABLE,
            Self::SequenceFailed(..) | Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let Self::Internal(source) = self {
            tracing::error!(error = %format!("{source:#}"), "request failed");
        }
        let mut response = HttpResponse::build(self.status_code());
        match self {
            Self::Unauthorized => {
                response.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
            }
            Self::Unavailable(_)
            | Self::NoWorkerId(_)
            | Self::ClockMovedBackwards(_)
            | Self::ClockAheadOfLease
            | Self::WorkerIdsExhausted => {
                response.insert_header((header::RETRY_AFTER, RETRY_AFTER_SECONDS));
            }
            Self::MethodNotAllowed { allowed, .. } => {
                response.insert_header((header::ALLOW, *allowed));
            }
            _ => {}
        }
        response.json(ErrorBody {
            error: self.code(),
            message: self.to_string(),
        })
    }
}
