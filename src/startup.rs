//! Building and running the application: pools, migrations, the vend engine and the HTTP
//! server. `main` and the tests both start seqvend through `Application::build`.

use std::future::Future;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tracing::Instrument;

use crate::auth::{TokenChanges, TokenStore, Tokens};
use crate::cache::{self, InstanceCache};
use crate::db::Registry;
use crate::http;
use crate::idempotency;
use crate::ids::{self, worker_lease, Clock, Snowflake, UuidV7s};
use crate::metrics::Metrics;
use crate::registry::Catalog;
use crate::service::{self, Parts, Service};
use crate::settings::Settings;
use crate::vend::{Counters, Vender};
use crate::{db, migrate, usage};

pub struct Application {
    port: u16,
    server: http::Server,
    /// The listener serving only `/metrics`, when it has its own address.
    metrics_server: Option<(u16, http::ServerHandle)>,
    registry: Registry,
    snowflake: Arc<Snowflake>,
    cache: InstanceCache,
    tasks: BackgroundTasks,
}

/// Background tasks (renewers, the cache's keeper and listener) that end with the server, or
/// when the application is dropped unserved.
struct BackgroundTasks(Vec<tokio::task::JoinHandle<()>>);

impl Drop for BackgroundTasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

impl Application {
    /// Connects to `database_url`, applies migrations and binds the listener (port 0 picks a
    /// free port, see `port`). Nothing is served until `run_until_stopped`.
    pub async fn build(settings: &Settings, database_url: &str) -> anyhow::Result<Self> {
        Self::build_with_clock(settings, database_url, Clock::system()).await
    }

    /// Like `build`, with ids stamped by `clock` (tests step it).
    pub async fn build_with_clock(
        settings: &Settings,
        database_url: &str,
        clock: Clock,
    ) -> anyhow::Result<Self> {
        let (registry, vend_pool) = connect(database_url, settings).await?;
        let metrics = Arc::new(Metrics::with_sequence_limit(
            settings.watch.metrics_sequences,
        ));
        let vender = Vender::start(vend_pool.clone(), metrics.clone(), settings.vend.clone());
        let counters = Counters::start(vend_pool.clone(), metrics.clone(), settings.vend.clone());
        let catalog = Arc::new(Catalog::new(settings.vend.statement_deadline));
        let cache = instance_cache(&vender, &registry, &metrics, settings);
        let token_store = Arc::new(TokenStore::new(
            registry.clone(),
            settings.vend.statement_deadline,
        ));
        let tasks = spawn_tasks(
            &registry,
            &cache,
            &catalog,
            &token_store,
            &metrics,
            settings,
        );
        let (snowflake, renewer) =
            start_snowflake(&registry, &metrics, settings, clock.clone()).await?;
        let uuids = UuidV7s::new(clock, metrics.clone());
        let (registry_for_shutdown, snowflake_for_shutdown) = (registry.clone(), snowflake.clone());
        let listener = TcpListener::bind(settings.listen)?;
        let port = listener.local_addr()?.port();
        let service = Arc::new(Service::new(Parts {
            registry,
            vend_pool,
            vender,
            counters,
            catalog,
            cache: cache.clone(),
            cache_settings: settings.cache.clone(),
            metrics,
            snowflake,
            uuids,
            id_settings: settings.ids.clone(),
            tokens: Tokens::from(&settings.tokens),
            token_store,
            registry_deadline: settings.vend.statement_deadline,
            overview_fresh_for: settings.watch.interval,
        }));
        // The console's overview is read at start and kept fresh while viewed, so no viewer
        // waits for it.
        let overview = settings
            .console
            .then(|| service.clone().keep_overview_fresh());
        let served = http::serve(
            service,
            listener,
            settings.workers,
            settings.metrics_listen,
            settings.console,
        )?;
        Ok(Self {
            port,
            server: served.server,
            metrics_server: served.metrics,
            registry: registry_for_shutdown,
            snowflake: snowflake_for_shutdown,
            cache,
            tasks: BackgroundTasks(
                std::iter::once(renewer)
                    .chain(overview)
                    .chain(tasks)
                    .collect(),
            ),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port serving `/metrics` alone, when it has its own address.
    pub fn metrics_port(&self) -> Option<u16> {
        self.metrics_server.as_ref().map(|(port, _)| *port)
    }

    pub fn handle(&self) -> http::ServerHandle {
        self.server.handle()
    }

    /// Serves until stopped through `handle` (graceful: stop accepting, finish what is in
    /// flight). Signals do not stop it by themselves; `main` turns them into `handle` calls.
    /// The worker-id lease is renewed until then and handed back after, so the next holder
    /// of the id can start at once. Cached values are dropped and their leases released, so
    /// retiring a sequence need not wait for them. Whatever the database cannot take back
    /// within a few seconds expires unrenewed instead.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let served = self.server.await;
        if let Some((_, metrics_server)) = &self.metrics_server {
            metrics_server.stop(true).await;
        }
        drop(self.tasks);
        let release = async {
            self.cache.release_all().await;
            if let Some((worker_id, holder, last_ms)) = self.snowflake.give_up() {
                let given_back = worker_lease::release(&self.registry, worker_id, &holder, last_ms);
                if let Err(err) = given_back.await {
                    tracing::warn!(error = %err, "could not hand back the worker id; it expires unrenewed");
                }
            }
        };
        if tokio::time::timeout(std::time::Duration::from_secs(5), release)
            .await
            .is_err()
        {
            tracing::warn!("could not release leases at shutdown; they expire unrenewed");
        }
        served
    }
}

/// The two pools, once the database answers and is migrated.
async fn connect(
    database_url: &str,
    settings: &Settings,
) -> anyhow::Result<(Registry, db::VendPool)> {
    let database = &settings.database;
    // Connecting waits up to `startup_patience` for the database by itself; the bound adds a
    // last attempt and the checks after it.
    let reach = database.startup_patience + 2 * database.connect_timeout;
    let pools = step("connecting", reach, db::connect(database_url, database));
    let (registry, vend_pool) = pools.await?;
    #[allow(clippy::disallowed_methods)] // Migrations: what the session pool is for.
    let migrated = migrate::run(registry.session_pool());
    step("migrating", database.startup_patience, migrated).await?;
    Ok((registry, vend_pool))
}

fn instance_cache(
    vender: &Vender,
    registry: &Registry,
    metrics: &Arc<Metrics>,
    settings: &Settings,
) -> InstanceCache {
    InstanceCache::new(
        vender.clone(),
        registry.clone(),
        metrics.clone(),
        settings.cache.clone(),
        settings.vend.deadline,
    )
}

/// Starts the background tasks that serve the instance: the instance cache's keeper, the token
/// store's pinger, the notification hub, the idempotency purge and the usage sampler.
fn spawn_tasks(
    registry: &Registry,
    cache: &InstanceCache,
    catalog: &Arc<Catalog>,
    token_store: &Arc<TokenStore>,
    metrics: &Arc<Metrics>,
    settings: &Settings,
) -> Vec<tokio::task::JoinHandle<()>> {
    let keeper = cache::spawn_keeper(cache.clone());
    let token_changes = TokenChanges::new(token_store.clone());
    let pinger = token_changes.spawn_pinger(registry.clone());
    let notifications = service::spawn_notification_hub(
        registry.clone(),
        cache.clone(),
        catalog.clone(),
        token_changes,
    );
    let purge = idempotency::spawn_purge(
        registry.clone(),
        settings.vend.keys_per_token,
        metrics.clone(),
    );
    let sampler = usage::spawn(registry.clone(), metrics.clone(), settings.watch.clone());
    vec![keeper, notifications, sampler, pinger, purge]
}

/// Fixes the Snowflake layout in the database (refusing a different one), takes the first
/// worker-id lease and starts renewing it. With no worker id free, seqvend starts anyway:
/// Snowflake requests answer 503 until the renewer gets one.
async fn start_snowflake(
    registry: &Registry,
    metrics: &Arc<Metrics>,
    settings: &Settings,
    clock: Clock,
) -> anyhow::Result<(Arc<Snowflake>, tokio::task::JoinHandle<()>)> {
    let ids = &settings.ids;
    let patience = settings.database.startup_patience;
    let layout = async { Ok(ids::worker_lease::fix_layout(registry, ids.layout).await?) };
    step("fixing the Snowflake layout", patience, layout).await?;
    let snowflake = Arc::new(Snowflake::new(
        ids.layout,
        clock,
        ids.clock_step_tolerance,
        metrics.clone(),
    ));
    let first_lease = async {
        ids::keep_lease(registry, &snowflake, ids).await;
        Ok(())
    };
    if let Err(err) = step("taking a worker id", patience, first_lease).await {
        // As when none is free: the renewer takes one, and Snowflake requests answer 503
        // until it does.
        tracing::warn!(error = %format!("{err:#}"), "starting without a worker id");
    }
    let renewer = ids::spawn_renewer(registry.clone(), snowflake.clone(), ids.clone());
    Ok((snowflake, renewer))
}

/// Runs one startup step for at most `patience`, naming it in the error. A step that waits on
/// something that never comes (a connection that never answers, a lock a vanished session
/// holds) then fails startup with its name, instead of leaving an instance that has bound
/// nothing and says nothing waiting forever.
async fn step<T>(
    name: &'static str,
    patience: Duration,
    work: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let bounded = tokio::time::timeout(patience, work);
    match bounded
        .instrument(tracing::info_span!("startup", step = name))
        .await
    {
        Ok(done) => done.context(name),
        Err(_) => Err(anyhow::anyhow!("{name}: no answer within {patience:?}")),
    }
}
