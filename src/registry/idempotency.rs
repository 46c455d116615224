//! Stored idempotent answers: purged once expired, and bounded per token.

use crate::db::Registry;

use super::RegistryError;

/// How long each step of the purge may run. Far longer than a request's statement timeout: a
/// token far over its bound takes seconds to rank, and a purge cancelled every time would
/// never purge anything. Shorter than the minute between purges.
const PURGE_TIMEOUT: &str = "45s";

/// Deletes expired answers, then each token's oldest beyond `max_per_owner`
/// (`seqvend.purge_expired_answers_in_turn` and `seqvend.purge_crowded_answers_in_turn`: a
/// vend statement's answers share one row, so the purge is in SQL); returns how many went.
/// Each step commits on its own and is tried whether or not the other failed (the first
/// failure is returned). While another instance's purge runs, a step leaves the work to it
/// and counts nothing.
pub async fn purge_answers(pool: &Registry, max_per_owner: i64) -> Result<u64, RegistryError> {
    let expired = purge_step(pool, Step::Expired).await;
    let crowded = purge_step(pool, Step::Crowded(max_per_owner)).await;
    Ok(expired? + crowded?)
}

enum Step {
    Expired,
    Crowded(i64),
}

/// One step of the purge, in a transaction of its own: how many answers it purged.
async fn purge_step(pool: &Registry, step: Step) -> Result<u64, RegistryError> {
    let mut tx = pool.begin().await.map_err(RegistryError::from_db)?;
    sqlx::query!(
        "SELECT set_config('statement_timeout', $1, true)",
        PURGE_TIMEOUT
    )
    .fetch_one(&mut tx)
    .await
    .map_err(RegistryError::from_db)?;
    let purged = match step {
        Step::Expired => {
            sqlx::query_scalar!("SELECT seqvend.purge_expired_answers_in_turn()")
                .fetch_one(&mut tx)
                .await
        }
        Step::Crowded(max_per_owner) => {
            sqlx::query_scalar!(
                "SELECT seqvend.purge_crowded_answers_in_turn($1)",
                max_per_owner
            )
            .fetch_one(&mut tx)
            .await
        }
    }
    .map_err(RegistryError::from_db)?;
    tx.commit().await.map_err(RegistryError::from_db)?;
    Ok(u64::try_from(purged.unwrap_or(0)).unwrap_or(0))
}
