//! The OpenAPI document, generated from the handlers and their types, served at
//! `/openapi.json`.

use actix_web::HttpResponse;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "seqvend",
        description = "Carrier number ranges as PostgreSQL sequences, vended over HTTP: never twice, \
                       never outside the range, and only once the allocation is durable."
    ),
    paths(
        super::vend::next,
        super::sequences::create,
        super::sequences::add_range,
        super::sequences::get,
        super::sequences::list,
        super::sequences::update,
        super::sequences::retire,
        super::events::list,
        super::leases::lease,
        super::tracking::get,
        super::health::healthz,
        super::health::readyz,
        super::health::metrics,
        super::ids::snowflake,
        super::ids::decode,
        super::ids::uuidv7,
        super::workers::lease,
        super::workers::renew,
        super::events::list_all,
        super::tokens::create,
        super::tokens::list,
        super::tokens::revoke,
        super::families::create,
        super::families::list,
        super::families::get,
        super::families::retire,
        super::counters::next,
        super::counters::get,
        super::usage::get,
        super::overview::get,
        super::whoami::get,
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

pub async fn document() -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(
        ApiDoc::openapi()
            .to_json()
            .expect("the document serialises"),
    )
}
