//! A deadline on the requests the registry pool serves. A query already sent to a server
//! that then freezes (its kernel still acknowledges, so no timeout of the socket fires) has no
//! client-side timeout in sqlx: without this the request would wait as long as the freeze.
//! The vend route has deadlines of its own (see `vend`).

use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web;

use super::error::ApiError;
use crate::service::Service;

pub async fn bound(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let deadline: Duration = req
        .app_data::<web::Data<Service>>()
        .expect("the service is registered as app data")
        .registry_deadline();
    let what = format!("{} {}", req.method(), req.path());
    match tokio::time::timeout(deadline, next.call(req)).await {
        Ok(answered) => answered,
        Err(_) => {
            tracing::warn!(
                request = what,
                ?deadline,
                "the database did not answer in time"
            );
            Err(ApiError::Unavailable("the database did not answer in time").into())
        }
    }
}
