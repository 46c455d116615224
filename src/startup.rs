//! Building and running the application: pools, migrations, the vend engine and the HTTP
//! server. `main` and the tests both start seqvend through `Application::build`.

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpServer};

use crate::auth::Tokens;
use crate::handlers;
use crate::metrics::Metrics;
use crate::registry::FormatCache;
use crate::request_log;
use crate::settings::Settings;
use crate::vend::Vender;
use crate::{db, migrate, watch};

pub struct Application {
    port: u16,
    server: Server,
}

impl Application {
    /// Connects to `database_url`, applies migrations and binds the listener (port 0 picks a
    /// free port, see `port`). Nothing is served until `run_until_stopped`.
    pub async fn build(settings: &Settings, database_url: &str) -> anyhow::Result<Self> {
        let (registry, vend_pool) = db::pools(database_url, &settings.database)?;
        db::wait_until_reachable(&registry, settings.database.startup_patience).await?;
        migrate::run(&registry).await?;
        let metrics = Arc::new(Metrics::new());
        let vender = Vender::start(vend_pool.clone(), metrics.clone(), settings.vend.clone());
        watch::spawn(registry.clone(), metrics.clone(), settings.watch.clone());

        let listener = TcpListener::bind(settings.listen)?;
        let port = listener.local_addr()?.port();
        let state = AppState {
            registry: web::Data::new(registry),
            vend_pool: web::Data::new(vend_pool),
            vender: web::Data::new(vender),
            formats: web::Data::new(FormatCache::new(settings.vend.statement_deadline)),
            metrics: web::Data::from(metrics),
            tokens: web::Data::new(settings.tokens.clone()),
            registry_deadline: web::Data::new(handlers::RegistryDeadline(
                settings.vend.statement_deadline,
            )),
        };
        // Process signals are `main`'s: actix would take SIGINT as a forced shutdown.
        let server = HttpServer::new(move || build_app(&state))
            .disable_signals()
            .workers(settings.workers)
            .backlog(4096)
            .listen(listener)?
            .run();
        Ok(Self { port, server })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }

    /// Serves until stopped through `handle` (graceful: stop accepting, finish what is in
    /// flight). Signals do not stop it by themselves; `main` turns them into `handle` calls.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}

#[derive(Clone)]
struct AppState {
    registry: web::Data<sqlx::PgPool>,
    vend_pool: web::Data<crate::db::VendPool>,
    vender: web::Data<Vender>,
    formats: web::Data<FormatCache>,
    metrics: web::Data<Metrics>,
    tokens: web::Data<Tokens>,
    registry_deadline: web::Data<handlers::RegistryDeadline>,
}

fn build_app(
    state: &AppState,
) -> App<
    impl actix_web::dev::ServiceFactory<
        actix_web::dev::ServiceRequest,
        Config = (),
        Response = actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .wrap(from_fn(request_log::observe))
        .app_data(state.registry.clone())
        .app_data(state.vend_pool.clone())
        .app_data(state.vender.clone())
        .app_data(state.formats.clone())
        .app_data(state.metrics.clone())
        .app_data(state.tokens.clone())
        .app_data(state.registry_deadline.clone())
        .app_data(handlers::json_config())
        .app_data(handlers::query_config())
        .app_data(handlers::path_config())
        .configure(handlers::routes)
        .default_service(web::to(handlers::not_found))
}
