//! `POST /workers/lease` and `POST /workers/{worker_id}/renew`: worker-id leases for client
//! processes that issue Snowflake ids themselves, under the same rules as seqvend's own.

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::caller::Caller;
use super::error::{ApiError, ErrorBody};
use super::extract::JsonObject;
use super::idempotent::refuse_key;
use crate::auth::{Resource, Verb};
use crate::ids::{self, Lease};
use crate::service::Service;

/// A worker-id lease. Issue ids only while it lasts, stamped `not_before_ms ..=
/// not_after_ms`, and renew well before `expires_at`.
#[derive(Serialize, ToSchema)]
pub struct WorkerLease {
    worker_id: u32,
    /// The secret that renews this lease.
    holder: String,
    /// When the lease lapses unless renewed, by the database's clock.
    expires_at: DateTime<Utc>,
    /// The first millisecond (since the Unix epoch) ids may be stamped with: one past every
    /// earlier holder's.
    not_before_ms: i64,
    /// The last millisecond ids may be stamped with until the next renewal raises it.
    not_after_ms: i64,
    /// The lease's length. Count it on your monotonic clock from before the request left,
    /// stop issuing after 90 % of it unless a renewal got through, and renew every third.
    #[schema(example = 30.0)]
    ttl_seconds: f64,
    layout: LayoutView,
}

/// The Snowflake layout ids must be made with.
#[derive(Serialize, ToSchema)]
pub struct LayoutView {
    timestamp_bits: u8,
    worker_bits: u8,
    sequence_bits: u8,
    epoch: DateTime<Utc>,
    /// The same epoch, in milliseconds since the Unix epoch.
    epoch_ms: i64,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RenewBody {
    /// The holder token the lease was taken with.
    holder: String,
}

fn view(lease: Lease, service: &Service) -> WorkerLease {
    let layout = service.snowflake().layout();
    let (timestamp_bits, worker_bits, sequence_bits) = layout.bits();
    WorkerLease {
        worker_id: lease.worker_id,
        holder: lease.holder,
        expires_at: lease.expires_at,
        not_before_ms: lease.not_before_ms,
        not_after_ms: lease.not_after_ms,
        ttl_seconds: service.id_settings().lease.as_secs_f64(),
        layout: LayoutView {
            timestamp_bits,
            worker_bits,
            sequence_bits,
            epoch: ids::epoch(&layout),
            epoch_ms: layout.epoch_ms(),
        },
    }
}

#[utoipa::path(
    post, path = "/workers/lease", tag = "workers",
    responses(
        (status = 200, description = "A free or expired worker id, leased", body = WorkerLease),
        (status = 400, description = "invalid_request: an Idempotency-Key, which this route refuses (a retry takes another worker id)", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no lease scope (vend is not enough)", body = ErrorBody),
        (status = 503, description = "worker_ids_exhausted, or unavailable", body = ErrorBody),
    )
)]
pub async fn lease(
    req: HttpRequest,
    caller: Caller,
    service: web::Data<Service>,
) -> Result<HttpResponse, ApiError> {
    refuse_key(
        &req,
        "worker-id leases",
        "takes another worker id (the first's lease lapses unrenewed)",
    )?;
    caller.require(Verb::Lease, Resource::AnySequence)?;
    let lease = service.take_worker_lease().await?;
    Ok(HttpResponse::Ok().json(view(lease, &service)))
}

#[utoipa::path(
    post, path = "/workers/{worker_id}/renew", tag = "workers",
    params(("worker_id" = u32, Path, description = "The leased worker id")),
    request_body = RenewBody,
    responses(
        (status = 200, description = "The lease, extended", body = WorkerLease),
        (status = 400, description = "invalid_request", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no lease scope (vend is not enough)", body = ErrorBody),
        (status = 409, description = "lease_lost: stop issuing with this worker id", body = ErrorBody),
        (status = 503, description = "unavailable", body = ErrorBody),
    )
)]
pub async fn renew(
    caller: Caller,
    service: web::Data<Service>,
    worker_id: web::Path<String>,
    body: JsonObject<RenewBody>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Verb::Lease, Resource::AnySequence)?;
    let layout = service.snowflake().layout();
    let worker_id: i64 = worker_id
        .parse()
        .ok()
        .filter(|id| (0..i64::from(layout.worker_ids())).contains(id))
        .ok_or_else(|| {
            ApiError::InvalidRequest(format!(
                "{:?} is not a worker id: an integer from 0 to {}",
                worker_id.as_str(),
                layout.worker_ids() - 1
            ))
        })?;
    let lease = service.renew_worker_lease(worker_id, &body.holder).await?;
    Ok(HttpResponse::Ok().json(view(lease, &service)))
}
