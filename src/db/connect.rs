//! Connecting with tokio-postgres (the vend pool and the primary watcher), one host at a time.
//! Each host gets the whole connect timeout for all of it — TCP, TLS, authentication, startup
//! and the read-write check — because a frozen server's kernel still completes the TCP
//! handshake and acknowledges what is sent: only a deadline on the whole exchange notices. A
//! frozen first host so costs one timeout per new connection, not forever.

use std::io;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_postgres::config::TargetSessionAttrs;
use tokio_postgres::{AsyncMessage, Client};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::pg_error;
use super::primary::Primary;
use super::target::Target;
use super::vend_pool::UnconfirmedCommit;
use crate::settings::DatabaseSettings;

#[derive(Clone)]
pub struct Connector {
    target: Arc<Target>,
    tls: MakeRustlsConnect,
    primary: Primary,
    timeout: Duration,
    tcp_timeout: Duration,
    application_name: &'static str,
    /// Session settings, as `-c name=value` server options; none behind a pooler, which
    /// refuses or drops them.
    options: Option<String>,
}

/// A client, the task running its connection, and what that task saw of its commits.
type Connected = (Client, JoinHandle<()>, UnconfirmedCommit);

impl Connector {
    pub fn new(
        target: Arc<Target>,
        primary: Primary,
        settings: &DatabaseSettings,
        application_name: &'static str,
        options: Option<String>,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            tls: target.tls.connector()?,
            target,
            primary,
            timeout: settings.connect_timeout,
            tcp_timeout: settings.tcp_timeout,
            application_name,
            options,
        })
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    pub fn primary(&self) -> &Primary {
        &self.primary
    }

    /// Connects to host `i` and insists on a read-write session (libpq's
    /// `target_session_attrs=read-write`, whatever the URL says): a standby is refused before
    /// anything is written. The connection runs in a task that also ends when the primary
    /// moves to another host, so that nothing keeps waiting on a former primary.
    pub async fn connect_host(&self, i: usize) -> Result<Connected, tokio_postgres::Error> {
        self.connect_host_as(i, TargetSessionAttrs::ReadWrite).await
    }

    /// A session to host `i` whatever its role, for the primary watcher to ask it what it is.
    pub async fn connect_any(&self, i: usize) -> Result<Client, tokio_postgres::Error> {
        let (client, _task, _) = self.connect_host_as(i, TargetSessionAttrs::Any).await?;
        Ok(client)
    }

    async fn connect_host_as(
        &self,
        i: usize,
        attrs: TargetSessionAttrs,
    ) -> Result<Connected, tokio_postgres::Error> {
        let mut config = self.target.host_config(i);
        if let Some(options) = &self.options {
            config.options(options);
        }
        config
            .application_name(self.application_name)
            .target_session_attrs(attrs)
            .connect_timeout(self.timeout)
            // For a host that vanishes (no FIN, no RST): unacknowledged data or an idle
            // connection's keepalives give up after about `tcp_timeout`.
            .tcp_user_timeout(self.tcp_timeout)
            .keepalives(true)
            .keepalives_idle(at_least_a_second(self.tcp_timeout / 2))
            .keepalives_interval(at_least_a_second(self.tcp_timeout / 6))
            .keepalives_retries(3);
        let moved_away = self.primary.moved_away_from(i);
        let host = self.target.describe(i);
        match tokio::time::timeout(self.timeout, config.connect(self.tls.clone())).await {
            Ok(Ok((client, mut connection))) => {
                let unconfirmed = UnconfirmedCommit::default();
                let seen = unconfirmed.clone();
                // Runs the connection, looking at each notice (the Connection future alone
                // would only log them).
                let run = std::future::poll_fn(move |cx| loop {
                    match connection.poll_message(cx) {
                        Poll::Ready(Some(Ok(AsyncMessage::Notice(notice)))) => {
                            seen.observe(&notice)
                        }
                        Poll::Ready(Some(Ok(_))) => {}
                        Poll::Ready(Some(Err(err))) => return Poll::Ready(Err(err)),
                        Poll::Ready(None) => return Poll::Ready(Ok(())),
                        Poll::Pending => return Poll::Pending,
                    }
                });
                let task = tokio::spawn(async move {
                    tokio::select! {
                        ended = run => if let Err(err) = ended {
                            tracing::debug!(%host, error = %chain(&err), "a database connection failed");
                        },
                        () = moved_away => {
                            tracing::info!(%host, "closing a connection to the former primary");
                        }
                    }
                });
                Ok((client, task, unconfirmed))
            }
            Ok(Err(err)) => Err(err),
            Err(_) => {
                let message = format!(
                    "{host} did not complete connect, TLS, authentication and startup within {:?}",
                    self.timeout
                );
                Err(pg_error::from_io(io::Error::new(io::ErrorKind::TimedOut, message)).await)
            }
        }
    }

    /// The first host that gives a read-write session: the current primary first, then the
    /// others in the URL's order.
    pub async fn connect_primary(&self) -> Result<Connected, tokio_postgres::Error> {
        let (first, count) = (self.primary.host(), self.target.host_count());
        let mut failure = None;
        for i in (0..count).map(|k| (first + k) % count) {
            match self.connect_host(i).await {
                Ok(connected) => return Ok(connected),
                Err(err) => {
                    let host = self.target.describe(i);
                    tracing::warn!(%host, error = %chain(&err), "could not connect to the database");
                    failure = Some(err);
                }
            }
        }
        Err(failure.expect("a target has at least one host"))
    }
}

/// The kernel takes keepalive times in whole seconds, and refuses zero.
fn at_least_a_second(duration: Duration) -> Duration {
    duration.max(Duration::from_secs(1))
}

/// An error and its causes on one line (tokio-postgres shows only the outermost).
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut shown = err.to_string();
    let mut cause = err.source();
    while let Some(next) = cause {
        shown.push_str(": ");
        shown.push_str(&next.to_string());
        cause = next.source();
    }
    shown
}
