//! The `Idempotency-Key` header on vends and leases: reading it, claiming it for the time
//! the request is served, and marking a replayed answer.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{web, FromRequest, HttpRequest, HttpResponse, ResponseError};

use super::caller::Caller;
use super::error::ApiError;
use crate::idempotency::{parse_key, Claim, IdempotencyKey, InFlight};

const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
/// Set on an answer that repeats a stored one.
pub const REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// Refuses an `Idempotency-Key` where answers are not stored for replay (`what` names the
/// route), rather than let a client believe its retries are safe.
pub fn refuse_key(req: &HttpRequest, what: &str) -> Result<(), ApiError> {
    if req.headers().contains_key(IDEMPOTENCY_KEY) {
        return Err(ApiError::InvalidRequest(format!(
            "Idempotency-Key is not supported on {what}: answers are not stored for replay, so \
             a retry draws new values (never one twice; the first's become a gap). Send the \
             request without it"
        )));
    }
    Ok(())
}

/// An authenticated caller with the request's `Idempotency-Key`, if it sent one (checked:
/// 400 when malformed).
pub struct KeyedCaller {
    pub caller: Caller,
    key: Option<String>,
    in_flight: web::Data<InFlight>,
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
            let in_flight = req
                .app_data::<web::Data<InFlight>>()
                .expect("the keys in flight are registered as app data")
                .clone();
            Ok(Self {
                caller,
                key,
                in_flight,
            })
        })
    }
}

impl KeyedCaller {
    /// The caller's key for `request` (what was asked, e.g. `next:fedex-1:count=5`, written
    /// only when a key was sent), claimed for as long as the returned `Claim` lives; None
    /// without a key. A key being served here already is 409 `idempotency_key_in_flight`.
    pub fn claim(
        &self,
        request: impl FnOnce() -> String,
    ) -> Result<Option<(IdempotencyKey, Claim)>, ApiError> {
        let Some(key) = &self.key else {
            return Ok(None);
        };
        let key = IdempotencyKey {
            owner: self.caller.owner().to_owned(),
            key: key.clone(),
            request: request(),
        };
        let claim = self
            .in_flight
            .claim(&key)
            .ok_or_else(|| ApiError::IdempotencyKeyInFlight(key.key.clone()))?;
        Ok(Some((key, claim)))
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
