//! `seqvend serve`: start the service (and, with no DATABASE_URL, a private PostgreSQL).
//! `seqvend healthcheck [URL]`: ask a running seqvend whether it is ready (for containers).
//! Every other command talks to a running seqvend over HTTP (`seqvend::cli`).

use anyhow::Context;
use clap::Parser;
use seqvend::cli::{self, Cli, Command};
use seqvend::local_pg::{self, LocalCluster, Shutdown};
use seqvend::settings::Settings;
use seqvend::startup::Application;
use seqvend::{healthcheck, telemetry};
use tokio::signal::unix::{signal, Signal, SignalKind};

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Serve => tokio::runtime::Runtime::new()?.block_on(serve()),
        Command::Healthcheck { url } => {
            // One line for the container's health log, and exit 1, Docker's "unhealthy".
            if let Err(err) = healthcheck::run(url.as_deref()) {
                eprintln!("unhealthy: {err:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Remote(command) => std::process::exit(cli::run(*command)),
    }
}

async fn serve() -> anyhow::Result<()> {
    let settings = Settings::from_env()?;
    telemetry::init(settings.log_json);
    if settings.tokens.disabled() {
        tracing::warn!("AUTHENTICATION IS DISABLED: anyone who can reach {} may create, vend and retire sequences", settings.listen);
    }
    let (cluster, url) = match &settings.database_url {
        Some(url) => (None, url.clone()),
        None => {
            let cluster = start_private_cluster(&settings).await?;
            let url = cluster.url("seqvend");
            (Some(cluster), url)
        }
    };
    let app = Application::build(&settings, &url).await?;
    let forced = stop_on_signals(app.handle())?;
    tracing::info!(address = %settings.listen.ip(), port = app.port(), "seqvend is serving");
    let served = tokio::select! {
        served = app.run_until_stopped() => served.context("serving HTTP"),
        () = forced => Err(anyhow::anyhow!("stopped by a second signal, without waiting for the requests in flight")),
    };
    // Only now, with every request answered (or given up on), may PostgreSQL go.
    if let Some(cluster) = cluster {
        tracing::info!("stopping the private PostgreSQL cluster");
        tokio::task::spawn_blocking(move || cluster.stop(Shutdown::Fast)).await??;
    }
    served
}

async fn start_private_cluster(settings: &Settings) -> anyhow::Result<LocalCluster> {
    let dir = settings.data_dir.clone();
    tracing::info!(dir = %dir.display(), "no DATABASE_URL: starting a private PostgreSQL cluster");
    let cluster = tokio::task::spawn_blocking(move || {
        let cluster = LocalCluster::open(&dir, &[])
            .with_context(|| format!("preparing the PostgreSQL cluster in {}", dir.display()))?;
        cluster.start()?;
        anyhow::Ok(cluster)
    })
    .await??;
    local_pg::ensure_database(&cluster, "seqvend").await?;
    tracing::info!(port = cluster.port(), "private PostgreSQL cluster is up");
    Ok(cluster)
}

/// SIGINT (Ctrl-C) and SIGTERM both stop the server gracefully: no new connections, requests
/// in flight answered. The returned future resolves at a second such signal, or at SIGQUIT,
/// for an operator who will not wait: actix takes no second stop command, so `serve` stops
/// waiting for the server instead. Until this is called, the default actions apply: the
/// process ends, and the private cluster with it (immediate shutdown; PostgreSQL recovers on
/// the next start).
fn stop_on_signals(
    server: seqvend::http::ServerHandle,
) -> std::io::Result<impl std::future::Future<Output = ()>> {
    // Registered here, not in the task, so that no signal slips by before the task runs.
    let mut signals = Signals {
        interrupt: signal(SignalKind::interrupt())?,
        terminate: signal(SignalKind::terminate())?,
        quit: signal(SignalKind::quit())?,
    };
    let (force, forced) = tokio::sync::oneshot::channel();
    // Each stop is requested before it is logged: logging panics when stdout and stderr are
    // gone (a closed terminal or a dead parent), and must not leave seqvend unstoppable.
    tokio::spawn(async move {
        let mut name = signals.next().await;
        if name != "SIGQUIT" {
            drop(server.stop(true));
            tracing::info!(signal = name, "stopping: finishing the requests in flight");
            name = signals.next().await;
        }
        let _ = force.send(());
        tracing::warn!(
            signal = name,
            "stopping now, without waiting for requests in flight"
        );
    });
    Ok(async move {
        if forced.await.is_err() {
            // The task ended without forcing: nothing will force the stop.
            std::future::pending::<()>().await;
        }
    })
}

struct Signals {
    interrupt: Signal,
    terminate: Signal,
    quit: Signal,
}

impl Signals {
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.quit.recv() => "SIGQUIT",
        }
    }
}
