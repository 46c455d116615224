//! Registry endpoints: create, add a range, read, list, retire.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::Number;
use sqlx::PgPool;

use crate::auth::{Admin, Reader};
use crate::domain::{RangeBounds, SequenceName, SequenceSpec};
use crate::error::ApiError;
use crate::ranges::{self, NewSequence};

const DEFAULT_PAGE: u32 = 100;
const MAX_PAGE: u32 = 1000;

/// Bounds arrive as JSON numbers and are checked by the domain types, so a bound outside
/// i64 is `invalid_range` rather than a generic parse failure.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSequenceBody {
    name: String,
    min: Number,
    max: Number,
    start: Option<Number>,
    increment: Option<Number>,
    namespace: Option<String>,
}

impl TryFrom<CreateSequenceBody> for NewSequence {
    type Error = ApiError;

    fn try_from(body: CreateSequenceBody) -> Result<Self, ApiError> {
        let name = SequenceName::parse(&body.name)?;
        let namespace = match body.namespace {
            Some(raw) => SequenceName::parse(&raw)?,
            None => name.clone(),
        };
        let spec = SequenceSpec::parse(
            &body.min,
            &body.max,
            body.start.as_ref(),
            body.increment.as_ref(),
        )?;
        Ok(NewSequence {
            name,
            namespace,
            spec,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddRangeBody {
    min: Number,
    max: Number,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    limit: Option<u32>,
    after: Option<String>,
}

pub async fn create(
    _: Admin,
    pool: web::Data<PgPool>,
    body: web::Json<CreateSequenceBody>,
) -> Result<HttpResponse, ApiError> {
    let new = NewSequence::try_from(body.into_inner())?;
    let sequence = ranges::create_sequence(&pool, new).await?;
    tracing::info!(sequence = %sequence.name, "sequence created");
    Ok(HttpResponse::Created().json(sequence))
}

pub async fn add_range(
    _: Admin,
    pool: web::Data<PgPool>,
    name: web::Path<String>,
    body: web::Json<AddRangeBody>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    let bounds = RangeBounds::parse(&body.min, &body.max)?;
    let range = ranges::add_range(&pool, &name, bounds).await?;
    tracing::info!(sequence = %name, min = range.min, max = range.max, "range added");
    Ok(HttpResponse::Created().json(range))
}

pub async fn get(
    _: Reader,
    pool: web::Data<PgPool>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    Ok(HttpResponse::Ok().json(ranges::get_sequence(&pool, &name).await?))
}

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
    Ok(HttpResponse::Ok().json(ranges::list_sequences(&pool, after.as_ref(), limit).await?))
}

pub async fn retire(
    _: Admin,
    pool: web::Data<PgPool>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    let sequence = ranges::retire_sequence(&pool, &name).await?;
    tracing::info!(sequence = %name, "sequence retired");
    Ok(HttpResponse::Ok().json(sequence))
}
