//! `seqvend serve`: start the service (and, with no DATABASE_URL, a private PostgreSQL).

use anyhow::Context;
use seqvend::local_pg::{self, LocalCluster, Shutdown};
use seqvend::settings::Settings;
use seqvend::startup::Application;
use seqvend::telemetry;

const USAGE: &str =
    "usage: seqvend serve\n\nConfiguration comes from the environment; see README.md.";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match std::env::args().nth(1).as_deref() {
        Some("serve") => serve().await,
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
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
    tracing::info!(address = %settings.listen.ip(), port = app.port(), "seqvend is serving");
    let served = app.run_until_stopped().await;
    if let Some(cluster) = cluster {
        tracing::info!("stopping the private PostgreSQL cluster");
        tokio::task::spawn_blocking(move || cluster.stop(Shutdown::Fast)).await??;
    }
    served.context("serving HTTP")
}

async fn start_private_cluster(settings: &Settings) -> anyhow::Result<LocalCluster> {
    let dir = settings.data_dir.clone();
    tracing::info!(dir = %dir.display(), "no DATABASE_URL: starting a private PostgreSQL cluster");
    // Started from this (main) thread: the cluster lives as long as the process.
    let cluster = LocalCluster::open(&dir, &[])
        .with_context(|| format!("preparing the PostgreSQL cluster in {}", dir.display()))?;
    cluster.start()?;
    local_pg::ensure_database(&cluster, "seqvend").await?;
    tracing::info!(port = cluster.port(), "private PostgreSQL cluster is up");
    Ok(cluster)
}
