//! Schema migrations, embedded in the binary and applied by `serve` at startup.
//! sqlx's migrator holds a PostgreSQL advisory lock while it runs, so several instances may
//! start at once: one applies, the others wait and find nothing left to do.

use anyhow::Context;
use sqlx::migrate::Migrator;
use sqlx::PgPool;

pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

pub async fn run(pool: &PgPool) -> anyhow::Result<()> {
    MIGRATOR
        .run(pool)
        .await
        .context("applying database migrations")
}
