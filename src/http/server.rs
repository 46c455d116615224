//! The HTTP server: the actix `App` (state, extractor configuration, the request log, the
//! route table) and the listeners it serves on.

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::dev::{Server, ServerHandle};
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpServer};

use super::request_log;
use crate::service::Service;

/// The servers `serve` started: the main one, and the one serving `/metrics` alone (with its
/// port) when it has an address of its own.
pub struct Served {
    pub server: Server,
    pub metrics: Option<(u16, ServerHandle)>,
}

/// Serves the API on `listener` with `workers` threads, and `/metrics` on `metrics_listen`
/// alone when given (otherwise on `listener` too); the console too when `console` is on. Process signals are `main`'s: actix would
/// take SIGINT as a forced shutdown.
pub fn serve(
    service: Arc<Service>,
    listener: TcpListener,
    workers: usize,
    metrics_listen: Option<std::net::SocketAddr>,
    console: bool,
) -> anyhow::Result<Served> {
    let state = AppState {
        service: web::Data::from(service),
        metrics_here: metrics_listen.is_none(),
        console,
    };
    let metrics = match metrics_listen {
        None => None,
        Some(address) => Some(serve_metrics_alone(address, &state)?),
    };
    let server = HttpServer::new(move || build_app(&state))
        .disable_signals()
        .workers(workers)
        .backlog(4096)
        .listen(listener)?
        .run();
    Ok(Served { server, metrics })
}

/// What every worker serves from: the service, whether the main listener serves
/// `/metrics` (no address of its own given), and whether it serves the console.
#[derive(Clone)]
struct AppState {
    service: web::Data<Service>,
    metrics_here: bool,
    console: bool,
}

/// Serves `/metrics` alone on `address`; returns its port and handle.
fn serve_metrics_alone(
    address: std::net::SocketAddr,
    state: &AppState,
) -> anyhow::Result<(u16, ServerHandle)> {
    let listener = TcpListener::bind(address)?;
    let port = listener.local_addr()?.port();
    let state = state.clone();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.service.clone())
            .configure(super::metrics_route)
            .default_service(web::to(super::not_found))
    })
    .disable_signals()
    .workers(1)
    .listen(listener)?
    .run();
    let handle = server.handle();
    tokio::spawn(server);
    Ok((port, handle))
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
        // Outermost: a request's deadline counts from here.
        .wrap(from_fn(super::deadline::clock))
        .app_data(state.service.clone())
        .app_data(super::json_config())
        .app_data(super::query_config())
        .app_data(super::path_config())
        .configure(super::routes)
        .configure(|cfg| {
            if state.metrics_here {
                super::metrics_route(cfg);
            }
            if state.console {
                super::console::routes(cfg);
            }
        })
        .default_service(web::to(super::not_found))
}
