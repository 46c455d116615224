//! Connections to PostgreSQL: a sqlx pool for the registry and admin queries, a
//! deadpool-postgres pool for the vend hot path, and the session settings both rely on.

use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Timeouts};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

use crate::primary;
use crate::settings::DatabaseSettings;

/// Session settings for every seqvend connection, both pools alike. `synchronous_commit = on`
/// is what makes a vend's commit wait for its WAL flush (and for a synchronous standby) before
/// the values are returned, whatever the server's or the role's default says. `search_path`:
/// see `migrate`. `client_min_messages`: no "schema already exists, skipping" at every start.
fn session_settings(settings: &DatabaseSettings) -> Vec<(&'static str, String)> {
    vec![
        ("synchronous_commit", "on".into()),
        ("search_path", "seqvend".into()),
        (
            "statement_timeout",
            settings.statement_timeout.as_millis().to_string(),
        ),
        ("idle_in_transaction_session_timeout", "60000".into()),
        ("client_min_messages", "warning".into()),
    ]
}

/// The registry pool. With several hosts in the URL it connects to the primary and follows
/// it through failovers (see `primary`).
pub fn registry_pool(url: &str, settings: &DatabaseSettings) -> anyhow::Result<PgPool> {
    let config = parse_url(url)?;
    let session = session_settings(settings);
    let finish = move |options: PgConnectOptions| {
        options.application_name("seqvend").options(session.clone())
    };
    let hosts = primary::hosts(&config);
    let (host, port) = hosts.first().context("DATABASE_URL names no host")?;
    let pool = PgPoolOptions::new()
        .max_connections(settings.admin_pool_size)
        .min_connections(0)
        .acquire_timeout(settings.connect_timeout)
        .connect_lazy_with(finish(primary::sqlx_options(&config, host, *port)));
    if hosts.len() > 1 {
        primary::follow(pool.clone(), config, finish);
    }
    Ok(pool)
}

fn parse_url(url: &str) -> anyhow::Result<tokio_postgres::Config> {
    tokio_postgres::Config::from_str(url).context("DATABASE_URL is not a valid PostgreSQL URL")
}

pub fn vend_pool(url: &str, settings: &DatabaseSettings) -> anyhow::Result<Pool> {
    let mut config = parse_url(url)?;
    config
        .application_name("seqvend")
        .options(
            session_settings(settings)
                .iter()
                .map(|(name, value)| format!("-c {name}={value}"))
                .collect::<Vec<_>>()
                .join(" "),
        )
        .connect_timeout(settings.connect_timeout);
    let manager = Manager::from_config(
        config,
        tokio_postgres::NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let timeouts = Timeouts {
        wait: Some(settings.connect_timeout),
        create: Some(settings.connect_timeout),
        recycle: Some(settings.connect_timeout),
    };
    Pool::builder(manager)
        .max_size(settings.vend_pool_size)
        .timeouts(timeouts)
        .runtime(Runtime::Tokio1)
        .build()
        .context("building the vend connection pool")
}

/// True when the failure means "the database cannot serve now" (down, restarting, failing
/// over, overloaded, too slow) rather than a fault in the request or in seqvend.
pub fn is_unavailable(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        if let Some(pg) = cause.downcast_ref::<tokio_postgres::Error>() {
            return pg.is_closed() || pg.code().is_none_or(|c| unavailable_code(c.code()));
        }
        if let Some(pool) = cause.downcast_ref::<deadpool_postgres::PoolError>() {
            return !matches!(pool, deadpool_postgres::PoolError::PostCreateHook(_));
        }
        if let Some(sqlx) = cause.downcast_ref::<sqlx::Error>() {
            return match sqlx {
                sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => true,
                sqlx::Error::Database(db) => db.code().is_some_and(|c| unavailable_code(&c)),
                _ => false,
            };
        }
        cause.downcast_ref::<std::io::Error>().is_some()
            || cause
                .downcast_ref::<tokio::time::error::Elapsed>()
                .is_some()
    })
}

/// SQLSTATEs that mean the server cannot take work now: connection exceptions (08),
/// shutdowns and cancellations (57), lack of resources (53), a read-only standby (25006).
fn unavailable_code(code: &str) -> bool {
    code.starts_with("08") || code.starts_with("57") || code.starts_with("53") || code == "25006"
}

/// Waits until the database answers, for at most `patience`; used once at startup so that
/// seqvend and its database can be started together.
pub async fn wait_until_reachable(pool: &PgPool, patience: Duration) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        match sqlx::query("SELECT 1").execute(pool).await {
            Ok(_) => return Ok(()),
            Err(err) if tokio::time::Instant::now() < deadline => {
                tracing::info!(error = %err, "waiting for the database");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(err) => return Err(err).context("the database did not become reachable"),
        }
    }
}
