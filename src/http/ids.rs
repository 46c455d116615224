//! `POST /ids/snowflake`, `GET /ids/snowflake/{id}`, `POST /ids/uuidv7`: time-ordered ids,
//! issued by this instance without a database round trip.

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::caller::Caller;
use super::error::{ApiError, ErrorBody};
use super::idempotent::refuse_key;
use crate::auth::{Resource, Verb};
use crate::service::Service;

const MAX_COUNT: u64 = 10_000;
/// What a retry of an id request does, for `refuse_key`.
const NEW_IDS: &str = "issues new ids (unique: the first's are simply unused)";

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CountQuery {
    /// Ids to issue at once, 1–10000. Without it, one.
    #[param(minimum = 1, maximum = 10000)]
    count: Option<u64>,
}

impl CountQuery {
    fn count(&self) -> Result<usize, ApiError> {
        match self.count.unwrap_or(1) {
            n @ 1..=MAX_COUNT => Ok(n as usize),
            _ => Err(ApiError::InvalidRequest(format!(
                "`count` must be between 1 and {MAX_COUNT}"
            ))),
        }
    }
}

/// Snowflake ids, ascending; `ids_str` holds the same ids as strings, for clients whose JSON
/// numbers are doubles (exact only up to 2^53).
#[derive(Serialize, ToSchema)]
pub struct SnowflakeIds {
    ids: Vec<i64>,
    ids_str: Vec<String>,
}

/// What a Snowflake id says.
#[derive(Serialize, ToSchema)]
pub struct SnowflakeParts {
    /// The id's millisecond, RFC 3339 in UTC with milliseconds.
    #[schema(example = "2026-11-23T14:32:49.123Z")]
    timestamp: String,
    /// The same millisecond, since the Unix epoch.
    timestamp_ms: i64,
    worker_id: u32,
    /// The id's position within its millisecond and worker id.
    sequence: u32,
}

/// UUIDv7s, ascending.
#[derive(Serialize, ToSchema)]
pub struct Uuids {
    ids: Vec<String>,
}

#[utoipa::path(
    post, path = "/ids/snowflake", tag = "ids", params(CountQuery),
    responses(
        (status = 200, description = "Snowflake ids, strictly increasing for this instance's worker id", body = SnowflakeIds),
        (status = 400, description = "invalid_request: a bad `count`, or an Idempotency-Key, which this route refuses", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 500, description = "internal", body = ErrorBody),
        (status = 503, description = "no_worker_id, clock_moved_backwards or clock_ahead_of_lease", body = ErrorBody),
    )
)]
pub async fn snowflake(
    req: HttpRequest,
    caller: Caller,
    service: web::Data<Service>,
    query: web::Query<CountQuery>,
) -> Result<HttpResponse, ApiError> {
    refuse_key(&req, "ids", NEW_IDS)?;
    caller.require(Verb::Vend, Resource::AnySequence)?;
    let ids = service.snowflake().issue(query.count()?).await?;
    let ids_str = ids.iter().map(i64::to_string).collect();
    Ok(HttpResponse::Ok().json(SnowflakeIds { ids, ids_str }))
}

#[utoipa::path(
    get, path = "/ids/snowflake/{id}", tag = "ids",
    params(("id" = String, Path, description = "A Snowflake id, in decimal", pattern = "^[0-9]{1,19}$")),
    responses(
        (status = 200, description = "The id's parts under the configured layout", body = SnowflakeParts),
        (status = 400, description = "invalid_request: not an id of this layout", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
    )
)]
pub async fn decode(
    caller: Caller,
    service: web::Data<Service>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Verb::Read, Resource::AnySequence)?;
    let layout = service.snowflake().layout();
    let not_an_id = || {
        let (t, w, s) = layout.bits();
        ApiError::InvalidRequest(format!(
            "{:?} is not a Snowflake id of this service's layout ({t}/{w}/{s} bits): \
             a non-negative decimal integer below 2^{}",
            id.as_str(),
            t + w + s
        ))
    };
    let parts = id
        .parse::<i64>()
        .ok()
        .filter(|_| id.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|id| layout.decompose(id))
        .ok_or_else(not_an_id)?;
    let timestamp = DateTime::<Utc>::from_timestamp_millis(parts.timestamp_ms)
        .ok_or_else(not_an_id)?
        .to_rfc3339_opts(SecondsFormat::Millis, true);
    Ok(HttpResponse::Ok().json(SnowflakeParts {
        timestamp,
        timestamp_ms: parts.timestamp_ms,
        worker_id: parts.worker_id,
        sequence: parts.sequence,
    }))
}

#[utoipa::path(
    post, path = "/ids/uuidv7", tag = "ids", params(CountQuery),
    responses(
        (status = 200, description = "UUIDv7s, strictly increasing within this instance", body = Uuids),
        (status = 400, description = "invalid_request: a bad `count`, or an Idempotency-Key, which this route refuses", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
    )
)]
pub async fn uuidv7(
    req: HttpRequest,
    caller: Caller,
    service: web::Data<Service>,
    query: web::Query<CountQuery>,
) -> Result<HttpResponse, ApiError> {
    refuse_key(&req, "ids", NEW_IDS)?;
    caller.require(Verb::Vend, Resource::AnySequence)?;
    let ids = service
        .uuids()
        .issue(query.count()?)
        .iter()
        .map(|id| id.hyphenated().to_string())
        .collect();
    Ok(HttpResponse::Ok().json(Uuids { ids }))
}
