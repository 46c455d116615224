//! Stored idempotent answers: purged once expired, and bounded per token.

use crate::db::Registry;

use super::RegistryError;

/// How long each step of the purge may run. Far longer than a request's statement timeout: a
/// token far over its bound takes seconds to rank, and a purge cancelled every time would
/// never purge anything. Shorter than the minute between purges.
const PURGE_TIMEOUT: &str = "45s";

/// Deletes expired answers, then each token's oldest beyond `max_per_owner`; returns how many
/// went, or the first step's failure. See `purge_steps`.
pub async fn purge_answers(pool: &Registry, max_per_owner: i64) -> Result<u64, RegistryError> {
    let mut purged = 0;
    for (_, outcome) in purge_steps(pool, max_per_owner).await {
        purged += outcome?.unwrap_or(0);
    }
    Ok(purged)
}

/// A step of the purge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeStep {
    /// Answers past their time to live.
    Expired,
    /// Each token's oldest answers beyond its bound.
    Crowded,
}

impl PurgeStep {
    /// Its name in metrics and logs.
    pub fn label(self) -> &'static str {
        match self {
            Self::Expired => "expired",
            Self::Crowded => "crowded",
        }
    }
}

/// What a step did: how many answers it purged, or `None` when another instance's purge was
/// running and the step left the work to it.
pub type StepOutcome = Result<Option<u64>, RegistryError>;

/// Deletes expired answers, then each token's oldest beyond `max_per_owner`
/// (`seqvend.purge_expired_answers_in_turn` and `seqvend.purge_crowded_answers_in_turn`: a
/// vend statement's answers share one row, so the purge is in SQL). Each step commits on its
/// own and is tried whether or not the other failed.
pub async fn purge_steps(pool: &Registry, max_per_owner: i64) -> [(PurgeStep, StepOutcome); 2] {
    let expired = purge_step(pool, PurgeStep::Expired, max_per_owner).await;
    let crowded = purge_step(pool, PurgeStep::Crowded, max_per_owner).await;
    [(PurgeStep::Expired, expired), (PurgeStep::Crowded, crowded)]
}

/// One step of the purge, in a transaction of its own.
async fn purge_step(pool: &Registry, step: PurgeStep, max_per_owner: i64) -> StepOutcome {
    let mut tx = pool.begin().await.map_err(RegistryError::from_db)?;
    sqlx::query!(
        "SELECT set_config('statement_timeout', $1, true)",
        PURGE_TIMEOUT
    )
    .fetch_one(&mut tx)
    .await
    .map_err(RegistryError::from_db)?;
    let purged = match step {
        PurgeStep::Expired => {
            sqlx::query_scalar!("SELECT seqvend.purge_expired_answers_in_turn()")
                .fetch_one(&mut tx)
                .await
        }
        PurgeStep::Crowded => {
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
    Ok(purged.map(|n| u64::try_from(n).unwrap_or(0)))
}
