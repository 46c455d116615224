//! Schema migrations, embedded in the binary and applied by `serve` at startup.
//!
//! Everything seqvend owns lives in the schemas `seqvend` and `seqvend_ranges`, the migration
//! history included: seqvend's sessions run with `search_path = seqvend`. (With the default
//! `"$user", public`, a role named `seqvend` would find the history in one schema before the
//! first migration and look for it in another after.) An advisory lock makes instances that
//! start together take turns: one applies, the others find nothing left to do.

// Migrations hold a session advisory lock: a connection of their own, straight to PostgreSQL.
#![allow(clippy::disallowed_types)]

use anyhow::Context;
use sqlx::migrate::Migrator;
use sqlx::PgPool;

pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// Advisory lock class for migrations ('SVMG').
const MIGRATION_LOCK: i64 = 0x5356_4d47;

pub async fn run(pool: &PgPool) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await.context("connecting to migrate")?;
    // The operator's statement timeout is for serving, not for waiting on another instance's
    // migration or for building a schema (`SEQVEND_STATEMENT_TIMEOUT_MS` of a few hundred
    // milliseconds would fail every start); startup's own patience bounds this step.
    sqlx::raw_sql("SET statement_timeout = 0")
        .execute(&mut *conn)
        .await?;
    sqlx::query!("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
        .execute(&mut *conn)
        .await?;
    let migrated = async {
        sqlx::query!("CREATE SCHEMA IF NOT EXISTS seqvend")
            .execute(&mut *conn)
            .await?;
        MIGRATOR.run(&mut *conn).await?;
        anyhow::Ok(())
    }
    .await;
    // Unlock whatever happened: the connection goes back to the pool, with the session's
    // own statement timeout again.
    sqlx::query_scalar!("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)
        .fetch_one(&mut *conn)
        .await?;
    sqlx::raw_sql("RESET statement_timeout")
        .execute(&mut *conn)
        .await?;
    migrated.context("applying database migrations")
}
