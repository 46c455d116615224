//! `GET /sequences/{name}/usage`: a sequence's usage samples over time (what its chart
//! draws) and the value, and carrier number, it would hand out next.

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::access::readable_sequence;
use super::caller::Caller;
use super::error::{ApiError, ErrorBody, RegistryFailures};
use crate::domain::{RangeStatus, SequenceStatus};
use crate::registry::{SequenceView, UsageSample};
use crate::service::Service;

#[derive(Serialize, ToSchema)]
pub struct UsageHistory {
    /// Values used from all the sequence's ranges over time, oldest first: every sample of
    /// the last 70 minutes, then one per 5 minutes back to a day.
    samples: Vec<UsageSample>,
    /// What the database would draw next (an instance's cache may hold earlier values);
    /// null when nothing is left or the sequence is retired.
    next_value: Option<i64>,
    /// `next_value` printed in the sequence's carrier format; null for a plain sequence.
    next_number: Option<String>,
}

#[utoipa::path(
    get, path = "/sequences/{name}/usage", tag = "read",
    params(("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")),
    responses(
        (status = 200, description = "The sequence's usage samples and its next value", body = UsageHistory),
        (status = 400, description = "invalid_name", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no read scope on the sequence", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn get(
    caller: Caller,
    service: web::Data<Service>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = readable_sequence(&caller, &service, &name).await?;
    let (sequence, samples) =
        tokio::try_join!(service.get_sequence(&name), service.usage_samples(&name))?;
    let next_value = next_value(&sequence);
    let next_number = sequence
        .format
        .as_ref()
        .zip(next_value)
        .and_then(|(format, value)| format.render(value));
    Ok(HttpResponse::Ok().json(UsageHistory {
        samples,
        next_value,
        next_number,
    }))
}

/// The active range's next value, or the first pending range's once the active one is out.
fn next_value(sequence: &SequenceView) -> Option<i64> {
    if sequence.status == SequenceStatus::Retired {
        return None;
    }
    let next_in = |status: RangeStatus| {
        sequence
            .ranges
            .iter()
            .filter(|range| range.status == status)
            .find_map(|range| range.next)
    };
    next_in(RangeStatus::Active).or_else(|| next_in(RangeStatus::Pending))
}
