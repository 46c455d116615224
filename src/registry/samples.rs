//! A sequence's usage samples as a series over time, for charts: what `usage_samples` still
//! holds (every sample of the last 70 minutes, one per 5 minutes back to a day; see the
//! usage migration).

use crate::db::Registry;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::RegistryError;
use crate::domain::SequenceName;

/// Most samples answered: a day at the kept resolution is well under it.
const MAX_SAMPLES: i64 = 5000;

/// Values the sequence had used (from all its ranges) at `at`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UsageSample {
    pub at: DateTime<Utc>,
    /// May exceed 2^63.
    #[schema(value_type = u64)]
    pub used: u128,
}

/// `name`'s samples, oldest first (none for a sequence that does not exist).
pub async fn usage_samples(
    pool: &Registry,
    name: &SequenceName,
) -> Result<Vec<UsageSample>, RegistryError> {
    let rows = sqlx::query!(
        r#"SELECT u.at, u.used::text AS "used!"
             FROM seqvend.sequences s
             JOIN seqvend.usage_samples u ON u.sequence_id = s.id
            WHERE s.name = $1
            ORDER BY u.at DESC
            LIMIT $2"#,
        name.as_str(),
        MAX_SAMPLES
    )
    .fetch_all(pool)
    .await
    .map_err(RegistryError::from_db)?;
    // Stored as integers; a count that does not parse is left out rather than charted as 0.
    Ok(rows
        .into_iter()
        .rev()
        .filter_map(|row| {
            Some(UsageSample {
                at: row.at,
                used: row.used.parse().ok()?,
            })
        })
        .collect())
}
