//! `POST /sequences/{name}/next[?count=N]`: the hot path.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ErrorBody};
use crate::auth::Reader;
use crate::domain::SequenceName;
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

/// One value (no `count`), or a batch (with `count`).
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum Vended<'a> {
    One {
        sequence: &'a str,
        value: i64,
    },
    Many {
        sequence: &'a str,
        values: Vec<i64>,
        /// True when the sequence ran out before `count` values.
        exhausted: bool,
    },
}

#[utoipa::path(
    post, path = "/sequences/{name}/next", tag = "vend", params(("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"), NextQuery),
    responses(
        (status = 200, description = "Values, durable before they are returned", body = Vended),
        (status = 400, description = "invalid_name or invalid_request", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        (status = 409, description = "sequence_exhausted", body = ErrorBody),
        (status = 410, description = "sequence_retired", body = ErrorBody),
        (status = 500, description = "sequence_failed (its PostgreSQL sequence was dropped or altered beyond repair) or internal", body = ErrorBody),
        (status = 503, description = "unavailable: database down or slow, or queue full", body = ErrorBody),
    )
)]
pub async fn next(
    _: Reader,
    vender: web::Data<Vender>,
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
    let values = match vender.vend(name.clone(), wanted).await? {
        Outcome::Values(values) => values,
        Outcome::Exhausted => return Err(ApiError::SequenceExhausted(name.to_string())),
        Outcome::Retired => return Err(ApiError::SequenceRetired(name.to_string())),
        Outcome::NotFound => return Err(ApiError::sequence_not_found(name.as_str())),
        Outcome::Failed(reason) => return Err(ApiError::SequenceFailed(name.to_string(), reason)),
    };
    let sequence = name.as_str();
    let exhausted = values.len() < wanted as usize;
    Ok(HttpResponse::Ok().json(match count {
        None => Vended::One {
            sequence,
            value: values[0],
        },
        Some(_) => Vended::Many {
            sequence,
            values,
            exhausted,
        },
    }))
}
