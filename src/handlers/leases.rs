//! `POST /sequences/{name}/leases?count=N`: a block of values for a client's own cache
//! (the thick client, `seqvend-client`), drawn durably like any vend and leased for a while.

use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use utoipa::{IntoParams, ToSchema};

use super::access::require_on_sequence;
use super::error::{ApiError, ErrorBody};
use crate::auth::{Caller, Verb};
use crate::domain::{SequenceName, MAX_CACHE_SIZE};
use crate::registry::{CacheView, Catalog, Known};
use crate::settings::CacheSettings;
use crate::vend::{Holder, Leased, Vender};

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LeaseQuery {
    /// Values to lease, 1–100000.
    #[param(minimum = 1, maximum = 100000)]
    count: u64,
}

/// `first, first + increment, …, last`.
#[derive(Serialize, ToSchema)]
pub struct BlockView {
    first: i64,
    last: i64,
    increment: i64,
}

/// Leased values as contiguous blocks in vend order: usually one, two when the lease crossed
/// into the sequence's next range. Use them before `expires_at`; unused ones are gaps.
#[derive(Serialize, ToSchema)]
pub struct LeaseView<'a> {
    sequence: &'a str,
    blocks: Vec<BlockView>,
    /// Values in all blocks.
    count: u64,
    /// True when the sequence ran out before `count` values.
    exhausted: bool,
    expires_at: DateTime<Utc>,
    /// How long the lease lasts from this answer: count it from before the request was sent.
    ttl_seconds: u64,
    /// The sequence's cache policy, as a suggestion for the client's own.
    cache: CacheView,
}

#[utoipa::path(
    post, path = "/sequences/{name}/leases", tag = "vend", params(("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"), LeaseQuery),
    responses(
        (status = 200, description = "A lease, durable before it is returned", body = LeaseView),
        (status = 400, description = "invalid_name or invalid_request", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no vend scope on the sequence", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        (status = 409, description = "sequence_exhausted", body = ErrorBody),
        (status = 410, description = "sequence_retired", body = ErrorBody),
        (status = 500, description = "sequence_failed or internal", body = ErrorBody),
        (status = 503, description = "unavailable", body = ErrorBody),
    )
)]
pub async fn lease(
    caller: Caller,
    vender: web::Data<Vender>,
    pool: web::Data<PgPool>,
    catalog: web::Data<Catalog>,
    settings: web::Data<CacheSettings>,
    name: web::Path<String>,
    query: web::Query<LeaseQuery>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    if !(1..=MAX_CACHE_SIZE).contains(&query.count) {
        return Err(ApiError::InvalidRequest(format!(
            "`count` must be between 1 and {MAX_CACHE_SIZE}"
        )));
    }
    let entry = match require_on_sequence(&caller, Verb::Vend, &catalog, &pool, &name).await? {
        Known::Sequence(entry) => entry,
        Known::NoSuchSequence => return Err(ApiError::sequence_not_found(name.as_str())),
    };
    let ttl = settings.client_lease;
    let leased = vender
        .lease(name.clone(), query.count as u32, Holder::Client, ttl)
        .await?;
    let lease = match leased {
        Leased::Granted(lease) => lease,
        Leased::Exhausted => return Err(ApiError::SequenceExhausted(name.to_string())),
        Leased::Retired => return Err(ApiError::SequenceRetired(name.to_string())),
        Leased::NotFound => return Err(ApiError::sequence_not_found(name.as_str())),
        Leased::Failed(reason) => return Err(ApiError::SequenceFailed(name.to_string(), reason)),
    };
    let blocks = lease
        .blocks
        .iter()
        .map(|b| BlockView {
            first: b.first(),
            last: b.last(),
            increment: b.increment(),
        })
        .collect();
    Ok(HttpResponse::Ok().json(LeaseView {
        sequence: name.as_str(),
        blocks,
        count: lease.count,
        exhausted: lease.clipped,
        expires_at: lease.expires_at,
        ttl_seconds: ttl.as_secs(),
        cache: entry.cache.into(),
    }))
}
