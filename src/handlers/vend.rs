//! `POST /sequences/{name}/next[?count=N]`: the hot path.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::access::require_on_sequence;
use super::error::{ApiError, ErrorBody};
use crate::auth::{Caller, Verb};
use crate::cache::InstanceCache;
use crate::carriers::Format;
use crate::domain::SequenceName;
use crate::registry::{Catalog, Known};
use crate::vend::{Outcome, Vender};

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
    post, path = "/sequences/{name}/next", tag = "vend", params(("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"), NextQuery),
    responses(
        (status = 200, description = "Values, durable before they are returned (a cached sequence hands out values drawn durably ahead of need)", body = Vended),
        (status = 400, description = "invalid_name or invalid_request", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no vend scope on the sequence", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        (status = 409, description = "sequence_exhausted", body = ErrorBody),
        (status = 410, description = "sequence_retired", body = ErrorBody),
        (status = 500, description = "sequence_failed (its PostgreSQL sequence was dropped or altered beyond repair) or internal", body = ErrorBody),
        (status = 503, description = "unavailable: database down or slow, or queue full", body = ErrorBody),
    )
)]
pub async fn next(
    caller: Caller,
    vender: web::Data<Vender>,
    pool: web::Data<sqlx::PgPool>,
    catalog: web::Data<Catalog>,
    cache: web::Data<InstanceCache>,
    name: web::Path<String>,
    query: web::Query<NextQuery>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    let count = match query.count {
        None => None,
        Some(n @ 1..=MAX_COUNT) => Some(n as u32),
        Some(_) => {
            return Err(ApiError::InvalidRequest(format!(
                "`count` must be between 1 and {MAX_COUNT}"
            )))
        }
    };
    let wanted = count.unwrap_or(1);
    // From memory after the first vend: no round trip on the hot path. Looked up before the
    // vend, so a registry that cannot answer costs no values, and a name the registry does
    // not know costs no vend statement.
    let entry = match require_on_sequence(&caller, Verb::Vend, &catalog, &pool, &name).await? {
        Known::Sequence(entry) => entry,
        Known::NoSuchSequence => return Err(ApiError::sequence_not_found(name.as_str())),
    };
    // A cached sequence is served from this instance's memory; a batch larger than the cache
    // holds is drawn like a strict one.
    let cached = !entry.cache.is_strict() && u64::from(wanted) <= entry.cache.rule().size;
    let outcome = if cached {
        cache.take(&name, entry.cache, wanted).await?
    } else {
        vender.vend(name.clone(), wanted).await?
    };
    let values = match outcome {
        Outcome::Values(values) => values,
        Outcome::Exhausted => return Err(ApiError::SequenceExhausted(name.to_string())),
        Outcome::Retired => return Err(ApiError::SequenceRetired(name.to_string())),
        Outcome::NotFound => return Err(ApiError::sequence_not_found(name.as_str())),
        Outcome::Failed(reason) => return Err(ApiError::SequenceFailed(name.to_string(), reason)),
    };
    let formatted = entry
        .format
        .as_ref()
        .map(|format| print(format, &name, &values))
        .transpose()?;
    let sequence = name.as_str();
    let exhausted = values.len() < wanted as usize;
    Ok(HttpResponse::Ok().json(match count {
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
    }))
}

/// Every range was checked against the format when it was added, so a value that does not
/// print means a range was changed by hand.
fn print(format: &Format, name: &SequenceName, values: &[i64]) -> Result<Vec<String>, ApiError> {
    values
        .iter()
        .map(|&value| {
            format.render(value).ok_or_else(|| {
                ApiError::Internal(anyhow::anyhow!(
                    "value {value} of sequence {name} does not fit its {} format",
                    format.kind()
                ))
            })
        })
        .collect()
}
