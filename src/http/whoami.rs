//! `GET /whoami`: the caller's token name and scopes, so a client (the console) can show what
//! the token may do and hide what it may not. The server still decides every request.

use actix_web::HttpResponse;
use serde::Serialize;
use utoipa::ToSchema;

use super::caller::Caller;
use super::error::{ApiError, ErrorBody};

#[derive(Serialize, ToSchema)]
pub struct WhoAmI {
    /// The token's name (never its secret), as logs and the audit trail show it.
    name: String,
    /// `<verb>:<target>` scopes, e.g. `["admin:*"]`.
    scopes: Vec<String>,
}

#[utoipa::path(
    get, path = "/whoami", tag = "read",
    responses(
        (status = 200, description = "The token's name and scopes", body = WhoAmI),
        (status = 401, description = "unauthorized", body = ErrorBody),
    )
)]
pub async fn get(caller: Caller) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(WhoAmI {
        name: caller.name().to_owned(),
        scopes: caller.scopes(),
    }))
}
