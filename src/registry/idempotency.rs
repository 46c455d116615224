//! Stored idempotent answers: purged once expired, and bounded per token.

use crate::db::Registry;

use super::RegistryError;

/// Deletes expired answers, then each token's oldest beyond `max_per_owner`
/// (`seqvend.purge_answers`: a vend statement's answers share one row, so the purge is in
/// SQL); returns how many went.
pub async fn purge_answers(pool: &Registry, max_per_owner: i64) -> Result<u64, RegistryError> {
    let purged = sqlx::query_scalar!(
        r#"SELECT seqvend.purge_answers($1) AS "purged!""#,
        max_per_owner
    )
    .fetch_one(pool)
    .await
    .map_err(RegistryError::from_db)?;
    Ok(u64::try_from(purged).unwrap_or(0))
}
