//! `/tokens`: tokens managed at run time (admin of everything only). A new token's secret is
//! answered once and never again; every instance obeys a revocation within 2 s.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::caller::Caller;
use super::error::{ApiError, ErrorBody, RegistryFailures};
use super::extract::JsonObject;
use crate::auth::{secret, Resource, Scope, Verb};
use crate::domain::SequenceName;
use crate::registry::TokenView;
use crate::service::Service;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTokenBody {
    /// Shown in logs, metrics and the audit trail: 1–63 of `[A-Za-z0-9._-]`, the first
    /// alphanumeric, not starting with `bootstrap-`. Never reused.
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")]
    name: String,
    /// 1–100 scopes `<verb>:<target>`: verb `read`, `vend` (and read), `lease` (and vend:
    /// leases and worker ids) or `admin` (and lease); target `*`, a sequence name, a prefix
    /// ending in `*` (`fedex-*`), `namespace:<namespace>` or `namespace:<prefix>*`. E.g.
    /// `["vend:fedex-*", "read:namespace:ups.5R8939.03"]`.
    scopes: Vec<String>,
}

/// A new token: `token` is the bearer secret, shown this once.
#[derive(Serialize, ToSchema)]
pub struct CreatedToken {
    #[serde(flatten)]
    view: TokenView,
    /// `svt_<id>_<64 hex digits>`: send as `Authorization: Bearer <token>`. Not stored; keep it.
    token: String,
}

#[derive(Serialize, ToSchema)]
pub struct TokenList {
    tokens: Vec<TokenView>,
}

const MAX_SCOPES: usize = 100;

#[utoipa::path(
    post, path = "/tokens", tag = "admin", request_body = CreateTokenBody,
    responses(
        (status = 201, description = "Created; the secret is in `token`, shown this once", body = CreatedToken),
        (status = 400, description = "invalid_name or invalid_request (a malformed scope)", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token is no admin of everything (admin:*)", body = ErrorBody),
        (status = 409, description = "token_name_taken", body = ErrorBody),
        (status = 413, description = "payload_too_large", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn create(
    caller: Caller,
    service: web::Data<Service>,
    body: JsonObject<CreateTokenBody>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Verb::Admin, Resource::Service)?;
    let name = SequenceName::parse(&body.name)?;
    if name.as_str().starts_with("bootstrap-") {
        return Err(ApiError::InvalidRequest(
            "token names starting with `bootstrap-` name the environment's tokens".into(),
        ));
    }
    if body.scopes.is_empty() || body.scopes.len() > MAX_SCOPES {
        return Err(ApiError::InvalidRequest(format!(
            "`scopes` must hold 1 to {MAX_SCOPES} scopes"
        )));
    }
    // Stored as written once parsed, so what is listed is what is checked.
    let scopes = body
        .scopes
        .iter()
        .map(|raw| Scope::parse(raw).map(|scope| scope.to_string()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| ApiError::InvalidRequest(err.to_string()))?;
    let new = secret::new_secret();
    let view = service
        .create_token(name.as_str(), &new.hash, &scopes, caller.name())
        .await?;
    tracing::info!(token = %view.name, token_id = view.id, by = caller.name(), "token created");
    let token = secret::token(view.id, &new.secret);
    Ok(HttpResponse::Created().json(CreatedToken { view, token }))
}

#[utoipa::path(
    get, path = "/tokens", tag = "admin",
    responses(
        (status = 200, description = "Every token, revoked ones too, oldest first; never a secret", body = TokenList),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token is no admin of everything (admin:*)", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn list(caller: Caller, service: web::Data<Service>) -> Result<HttpResponse, ApiError> {
    caller.require(Verb::Admin, Resource::Service)?;
    let tokens = service.list_tokens().await?;
    Ok(HttpResponse::Ok().json(TokenList { tokens }))
}

#[utoipa::path(
    delete, path = "/tokens/{id}", tag = "admin",
    params(("id" = i64, Path, description = "Token id", minimum = 1)),
    responses(
        (status = 200, description = "Revoked (revoking again answers the same); every instance refuses it within 2 s", body = TokenView),
        (status = 400, description = "invalid_request: not a token id", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token is no admin of everything (admin:*)", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn revoke(
    caller: Caller,
    service: web::Data<Service>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Verb::Admin, Resource::Service)?;
    let id: i64 =
        id.parse().ok().filter(|id| *id > 0).ok_or_else(|| {
            ApiError::InvalidRequest(format!("{:?} is not a token id", id.as_str()))
        })?;
    let view = service.revoke_token(id, caller.name()).await?;
    tracing::info!(token = %view.name, token_id = view.id, by = caller.name(), "token revoked");
    Ok(HttpResponse::Ok().json(view))
}
