//! The `Caller` extractor: the request's bearer token, authenticated by `auth`, and kept on
//! the request for its log line.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};

use super::error::ApiError;
use crate::auth::{Principal, Resource, Verb};
use crate::service::Service;

/// An authenticated caller.
#[derive(Clone)]
pub struct Caller(Arc<Principal>);

impl Caller {
    /// The token's name (never its secret): for logs, metrics and the audit trail.
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// Who owns the caller's idempotency keys (see `Principal::owner`).
    pub fn owner(&self) -> &str {
        self.0.owner()
    }

    /// 403 `forbidden`, naming the scope needed, unless the caller may `verb` on `resource`.
    pub fn require(&self, verb: Verb, resource: Resource<'_>) -> Result<(), ApiError> {
        Ok(self.0.require(verb, resource)?)
    }

    /// What the token may do, as `<verb>:<target>` scopes.
    pub fn scopes(&self) -> Vec<String> {
        self.0.scopes()
    }

    pub fn may(&self, verb: Verb, resource: Resource<'_>) -> bool {
        self.0.allows(verb, resource)
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let caller = Caller(authenticate(&req).await?);
            // For the request's log line.
            req.extensions_mut().insert(caller.clone());
            Ok(caller)
        })
    }
}

async fn authenticate(req: &HttpRequest) -> Result<Arc<Principal>, ApiError> {
    let service = req
        .app_data::<web::Data<Service>>()
        .expect("the service is registered as app data");
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    Ok(service.authenticate(bearer).await?)
}
