//! Request deadlines, counted from the request's arrival and applied around the whole handler:
//! authentication, the catalog look-up, the wait for a connection, the statement and any wait
//! for the instance cache all fall inside one bound, so no step's own timeout can add to
//! another's. At the deadline the handler is dropped and the answer is 503 `unavailable`: a
//! statement still running then hands its values to nobody (its reply channel is gone), so
//! they become a gap, never a value answered twice; a keyed request's stored answer is replayed
//! to its retry. Every deadline-bound answer's lateness is recorded
//! (`seqvend_http_request_lateness_seconds`), so an operator sees a deadline kept or missed.
//!
//! Two deadlines: the vend deadline on the routes that hand out numbers (vends, counters,
//! leases, Snowflake ids), and the registry deadline on the routes served by the registry
//! pool (a query sent to a server that then freezes has no client-side timeout in sqlx).

use std::time::{Duration, Instant};

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage, ResponseError};

use super::error::ApiError;
use crate::service::Service;

/// When the request reached seqvend: the first middleware to see it stamps it.
#[derive(Clone, Copy)]
struct Arrived(Instant);

/// When the request's answer is due (its arrival plus its route's deadline).
#[derive(Clone, Copy)]
struct Due(Instant);

/// The outermost middleware: stamps the arrival, and once the answer is ready records how
/// late it was against its deadline (for routes that have one).
pub async fn clock(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    req.extensions_mut().insert(Arrived(Instant::now()));
    let response = next.call(req).await?;
    let request = response.request();
    let due = request.extensions().get::<Due>().copied();
    if let (Some(Due(due)), Some(service)) = (due, request.app_data::<web::Data<Service>>()) {
        let late = Instant::now().saturating_duration_since(due);
        let route = request
            .match_pattern()
            .unwrap_or_else(|| "unmatched".into());
        service
            .metrics()
            .http_request_lateness
            .with_label_values(&[&route])
            .observe(late.as_secs_f64());
        if !late.is_zero() {
            tracing::warn!(route, ?late, "an answer was ready after its deadline");
        }
    }
    Ok(response)
}

/// Bounds a registry route by the registry deadline.
pub async fn bound(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let deadline = service_of(&req).registry_deadline();
    within(deadline, req, next).await
}

/// Bounds a route that hands out numbers by the vend deadline.
pub async fn bound_vend(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let deadline = service_of(&req).vend_deadline();
    within(deadline, req, next).await
}

fn service_of(req: &ServiceRequest) -> &Service {
    req.app_data::<web::Data<Service>>()
        .expect("the service is registered as app data")
}

/// Runs the rest of the chain until the request's arrival plus `deadline`; past it, drops
/// the handler and answers 503 at once.
async fn within(
    deadline: Duration,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    // Without `clock` in front (it always is), the clock starts here.
    let arrived = req
        .extensions()
        .get::<Arrived>()
        .map_or_else(Instant::now, |a| a.0);
    let due = arrived + deadline;
    req.extensions_mut().insert(Due(due));
    let request = req.request().clone();
    match tokio::time::timeout_at(due.into(), next.call(req)).await {
        Ok(answered) => answered.map(ServiceResponse::map_into_left_body),
        Err(_) => {
            tracing::warn!(
                request = format!("{} {}", request.method(), request.path()),
                ?deadline,
                "no answer within the deadline"
            );
            let answer = ApiError::Unavailable("the database did not answer in time");
            Ok(ServiceResponse::new(request, answer.error_response()).map_into_right_body())
        }
    }
}
