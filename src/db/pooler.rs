//! Poolers in transaction mode (PgBouncer): telling one from PostgreSQL itself, and what the
//! vend pool does differently behind one. A pooler in transaction mode hands each transaction
//! to whichever server connection is free, so nothing may outlive a transaction: no startup
//! options (PgBouncer 1.18 refuses them, or drops them with `ignore_startup_parameters`), no
//! session `SET`, no named prepared statement, no session advisory lock, no `LISTEN`.
//!
//! Every direct seqvend session carries `MARKER` among its startup options. A server that
//! refuses startup options, or answers without the marker set, is not PostgreSQL itself.

use std::sync::Arc;

use anyhow::Context;
use sqlx::{PgPool, Row};

use super::connect::{chain, Connector};

/// A startup option every direct seqvend session sets; a pooler refuses or drops it.
pub const MARKER: (&str, &str) = ("seqvend.startup_options", "on");

/// How the vend pool's statements reach PostgreSQL.
#[derive(Debug, Clone)]
pub enum Route {
    /// Straight: session settings as startup options, named statements cached per connection.
    Direct,
    /// Through a pooler in transaction mode: each statement in a transaction of its own that
    /// `begin`s at seqvend's isolation and sets seqvend's settings for itself alone.
    Pooled { begin: Arc<str> },
}

impl Route {
    /// The pooled route: each transaction begun at `isolation` (named in its `BEGIN`: once a
    /// statement has run, a transaction's isolation can no longer be set), then `settings`
    /// set in it (`set_config(…, true)`).
    pub fn pooled(isolation: &str, settings: &[(&str, String)]) -> Self {
        let set: Vec<String> = settings
            .iter()
            .map(|(name, value)| format!("set_config('{name}', '{value}', true)"))
            .collect();
        Self::Pooled {
            begin: format!(
                "BEGIN ISOLATION LEVEL {isolation}; SELECT {}",
                set.join(", ")
            )
            .into(),
        }
    }

    pub fn is_pooled(&self) -> bool {
        matches!(self, Self::Pooled { .. })
    }
}

/// Whether a connection failed because the server refused startup options: PgBouncer says
/// "unsupported startup parameter: options".
pub fn refused_options(err: &(dyn std::error::Error + 'static)) -> bool {
    chain(err).contains("unsupported startup parameter")
}

/// Whether `connector` (which sends seqvend's startup options) reaches PostgreSQL itself
/// (false: a pooler that refused or dropped them), asking its hosts in turn.
pub async fn reaches_postgres(connector: &Connector) -> Result<bool, tokio_postgres::Error> {
    let mut failure = None;
    for i in 0..connector.target().host_count() {
        match probe(connector, i).await {
            Err(err) => failure = Some(err),
            answer => return answer,
        }
    }
    Err(failure.expect("a target has at least one host"))
}

async fn probe(connector: &Connector, host: usize) -> Result<bool, tokio_postgres::Error> {
    match connector.connect_host(host).await {
        Ok((client, task, _)) => {
            let answer = client.simple_query(&marker_query()).await;
            drop(client);
            task.abort();
            Ok(marker_set(answer?.iter().find_map(
                |message| match message {
                    tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0),
                    _ => None,
                },
            )))
        }
        Err(err) if refused_options(&err) => Ok(false),
        Err(err) => Err(err),
    }
}

/// Refuses to go on when the session pool (the direct URL: the notification listener,
/// migrations) reaches a pooler: `LISTEN` and the migration lock need a session of their own.
pub async fn ensure_direct(registry: &PgPool) -> anyhow::Result<()> {
    // A simple query: a prepared statement would collide on a pooler before the check.
    let seen: Option<String> = sqlx::raw_sql(&marker_query())
        .fetch_one(registry)
        .await
        .and_then(|row| row.try_get(0))
        .context("checking that the direct database URL reaches PostgreSQL")?;
    anyhow::ensure!(
        marker_set(seen.as_deref()),
        "{} (it dropped seqvend's startup options)",
        NOT_DIRECT
    );
    Ok(())
}

/// What to say when the direct URL reaches a pooler.
pub const NOT_DIRECT: &str = "SEQVEND_DIRECT_DATABASE_URL (DATABASE_URL when it is unset) \
     reaches a connection pooler, not PostgreSQL: the notification listener (LISTEN) and \
     migrations need sessions of their own. Point SEQVEND_DIRECT_DATABASE_URL \
     at PostgreSQL itself and keep the pooler in DATABASE_URL (see docs/pgbouncer.md)";

fn marker_query() -> String {
    format!("SELECT current_setting('{}', true)", MARKER.0)
}

fn marker_set(seen: Option<&str>) -> bool {
    seen == Some(MARKER.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pooled_route_begins_at_its_isolation_and_sets_each_setting_for_its_transaction_only() {
        let route = Route::pooled(
            "read committed",
            &[
                ("statement_timeout", "5000".into()),
                ("search_path", "seqvend".into()),
            ],
        );
        let Route::Pooled { begin } = route else {
            panic!("not pooled")
        };
        assert_eq!(
            &*begin,
            "BEGIN ISOLATION LEVEL read committed; SELECT set_config('statement_timeout', \
             '5000', true), set_config('search_path', 'seqvend', true)"
        );
    }

    #[test]
    fn only_the_marker_itself_counts_as_postgresql() {
        assert!(marker_set(Some("on")));
        assert!(!marker_set(None));
        assert!(!marker_set(Some("")));
    }
}
