//! Connections to PostgreSQL: a sqlx pool for the registry and admin queries, a
//! deadpool-postgres pool for the vend hot path, the session settings both rely on, and how
//! `DATABASE_URL` becomes connections — TLS as libpq reads it (`tls`), every host tried in turn
//! under one deadline each (`connect`), and only ever a read-write session.

pub(crate) mod connect;
mod durable;
mod pg_error;
mod primary;
mod registry;
mod target;
mod tls;
mod vend_pool;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use deadpool::managed::Timeouts;
use deadpool::Runtime;
use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;

use crate::settings::DatabaseSettings;
use connect::Connector;
pub use durable::begin_durable;
use primary::Primary;
use target::Target;
use vend_pool::VendManager;
pub use vend_pool::{discard, VendConnection, VendPool};

/// Session settings for every seqvend connection, both pools alike. `synchronous_commit = on`
/// is what makes a vend's commit wait for its WAL flush (and for a synchronous standby) before
/// the values are returned, whatever the server's or the role's default says. `search_path`:
/// see `migrate`. `seqvend.lock_timeout`: see `DatabaseSettings::lock_timeout`.
/// `client_min_messages`: no "schema already exists, skipping" at every start.
fn session_settings(settings: &DatabaseSettings) -> Vec<(&'static str, String)> {
    vec![
        ("synchronous_commit", "on".into()),
        ("search_path", "seqvend".into()),
        (
            "statement_timeout",
            settings.statement_timeout.as_millis().to_string(),
        ),
        // Read by the vend statement, which sets `lock_timeout` for its own transaction.
        (
            "seqvend.lock_timeout",
            settings.lock_timeout.as_millis().to_string(),
        ),
        ("idle_in_transaction_session_timeout", "60000".into()),
        ("client_min_messages", "warning".into()),
    ]
}

/// Both pools, following one primary: when it moves, the vend pool's connections to the old
/// one end too.
pub fn pools(url: &str, settings: &DatabaseSettings) -> anyhow::Result<(PgPool, VendPool)> {
    let database = Database::new(url, settings)?;
    Ok((database.registry_pool()?, database.vend_pool()?))
}

/// The registry pool alone. With several hosts in the URL it follows the primary through
/// failovers (see `primary`).
pub fn registry_pool(url: &str, settings: &DatabaseSettings) -> anyhow::Result<PgPool> {
    Database::new(url, settings)?.registry_pool()
}

/// The vend pool alone: each new connection goes to the first host that accepts writes.
pub fn vend_pool(url: &str, settings: &DatabaseSettings) -> anyhow::Result<VendPool> {
    Database::new(url, settings)?.vend_pool()
}

struct Database {
    target: Arc<Target>,
    primary: Primary,
    settings: DatabaseSettings,
}

impl Database {
    fn new(url: &str, settings: &DatabaseSettings) -> anyhow::Result<Self> {
        let target = Target::parse(url)?;
        let hosts: Vec<String> = (0..target.host_count())
            .map(|i| target.describe(i))
            .collect();
        tracing::info!(?hosts, tls = ?target.tls.mode(), "database connections");
        Ok(Self {
            target: Arc::new(target),
            primary: Primary::default(),
            settings: settings.clone(),
        })
    }

    fn connector(&self, application_name: &'static str) -> anyhow::Result<Connector> {
        let options = session_settings(&self.settings)
            .iter()
            .map(|(name, value)| format!("-c {name}={value}"))
            .collect::<Vec<_>>()
            .join(" ");
        Connector::new(
            self.target.clone(),
            self.primary.clone(),
            &self.settings,
            application_name,
            options,
        )
    }

    fn registry_pool(&self) -> anyhow::Result<PgPool> {
        let session = session_settings(&self.settings);
        let finish = move |options: PgConnectOptions| {
            options.application_name("seqvend").options(session.clone())
        };
        let first = finish(self.target.sqlx_options(self.primary.host()));
        let pool = registry::pool(first, self.primary.clone(), &self.settings);
        if self.target.host_count() > 1 {
            let watcher = self.connector("seqvend-watch")?;
            primary::follow(pool.clone(), watcher, self.settings.connect_timeout, finish);
        }
        Ok(pool)
    }

    fn vend_pool(&self) -> anyhow::Result<VendPool> {
        let connector = self.connector("seqvend")?;
        let hosts = self.target.host_count() as u32;
        let manager = VendManager::new(connector);
        let timeout = self.settings.connect_timeout;
        let timeouts = Timeouts {
            wait: Some(timeout),
            // Each host has `timeout` of its own (see `connect`); this is only a backstop.
            create: Some(timeout * hosts + Duration::from_millis(500)),
            recycle: Some(timeout),
        };
        VendPool::builder(manager)
            .max_size(self.settings.vend_pool_size)
            .timeouts(timeouts)
            .runtime(Runtime::Tokio1)
            .build()
            .context("building the vend connection pool")
    }
}

/// One sequence the database could not serve now, while the statement itself succeeded: a
/// lock another session held past the vend statement's lock timeout, a deadlock or a
/// serialization conflict. Says which.
#[derive(Debug, thiserror::Error)]
#[error("the sequence could not be served now: {0}")]
pub struct Busy(pub String);

/// True when the failure means "the database cannot serve now" (down, restarting, failing
/// over, overloaded, too slow) rather than a fault in the request or in seqvend.
pub fn is_unavailable(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        if cause.downcast_ref::<Busy>().is_some() {
            return true;
        }
        if let Some(pg) = cause.downcast_ref::<tokio_postgres::Error>() {
            return pg.is_closed() || pg.code().is_none_or(|c| unavailable_code(c.code()));
        }
        if let Some(pool) =
            cause.downcast_ref::<deadpool::managed::PoolError<tokio_postgres::Error>>()
        {
            return !matches!(pool, deadpool::managed::PoolError::PostCreateHook(_));
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
/// shutdowns and cancellations (57), lack of resources (53), a read-only standby (25006), and
/// the transient conflicts a retry gets past: a lock not granted within `lock_timeout`
/// (55P03), a deadlock (40P01), a serialization failure (40001).
fn unavailable_code(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("57")
        || code.starts_with("53")
        || matches!(code, "25006" | "55P03" | "40P01" | "40001")
}

/// Waits until the database answers, for at most `patience`; used once at startup so that
/// seqvend and its database can be started together.
pub async fn wait_until_reachable(pool: &PgPool, patience: Duration) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        match sqlx::query("SELECT 1").execute(pool).await {
            Ok(_) => return Ok(()),
            Err(err) if is_misconfiguration(&err) => {
                return Err(err).context("cannot connect to the database");
            }
            Err(err) if tokio::time::Instant::now() < deadline => {
                tracing::info!(error = %err, "waiting for the database");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(err) => return Err(err).context("the database did not become reachable"),
        }
    }
}

/// Failures that waiting will not mend: the server's certificate is refused, or the server
/// refuses seqvend (password, `pg_hba.conf`, a required TLS mode).
fn is_misconfiguration(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Tls(_) | sqlx::Error::Configuration(_) => true,
        // sqlx's rustls reports a refused certificate as an I/O error around rustls's.
        sqlx::Error::Io(io) => io
            .get_ref()
            .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some()),
        sqlx::Error::Database(db) => db.code().is_some_and(|code| code.starts_with("28")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_conflicts_are_unavailable_and_faults_are_not() {
        for code in [
            "55P03", "40P01", "40001", "57014", "08006", "53300", "25006",
        ] {
            assert!(unavailable_code(code), "{code}");
        }
        for code in ["2200H", "42P01", "XX000", "23505"] {
            assert!(!unavailable_code(code), "{code}");
        }
        let busy = anyhow::Error::new(Busy("lock timeout".into())).context("leasing");
        assert!(is_unavailable(&busy));
    }
}
