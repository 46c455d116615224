//! `POST /sequences/{name}/next[?count=N]`: the hot path.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::access::require_on_sequence;
use super::error::{ApiError, ErrorBody};
use super::idempotent::{replayed, replayed_error, KeyedCaller};
use crate::auth::Verb;
use crate::domain::SequenceName;
use crate::registry::Known;
use crate::service::{Service, VendAsk, VendRefused, VendedValues};

const MAX_COUNT: u64 = 10_000;

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct NextQuery {
    /// Values to vend at once, 1–10000. Without it, one value.
    #[param(minimum = 1, maximum = 10000)]
    count: Option<u64>,
}

/// One value (no `count`), or a batch (with `count`). A sequence with a format also
/// answers each value printed as its carrier number, check digit included.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum Vended<'a> {
    One {
        sequence: &'a str,
        value: i64,
        /// The carrier number, e.g. `1Z5R89390357567127`; absent for a plain sequence.
        #[serde(skip_serializing_if = "Option::is_none")]
        formatted: Option<String>,
    },
    Many {
        sequence: &'a str,
        values: Vec<i64>,
        /// The carrier numbers, one per value; absent for a plain sequence.
        #[serde(skip_serializing_if = "Option::is_none")]
        formatted: Option<Vec<String>>,
        /// True when the sequence ran out before `count` values.
        exhausted: bool,
    },
}

#[utoipa::path(
    post, path = "/sequences/{name}/next", tag = "vend", params(("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"), NextQuery,
        ("Idempotency-Key" = Option<String>, Header, description = "1–255 visible ASCII characters: a repeat with the same key, token and request (from any instance, within 24 h) answers the first answer again, with `Idempotent-Replayed: true`", max_length = 255)),
    responses(
        (status = 200, description = "Values, durable before they are returned (a cached sequence hands out values drawn durably ahead of need)", body = Vended),
        (status = 400, description = "invalid_name or invalid_request", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no vend scope on the sequence", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        (status = 409, description = "sequence_exhausted, or idempotency_key_in_flight (a request with the key is still being served here)", body = ErrorBody),
        (status = 410, description = "sequence_retired", body = ErrorBody),
        (status = 422, description = "idempotency_key_reused: the key was first sent with another request", body = ErrorBody),
        (status = 500, description = "sequence_failed (its PostgreSQL sequence was dropped or altered beyond repair) or internal", body = ErrorBody),
        (status = 503, description = "unavailable: database down or slow, queue full, or the sequence held by another database session (a lock past 200 ms, a conflict)", body = ErrorBody),
    )
)]
pub async fn next(
    keyed_caller: KeyedCaller,
    service: web::Data<Service>,
    name: web::Path<String>,
    query: web::Query<NextQuery>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    let count = batch_count(query.count)?;
    // From memory after the first vend: no round trip on the hot path. Looked up before the
    // vend, so a registry that cannot answer costs no values, and a name the registry does
    // not know costs no vend statement.
    let caller = &keyed_caller.caller;
    let entry = match require_on_sequence(caller, Verb::Vend, &service, &name).await? {
        Known::Sequence(entry) => entry,
        Known::NoSuchSequence => return Err(ApiError::sequence_not_found(name.as_str())),
    };
    let ask = VendAsk {
        name: &name,
        entry: &entry,
        count,
        key: keyed_caller.key.as_deref(),
        owner: caller.owner(),
    };
    let vended = match service.vend(ask).await {
        Ok(vended) => vended,
        Err(VendRefused::Exhausted { replayed: true }) => {
            return Ok(replayed_error(ApiError::SequenceExhausted(
                name.to_string(),
            )));
        }
        Err(refused) => return Err(refused_vend(refused, &name)),
    };
    let VendedValues {
        values,
        formatted,
        replayed: replay,
    } = vended;
    let sequence = name.as_str();
    let exhausted = values.len() < count.unwrap_or(1) as usize;
    let response = HttpResponse::Ok().json(match count {
        None => Vended::One {
            sequence,
            value: values[0],
            formatted: formatted.map(|mut numbers| numbers.swap_remove(0)),
        },
        Some(_) => Vended::Many {
            sequence,
            values,
            formatted,
            exhausted,
        },
    });
    Ok(if replay { replayed(response) } else { response })
}

/// The `count` of a vend or draw: none (one value) or 1–10000.
pub fn batch_count(count: Option<u64>) -> Result<Option<u32>, ApiError> {
    match count {
        None => Ok(None),
        Some(n @ 1..=MAX_COUNT) => Ok(Some(n as u32)),
        Some(_) => Err(ApiError::InvalidRequest(format!(
            "`count` must be between 1 and {MAX_COUNT}"
        ))),
    }
}

/// The error a refused vend means.
fn refused_vend(refused: VendRefused, name: &SequenceName) -> ApiError {
    match refused {
        VendRefused::KeyInFlight(key) => ApiError::IdempotencyKeyInFlight(key),
        VendRefused::KeyReused(key) => ApiError::IdempotencyKeyReused(key),
        VendRefused::Exhausted { .. } => ApiError::SequenceExhausted(name.to_string()),
        VendRefused::Retired => ApiError::SequenceRetired(name.to_string()),
        VendRefused::NotFound => ApiError::sequence_not_found(name.as_str()),
        VendRefused::Failed(reason) => ApiError::SequenceFailed(name.to_string(), reason),
        VendRefused::Busy => ApiError::Unavailable(
            "the sequence is held by another database session (a lock or a conflicting draw)",
        ),
        VendRefused::Engine(err) => err.into(),
        VendRefused::Unprintable(err) => ApiError::Internal(err),
    }
}
