//! Stored idempotent answers: purged once expired, and bounded per token.

use crate::db::Registry;

use super::RegistryError;

/// Deletes expired answers, then each token's oldest beyond `max_per_owner`; returns how many
/// went.
pub async fn purge_answers(pool: &Registry, max_per_owner: i64) -> Result<u64, RegistryError> {
    let expired = sqlx::query!("DELETE FROM seqvend.idempotency_keys WHERE expires_at <= now()")
        .execute(pool)
        .await
        .map_err(RegistryError::from_db)?;
    let crowded = sqlx::query!(
        "DELETE FROM seqvend.idempotency_keys k
          USING (SELECT owner, key
                   FROM (SELECT owner, key,
                                row_number() OVER (PARTITION BY owner ORDER BY created_at DESC) AS n
                           FROM seqvend.idempotency_keys
                          WHERE owner IN (SELECT owner FROM seqvend.idempotency_keys
                                           GROUP BY owner HAVING count(*) > $1)) ranked
                  WHERE n > $1) doomed
          WHERE k.owner = doomed.owner AND k.key = doomed.key",
        max_per_owner
    )
    .execute(pool)
    .await
    .map_err(RegistryError::from_db)?;
    Ok(expired.rows_affected() + crowded.rows_affected())
}
