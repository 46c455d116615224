//! `GET /tracking-numbers/{number}`: recognise and verify any carrier number, and say whether
//! seqvend vended it.

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::caller::Caller;
use super::error::{ApiError, ErrorBody, RegistryFailures};
use crate::auth::{Resource, Verb};
use crate::carriers::{normalise, recognise};
use crate::service::Service;

#[derive(Serialize, ToSchema)]
pub struct TrackingNumber {
    /// The number normalised: whitespace removed, upper case.
    number: String,
    /// A known layout matches and its check digit is right.
    valid: bool,
    /// The carrier of the layout that matched, e.g. `UPS`; null when none matches.
    carrier: Option<&'static str>,
    /// The layout, e.g. `ups_1z`, `usps_impb`, `fedex_ground`; null when none matches.
    kind: Option<&'static str>,
    /// The part of the number a shipper's range fills, where the layout has one.
    serial: Option<String>,
    /// The sequence that vended it, when seqvend did; else null.
    issued: Option<Issued>,
}

#[derive(Serialize, ToSchema)]
pub struct Issued {
    sequence: String,
    value: i64,
}

#[utoipa::path(
    get, path = "/tracking-numbers/{number}", tag = "read",
    params(("number" = String, Path, description = "Any carrier number; spaces and lower case are allowed", max_length = 64)),
    responses(
        (status = 200, description = "What the number is, whether it is valid, and whether seqvend vended it", body = TrackingNumber),
        (status = 400, description = "invalid_request: over 64 letters and digits, or other characters", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn get(
    caller: Caller,
    service: web::Data<Service>,
    number: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Verb::Read, Resource::AnySequence)?;
    let number = normalise(&number).map_err(|err| ApiError::InvalidRequest(err.to_string()))?;
    let seen = recognise(&number);
    // Which sequence vended it is told only to a caller who may read that sequence.
    let issued = service.issued(&seen.origins).await?.filter(|i| {
        caller.may(
            Verb::Read,
            Resource::Sequence {
                name: &i.sequence,
                namespace: Some(&i.namespace),
            },
        )
    });
    Ok(HttpResponse::Ok().json(TrackingNumber {
        number,
        valid: seen.valid,
        carrier: seen.layout.map(|l| l.carrier),
        kind: seen.layout.map(|l| l.kind),
        serial: seen.serial,
        issued: issued.map(|i| Issued {
            sequence: i.sequence,
            value: i.value,
        }),
    }))
}
