//! Registry endpoints: create, add a range, read, list, retire.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::Number;
use sqlx::PgPool;

use utoipa::{IntoParams, ToSchema};

use super::error::ApiError;
use super::error::ErrorBody;
use crate::auth::{Admin, Reader};
use crate::carriers::{Format, FormatError};
use crate::domain::{RangeBounds, SequenceName, SequenceSpec};
use crate::registry::{
    self, FormatCache, Known, NewSequence, RangeView, SequencePage, SequenceView,
};

const DEFAULT_PAGE: u32 = 100;
const MAX_PAGE: u32 = 1000;

/// Bounds arrive as JSON numbers and are checked by the domain types, so a bound outside
/// i64 is `invalid_range` rather than a generic parse failure.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSequenceBody {
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")]
    name: String,
    #[schema(value_type = i64)]
    min: Number,
    /// Greater than `min`.
    #[schema(value_type = i64)]
    max: Number,
    /// Defaults to `min` (ascending) or `max` (descending).
    #[schema(value_type = Option<i64>)]
    start: Option<Number>,
    /// Not 0; negative for a descending sequence. Defaults to 1.
    #[schema(value_type = Option<i64>)]
    increment: Option<Number>,
    /// Ranges never overlap within a namespace. Defaults to the name; for a formatted
    /// sequence it is the format's number space (e.g. `ups_1z.5R8939.03`).
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")]
    namespace: Option<String>,
    /// Print vended values as carrier numbers: `{"kind": …, parameters…}`, e.g.
    /// `{"kind": "ups_1z", "account": "5R8939", "service": "03"}`. Kinds: ups_1z,
    /// fedex_express, fedex_ground, fedex_ground_96, sscc18, usps_impb, s10, dhl_express,
    /// ontrac, canada_post (see the README). Every range must fit the serial's width.
    #[schema(value_type = Option<Object>)]
    format: Option<serde_json::Value>,
}

impl TryFrom<CreateSequenceBody> for NewSequence {
    type Error = ApiError;

    fn try_from(body: CreateSequenceBody) -> Result<Self, ApiError> {
        let name = SequenceName::parse(&body.name)?;
        let spec = SequenceSpec::parse(
            &body.min,
            &body.max,
            body.start.as_ref(),
            body.increment.as_ref(),
        )?;
        let format = match body.format {
            None | Some(serde_json::Value::Null) => None,
            Some(raw) => {
                let format = Format::parse(&raw)?;
                format.check_range(spec.bounds.min(), spec.bounds.max())?;
                Some(format)
            }
        };
        // A formatted sequence's namespace is its number space: two sequences printing the
        // same numbers then share it, and their ranges cannot overlap.
        let namespace = match (body.namespace, &format) {
            (None, None) => name.clone(),
            (Some(raw), None) => SequenceName::parse(&raw)?,
            (given, Some(format)) => {
                let space = format.number_space();
                if given.is_some_and(|raw| raw != space) {
                    return Err(FormatError::NamespaceNotNumberSpace { space }.into());
                }
                SequenceName::parse(&space)?
            }
        };
        Ok(NewSequence {
            name,
            namespace,
            spec,
            format,
        })
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddRangeBody {
    #[schema(value_type = i64)]
    min: Number,
    #[schema(value_type = i64)]
    max: Number,
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Page size, 1–1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// The `next` of the previous page.
    #[param(pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")]
    after: Option<String>,
}

#[utoipa::path(
    post, path = "/sequences", tag = "admin", request_body = CreateSequenceBody,
    responses(
        (status = 201, description = "Created", body = SequenceView),
        (status = 400, description = "invalid_name, invalid_request, invalid_range or invalid_format", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: not an admin token", body = ErrorBody),
        (status = 409, description = "name_taken or range_overlap", body = ErrorBody),
        (status = 413, description = "payload_too_large", body = ErrorBody),
        (status = 500, description = "internal", body = ErrorBody),
        (status = 503, description = "unavailable", body = ErrorBody),
    )
)]
pub async fn create(
    _: Admin,
    pool: web::Data<PgPool>,
    body: web::Json<CreateSequenceBody>,
) -> Result<HttpResponse, ApiError> {
    let new = NewSequence::try_from(body.into_inner())?;
    let sequence = registry::create_sequence(&pool, new).await?;
    tracing::info!(sequence = %sequence.name, "sequence created");
    Ok(HttpResponse::Created().json(sequence))
}

#[utoipa::path(
    post, path = "/sequences/{name}/ranges", tag = "admin", request_body = AddRangeBody,
    params(("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")),
    responses(
        (status = 201, description = "Added: pending, or active if the sequence had run out", body = RangeView),
        (status = 400, description = "invalid_name, invalid_request, invalid_range, or invalid_format (the range does not fit the sequence's format)", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: not an admin token", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        (status = 409, description = "range_overlap", body = ErrorBody),
        (status = 410, description = "sequence_retired", body = ErrorBody),
        (status = 413, description = "payload_too_large", body = ErrorBody),
        (status = 500, description = "internal", body = ErrorBody),
        (status = 503, description = "unavailable", body = ErrorBody),
    )
)]
pub async fn add_range(
    _: Admin,
    pool: web::Data<PgPool>,
    formats: web::Data<FormatCache>,
    name: web::Path<String>,
    body: web::Json<AddRangeBody>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    let bounds = RangeBounds::parse(&body.min, &body.max)?;
    // A format never changes, so checking before the registry's transaction is race-free.
    // No such sequence: `add_range` answers it.
    if let Known::Sequence(Some(format)) = formats.lookup(&pool, &name).await? {
        format.check_range(bounds.min(), bounds.max())?;
    }
    let range = registry::add_range(&pool, &name, bounds).await?;
    tracing::info!(sequence = %name, min = range.min, max = range.max, "range added");
    Ok(HttpResponse::Created().json(range))
}

#[utoipa::path(
    get, path = "/sequences/{name}", tag = "read", params(("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")),
    responses(
        (status = 200, description = "The sequence", body = SequenceView),
        (status = 400, description = "invalid_name", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        (status = 500, description = "internal", body = ErrorBody),
        (status = 503, description = "unavailable", body = ErrorBody),
    )
)]
pub async fn get(
    _: Reader,
    pool: web::Data<PgPool>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    Ok(HttpResponse::Ok().json(registry::get_sequence(&pool, &name).await?))
}

#[utoipa::path(
    get, path = "/sequences", tag = "read", params(ListQuery),
    responses(
        (status = 200, description = "A page of sequences, in name order", body = SequencePage),
        (status = 400, description = "invalid_request", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 500, description = "internal", body = ErrorBody),
        (status = 503, description = "unavailable", body = ErrorBody),
    )
)]
pub async fn list(
    _: Reader,
    pool: web::Data<PgPool>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::InvalidRequest(format!(
            "`limit` must be between 1 and {MAX_PAGE}"
        )));
    }
    let after = query
        .after
        .as_deref()
        .map(SequenceName::parse)
        .transpose()
        .map_err(|err| {
            ApiError::InvalidRequest(format!("`after` must be a sequence name: {err}"))
        })?;
    Ok(HttpResponse::Ok().json(registry::list_sequences(&pool, after.as_ref(), limit).await?))
}

#[utoipa::path(
    delete, path = "/sequences/{name}", tag = "admin", params(("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")),
    responses(
        (status = 200, description = "Retired (retiring again answers the same)", body = SequenceView),
        (status = 400, description = "invalid_name", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: not an admin token", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        (status = 500, description = "internal", body = ErrorBody),
        (status = 503, description = "unavailable", body = ErrorBody),
    )
)]
pub async fn retire(
    _: Admin,
    pool: web::Data<PgPool>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    let sequence = registry::retire_sequence(&pool, &name).await?;
    tracing::info!(sequence = %name, "sequence retired");
    Ok(HttpResponse::Ok().json(sequence))
}
