//! Liveness, readiness and metrics: no authentication, logged at DEBUG.

use crate::service::Service;
use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, ErrorBody};
use crate::metrics::saturating_gauge;
use crate::migrate::MIGRATOR;

/// `{"status": "ok"}` or `{"status": "ready"}`.
#[derive(Serialize, ToSchema)]
pub struct Health {
    status: &'static str,
}

#[utoipa::path(get, path = "/healthz", tag = "operations", security(()),
    responses((status = 200, description = "Alive", body = Health)))]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(Health { status: "ok" })
}

/// Ready when the database answers and every migration this build knows has been applied.
#[utoipa::path(get, path = "/readyz", tag = "operations", security(()),
    responses(
        (status = 200, description = "Ready", body = Health),
        (status = 503, description = "unavailable: database unreachable or not migrated", body = ErrorBody),
    ))]
pub async fn readyz(service: web::Data<Service>) -> Result<HttpResponse, ApiError> {
    let applied = sqlx::query_scalar!(
        "SELECT max(version) AS version FROM seqvend._sqlx_migrations WHERE success"
    )
    .fetch_one(service.registry())
    .await
    .map_err(|err| {
        tracing::debug!(error = %err, "readiness check failed");
        ApiError::Unavailable("the database is unreachable or not migrated")
    })?;
    let expected = MIGRATOR.iter().map(|m| m.version).max();
    if applied < expected {
        return Err(ApiError::Unavailable("the database is not migrated yet"));
    }
    Ok(HttpResponse::Ok().json(Health { status: "ready" }))
}

#[utoipa::path(get, path = "/metrics", tag = "operations", security(()),
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain", body = String)))]
pub async fn metrics(service: web::Data<Service>) -> HttpResponse {
    let (metrics, cache) = (service.metrics(), service.cache());
    let (vend_pool, registry_pool) = (service.vend_pool(), service.registry());
    metrics
        .cache_held
        .set(saturating_gauge(u128::from(cache.held_values())));
    let gauge = |pool: &str, state: &str, value: usize| {
        metrics
            .pool_connections
            .with_label_values(&[pool, state])
            .set(value as i64);
    };
    let vend = vend_pool.status();
    gauge("vend", "open", vend.size);
    gauge("vend", "idle", vend.available);
    gauge("vend", "max", vend.max_size);
    gauge("vend", "waiting", vend.waiting);
    gauge("registry", "open", registry_pool.size() as usize);
    gauge("registry", "idle", registry_pool.num_idle());
    gauge(
        "registry",
        "max",
        registry_pool.options().get_max_connections() as usize,
    );
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(metrics.render())
}
