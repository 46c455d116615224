//! `GET /sequences/{name}/events`: a sequence's history; `GET /events`: the whole log, the
//! audit trail of admin actions and token changes included. Oldest first, paged by event id.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::IntoParams;

use super::access::require_on_sequence;
use super::caller::Caller;
use super::error::{ApiError, ErrorBody, RegistryFailures};
use super::paging::page_limit;
use crate::auth::{Resource, Verb};
use crate::domain::SequenceName;
use crate::registry::EventPage;
use crate::service::Service;

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Page size, 1–1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// The `next` of the previous page: events with a greater id (default: from the first).
    #[param(minimum = 0)]
    after: Option<i64>,
}

#[utoipa::path(
    get, path = "/sequences/{name}/events", tag = "read",
    params(
        ("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"),
        EventsQuery,
    ),
    responses(
        (status = 200, description = "A page of the sequence's events, oldest first", body = EventPage),
        (status = 400, description = "invalid_name or invalid_request", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no read scope on the sequence", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn list(
    caller: Caller,
    service: web::Data<Service>,
    name: web::Path<String>,
    query: web::Query<EventsQuery>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    require_on_sequence(&caller, Verb::Read, &service, &name).await?;
    let (after, limit) = query.page()?;
    Ok(HttpResponse::Ok().json(service.list_events(&name, after, limit).await?))
}

#[utoipa::path(
    get, path = "/events", tag = "admin", params(EventsQuery),
    responses(
        (status = 200, description = "A page of all events, oldest first: every sequence's, and token changes", body = EventPage),
        (status = 400, description = "invalid_request", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token is no admin of everything (admin:*)", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn list_all(
    caller: Caller,
    service: web::Data<Service>,
    query: web::Query<EventsQuery>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Verb::Admin, Resource::Service)?;
    let (after, limit) = query.page()?;
    Ok(HttpResponse::Ok().json(service.list_all_events(after, limit).await?))
}

impl EventsQuery {
    fn page(&self) -> Result<(i64, u32), ApiError> {
        let limit = page_limit(self.limit)?;
        let after = self.after.unwrap_or(0);
        if after < 0 {
            return Err(ApiError::InvalidRequest(
                "`after` must be an event id (0 or more)".into(),
            ));
        }
        Ok((after, limit))
    }
}
