//! Per-request bookkeeping: a request id (the caller's `X-Request-Id`, else a new one) echoed
//! on every response, one log line per request (with the name of the token used), and the
//! request metrics.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage};
use tracing::Instrument;

use super::caller::Caller;
use crate::service::Service;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// A caller's request id is echoed only if it is short and printable; otherwise a new one.
fn request_id(req: &ServiceRequest) -> HeaderValue {
    req.headers()
        .get(&REQUEST_ID)
        .filter(|v| {
            !v.is_empty() && v.len() <= 128 && v.as_bytes().iter().all(|b| b.is_ascii_graphic())
        })
        .cloned()
        .unwrap_or_else(|| {
            HeaderValue::from_str(&uuid::Uuid::new_v4().to_string())
                .expect("a UUID is a valid header")
        })
}

pub async fn observe(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let id = request_id(&req);
    let id_text = id.to_str().unwrap_or_default().to_owned();
    let span = tracing::info_span!("request", request_id = %id_text);
    let mut response = next.call(req).instrument(span).await?;
    response.headers_mut().insert(REQUEST_ID, id);

    let elapsed = started.elapsed();
    let request = response.request();
    let route = request
        .match_pattern()
        .unwrap_or_else(|| "unmatched".into());
    let status = response.status();
    if let Some(service) = request.app_data::<web::Data<Service>>() {
        service
            .metrics()
            .http_requests
            .with_label_values(&[request.method().as_str(), &route, status.as_str()])
            .observe(elapsed.as_secs_f64());
    }
    let latency_ms = elapsed.as_secs_f64() * 1000.0;
    let method = request.method().as_str();
    // The token's name (never its secret), once the request was authenticated.
    let extensions = request.extensions();
    let token = extensions.get::<Caller>().map_or("", Caller::name);
    if matches!(route.as_str(), "/healthz" | "/readyz" | "/metrics") {
        tracing::debug!(method, route, status = status.as_u16(), latency_ms, request_id = %id_text, "request");
    } else {
        tracing::info!(method, route, status = status.as_u16(), latency_ms, token, request_id = %id_text, "request");
    }
    drop(extensions);
    Ok(response)
}
