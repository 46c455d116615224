//! The registry pool (sqlx): on the primary only, and never handing out a connection that
//! could keep a caller waiting on a former primary.

use std::io;

use sqlx::pool::PoolConnectionMetadata;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection, PgPool, Row};

use super::primary::Primary;
use crate::settings::DatabaseSettings;

pub fn pool(options: PgConnectOptions, primary: Primary, settings: &DatabaseSettings) -> PgPool {
    PgPoolOptions::new()
        .max_connections(settings.admin_pool_size)
        .min_connections(0)
        // Bounds everything before a connection is handed out: connecting (TCP, TLS,
        // authentication), the read-write check, and the ping of an idle connection — a
        // frozen server answers none of them.
        .acquire_timeout(settings.connect_timeout)
        .after_connect(|conn, _| Box::pin(insist_on_read_write(conn)))
        // The ping moves into `before_acquire`, after the cheaper check that drops
        // connections made before the primary last moved.
        .test_before_acquire(false)
        .before_acquire(move |conn, meta| {
            let primary = primary.clone();
            Box::pin(async move { fresh_and_alive(conn, meta, &primary).await })
        })
        .connect_lazy_with(options)
}

/// libpq's `target_session_attrs=read-write` for every connection, one host or several: on
/// a standby no connection is made, so no write is ever attempted there.
async fn insist_on_read_write(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    // A simple query, no prepared statement: should this URL reach a pooler after all, the
    // check gets as far as saying so (see `pooler::ensure_direct`).
    let read_only: String = conn
        .fetch_one("SHOW transaction_read_only")
        .await?
        .try_get(0)?;
    if read_only == "on" {
        return Err(sqlx::Error::Io(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the database does not allow writes (a standby?)",
        )));
    }
    Ok(())
}

async fn fresh_and_alive(
    conn: &mut PgConnection,
    meta: PoolConnectionMetadata,
    primary: &Primary,
) -> Result<bool, sqlx::Error> {
    let made = std::time::Instant::now().checked_sub(meta.age);
    if made.is_none_or(|made| made < primary.since()) {
        return Ok(false);
    }
    conn.ping().await?;
    Ok(true)
}
