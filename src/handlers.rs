//! HTTP handlers and the route table. Handlers parse requests into domain types at the
//! edge and map outcomes to responses; the work happens in `ranges` and `vend`.

mod extract;
mod health;
mod sequences;
mod vend;

use actix_web::{web, HttpRequest, HttpResponse};

use crate::error::ApiError;

pub use extract::{json_config, path_config, query_config, JSON_LIMIT};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/healthz")
            .route(web::get().to(health::healthz))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/readyz")
            .route(web::get().to(health::readyz))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/metrics")
            .route(web::get().to(health::metrics))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/sequences")
            .route(web::get().to(sequences::list))
            .route(web::post().to(sequences::create))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/sequences/{name}")
            .route(web::get().to(sequences::get))
            .route(web::delete().to(sequences::retire))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/sequences/{name}/ranges")
            .route(web::post().to(sequences::add_range))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/sequences/{name}/next")
            .route(web::post().to(vend::next))
            .default_service(web::to(method_not_allowed)),
    );
}

/// Answers any path no route matches.
pub async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound(format!(
        "no route for {} {}",
        req.method(),
        req.path()
    )))
}

async fn method_not_allowed(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::MethodNotAllowed(format!(
        "{} {}",
        req.method(),
        req.path()
    )))
}
