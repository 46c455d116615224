//! Finding the primary among several hosts. With a multi-host `DATABASE_URL` (a primary and
//! its standbys, `target_session_attrs=read-write`), tokio-postgres — the vend pool — picks
//! the read-write host on every new connection. sqlx — the registry pool — connects to one
//! host only, so this module tells it which: it watches the current primary and, when that
//! stops answering or turns read-only (a failover), points the pool at the new one.

use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;
use tokio_postgres::config::{Host, TargetSessionAttrs};

/// How often the current primary is checked.
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// sqlx connection options for one host of `config`.
pub fn sqlx_options(config: &tokio_postgres::Config, host: &Host, port: u16) -> PgConnectOptions {
    let mut options = PgConnectOptions::new_without_pgpass().port(port);
    options = match host {
        Host::Tcp(name) => options.host(name),
        Host::Unix(path) => options.socket(path),
    };
    if let Some(user) = config.get_user() {
        options = options.username(user);
    }
    if let Some(password) = config.get_password() {
        options = options.password(&String::from_utf8_lossy(password));
    }
    if let Some(dbname) = config.get_dbname() {
        options = options.database(dbname);
    }
    options
}

/// The hosts and ports `config` names, paired.
pub fn hosts(config: &tokio_postgres::Config) -> Vec<(Host, u16)> {
    let ports = config.get_ports();
    config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            (
                host.clone(),
                ports.get(i).or(ports.first()).copied().unwrap_or(5432),
            )
        })
        .collect()
}

/// Connects to whichever host accepts read-write sessions and asks it where it is; the
/// connection stays open to watch it.
async fn find(config: &tokio_postgres::Config) -> Option<((Host, u16), tokio_postgres::Client)> {
    let mut probe = config.clone();
    probe.target_session_attrs(TargetSessionAttrs::ReadWrite);
    let (client, connection) = probe.connect(tokio_postgres::NoTls).await.ok()?;
    tokio::spawn(connection);
    let row = client
        .query_one("SELECT host(inet_server_addr()), inet_server_port()", &[])
        .await
        .ok()?;
    let (address, port): (Option<String>, Option<i32>) = (row.get(0), row.get(1));
    // Over a unix socket the server reports no address: the first host is the only one.
    let found = match (address, port) {
        (Some(address), Some(port)) => (Host::Tcp(address), port as u16),
        _ => hosts(config).into_iter().next()?,
    };
    Some((found, client))
}

/// True when the watched session answers and its server is not in recovery (a standby).
async fn still_primary(watched: &tokio_postgres::Client) -> bool {
    let answer = watched.query_one("SELECT pg_is_in_recovery()", &[]).await;
    matches!(answer, Ok(row) if !row.get::<_, bool>(0))
}

/// Keeps `pool` pointed at the primary, for as long as the process runs. `finish` adds
/// seqvend's session settings to a host's connection options.
pub fn follow(
    pool: PgPool,
    config: tokio_postgres::Config,
    finish: impl Fn(PgConnectOptions) -> PgConnectOptions + Send + 'static,
) {
    tokio::spawn(async move {
        let mut current: Option<(Host, u16)> = None;
        let mut watched: Option<tokio_postgres::Client> = None;
        loop {
            let healthy = match &watched {
                Some(client) => still_primary(client).await,
                None => false,
            };
            if !healthy {
                watched = None;
                if let Some((found, client)) = find(&config).await {
                    if current.as_ref() != Some(&found) {
                        tracing::warn!(host = ?found.0, port = found.1, "the registry pool follows a new primary");
                        pool.set_connect_options(finish(sqlx_options(&config, &found.0, found.1)));
                    }
                    current = Some(found);
                    watched = Some(client);
                }
            }
            tokio::time::sleep(WATCH_EVERY).await;
        }
    });
}
