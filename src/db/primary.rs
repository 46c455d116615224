//! Which of `DATABASE_URL`'s hosts is the primary. With one host, that one. With several (a
//! primary and its standbys) a watcher asks the hosts themselves, by the names and ports in the
//! URL — not by the address a server reports, which is wrong behind NAT or a proxy — and when
//! the primary moves (a failover) it points the registry pool at the new one and tells
//! everyone else: the registry pool retires connections older than the move, and the vend
//! pool's connections to the old host end (see `db::connect`).
//!
//! The watcher asks every host at once, every 500 ms, whether it takes writes and on which
//! timeline, and follows the writable host on the newest one (see `choose`). It never waits
//! unbounded: every connect and every query it makes has a deadline.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_postgres::Client;

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
        let mut sessions: Vec<Option<Client>> =
            (0..connector.target().host_count()).map(|_| None).collect();
        loop {
            let roles = ask_every_host(&connector, &mut sessions, timeout).await;
            if let Some(found) = choose(&roles, primary.host()) {
                if found != primary.host() {
                    let host = connector.target().describe(found);
                    tracing::warn!(%host, "the primary moved: following it");
                    pool.set_connect_options(finish(connector.target().sqlx_options(found)));
                    primary.move_to(found);
                }
            }
            tokio::time::sleep(WATCH_EVERY).await;
        }
    });
}

/// What a host says of itself: whether it takes writes, and the timeline it writes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Role {
    writable: bool,
    timeline: i64,
}

/// A standby has no timeline of its own to give (and may not call `pg_walfile_name`): 0.
const ASK_ROLE: &str = "SELECT NOT pg_is_in_recovery() \
     AND current_setting('transaction_read_only') = 'off', \
     CASE WHEN pg_is_in_recovery() THEN 0 \
     ELSE ('x' || left(pg_walfile_name(pg_current_wal_lsn()), 8))::bit(32)::bigint END";

/// Asks every host at once, on a session kept open to each; a host that does not answer
/// within `timeout` (down, frozen, unreachable) has no role this time, and its session is
/// made again next time.
async fn ask_every_host(
    connector: &Connector,
    sessions: &mut [Option<Client>],
    timeout: Duration,
) -> Vec<Option<Role>> {
    let mut asks = JoinSet::new();
    for (i, session) in sessions.iter_mut().enumerate() {
        let (connector, session) = (connector.clone(), session.take());
        asks.spawn(async move {
            let asked = tokio::time::timeout(timeout, ask_host(&connector, i, session)).await;
            (i, asked.ok().flatten())
        });
    }
    let mut roles = vec![None; sessions.len()];
    while let Some(Ok((i, answer))) = asks.join_next().await {
        if let Some((session, role)) = answer {
            (sessions[i], roles[i]) = (Some(session), Some(role));
        }
    }
    roles
}

async fn ask_host(
    connector: &Connector,
    i: usize,
    session: Option<Client>,
) -> Option<(Client, Role)> {
    let session = match session.filter(|s| !s.is_closed()) {
        Some(session) => session,
        None => match connector.connect_any(i).await {
            Ok(session) => session,
            Err(err) => {
                let host = connector.target().describe(i);
                tracing::debug!(%host, error = %chain(&err), "cannot ask the host for its role");
                return None;
            }
        },
    };
    let row = session.query_one(ASK_ROLE, &[]).await.ok()?;
    let role = Role {
        writable: row.get(0),
        timeline: row.get(1),
    };
    Some((session, role))
}

/// The host to follow: of those that take writes, the one on the newest timeline, the current
/// primary on a tie; none if no host takes writes. Each promotion starts a new timeline, so a
/// former primary that has not yet noticed it was replaced (its failover manager died, or it
/// was frozen), still writable but on an older timeline, is left as soon as its successor
/// is promoted: its commits could never be confirmed by the standby that replaced it.
fn choose(roles: &[Option<Role>], current: usize) -> Option<usize> {
    roles
        .iter()
        .enumerate()
        .filter_map(|(i, role)| {
            role.filter(|r| r.writable)
                .map(|r| (r.timeline, i == current, i))
        })
        .max()
        .map(|(_, _, i)| i)
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

    fn role(writable: bool, timeline: i64) -> Option<Role> {
        Some(Role { writable, timeline })
    }

    #[test]
    fn the_writable_host_on_the_newest_timeline_is_followed() {
        // A standby promoted (timeline 3) while the former primary still takes writes (2).
        let roles = [role(true, 2), role(true, 3), role(false, 0)];
        assert_eq!(choose(&roles, 0), Some(1));
        // The current primary is kept on a tie, and while it is the only writable host.
        assert_eq!(choose(&[role(true, 3), role(true, 3)], 1), Some(1));
        assert_eq!(choose(&[None, role(true, 2), role(false, 0)], 1), Some(1));
        // No host takes writes (an election under way): nobody to follow yet.
        assert_eq!(choose(&[None, role(false, 0), role(false, 0)], 0), None);
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
