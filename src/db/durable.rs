//! Transactions whose commit must be on disk before their effect is acted on: a lease row, a
//! renewal, a worker id. `synchronous_commit = on` is also a startup option of every seqvend
//! session (see `session_settings`), but a pooler may drop startup options and the server's
//! or role's default may be off, so each such transaction sets it for itself.

use sqlx::{PgPool, Postgres, Transaction};

/// Begins a transaction whose commit waits for its WAL flush (and a synchronous standby),
/// whatever the session, role or server default says.
pub async fn begin_durable(pool: &PgPool) -> sqlx::Result<Transaction<'static, Postgres>> {
    let mut tx = pool.begin().await?;
    sqlx::query_scalar!("SELECT set_config('synchronous_commit', 'on', true)")
        .fetch_one(&mut *tx)
        .await?;
    Ok(tx)
}
