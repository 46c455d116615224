//! Counter families: create, read, list, retire. A family's name is a scope target as a
//! sequence name is (a name, a prefix, `*`); namespace targets never cover a family.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::Number;
use utoipa::ToSchema;

use super::caller::Caller;
use super::error::{ApiError, ErrorBody, RegistryFailures};
use super::extract::JsonObject;
use super::paging::{visible_page, ListQuery};
use crate::auth::{Resource, Verb};
use crate::domain::{SequenceName, SequenceSpec};
use crate::registry::{FamilyPage, FamilyView};
use crate::service::Service;

/// What a scope names when it covers a family.
pub fn family(name: &str) -> Resource<'_> {
    Resource::Sequence {
        name,
        namespace: None,
    }
}

/// The parameters every counter of the family follows, as `CREATE SEQUENCE` takes them.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateFamilyBody {
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")]
    name: String,
    /// Defaults to `min` (ascending) or `max` (descending).
    #[schema(value_type = Option<i64>)]
    start: Option<Number>,
    /// Not 0; negative for descending counters. Defaults to 1.
    #[schema(value_type = Option<i64>)]
    increment: Option<Number>,
    /// Defaults to 1 (ascending) or -9223372036854775808 (descending).
    #[schema(value_type = Option<i64>)]
    min: Option<Number>,
    /// Greater than `min`. Defaults to 9223372036854775807 (ascending) or -1 (descending).
    #[schema(value_type = Option<i64>)]
    max: Option<Number>,
}

#[utoipa::path(
    post, path = "/families", tag = "admin", request_body = CreateFamilyBody,
    responses(
        (status = 201, description = "Created", body = FamilyView),
        (status = 400, description = "invalid_name, invalid_request or invalid_range", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no admin scope on the name", body = ErrorBody),
        (status = 409, description = "name_taken (family names are never reused)", body = ErrorBody),
        (status = 413, description = "payload_too_large", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn create(
    caller: Caller,
    service: web::Data<Service>,
    body: JsonObject<CreateFamilyBody>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&body.name)?;
    let spec = SequenceSpec::parse_with_defaults(
        body.min.as_ref(),
        body.max.as_ref(),
        body.start.as_ref(),
        body.increment.as_ref(),
    )?;
    caller.require(Verb::Admin, family(name.as_str()))?;
    let created = service.create_family(&name, spec, caller.name()).await?;
    tracing::info!(family = %name, "counter family created");
    Ok(HttpResponse::Created().json(created))
}

#[utoipa::path(
    get, path = "/families/{family}", tag = "read",
    params(("family" = String, Path, description = "Family name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")),
    responses(
        (status = 200, description = "The family, retired or not", body = FamilyView),
        (status = 400, description = "invalid_name", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no read scope on the family", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn get(
    caller: Caller,
    service: web::Data<Service>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    caller.require(Verb::Read, family(name.as_str()))?;
    Ok(HttpResponse::Ok().json(service.get_family(&name).await?))
}

#[utoipa::path(
    get, path = "/families", tag = "read", params(ListQuery),
    responses(
        (status = 200, description = "A page of families, in name order, of those the token may read", body = FamilyPage),
        (status = 400, description = "invalid_request", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no read scope at all", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn list(
    caller: Caller,
    service: web::Data<Service>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Verb::Read, Resource::AnySequence)?;
    let asked = query.page("family")?;
    let service = &service;
    // A token scoped to some families sees those, and nothing of the others' names.
    let (families, next) = visible_page(
        asked.after,
        asked.limit,
        |after, size| async move {
            let page = service.list_families(after.as_ref(), size).await?;
            Ok::<_, ApiError>((page.families, page.next))
        },
        |listed: &FamilyView| caller.may(Verb::Read, family(&listed.name)),
        |listed| &listed.name,
    )
    .await?;
    Ok(HttpResponse::Ok().json(FamilyPage { families, next }))
}

#[utoipa::path(
    delete, path = "/families/{family}", tag = "admin",
    params(("family" = String, Path, description = "Family name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")),
    responses(
        (status = 200, description = "Retired: no counter of it draws again, on any instance (retiring again answers the same). Its counters are kept", body = FamilyView),
        (status = 400, description = "invalid_name", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no admin scope on the family", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn retire(
    caller: Caller,
    service: web::Data<Service>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    caller.require(Verb::Admin, family(name.as_str()))?;
    let retired = service.retire_family(&name, caller.name()).await?;
    tracing::info!(family = %name, "counter family retired");
    Ok(HttpResponse::Ok().json(retired))
}
