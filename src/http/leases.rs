//! `POST /sequences/{name}/leases?count=N`: a block lease: a block of values for a client cache
//! (the thick client, `seqvend-client`), drawn durably like any vend and leased for a while.

use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::access::require_on_sequence;
use super::error::{ApiError, ErrorBody};
use super::idempotent::{replayed, replayed_error, KeyedCaller};
use crate::auth::Verb;
use crate::domain::{SequenceName, MAX_LEASE_COUNT};
use crate::registry::{CacheView, Known};
use crate::service::{BlockLeaseAsk, LeaseRefused, Service};
use seqvend_blocks::Block;

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LeaseQuery {
    /// Values to lease, 1–10000000. Fewer may come back without `exhausted` (at most 100,000
    /// when the sequence's block could not be drawn at once): lease again for the rest.
    #[param(minimum = 1, maximum = 10000000)]
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

impl From<&Block> for BlockView {
    fn from(block: &Block) -> Self {
        Self {
            first: block.first(),
            last: block.last(),
            increment: block.increment(),
        }
    }
}

#[utoipa::path(
    post, path = "/sequences/{name}/leases", tag = "vend", params(("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"), LeaseQuery,
        ("Idempotency-Key" = Option<String>, Header, description = "1–255 visible ASCII characters: a repeat with the same key, token and request answers the same block lease again, with `Idempotent-Replayed: true`", max_length = 255)),
    responses(
        (status = 200, description = "A block lease, durable before it is returned", body = LeaseView),
        (status = 400, description = "invalid_name or invalid_request", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no lease scope on the sequence (vend is not enough)", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        (status = 409, description = "sequence_exhausted, or idempotency_key_in_flight", body = ErrorBody),
        (status = 410, description = "sequence_retired", body = ErrorBody),
        (status = 422, description = "idempotency_key_reused", body = ErrorBody),
        (status = 500, description = "sequence_failed or internal", body = ErrorBody),
        (status = 503, description = "unavailable", body = ErrorBody),
    )
)]
pub async fn lease(
    keyed_caller: KeyedCaller,
    service: web::Data<Service>,
    name: web::Path<String>,
    query: web::Query<LeaseQuery>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    if !(1..=MAX_LEASE_COUNT).contains(&query.count) {
        return Err(ApiError::InvalidRequest(format!(
            "`count` must be between 1 and {MAX_LEASE_COUNT}"
        )));
    }
    let caller = &keyed_caller.caller;
    let entry = match require_on_sequence(caller, Verb::Lease, &service, &name).await? {
        Known::Sequence(entry) => entry,
        Known::NoSuchSequence => return Err(ApiError::sequence_not_found(name.as_str())),
    };
    let ask = BlockLeaseAsk {
        name: &name,
        count: query.count as u32,
        key: keyed_caller.key.as_deref(),
        owner: caller.owner(),
    };
    let lease = match service.lease(ask).await {
        Ok(lease) => lease,
        Err(LeaseRefused::Exhausted { replayed: true }) => {
            return Ok(replayed_error(ApiError::SequenceExhausted(
                name.to_string(),
            )));
        }
        Err(refused) => return Err(refused_lease(refused, &name)),
    };
    let response = HttpResponse::Ok().json(LeaseView {
        sequence: name.as_str(),
        blocks: lease.blocks.iter().map(BlockView::from).collect(),
        count: lease.count,
        exhausted: lease.exhausted,
        expires_at: lease.expires_at,
        ttl_seconds: lease.ttl_seconds,
        cache: entry.cache.into(),
    });
    Ok(if lease.replayed {
        replayed(response)
    } else {
        response
    })
}

/// The error a refused block lease means.
fn refused_lease(refused: LeaseRefused, name: &SequenceName) -> ApiError {
    match refused {
        LeaseRefused::KeyInFlight(key) => ApiError::IdempotencyKeyInFlight(key),
        LeaseRefused::KeyReused(key) => ApiError::IdempotencyKeyReused(key),
        LeaseRefused::Exhausted { .. } => ApiError::SequenceExhausted(name.to_string()),
        LeaseRefused::Retired => ApiError::SequenceRetired(name.to_string()),
        LeaseRefused::NotFound => ApiError::sequence_not_found(name.as_str()),
        LeaseRefused::Failed(reason) => ApiError::SequenceFailed(name.to_string(), reason),
        LeaseRefused::Engine(err) => err.into(),
    }
}
