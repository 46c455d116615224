//! The HTTP edge: the route table, handlers, the `Caller` extractor, the request log, OpenAPI
//! and the mapping of errors to statuses (the only module that knows HTTP). Handlers parse
//! requests into domain types, authorise, and map outcomes to responses; the use-cases are
//! `service`'s.

mod access;
mod caller;
mod console;
mod counters;
mod deadline;
pub mod error;
mod error_translation;
mod events;
mod extract;
mod families;
mod health;
mod idempotent;
mod ids;
mod leases;
mod openapi;
mod overview;
mod paging;
mod request_log;
mod sequences;
mod server;
mod tokens;
mod tracking;
mod usage;
mod vend;
mod whoami;
mod workers;

use actix_web::middleware::from_fn;
use actix_web::{web, HttpRequest, HttpResponse};

use error::ApiError;

pub use actix_web::dev::{Server, ServerHandle};
pub use extract::{json_config, path_config, query_config, JSON_LIMIT};
pub use openapi::ApiDoc;
pub use server::{serve, Served};

/// Routes with a `{name}` segment are matched by regular expression, in the order they are
/// registered: the vend route comes first, so the hot path costs one match. Routes served by
/// the registry pool answer 503 past the registry deadline, and those that hand out numbers
/// past the vend deadline, both counted from the request's arrival (see `deadline`).
/// `/metrics`: on the main listener, or alone on its own address (`SEQVEND_METRICS_LISTEN`).
pub fn metrics_route(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/metrics", "GET").route(web::get().to(health::metrics)));
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        resource("/sequences/{name}/next", "POST").route(
            web::post()
                .to(vend::next)
                .wrap(from_fn(deadline::bound_vend)),
        ),
    )
    .service(
        resource("/tracking-numbers/{number}", "GET")
            .route(web::get().to(tracking::get))
            .wrap(from_fn(deadline::bound)),
    )
    .service(resource("/healthz", "GET").route(web::get().to(health::healthz)))
    .service(
        resource("/readyz", "GET")
            .route(web::get().to(health::readyz))
            .wrap(from_fn(deadline::bound)),
    )
    .service(resource("/openapi.json", "GET").route(web::get().to(openapi::document)))
    .service(
        resource("/sequences", "GET, POST")
            .route(web::get().to(sequences::list))
            .route(web::post().to(sequences::create))
            .wrap(from_fn(deadline::bound)),
    )
    .service(
        // DELETE bounds its own statements: it may wait out instances' cached leases.
        resource("/sequences/{name}", "GET, PATCH, DELETE")
            .route(web::get().to(sequences::get).wrap(from_fn(deadline::bound)))
            .route(
                web::patch()
                    .to(sequences::update)
                    .wrap(from_fn(deadline::bound)),
            )
            .route(web::delete().to(sequences::retire)),
    )
    .service(
        resource("/sequences/{name}/usage", "GET")
            .route(web::get().to(usage::get))
            .wrap(from_fn(deadline::bound)),
    )
    .service(
        resource("/overview", "GET")
            .route(web::get().to(overview::get))
            .wrap(from_fn(deadline::bound)),
    )
    .service(resource("/whoami", "GET").route(web::get().to(whoami::get)))
    .service(
        resource("/sequences/{name}/events", "GET")
            .route(web::get().to(events::list))
            .wrap(from_fn(deadline::bound)),
    )
    .service(
        resource("/sequences/{name}/leases", "POST").route(
            web::post()
                .to(leases::lease)
                .wrap(from_fn(deadline::bound_vend)),
        ),
    )
    .service(
        resource("/sequences/{name}/ranges", "POST")
            .route(web::post().to(sequences::add_range))
            .wrap(from_fn(deadline::bound)),
    )
    .service(
        resource("/families/{family}/counters/{key}/next", "POST").route(
            web::post()
                .to(counters::next)
                .wrap(from_fn(deadline::bound_vend)),
        ),
    )
    .service(
        resource("/families/{family}/counters/{key}", "GET")
            .route(web::get().to(counters::get))
            .wrap(from_fn(deadline::bound)),
    )
    .service(
        resource("/families", "GET, POST")
            .route(web::get().to(families::list))
            .route(web::post().to(families::create))
            .wrap(from_fn(deadline::bound)),
    )
    .service(
        resource("/families/{family}", "GET, DELETE")
            .route(web::get().to(families::get))
            .route(web::delete().to(families::retire))
            .wrap(from_fn(deadline::bound)),
    )
    .service(
        resource("/ids/snowflake", "POST").route(
            web::post()
                .to(ids::snowflake)
                .wrap(from_fn(deadline::bound_vend)),
        ),
    )
    .service(resource("/ids/snowflake/{id}", "GET").route(web::get().to(ids::decode)))
    .service(resource("/ids/uuidv7", "POST").route(web::post().to(ids::uuidv7)))
    .service(
        resource("/workers/lease", "POST")
            .route(web::post().to(workers::lease))
            .wrap(from_fn(deadline::bound)),
    )
    .service(
        resource("/workers/{worker_id}/renew", "POST")
            .route(web::post().to(workers::renew))
            .wrap(from_fn(deadline::bound)),
    )
    .service(
        resource("/events", "GET")
            .route(web::get().to(events::list_all))
            .wrap(from_fn(deadline::bound)),
    )
    .service(
        resource("/tokens", "GET, POST")
            .route(web::get().to(tokens::list))
            .route(web::post().to(tokens::create))
            .wrap(from_fn(deadline::bound)),
    )
    .service(
        resource("/tokens/{id}", "DELETE")
            .route(web::delete().to(tokens::revoke))
            .wrap(from_fn(deadline::bound)),
    );
}

/// A resource answering other methods with 405 and the `Allow` header.
fn resource(path: &str, allowed: &'static str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(move |req: HttpRequest| async move {
        Err::<HttpResponse, _>(ApiError::MethodNotAllowed {
            what: format!("{} {}", req.method(), req.path()),
            allowed,
        })
    }))
}

/// Answers any path no route matches.
pub async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound(format!(
        "no route for {} {}",
        req.method(),
        req.path()
    )))
}
