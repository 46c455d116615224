//! Connections to PostgreSQL: a sqlx pool for the registry and admin queries, a
//! deadpool-postgres pool for the vend hot path, the session settings both rely on, and how
//! `DATABASE_URL` becomes connections — TLS as libpq reads it (`tls`), every host tried in turn
//! under one deadline each (`connect`), and only ever a read-write session. The vend pool may
//! go through a pooler in transaction mode (`pooler`), and so may the registry pool, whose
//! statements all run through the `Registry` handle (`registry_access`); the notification
//! listener and migrations always reach PostgreSQL itself (the direct URL). Background reads
//! go in paced pages (`pace`).

// The one module that builds sqlx's pools and hands them out only inside `Registry`.
#![allow(clippy::disallowed_types)]

pub(crate) mod connect;
mod durable;
mod failure;
mod pace;
mod pg_error;
mod pooler;
mod primary;
mod registry;
mod registry_access;
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
pub use pace::Pace;
use pooler::Route;
use primary::Primary;
pub use registry_access::{Registry, RegistryTx};
use target::Target;
use vend_pool::VendManager;
pub use vend_pool::{discard, TypedParam, VendConnection, VendPool};

/// The `application_name` of the registry's sessions straight to PostgreSQL (the listener,
/// migrations) when the registry's statements go elsewhere.
const SESSION_NAME: &str = "seqvend-session";

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

/// Planner settings of the vend pool's sessions, beside `session_settings`. The vend
/// functions' plans are generic and kept for the session (migration 20261126170000). Made
/// while `pg_catalog.pg_sequence` held a few rows, on one page, a lookup in it is planned as a
/// scan of the whole table, and the plan stays one after thousands of sequences are created,
/// until autovacuum analyses the catalog (a minute or two). Every vend statement looks its rows
/// up by a primary or unique key; with sequential scans off the planner takes the index at any
/// size. JIT off: a statement that can only scan (a sequence's own row, read with `EXECUTE`)
/// then costs more than `jit_above_cost`, and compiling it took 5 ms. Set once per session,
/// not per function call, so the hot path pays nothing for them.
pub const VEND_PLANNER_SETTINGS: [(&str, &str); 2] = [("enable_seqscan", "off"), ("jit", "off")];

/// Straight to PostgreSQL, or through a pooler with `session` set in each transaction.
fn route(pooled: bool, session: &[(&'static str, String)]) -> Route {
    if pooled {
        Route::pooled(ISOLATION, session)
    } else {
        Route::Direct
    }
}

/// The vend pool's session settings: everyone's, the planner's, and `lock_timeout` itself.
/// The vend statement sets `lock_timeout` for its transaction only when its session has none
/// (migration 20261203100000): carried by the session, the common case makes no setting.
fn vend_session_settings(settings: &DatabaseSettings) -> Vec<(&'static str, String)> {
    let mut all = session_settings(settings);
    all.extend(VEND_PLANNER_SETTINGS.map(|(name, value)| (name, value.to_string())));
    all.push((
        "lock_timeout",
        settings.lock_timeout.as_millis().to_string(),
    ));
    all
}

/// The isolation every seqvend transaction runs at, whatever the server's, database's or
/// role's `default_transaction_isolation`. seqvend's statements are written for it: a
/// statement that waited for a lock reads what the holder committed (the vend statement reads
/// its rows after its locks; a keyed retry that waited for its key finds the first answer). At
/// repeatable read or serializable they would read a snapshot taken before the wait.
const ISOLATION: &str = "read committed";

/// `session` as `-c name=value` startup options, with the isolation (its space escaped, as
/// the server splits options at spaces) and the marker that tells a direct session from one
/// through a pooler.
fn startup_options(session: Vec<(&'static str, String)>) -> Vec<(&'static str, String)> {
    let mut options = session;
    options.push((
        "default_transaction_isolation",
        ISOLATION.replace(' ', "\\ "),
    ));
    options.push((pooler::MARKER.0, pooler::MARKER.1.into()));
    options
}

/// Both pools, once the database answers: the vend and registry pools on `url`, through a
/// pooler or not as `settings.pooler` says or, by default, as found; the registry's session
/// pool (the listener, migrations) on the direct URL, checked to reach PostgreSQL itself.
/// With one URL for all they follow one primary: when it moves, the vend pool's connections
/// to the old one end too.
pub async fn connect(
    url: &str,
    settings: &DatabaseSettings,
) -> anyhow::Result<(Registry, VendPool)> {
    let direct_url = settings.direct_url.as_ref().map_or(url, |d| d.0.as_str());
    let shared = direct_url == url && settings.pooler != Pooler::Transaction;
    let direct = Database::new(direct_url, settings)?;
    // Its own name when it is a pool of its own, to tell it apart in `pg_stat_activity`.
    let name = if shared { "seqvend" } else { SESSION_NAME };
    let session = direct.registry_pool(&Route::Direct, name)?;
    wait_until_reachable(&session, settings.startup_patience).await?;
    pooler::ensure_direct(&session).await?;
    if shared {
        tracing::info!(pooled = false, "vend and registry connections");
        let registry = Registry::new(session.clone(), &Route::Direct, session);
        return Ok((registry, direct.vend_pool(false)?));
    }
    let main = Database::new(url, settings)?;
    let pooled = match settings.pooler {
        Pooler::None => false,
        Pooler::Transaction => true,
        Pooler::Detect => !pooler::reaches_postgres(&main.connector(
            "seqvend-probe",
            Route::Direct,
            session_settings(settings),
        )?)
        .await
        .context("finding out whether DATABASE_URL reaches a pooler")?,
    };
    let route = main.route(pooled);
    tracing::info!(pooled, "vend and registry connections");
    let registry = Registry::new(main.registry_pool(&route, "seqvend")?, &route, session);
    Ok((registry, main.vend_pool(pooled)?))
}

/// Both pools straight to PostgreSQL on one URL (or, with `settings.pooler` saying so, their
/// statements as behind a pooler), following one primary.
pub fn pools(url: &str, settings: &DatabaseSettings) -> anyhow::Result<(Registry, VendPool)> {
    let database = Database::new(url, settings)?;
    let pooled = settings.pooler == Pooler::Transaction;
    Ok((
        database.registry(&database.route(pooled))?,
        database.vend_pool(pooled)?,
    ))
}

/// The registry pool alone, straight to PostgreSQL. With several hosts in the URL it follows
/// the primary through failovers (see `primary`).
pub fn registry_pool(url: &str, settings: &DatabaseSettings) -> anyhow::Result<Registry> {
    Database::new(url, settings)?.registry(&Route::Direct)
}

/// The vend pool alone: each new connection goes to the first host that accepts writes;
/// through a pooler when `settings.pooler` says so.
pub fn vend_pool(url: &str, settings: &DatabaseSettings) -> anyhow::Result<VendPool> {
    let database = Database::new(url, settings)?;
    database.vend_pool(settings.pooler == Pooler::Transaction)
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

    /// The registry's route: through a pooler when `pooled`, each transaction setting the
    /// session settings.
    fn route(&self, pooled: bool) -> Route {
        route(pooled, &session_settings(&self.settings))
    }

    /// Connections for `route`: with `session` as startup options straight to PostgreSQL,
    /// none through a pooler (PgBouncer refuses them).
    fn connector(
        &self,
        application_name: &'static str,
        route: Route,
        session: Vec<(&'static str, String)>,
    ) -> anyhow::Result<Connector> {
        let options = (!route.is_pooled()).then(|| {
            startup_options(session)
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

    /// The registry on this URL: its statements and the session pool both on it.
    fn registry(&self, route: &Route) -> anyhow::Result<Registry> {
        let pool = self.registry_pool(route, "seqvend")?;
        let session = if route.is_pooled() {
            self.registry_pool(&Route::Direct, SESSION_NAME)?
        } else {
            pool.clone()
        };
        Ok(Registry::new(pool, route, session))
    }

    /// A sqlx pool for `route`: with startup options straight to PostgreSQL; through a pooler
    /// with none (PgBouncer refuses them), no statement cache (every statement is unnamed,
    /// see `registry_access`) and no `extra_float_digits` (PgBouncer refuses that too; the
    /// server's default since PostgreSQL 12 already prints floats exactly).
    fn registry_pool(&self, route: &Route, name: &'static str) -> anyhow::Result<PgPool> {
        let session = startup_options(session_settings(&self.settings));
        let pooled = route.is_pooled();
        let finish = move |options: PgConnectOptions| {
            let options = options.application_name(name);
            if pooled {
                options.statement_cache_capacity(0).extra_float_digits(None)
            } else {
                options.options(session.clone())
            }
        };
        let first = finish(self.target.sqlx_options(self.primary.host()));
        let pool = registry::pool(first, self.primary.clone(), &self.settings);
        // Behind a pooler, following the primary is the pooler's part (see docs/pgbouncer.md).
        if self.target.host_count() > 1 && !pooled {
            let watcher = self.connector(
                "seqvend-watch",
                Route::Direct,
                session_settings(&self.settings),
            )?;
            primary::follow(pool.clone(), watcher, self.settings.connect_timeout, finish);
        }
        Ok(pool)
    }

    /// The vend pool, through a pooler when `pooled`: its sessions with the vend settings.
    fn vend_pool(&self, pooled: bool) -> anyhow::Result<VendPool> {
        let session = vend_session_settings(&self.settings);
        let route = route(pooled, &session);
        let connector = self.connector("seqvend", route.clone(), session)?;
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
