//! The operator console at `/console/`: static HTML, CSS and ES modules compiled into the
//! binary, served with a strict Content-Security-Policy. The pages call the JSON API with the
//! bearer token the person pasted (kept in the tab's session storage); nothing here reads the
//! registry. Every URL the pages use is relative, so the console works under a reverse proxy's
//! path prefix. See docs/console.md.

mod assets;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{web, HttpRequest, HttpResponse};

use super::error::ApiError;

/// No inline script or style, no other origin, no framing, no `<base>`: a name that slipped
/// into the markup could still run nothing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; \
     base-uri 'none'; form-action 'self'";

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource("/console", "GET").route(web::get().to(to_slash)))
        .service(super::resource("/console/{path:.*}", "GET").route(web::get().to(asset)));
}

/// `/console` → `console/`: relative, so a path prefix added by a proxy is kept.
async fn to_slash() -> HttpResponse {
    HttpResponse::PermanentRedirect()
        .insert_header((header::LOCATION, "console/"))
        .finish()
}

/// One of the console's files; `/console/` is its page.
async fn asset(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let path = req.match_info().query("path");
    let path = if path.is_empty() { "index.html" } else { path };
    let Some(asset) = assets::find(path) else {
        return Err(ApiError::NotFound(format!("no console file {path:?}")));
    };
    let mut response = HttpResponse::Ok();
    response
        .insert_header((header::CONTENT_TYPE, asset.content_type))
        // Served from the binary: a new build may change any file, so always revalidate.
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::ETAG, assets::etag()));
    for (name, value) in security_headers() {
        response.insert_header((name, value));
    }
    if req
        .headers()
        .get(header::IF_NONE_MATCH)
        .is_some_and(|tag| tag.as_bytes() == assets::etag().as_bytes())
    {
        return Ok(response
            .status(actix_web::http::StatusCode::NOT_MODIFIED)
            .finish());
    }
    Ok(response.body(asset.body))
}

/// The headers every console file is served with.
fn security_headers() -> [(header::HeaderName, HeaderValue); 5] {
    [
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ),
    ]
}
