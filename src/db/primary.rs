//! Which of `DATABASE_URL`'s hosts is the primary. With one host, that one. With several (a
//! primary and its standbys) a watcher asks the hosts themselves, by the names and ports in the
//! URL — not by the address a server reports, which is wrong behind NAT or a proxy — and when
//! the primary moves (a failover) it points the registry pool at the new one and tells
//! everyone else: the registry pool retires connections older than the move, and the vend
//! pool's connections to the old host end (see `db::connect`).
//!
//! The watcher never waits unbounded: every connect and every query it makes has a deadline.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;
use tokio::sync::watch;

use super::connect::{chain, Connector};

/// How often the current primary is checked.
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// The host believed to be the primary, shared by both pools and the watcher.
#[derive(Clone)]
pub struct Primary {
    current: Arc<watch::Sender<Current>>,
}

#[derive(Clone, Copy)]
struct Current {
    host: usize,
    since: Instant,
}

impl Default for Primary {
    fn default() -> Self {
        let current = Current {
            host: 0,
            since: Instant::now(),
        };
        Self {
            current: Arc::new(watch::Sender::new(current)),
        }
    }
}

impl Primary {
    /// The index of the primary among the URL's hosts (the first until found otherwise).
    pub fn host(&self) -> usize {
        self.current.borrow().host
    }

    /// When the primary last moved (or when seqvend started).
    pub fn since(&self) -> Instant {
        self.current.borrow().since
    }

    fn move_to(&self, host: usize) {
        self.current.send_replace(Current {
            host,
            since: Instant::now(),
        });
    }

    /// Resolves when, after this call, the primary moves to a host other than `host`.
    pub fn moved_away_from(&self, host: usize) -> impl Future<Output = ()> + Send + 'static {
        let mut changes = self.current.subscribe();
        async move {
            loop {
                if changes.changed().await.is_err() {
                    // Nobody can move the primary any more.
                    return std::future::pending().await;
                }
                if changes.borrow_and_update().host != host {
                    return;
                }
            }
        }
    }
}

/// Keeps `pool` (and, through `connector`'s `Primary`, the vend pool) on the primary, for as
/// long as the process runs. `finish` adds seqvend's session settings to a host's options.
pub(crate) fn follow(
    pool: PgPool,
    connector: Connector,
    timeout: Duration,
    finish: impl Fn(PgConnectOptions) -> PgConnectOptions + Send + 'static,
) {
    tokio::spawn(async move {
        let primary = connector.primary().clone();
        let target = connector.target();
        let mut watched: Option<tokio_postgres::Client> = None;
        loop {
            let healthy = match &watched {
                Some(client) => still_primary(client, timeout).await,
                None => false,
            };
            if !healthy {
                watched = None;
                if let Some((found, client)) = find(&connector).await {
                    if found != primary.host() {
                        tracing::warn!(host = %target.describe(found), "the primary moved: following it");
                        pool.set_connect_options(finish(target.sqlx_options(found)));
                        primary.move_to(found);
                    }
                    watched = Some(client);
                }
            }
            tokio::time::sleep(WATCH_EVERY).await;
        }
    });
}

/// The first host that gives a read-write session, the current primary last (it was just
/// found wanting); the session stays open to watch it.
async fn find(connector: &Connector) -> Option<(usize, tokio_postgres::Client)> {
    let count = connector.target().host_count();
    let current = connector.primary().host();
    for i in (1..=count).map(|k| (current + k) % count) {
        match connector.connect_host(i).await {
            Ok((client, _connection, _)) => return Some((i, client)),
            Err(err) => {
                let host = connector.target().describe(i);
                tracing::debug!(%host, error = %chain(&err), "not the primary");
            }
        }
    }
    None
}

/// True when the watched session answers within `timeout` that it may write.
async fn still_primary(watched: &tokio_postgres::Client, timeout: Duration) -> bool {
    let query = "SELECT current_setting('transaction_read_only') = 'off'";
    let answer = tokio::time::timeout(timeout, watched.query_one(query, &[])).await;
    matches!(answer, Ok(Ok(row)) if row.get::<_, bool>(0))
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    fn poll_once(future: impl Future<Output = ()>) -> Poll<()> {
        pin!(future).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn connections_hear_of_a_move_away_from_their_host_only() {
        let primary = Primary::default();
        let before = primary.since();
        let (on_0, on_1) = (primary.moved_away_from(0), primary.moved_away_from(1));
        primary.move_to(1);
        assert_eq!(poll_once(on_0), Poll::Ready(()));
        assert_eq!(poll_once(on_1), Poll::Pending);
        assert_eq!(primary.host(), 1);
        assert!(primary.since() >= before);
        // Connections made after a move hear only of later ones.
        assert_eq!(poll_once(primary.moved_away_from(0)), Poll::Pending);
    }
}
