//! Counter families: created, read, listed and retired; and one counter read by its key.
//! A family's counters are drawn by the vend path (`vend::Counters`), never here.

use crate::db::{Registry, RegistryTx};
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::views::cut_page;
use super::RegistryError;
use crate::domain::{CounterKey, SequenceName, SequenceSpec};

/// Advisory lock class for a family: draws hold it shared, retiring exclusively (see the
/// counters migration).
const FAMILY_LOCK_CLASS: i32 = 1_178_684_747;

/// A family as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FamilyView {
    pub name: String,
    /// `active`, or `retired` (its counters draw nothing more).
    pub status: &'static str,
    /// Where each counter starts.
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    /// How many values each counter holds (at most 2^63 − 1).
    pub values_per_counter: i64,
    pub created_at: DateTime<Utc>,
    pub retired_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FamilyPage {
    pub families: Vec<FamilyView>,
    /// Pass as `after` for the next page; null on the last page.
    pub next: Option<String>,
}

/// One counter as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CounterView {
    pub family: String,
    pub key: String,
    /// The value its next draw hands out; null once it has run out.
    pub next_value: Option<i64>,
    /// Values it has handed out.
    pub drawn: i64,
    /// Values it has left.
    pub remaining: i64,
}

struct FamilyRow {
    name: String,
    start_value: i64,
    increment: i64,
    min_value: i64,
    max_value: i64,
    capacity: i64,
    created_at: DateTime<Utc>,
    retired_at: Option<DateTime<Utc>>,
}

impl From<FamilyRow> for FamilyView {
    fn from(row: FamilyRow) -> Self {
        Self {
            name: row.name,
            status: if row.retired_at.is_some() {
                "retired"
            } else {
                "active"
            },
            start: row.start_value,
            increment: row.increment,
            min: row.min_value,
            max: row.max_value,
            values_per_counter: row.capacity,
            created_at: row.created_at,
            retired_at: row.retired_at,
        }
    }
}

pub async fn create_family(
    pool: &Registry,
    name: &SequenceName,
    spec: SequenceSpec,
    by: &str,
) -> Result<FamilyView, RegistryError> {
    let mut tx = pool.begin().await.map_err(RegistryError::from_db)?;
    let id = sqlx::query_scalar!(
        "INSERT INTO seqvend.families
             (name, start_value, increment, min_value, max_value, created_by)
         VALUES ($1, $2, $3, $4, $5, $6)
         RETURNING id",
        name.as_str(),
        spec.start,
        spec.increment.get(),
        spec.bounds.min(),
        spec.bounds.max(),
        by
    )
    .fetch_one(&mut tx)
    .await
    .map_err(|err| {
        RegistryError::on_constraint(err, "families_name_key", || {
            RegistryError::NameTaken(name.clone())
        })
    })?;
    record_event(&mut tx, id, "family_created", by).await?;
    tx.commit().await.map_err(RegistryError::from_db)?;
    get_family(pool, name).await
}

pub async fn get_family(pool: &Registry, name: &SequenceName) -> Result<FamilyView, RegistryError> {
    sqlx::query_as!(
        FamilyRow,
        r#"SELECT name, start_value, increment, min_value, max_value, capacity AS "capacity!",
                  created_at, retired_at
             FROM seqvend.families WHERE name = $1"#,
        name.as_str()
    )
    .fetch_optional(pool)
    .await
    .map_err(RegistryError::from_db)?
    .map(FamilyView::from)
    .ok_or_else(|| RegistryError::FamilyNotFound(name.clone()))
}

/// Families in name order, after `after`, at most `limit` of them.
pub async fn list_families(
    pool: &Registry,
    after: Option<&SequenceName>,
    limit: u32,
) -> Result<FamilyPage, RegistryError> {
    let families: Vec<FamilyView> = sqlx::query_as!(
        FamilyRow,
        r#"SELECT name, start_value, increment, min_value, max_value, capacity AS "capacity!",
                  created_at, retired_at
             FROM seqvend.families WHERE name > $1 ORDER BY name LIMIT $2"#,
        after.map_or("", SequenceName::as_str),
        i64::from(limit) + 1
    )
    .fetch_all(pool)
    .await
    .map_err(RegistryError::from_db)?
    .into_iter()
    .map(FamilyView::from)
    .collect();
    let (families, next) = cut_page(families, limit, |f| f.name.clone());
    Ok(FamilyPage { families, next })
}

/// Retires a family: once this returns, none of its counters draws again, on any instance.
/// Its counters are kept (they are what was handed out). Retiring again answers the same.
pub async fn retire_family(
    pool: &Registry,
    name: &SequenceName,
    by: &str,
) -> Result<FamilyView, RegistryError> {
    let mut tx = pool.begin().await.map_err(RegistryError::from_db)?;
    let id = sqlx::query_scalar!(
        "SELECT id FROM seqvend.families WHERE name = $1",
        name.as_str()
    )
    .fetch_optional(&mut tx)
    .await
    .map_err(RegistryError::from_db)?
    .ok_or_else(|| RegistryError::FamilyNotFound(name.clone()))?;
    // Waits for the draws in flight to commit; draws after it see the family retired.
    sqlx::query!(
        "SELECT pg_advisory_xact_lock($1, $2)",
        FAMILY_LOCK_CLASS,
        id
    )
    .execute(&mut tx)
    .await
    .map_err(RegistryError::from_db)?;
    let retired = sqlx::query!(
        "UPDATE seqvend.families SET retired_at = now(), retired_by = $2
          WHERE id = $1 AND retired_at IS NULL",
        id,
        by
    )
    .execute(&mut tx)
    .await
    .map_err(RegistryError::from_db)?;
    if retired.rows_affected() > 0 {
        record_event(&mut tx, id, "family_retired", by).await?;
    }
    tx.commit().await.map_err(RegistryError::from_db)?;
    get_family(pool, name).await
}

/// The counter `key` of `family` as it stands.
pub async fn get_counter(
    pool: &Registry,
    family: &SequenceName,
    key: &CounterKey,
) -> Result<CounterView, RegistryError> {
    let row = sqlx::query!(
        r#"SELECT f.retired_at IS NOT NULL AS "retired!", f.capacity AS "capacity!",
                  c.drawn AS "drawn?",
                  CASE WHEN c.drawn < f.capacity
                       THEN (f.start_value + c.drawn::numeric * f.increment)::bigint
                  END AS next_value
             FROM seqvend.families f
             LEFT JOIN seqvend.counters c ON c.family_id = f.id AND c.key = $2
            WHERE f.name = $1"#,
        family.as_str(),
        key.as_str()
    )
    .fetch_optional(pool)
    .await
    .map_err(RegistryError::from_db)?
    .ok_or_else(|| RegistryError::FamilyNotFound(family.clone()))?;
    if row.retired {
        return Err(RegistryError::FamilyRetired(family.clone()));
    }
    let drawn = row.drawn.ok_or_else(|| RegistryError::CounterNotFound {
        family: family.clone(),
        key: key.to_string(),
    })?;
    Ok(CounterView {
        family: family.to_string(),
        key: key.to_string(),
        next_value: row.next_value,
        drawn,
        // Never below zero: a counter drawn under a capacity counted one too many (before
        // migration 20261207120000) holds one value past it.
        remaining: (row.capacity - drawn).max(0),
    })
}

/// Records an admin's change to a family, with the name of the token that made it.
async fn record_event(
    tx: &mut RegistryTx,
    family_id: i32,
    kind: &str,
    by: &str,
) -> Result<(), RegistryError> {
    sqlx::query!(
        "INSERT INTO seqvend.events (family_id, kind, actor, token)
         VALUES ($1, $2, 'admin', $3)",
        family_id,
        kind,
        by
    )
    .execute(&mut *tx)
    .await
    .map_err(RegistryError::from_db)?;
    Ok(())
}
