//! `GET /sequences/{name}/events`: a sequence's history; `GET /events`: the whole log, the
//! audit trail of admin actions and token changes included. Paged by event id: oldest first
//! (`after`), or newest first (`order=newest`, then `before`), so that a long history's
//! latest events come at once.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::access::readable_sequence;
use super::caller::Caller;
use super::error::{ApiError, ErrorBody, RegistryFailures};
use super::paging::page_limit;
use crate::auth::{Resource, Verb};
use crate::registry::{EventCursor, EventPage};
use crate::service::Service;

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Page size, 1–1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// Oldest first: the `next` of the previous page, events with a greater id (default:
    /// from the first).
    #[param(minimum = 0)]
    after: Option<i64>,
    /// Newest first: the `next` of the previous page, events with a smaller id (implies
    /// `order=newest`).
    #[param(minimum = 0)]
    before: Option<i64>,
    /// `oldest` (the default) or `newest` first.
    #[param(inline)]
    order: Option<EventOrder>,
}

#[derive(Deserialize, ToSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EventOrder {
    Oldest,
    Newest,
}

#[utoipa::path(
    get, path = "/sequences/{name}/events", tag = "read",
    params(
        ("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"),
        EventsQuery,
    ),
    responses(
        (status = 200, description = "A page of the sequence's events, oldest or newest first", body = EventPage),
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
    let name = readable_sequence(&caller, &service, &name).await?;
    let (cursor, limit) = query.page()?;
    Ok(HttpResponse::Ok().json(service.list_events(&name, cursor, limit).await?))
}

#[utoipa::path(
    get, path = "/events", tag = "admin", params(EventsQuery),
    responses(
        (status = 200, description = "A page of all events, oldest or newest first: every sequence's, and token changes", body = EventPage),
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
    let (cursor, limit) = query.page()?;
    Ok(HttpResponse::Ok().json(service.list_all_events(cursor, limit).await?))
}

impl EventsQuery {
    fn page(&self) -> Result<(EventCursor, u32), ApiError> {
        let limit = page_limit(self.limit)?;
        Ok((self.cursor()?, limit))
    }

    /// Where the page starts: `after` pages oldest first, `before` newest first; giving one
    /// with the other order is refused rather than guessed.
    fn cursor(&self) -> Result<EventCursor, ApiError> {
        let refuse = |message: &str| Err(ApiError::InvalidRequest(message.to_owned()));
        if self.after.is_some_and(|id| id < 0) || self.before.is_some_and(|id| id < 0) {
            return refuse("`after` and `before` must be event ids (0 or more)");
        }
        match (self.order, self.after, self.before) {
            (_, Some(_), Some(_)) => {
                refuse("give `after` (oldest first) or `before` (newest first), not both")
            }
            (Some(EventOrder::Newest), Some(_), None) => {
                refuse("`after` pages oldest first: with order=newest, page with `before`")
            }
            (Some(EventOrder::Oldest), None, Some(_)) => {
                refuse("`before` pages newest first: drop order=oldest, or page with `after`")
            }
            (Some(EventOrder::Newest), None, before) | (None, None, before @ Some(_)) => {
                Ok(EventCursor::Before(before))
            }
            (_, after, None) => Ok(EventCursor::After(after.unwrap_or(0))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{EventOrder, EventsQuery};
    use crate::registry::EventCursor;

    fn cursor(
        order: Option<EventOrder>,
        after: Option<i64>,
        before: Option<i64>,
    ) -> Option<EventCursor> {
        let query = EventsQuery {
            limit: None,
            after,
            before,
            order,
        };
        query.cursor().ok()
    }

    #[test]
    fn after_pages_oldest_first_and_before_newest_first() {
        use EventOrder::{Newest, Oldest};
        assert_eq!(cursor(None, None, None), Some(EventCursor::After(0)));
        assert_eq!(
            cursor(Some(Oldest), Some(5), None),
            Some(EventCursor::After(5))
        );
        assert_eq!(
            cursor(Some(Newest), None, None),
            Some(EventCursor::Before(None))
        );
        assert_eq!(
            cursor(None, None, Some(9)),
            Some(EventCursor::Before(Some(9)))
        );
        assert_eq!(
            cursor(Some(Newest), None, Some(9)),
            Some(EventCursor::Before(Some(9)))
        );
    }

    #[test]
    fn a_bound_against_the_order_or_below_zero_is_refused() {
        use EventOrder::{Newest, Oldest};
        assert_eq!(cursor(Some(Newest), Some(5), None), None);
        assert_eq!(cursor(Some(Oldest), None, Some(5)), None);
        assert_eq!(cursor(None, Some(1), Some(5)), None);
        assert_eq!(cursor(None, Some(-1), None), None);
        assert_eq!(cursor(Some(Newest), None, Some(-1)), None);
    }
}
