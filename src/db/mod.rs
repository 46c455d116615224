//! Connections to PostgreSQL: a sqlx pool for the registry and admin queries, a
//! deadpool-postgres pool for the vend hot path, the session settings both rely on, and how
//! `DATABASE_URL` becomes connections — TLS as libpq reads it (`tls`), every host tried in turn
//! under one deadline each (`connect`), and only ever a read-write session. The vend pool may
//! go through a pooler in transaction mode (`pooler`); the registry pool, and with it the
//! notification listener and migrations, always reaches PostgreSQL itself (the direct URL).

pub(crate) mod connect;
mod durable;
mod failure;
mod pg_error;
mod pooler;
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

use crate::settings::{DatabaseSettings, Pooler};
use connect::Connector;
pub use durable::begin_durable;
pub use failure::{is_unavailable, Busy, DbFailure};
use pooler::Route;
use primary::Primary;
use target::Target;
use vend_pool::VendManager;
pub use vend_pool::{discard, TypedParam, VendConnection, VendPool};

/// Session settings for every seqvend connection, both pools alike. `synchronous_commit = on`
/// is what makes a vend's commit wait for its WAL flush (and for a synchronous standby) before
/// the values are returned, whatever the server's or the role's default says. `search_path`:
/// see `migrate`. `seqvend.lock_timeout`: see `DatabaseSettings::lock_timeout`.
/// `client_min_messages`: no "schema already exists, skipping" at every start. Behind a pooler
/// they are set in each vend transaction instead (see `pooler`).
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

/// The session settings as `-c name=value` startup options, with the marker that tells a
/// direct session from one through a pooler.
fn startup_options(settings: &DatabaseSettings) -> Vec<(&'static str, String)> {
    let mut options = session_settings(settings);
    options.push((pooler::MARKER.0, pooler::MARKER.1.into()));
    options
}

/// Both pools, once the database answers: the registry pool on the direct URL (checked to
/// reach PostgreSQL itself), the vend pool on `url`, through a pooler or not as
/// `settings.pooler` says or, by default, as found. With one URL for both they follow one
/// primary: when it moves, the vend pool's connections to the old one end too.
pub async fn connect(url: &str, settings: &DatabaseSettings) -> anyhow::Result<(PgPool, VendPool)> {
    let direct_url = settings.direct_url.as_ref().map_or(url, |d| d.0.as_str());
    let direct = Database::new(direct_url, settings)?;
    let registry = direct.registry_pool()?;
    wait_until_reachable(&registry, settings.startup_patience).await?;
    pooler::ensure_direct(&registry).await?;
    let separate;
    let main = if direct_url == url {
        &direct
    } else {
        separate = Database::new(url, settings)?;
        &separate
    };
    let pooled = match settings.pooler {
        Pooler::None => false,
        Pooler::Transaction => true,
        Pooler::Detect if direct_url == url => false,
        Pooler::Detect => {
            !pooler::reaches_postgres(&main.connector("seqvend-probe", Route::Direct)?)
                .await
                .context("finding out whether DATABASE_URL reaches a pooler")?
        }
    };
    let route = main.route(pooled);
    tracing::info!(pooled, "vend connections");
    Ok((registry, main.vend_pool(route)?))
}

/// Both pools straight to PostgreSQL on one URL (or, with `settings.pooler` saying so, the
/// vend pool's statements as behind a pooler), following one primary.
pub fn pools(url: &str, settings: &DatabaseSettings) -> anyhow::Result<(PgPool, VendPool)> {
    let database = Database::new(url, settings)?;
    let route = database.route(settings.pooler == Pooler::Transaction);
    Ok((database.registry_pool()?, database.vend_pool(route)?))
}

/// The registry pool alone. With several hosts in the URL it follows the primary through
/// failovers (see `primary`).
pub fn registry_pool(url: &str, settings: &DatabaseSettings) -> anyhow::Result<PgPool> {
    Database::new(url, settings)?.registry_pool()
}

/// The vend pool alone: each new connection goes to the first host that accepts writes;
/// through a pooler when `settings.pooler` says so.
pub fn vend_pool(url: &str, settings: &DatabaseSettings) -> anyhow::Result<VendPool> {
    let database = Database::new(url, settings)?;
    database.vend_pool(database.route(settings.pooler == Pooler::Transaction))
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

    fn route(&self, pooled: bool) -> Route {
        if pooled {
            Route::pooled(&session_settings(&self.settings))
        } else {
            Route::Direct
        }
    }

    /// Connections for `route`: with startup options straight to PostgreSQL, none through a
    /// pooler (PgBouncer refuses them).
    fn connector(&self, application_name: &'static str, route: Route) -> anyhow::Result<Connector> {
        let options = (!route.is_pooled()).then(|| {
            startup_options(&self.settings)
                .iter()
                .map(|(name, value)| format!("-c {name}={value}"))
                .collect::<Vec<_>>()
                .join(" ")
        });
        Connector::new(
            self.target.clone(),
            self.primary.clone(),
            &self.settings,
            application_name,
            options,
        )
    }

    fn registry_pool(&self) -> anyhow::Result<PgPool> {
        let session = startup_options(&self.settings);
        let finish = move |options: PgConnectOptions| {
            options.application_name("seqvend").options(session.clone())
        };
        let first = finish(self.target.sqlx_options(self.primary.host()));
        let pool = registry::pool(first, self.primary.clone(), &self.settings);
        if self.target.host_count() > 1 {
            let watcher = self.connector("seqvend-watch", Route::Direct)?;
            primary::follow(pool.clone(), watcher, self.settings.connect_timeout, finish);
        }
        Ok(pool)
    }

    fn vend_pool(&self, route: Route) -> anyhow::Result<VendPool> {
        let connector = self.connector("seqvend", route.clone())?;
        let hosts = self.target.host_count() as u32;
        let manager = VendManager::new(connector, route);
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

/// Waits until the database answers, for at most `patience`; used once at startup so that
/// seqvend and its database can be started together.
pub async fn wait_until_reachable(pool: &PgPool, patience: Duration) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        match sqlx::raw_sql("SELECT 1").execute(pool).await {
            Ok(_) => return Ok(()),
            Err(err) if pooler::refused_options(&err) => {
                return Err(err).context(pooler::NOT_DIRECT);
            }
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
