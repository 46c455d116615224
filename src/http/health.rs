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

/// Ready when a writable primary answers within the registry deadline and every migration
/// this build knows has been applied there. A server that answers read-only (a standby, a
/// demoted leader, a primary set read-only) is not ready: no value could be vended through it,
/// and a load balancer should send requests to an instance that can.
#[utoipa::path(get, path = "/readyz", tag = "operations", security(()),
    responses(
        (status = 200, description = "Ready", body = Health),
        (status = 503, description = "unavailable: no writable primary reachable, or not migrated", body = ErrorBody),
    ))]
pub async fn readyz(service: web::Data<Service>) -> Result<HttpResponse, ApiError> {
    let check = sqlx::query!(
        r#"SELECT max(version) AS version,
                  current_setting('transaction_read_only') = 'off' AS "writable!"
             FROM seqvend._sqlx_migrations WHERE success"#
    )
    .fetch_one(service.registry());
    let unreachable =
        ApiError::Unavailable("no writable primary is reachable, or it is not migrated");
    let row = match tokio::time::timeout(service.registry_deadline(), check).await {
        Ok(Ok(row)) => row,
        Ok(Err(err)) => {
            tracing::debug!(error = %err, "readiness check failed");
            return Err(unreachable);
        }
        Err(_) => return Err(unreachable),
    };
    if !row.writable {
        return Err(ApiError::Unavailable(
            "the database answers read-only: no writable primary is reachable",
        ));
    }
    let expected = MIGRATOR.iter().map(|m| m.version).max();
    if row.version < expected {
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
    let (open, idle, max) = registry_pool.connections();
    gauge("registry", "open", open as usize);
    gauge("registry", "idle", idle);
    gauge("registry", "max", max as usize);
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(metrics.render())
}
