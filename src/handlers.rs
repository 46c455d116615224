//! HTTP handlers and the route table. Handlers parse requests into domain types at the
//! edge and map outcomes to responses; the work happens in `ranges` and `vend`.

mod extract;
mod health;
mod sequences;
mod vend;

use actix_web::{web, HttpRequest, HttpResponse};

use crate::error::ApiError;

pub use extract::{json_config, path_config, query_config, JSON_LIMIT};

/// Routes with a `{name}` segment are matched by regular expression, in the order they are
/// registered: the vend route comes first, so the hot path costs one match.
pub fn routes(cfg: &mut web::ServiceConfig) {
    let resource = |path: &str| web::resource(path).default_service(web::to(method_not_allowed));
    cfg.service(resource("/sequences/{name}/next").route(web::post().to(vend::next)))
        .service(resource("/healthz").route(web::get().to(health::healthz)))
        .service(resource("/readyz").route(web::get().to(health::readyz)))
        .service(resource("/metrics").route(web::get().to(health::metrics)))
        .service(
            resource("/sequences")
                .route(web::get().to(sequences::list))
                .route(web::post().to(sequences::create)),
        )
        .service(
            resource("/sequences/{name}")
                .route(web::get().to(sequences::get))
                .route(web::delete().to(sequences::retire)),
        )
        .service(resource("/sequences/{name}/ranges").route(web::post().to(sequences::add_range)));
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
