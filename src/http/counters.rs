//! `POST /families/{family}/counters/{key}/next[?count=N]` and reading one counter. A key's
//! first draw creates its counter.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::caller::Caller;
use super::error::{ApiError, ErrorBody, RegistryFailures};
use super::families::family;
use super::idempotent::refuse_key;
use super::vend::batch_count;
use crate::auth::Verb;
use crate::domain::{CounterKey, SequenceName};
use crate::registry::CounterView;
use crate::service::Service;
use crate::vend::{CounterAsk, CounterOutcome};

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CounterNextQuery {
    /// Values to draw at once, 1–10000. Without it, one value.
    #[param(minimum = 1, maximum = 10000)]
    count: Option<u64>,
}

/// One value (no `count`), or a batch (with `count`).
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum CounterDrawn<'a> {
    One {
        family: &'a str,
        key: &'a str,
        value: i64,
    },
    Many {
        family: &'a str,
        key: &'a str,
        values: Vec<i64>,
        /// True when the counter ran out before `count` values.
        exhausted: bool,
    },
}

#[utoipa::path(
    post, path = "/families/{family}/counters/{key}/next", tag = "vend",
    params(
        ("family" = String, Path, description = "Family name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"),
        ("key" = String, Path, description = "The counter's key: 1–200 bytes of printable UTF-8 without `/` (percent-encoded in the path)", min_length = 1, max_length = 200, pattern = "^[^/\\x00-\\x1f\\x7f]+$"),
        CounterNextQuery,
    ),
    responses(
        (status = 200, description = "Values, durable before they are returned; the key's first draw creates its counter at the family's start", body = CounterDrawn),
        (status = 400, description = "invalid_name, invalid_key or invalid_request (also for an Idempotency-Key, which counter draws do not support)", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no vend scope on the family", body = ErrorBody),
        (status = 404, description = "not_found: no such family", body = ErrorBody),
        (status = 409, description = "counter_exhausted", body = ErrorBody),
        (status = 410, description = "family_retired", body = ErrorBody),
        (status = 500, description = "internal", body = ErrorBody),
        (status = 503, description = "unavailable: database down or slow, or queue full", body = ErrorBody),
    )
)]
pub async fn next(
    req: HttpRequest,
    caller: Caller,
    service: web::Data<Service>,
    path: web::Path<(String, String)>,
    query: web::Query<CounterNextQuery>,
) -> Result<HttpResponse, ApiError> {
    let (family_name, key) = parse_path(&path)?;
    let count = batch_count(query.count)?;
    refuse_key(
        &req,
        "counter draws",
        "draws new values (never one twice; the first's become a gap)",
    )?;
    caller.require(Verb::Vend, family(family_name.as_str()))?;
    let wanted = count.unwrap_or(1);
    let ask = CounterAsk {
        family: family_name.clone(),
        key: key.clone(),
        count: wanted,
    };
    let values = match service.draw_counter(ask).await? {
        CounterOutcome::Values(values) => values,
        CounterOutcome::Exhausted => {
            return Err(ApiError::CounterExhausted(
                family_name.to_string(),
                key.to_string(),
            ))
        }
        CounterOutcome::Retired => return Err(ApiError::FamilyRetired(family_name.to_string())),
        CounterOutcome::NotFound => return Err(ApiError::family_not_found(family_name.as_str())),
    };
    let (family, key) = (family_name.as_str(), key.as_str());
    let exhausted = values.len() < wanted as usize;
    Ok(HttpResponse::Ok().json(match count {
        None => CounterDrawn::One {
            family,
            key,
            value: values[0],
        },
        Some(_) => CounterDrawn::Many {
            family,
            key,
            values,
            exhausted,
        },
    }))
}

#[utoipa::path(
    get, path = "/families/{family}/counters/{key}", tag = "read",
    params(
        ("family" = String, Path, description = "Family name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"),
        ("key" = String, Path, description = "The counter's key: 1–200 bytes of printable UTF-8 without `/` (percent-encoded in the path)", min_length = 1, max_length = 200, pattern = "^[^/\\x00-\\x1f\\x7f]+$"),
    ),
    responses(
        (status = 200, description = "The counter: its next value and how many are left", body = CounterView),
        (status = 400, description = "invalid_name or invalid_key", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no read scope on the family", body = ErrorBody),
        (status = 404, description = "not_found: no such family, or a key never drawn", body = ErrorBody),
        (status = 410, description = "family_retired", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn get(
    caller: Caller,
    service: web::Data<Service>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (family_name, key) = parse_path(&path)?;
    caller.require(Verb::Read, family(family_name.as_str()))?;
    let counter = service.get_counter(&family_name, &key).await?;
    Ok(HttpResponse::Ok().json(counter))
}

fn parse_path((family, key): &(String, String)) -> Result<(SequenceName, CounterKey), ApiError> {
    Ok((SequenceName::parse(family)?, CounterKey::parse(key)?))
}
