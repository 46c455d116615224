//! Configuration, read once from the environment at startup (see docs/operating.md).

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};

use seqvend_blocks::snowflake::Layout;

mod bootstrap_tokens;

pub use bootstrap_tokens::BootstrapTokens;

/// Plain data. `Debug` hides the secrets: the password in `database_url` (see `redact_url`)
/// and the tokens (see `BootstrapTokens`).
#[derive(Clone)]
pub struct Settings {
    /// None: start a private PostgreSQL cluster in `data_dir`.
    pub database_url: Option<String>,
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    /// Serve `/metrics` here instead of on `listen` (e.g. a port only Prometheus reaches).
    pub metrics_listen: Option<SocketAddr>,
    pub workers: usize,
    pub tokens: BootstrapTokens,
    pub log_json: bool,
    pub database: DatabaseSettings,
    pub vend: VendSettings,
    pub watch: WatchSettings,
    pub ids: IdSettings,
    pub cache: CacheSettings,
    /// Serve the operator console at `/console/` (see docs/console.md).
    pub console: bool,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Taken apart whole, so that a new field cannot be left out (or shown) unnoticed.
        let Settings {
            database_url,
            data_dir,
            listen,
            metrics_listen,
            workers,
            tokens,
            log_json,
            database,
            vend,
            watch,
            ids,
            cache,
            console,
        } = self;
        f.debug_struct("Settings")
            .field("database_url", &database_url.as_deref().map(redact_url))
            .field("data_dir", data_dir)
            .field("listen", listen)
            .field("metrics_listen", metrics_listen)
            .field("workers", workers)
            .field("tokens", tokens)
            .field("log_json", log_json)
            .field("database", database)
            .field("vend", vend)
            .field("watch", watch)
            .field("ids", ids)
            .field("cache", cache)
            .field("console", console)
            .finish()
    }
}

/// A PostgreSQL URL or connection string with its password, wherever it is, replaced.
pub fn redact_url(url: &str) -> String {
    const HIDDEN: &str = "[redacted]";
    let mut shown = url.to_owned();
    // postgres://user:password@host/...: the password runs from the first ':' of the user
    // info to its last '@'.
    if let Some(start) = shown.find("://").map(|i| i + 3) {
        let authority_end = shown[start..]
            .find(['/', '?'])
            .map_or(shown.len(), |i| start + i);
        if let Some(at) = shown[start..authority_end].rfind('@').map(|i| start + i) {
            if let Some(colon) = shown[start..at].find(':').map(|i| start + i) {
                shown.replace_range(colon + 1..at, HIDDEN);
            }
        }
    }
    // `password=...` as a URL parameter or in a key=value string.
    let mut from = 0;
    while let Some(found) = shown[from..].find("password=").map(|i| from + i + 9) {
        let end = shown[found..]
            .find(['&', ' '])
            .map_or(shown.len(), |i| found + i);
        shown.replace_range(found..end, HIDDEN);
        from = found + HIDDEN.len();
    }
    shown
}

#[derive(Debug, Clone)]
pub struct DatabaseSettings {
    /// Vend connections, one per coalescing lane. Fewer lanes make bigger batches: on two
    /// cores, 2 served the most requests (see docs/operating.md).
    pub vend_pool_size: usize,
    pub admin_pool_size: u32,
    /// Longest wait for a connection (new or pooled) before answering 503.
    pub connect_timeout: Duration,
    /// TCP keepalives and `tcp_user_timeout` on vend connections: how long a host that
    /// vanished (no FIN, no RST) keeps a connection.
    pub tcp_timeout: Duration,
    /// Server-side limit on any one statement.
    pub statement_timeout: Duration,
    /// Longest the vend statement waits for any one lock (another session's open
    /// `ALTER SEQUENCE`, a registry row it holds, another instance's draw of the same range)
    /// before it answers that sequence alone 503; zero waits as long as `statement_timeout`
    /// allows. The statement falls back to 200 ms when the session option is dropped.
    pub lock_timeout: Duration,
    /// How long startup waits for the database to answer.
    pub startup_patience: Duration,
    /// Where what must bypass a pooler connects (`SEQVEND_DIRECT_DATABASE_URL`): the
    /// notification listener and migrations. None: `DATABASE_URL`.
    pub direct_url: Option<DirectUrl>,
    /// What `DATABASE_URL` reaches (`SEQVEND_DATABASE_POOLER`).
    pub pooler: Pooler,
}

/// A direct PostgreSQL URL; `Debug` hides its password.
#[derive(Clone)]
pub struct DirectUrl(pub String);

impl fmt::Debug for DirectUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

/// What sits between seqvend's vend pool and PostgreSQL on `DATABASE_URL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooler {
    /// Found out at startup: a server that drops or refuses seqvend's startup options is a
    /// pooler (see `db::pooler`).
    Detect,
    /// PostgreSQL itself: session settings as startup options, named prepared statements.
    None,
    /// A pooler in transaction mode (PgBouncer): no session state, unnamed statements.
    Transaction,
}

impl std::str::FromStr for Pooler {
    type Err = ();

    fn from_str(raw: &str) -> Result<Self, ()> {
        match raw.to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Detect),
            "none" => Ok(Self::None),
            "pgbouncer" | "transaction" => Ok(Self::Transaction),
            _ => Err(()),
        }
    }
}

#[derive(Debug, Clone)]
pub struct VendSettings {
    /// Gather concurrent vend requests into shared statements.
    pub coalesce: bool,
    /// Most requests one statement serves.
    pub batch_max_requests: usize,
    /// Most values one statement draws (a request is never split).
    pub batch_max_values: u64,
    /// Most requests waiting for a statement; beyond it, 503 at once.
    pub queue_bound: usize,
    /// Longest a vend request waits for its values before answering 503.
    pub deadline: Duration,
    /// Longest a vend statement may take, by seqvend's own clock: past it, its connection is
    /// closed. Requests served by the registry pool are bounded by it too (503 past it). The
    /// server's `statement_timeout` plus a connect timeout, so that a server that still
    /// answers cancels its own statements first.
    pub statement_deadline: Duration,
    /// How long a request sent with an `Idempotency-Key` keeps its answer for repeats.
    pub key_ttl: Duration,
    /// Most stored answers per token; beyond it the oldest are purged first.
    pub keys_per_token: i64,
}

#[derive(Debug, Clone)]
pub struct WatchSettings {
    /// How often usage is sampled, alerts judged and the sequence gauges refreshed.
    pub interval: Duration,
    /// Every live sequence is read in full (its position and usage windows) at least this
    /// often; in between, a round reads only those whose registry row, ranges or marks moved.
    /// Zero: every round reads every sequence.
    pub sweep: Duration,
    /// Most sequences with series of their own in the per-sequence metrics (the most urgent
    /// ones); the rest are summed under `sequence="_other"`.
    pub metrics_sequences: usize,
}

#[derive(Debug, Clone)]
pub struct IdSettings {
    /// Snowflake bits and epoch; fixed in the database by the first instance to start.
    pub layout: Layout,
    /// How long a worker-id lease lasts unless renewed.
    pub lease: Duration,
    /// How often this instance renews its lease: well within `lease`.
    pub renew_every: Duration,
    /// A step of the clock back by at most this much is waited out; a larger one is refused.
    pub clock_step_tolerance: Duration,
}

/// Leases on cached blocks (sequences with a cache policy).
#[derive(Debug, Clone)]
pub struct CacheSettings {
    /// How long an instance's lease on its cached blocks lasts unless renewed: the longest a
    /// partitioned instance keeps handing out cached values, and so the longest a retirement
    /// may wait for one.
    pub instance_lease: Duration,
    /// How often an instance renews its leases: well within `instance_lease`.
    pub renew_every: Duration,
    /// How long a block leased to a client (`POST …/leases`) may be used.
    pub client_lease: Duration,
}

impl CacheSettings {
    /// How long this instance trusts a lease from the moment its statement left: a tenth
    /// short, for the database's clock and ours running at slightly other rates.
    pub fn fenced_lease(&self) -> Duration {
        self.instance_lease - self.instance_lease / 10
    }
}

impl Default for CacheSettings {
    fn default() -> Self {
        Self {
            instance_lease: Duration::from_secs(60),
            renew_every: Duration::from_secs(15),
            client_lease: Duration::from_secs(600),
        }
    }
}

impl IdSettings {
    /// How long this instance trusts a lease from the moment its statement left: a tenth
    /// short of the lease, for the database's clock and ours running at slightly other rates.
    pub fn fenced_lease(&self) -> Duration {
        self.lease - self.lease / 10
    }
}

impl Default for IdSettings {
    fn default() -> Self {
        Self {
            layout: Layout::DEFAULT,
            lease: Duration::from_secs(30),
            renew_every: Duration::from_secs(10),
            clock_step_tolerance: Duration::from_millis(5),
        }
    }
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            vend_pool_size: 2,
            admin_pool_size: 4,
            connect_timeout: Duration::from_millis(1000),
            tcp_timeout: Duration::from_secs(10),
            statement_timeout: Duration::from_millis(5000),
            lock_timeout: Duration::from_millis(200),
            startup_patience: Duration::from_secs(30),
            direct_url: None,
            pooler: Pooler::Detect,
        }
    }
}

impl Default for VendSettings {
    fn default() -> Self {
        Self {
            coalesce: true,
            batch_max_requests: 512,
            batch_max_values: 100_000,
            queue_bound: 8192,
            deadline: Duration::from_millis(2000),
            statement_deadline: Duration::from_millis(6000),
            key_ttl: Duration::from_secs(24 * 3600),
            keys_per_token: 1_000_000,
        }
    }
}

impl Default for WatchSettings {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(10),
            sweep: Duration::from_secs(60),
            metrics_sequences: 100,
        }
    }
}

impl Settings {
    /// Reads the environment; every variable is optional but `DATABASE_URL`-less runs need
    /// PostgreSQL's server binaries, and running without tokens needs an explicit opt-out.
    pub fn from_env() -> anyhow::Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like `from_env`, reading variables through `lookup` (empty values count as unset).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> anyhow::Result<Self> {
        let var = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let get = |name: &'static str| (name, var(name));
        let tokens = token_settings(&get)?;
        let database = database_settings(&get)?;
        let vend = vend_settings(&get, &database)?;
        let watch = watch_settings(&get)?;
        let ids = id_settings(&get)?;
        let cache = cache_settings(&get)?;
        let listen = var("SEQVEND_LISTEN").unwrap_or_else(|| "127.0.0.1:8080".into());
        Ok(Self {
            database_url: var("DATABASE_URL"),
            data_dir: var("SEQVEND_DATA_DIR")
                .unwrap_or_else(|| ".seqvend".into())
                .into(),
            listen: listen
                .parse()
                .with_context(|| format!("SEQVEND_LISTEN={listen:?}"))?,
            metrics_listen: var("SEQVEND_METRICS_LISTEN")
                .map(|raw| {
                    raw.parse()
                        .with_context(|| format!("SEQVEND_METRICS_LISTEN={raw:?}"))
                })
                .transpose()?,
            workers: parse(get("SEQVEND_WORKERS"), default_workers())?,
            tokens,
            log_json: var("SEQVEND_LOG_FORMAT").is_some_and(|f| f.eq_ignore_ascii_case("json")),
            database,
            vend,
            watch,
            ids,
            cache,
            console: parse_bool(get("SEQVEND_CONSOLE"), true)?,
        })
    }
}

/// The bootstrap tokens; none at all is refused unless authentication is explicitly off.
fn token_settings(get: &impl Fn(&'static str) -> Var) -> anyhow::Result<BootstrapTokens> {
    let tokens = BootstrapTokens::new(
        &get("SEQVEND_ADMIN_TOKENS").1.unwrap_or_default(),
        &get("SEQVEND_VEND_TOKENS").1.unwrap_or_default(),
        parse_bool(get("SEQVEND_AUTH_DISABLED"), false)?,
    );
    if tokens.is_empty() && !tokens.disabled() {
        bail!(
            "no tokens configured: set SEQVEND_ADMIN_TOKENS (and SEQVEND_VEND_TOKENS), \
             or set SEQVEND_AUTH_DISABLED=true to run without authentication"
        );
    }
    Ok(tokens)
}

fn database_settings(get: &impl Fn(&'static str) -> Var) -> anyhow::Result<DatabaseSettings> {
    let db = DatabaseSettings::default();
    let database = DatabaseSettings {
        vend_pool_size: parse(get("SEQVEND_POOL_SIZE"), db.vend_pool_size)?,
        admin_pool_size: parse(get("SEQVEND_ADMIN_POOL_SIZE"), db.admin_pool_size)?,
        connect_timeout: millis(get("SEQVEND_DB_TIMEOUT_MS"), db.connect_timeout)?,
        tcp_timeout: millis(get("SEQVEND_DB_TCP_TIMEOUT_MS"), db.tcp_timeout)?,
        statement_timeout: millis(get("SEQVEND_STATEMENT_TIMEOUT_MS"), db.statement_timeout)?,
        lock_timeout: millis(get("SEQVEND_LOCK_TIMEOUT_MS"), db.lock_timeout)?,
        startup_patience: db.startup_patience,
        direct_url: get("SEQVEND_DIRECT_DATABASE_URL").1.map(DirectUrl),
        pooler: pooler_setting(get("SEQVEND_DATABASE_POOLER"))?,
    };
    // The kernel counts keepalives in whole seconds: less than one would refuse every connection.
    if database.tcp_timeout < Duration::from_secs(1) {
        bail!("SEQVEND_DB_TCP_TIMEOUT_MS must be at least 1000");
    }
    Ok(database)
}

fn pooler_setting((name, raw): Var) -> anyhow::Result<Pooler> {
    match raw {
        None => Ok(Pooler::Detect),
        Some(raw) => raw.trim().parse().map_err(|()| {
            anyhow::anyhow!("{name}={raw:?} is not valid (use auto, none or pgbouncer)")
        }),
    }
}

/// The vend settings; a statement's deadline follows from the database's timeouts.
fn vend_settings(
    get: &impl Fn(&'static str) -> Var,
    database: &DatabaseSettings,
) -> anyhow::Result<VendSettings> {
    let vend = VendSettings::default();
    let settings = VendSettings {
        coalesce: parse_bool(get("SEQVEND_COALESCE"), vend.coalesce)?,
        batch_max_requests: parse(get("SEQVEND_BATCH_MAX"), vend.batch_max_requests)?,
        batch_max_values: parse(get("SEQVEND_BATCH_MAX_VALUES"), vend.batch_max_values)?,
        queue_bound: parse(get("SEQVEND_QUEUE_BOUND"), vend.queue_bound)?,
        deadline: millis(get("SEQVEND_VEND_DEADLINE_MS"), vend.deadline)?,
        statement_deadline: database.statement_timeout + database.connect_timeout,
        key_ttl: Duration::from_secs(parse(
            get("SEQVEND_IDEMPOTENCY_TTL_S"),
            vend.key_ttl.as_secs(),
        )?),
        keys_per_token: parse(
            get("SEQVEND_IDEMPOTENCY_KEYS_PER_TOKEN"),
            vend.keys_per_token,
        )?,
    };
    // Below these, every stored answer would be purged or expire at once: every retry would
    // draw new values.
    if settings.keys_per_token < 1 {
        bail!("SEQVEND_IDEMPOTENCY_KEYS_PER_TOKEN must be at least 1");
    }
    if settings.key_ttl.is_zero() {
        bail!("SEQVEND_IDEMPOTENCY_TTL_S must be at least 1");
    }
    Ok(settings)
}

fn watch_settings(get: &impl Fn(&'static str) -> Var) -> anyhow::Result<WatchSettings> {
    let watch = WatchSettings::default();
    Ok(WatchSettings {
        interval: Duration::from_secs(parse(
            get("SEQVEND_WATCH_INTERVAL_S"),
            watch.interval.as_secs(),
        )?),
        sweep: Duration::from_secs(parse(get("SEQVEND_WATCH_SWEEP_S"), watch.sweep.as_secs())?),
        metrics_sequences: parse(get("SEQVEND_METRICS_SEQUENCES"), watch.metrics_sequences)?,
    })
}

fn cache_settings(get: &impl Fn(&'static str) -> Var) -> anyhow::Result<CacheSettings> {
    let defaults = CacheSettings::default();
    let cache = CacheSettings {
        instance_lease: millis(get("SEQVEND_CACHE_LEASE_MS"), defaults.instance_lease)?,
        renew_every: millis(get("SEQVEND_CACHE_RENEW_MS"), defaults.renew_every)?,
        client_lease: millis(get("SEQVEND_CLIENT_LEASE_MS"), defaults.client_lease)?,
    };
    if cache.renew_every.is_zero() || cache.renew_every > cache.instance_lease * 45 / 100 {
        bail!(
            "SEQVEND_CACHE_RENEW_MS must be more than 0 and at most 45% of SEQVEND_CACHE_LEASE_MS"
        );
    }
    if cache.client_lease < Duration::from_secs(1) {
        bail!("SEQVEND_CLIENT_LEASE_MS must be at least 1000");
    }
    Ok(cache)
}

fn id_settings(get: &impl Fn(&'static str) -> Var) -> anyhow::Result<IdSettings> {
    let defaults = IdSettings::default();
    let epoch_ms = match get("SEQVEND_SNOWFLAKE_EPOCH") {
        (_, None) => defaults.layout.epoch_ms(),
        (name, Some(raw)) => chrono::DateTime::parse_from_rfc3339(raw.trim())
            .with_context(|| format!("{name}={raw:?} is not an RFC 3339 time"))?
            .timestamp_millis(),
    };
    let layout = match get("SEQVEND_SNOWFLAKE_LAYOUT") {
        (_, None) => Layout::parse("41/10/12", epoch_ms),
        (_, Some(raw)) => Layout::parse(&raw, epoch_ms),
    }
    .context("SEQVEND_SNOWFLAKE_LAYOUT")?;
    let ids = IdSettings {
        layout,
        lease: millis(get("SEQVEND_WORKER_LEASE_MS"), defaults.lease)?,
        renew_every: millis(get("SEQVEND_WORKER_RENEW_MS"), defaults.renew_every)?,
        clock_step_tolerance: millis(
            get("SEQVEND_CLOCK_STEP_TOLERANCE_MS"),
            defaults.clock_step_tolerance,
        )?,
    };
    // A renewal must get through before the lease lapses, with time for one failure.
    if ids.renew_every.is_zero() || ids.renew_every * 2 > ids.fenced_lease() {
        bail!("SEQVEND_WORKER_RENEW_MS must be more than 0 and at most 45% of SEQVEND_WORKER_LEASE_MS");
    }
    Ok(ids)
}

fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// A variable's name and its value, if set.
type Var = (&'static str, Option<String>);

fn parse<T: std::str::FromStr>((name, raw): Var, default: T) -> anyhow::Result<T> {
    match raw {
        None => Ok(default),
        Some(raw) => raw
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("{name}={raw:?} is not valid")),
    }
}

fn millis(var: Var, default: Duration) -> anyhow::Result<Duration> {
    parse(var, default.as_millis() as u64).map(Duration::from_millis)
}

fn parse_bool((name, raw): Var, default: bool) -> anyhow::Result<bool> {
    match raw.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None => Ok(default),
        Some("1" | "true" | "yes" | "on") => Ok(true),
        Some("0" | "false" | "no" | "off") => Ok(false),
        Some(other) => bail!("{name}={other:?} is not a boolean (use true or false)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> anyhow::Result<Settings> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn refuses_to_start_without_tokens_unless_auth_is_switched_off() {
        let err = settings(&[]).unwrap_err().to_string();
        assert!(err.contains("SEQVEND_AUTH_DISABLED"), "{err}");
        assert!(settings(&[("SEQVEND_AUTH_DISABLED", "true")])
            .unwrap()
            .tokens
            .disabled());
        assert!(!settings(&[("SEQVEND_ADMIN_TOKENS", "a")])
            .unwrap()
            .tokens
            .disabled());
    }

    #[test]
    fn debug_output_never_shows_the_database_password_or_a_token() {
        let url = "postgres://seqvend:s3cret-pw@db1:5432,db2:5432/seqvend?sslmode=require";
        let s = settings(&[
            ("DATABASE_URL", url),
            ("SEQVEND_ADMIN_TOKENS", "secret-admin"),
            ("SEQVEND_VEND_TOKENS", "secret-vend"),
        ])
        .unwrap();
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("secret-"),
            "{shown}"
        );
        assert!(
            shown.contains("db1:5432,db2:5432/seqvend?sslmode=require"),
            "{shown}"
        );
    }

    #[test]
    fn the_direct_url_and_the_pooler_are_read_and_the_password_hidden() {
        let admin = ("SEQVEND_ADMIN_TOKENS", "a");
        let s = settings(&[admin]).unwrap();
        assert_eq!(s.database.pooler, Pooler::Detect);
        assert!(s.database.direct_url.is_none());
        let s = settings(&[
            admin,
            (
                "SEQVEND_DIRECT_DATABASE_URL",
                "postgres://u:pw-direct@db:5432/x",
            ),
            ("SEQVEND_DATABASE_POOLER", "PgBouncer"),
        ])
        .unwrap();
        assert_eq!(s.database.pooler, Pooler::Transaction);
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("pw-direct") && shown.contains("db:5432/x"),
            "{shown}"
        );
        let err = settings(&[admin, ("SEQVEND_DATABASE_POOLER", "session")]).unwrap_err();
        assert!(err.to_string().contains("auto, none or pgbouncer"), "{err}");
    }

    #[test]
    fn passwords_are_redacted_wherever_a_url_puts_them() {
        assert_eq!(
            redact_url("postgresql://u:p%40ss@h/db"),
            "postgresql://u:[redacted]@h/db"
        );
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redact_url("postgres://h/db?user=u&password=pw&sslmode=require"),
            "postgres://h/db?user=u&password=[redacted]&sslmode=require"
        );
        assert_eq!(
            redact_url("host=h password=pw user=u"),
            "host=h password=[redacted] user=u"
        );
    }

    #[test]
    fn the_snowflake_layout_epoch_and_lease_timing_are_read_and_checked() {
        let admin = ("SEQVEND_ADMIN_TOKENS", "a");
        let s = settings(&[admin]).unwrap();
        assert_eq!(s.ids.layout, Layout::DEFAULT);
        assert_eq!(s.ids.clock_step_tolerance, Duration::from_millis(5));
        let s = settings(&[
            admin,
            ("SEQVEND_SNOWFLAKE_LAYOUT", "40/11/12"),
            ("SEQVEND_SNOWFLAKE_EPOCH", "2025-01-01T00:00:00Z"),
        ])
        .unwrap();
        assert_eq!(
            s.ids.layout,
            Layout::new(40, 11, 12, 1_735_689_600_000).unwrap()
        );
        for bad in [
            ("SEQVEND_SNOWFLAKE_LAYOUT", "41/10/13"),
            ("SEQVEND_SNOWFLAKE_EPOCH", "2025-01-01"),
            ("SEQVEND_WORKER_RENEW_MS", "15000"),
            ("SEQVEND_WORKER_RENEW_MS", "0"),
        ] {
            assert!(settings(&[admin, bad]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn defaults_apply_and_values_are_checked() {
        let s = settings(&[("SEQVEND_ADMIN_TOKENS", "a")]).unwrap();
        assert_eq!(s.listen.to_string(), "127.0.0.1:8080");
        assert!(s.database_url.is_none() && s.vend.coalesce);
        let s = settings(&[("SEQVEND_ADMIN_TOKENS", "a"), ("SEQVEND_COALESCE", "off")]).unwrap();
        assert!(!s.vend.coalesce);
        assert!(settings(&[("SEQVEND_ADMIN_TOKENS", "a"), ("SEQVEND_POOL_SIZE", "x")]).is_err());
        let tcp = ("SEQVEND_DB_TCP_TIMEOUT_MS", "500");
        assert!(settings(&[("SEQVEND_ADMIN_TOKENS", "a"), tcp]).is_err());
        assert!(settings(&[("SEQVEND_ADMIN_TOKENS", "a"), ("SEQVEND_LISTEN", "nowhere")]).is_err());
        for keys in ["0", "-5"] {
            let bound = ("SEQVEND_IDEMPOTENCY_KEYS_PER_TOKEN", keys);
            assert!(settings(&[("SEQVEND_ADMIN_TOKENS", "a"), bound]).is_err());
        }
        let ttl = ("SEQVEND_IDEMPOTENCY_TTL_S", "0");
        assert!(settings(&[("SEQVEND_ADMIN_TOKENS", "a"), ttl]).is_err());
    }
}
