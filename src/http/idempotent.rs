//! The `Idempotency-Key` header on vends and block leases: reading it (the service claims
//! it while the request is served), and marking a replayed answer.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError};

use super::caller::Caller;
use super::error::ApiError;
use crate::idempotency::parse_key;

const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
/// Set on an answer that repeats a stored one.
pub const REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// Refuses an `Idempotency-Key` where answers are not stored for replay (`what` names the
/// route, `a_retry` what a retry does instead), rather than let a client believe its retries
/// are safe.
pub fn refuse_key(req: &HttpRequest, what: &str, a_retry: &str) -> Result<(), ApiError> {
    if req.headers().contains_key(IDEMPOTENCY_KEY) {
        return Err(ApiError::InvalidRequest(format!(
            "Idempotency-Key is not supported on {what}: answers are not stored for replay, so \
             a retry {a_retry}. Send the request without it"
        )));
    }
    Ok(())
}

/// An authenticated caller with the request's `Idempotency-Key`, if it sent one (checked:
/// 400 when malformed).
pub struct KeyedCaller {
    pub caller: Caller,
    pub key: Option<String>,
}

impl FromRequest for KeyedCaller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let authenticated = Caller::from_request(req, payload);
        let req = req.clone();
        Box::pin(async move {
            let caller = authenticated.await?;
            let key = req
                .headers()
                .get(IDEMPOTENCY_KEY)
                .map(|raw| parse_key(raw.as_bytes()))
                .transpose()
                .map_err(|err| ApiError::InvalidRequest(err.to_string()))?;
            Ok(Self { caller, key })
        })
    }
}

/// `response`, marked as a replay.
pub fn replayed(mut response: HttpResponse) -> HttpResponse {
    response
        .headers_mut()
        .insert(REPLAYED, HeaderValue::from_static("true"));
    response
}

/// A stored error answer, replayed.
pub fn replayed_error(err: ApiError) -> HttpResponse {
    replayed(err.error_response())
}
