//! The registry's side of the vend path: what the catalog keeps of a sequence (its format and
//! cache policy), and whether seqvend handed out a given serial from a sequence of a given
//! format.

use crate::db::Registry;

use super::catalog::Entry;
use super::views::{read_format, stored_format};
use super::RegistryError;
use crate::carriers::Origin;
use crate::domain::{CachePolicy, SequenceName};

/// An existing sequence's namespace, format (`None` for a plain one) and cache policy;
/// `None` when no sequence has the name.
pub async fn catalog_entry(
    pool: &Registry,
    name: &SequenceName,
) -> Result<Option<Entry>, RegistryError> {
    let row = sqlx::query!(
        "SELECT namespace, format::text, cache_size, cache_buffer_seconds, cache_min
           FROM seqvend.sequences WHERE name = $1",
        name.as_str()
    )
    .fetch_optional(pool)
    .await
    .map_err(RegistryError::from_db)?;
    row.map(|row| {
        let format = row.format.as_deref().map(read_format).transpose()?;
        let cache = CachePolicy::from_db(row.cache_size, row.cache_buffer_seconds, row.cache_min);
        Ok(Entry {
            namespace: row.namespace,
            format,
            cache,
        })
    })
    .transpose()
}

/// A sequence that vended a value, and the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub sequence: String,
    /// The sequence's namespace: whether a caller may be told is judged by it too.
    pub namespace: String,
    pub value: i64,
}

/// The sequence (of the given format) that already handed out the given serial, if any.
///
/// "Handed out" is a range's high-water mark, the last value seqvend vended from it: not the
/// range's PostgreSQL sequence position (`range_last_value`), which also counts values drawn
/// by hand or by statements that then failed, none of which reached a client. Values between
/// the range's start and its mark, on the increment's steps, were vended.
pub async fn issued(pool: &Registry, origins: &[Origin]) -> Result<Option<Issued>, RegistryError> {
    if origins.is_empty() {
        return Ok(None);
    }
    let formats: Vec<String> = origins.iter().map(|o| stored_format(&o.format)).collect();
    let serials: Vec<i64> = origins.iter().map(|o| o.serial).collect();
    let row = sqlx::query_as!(
        Issued,
        r#"SELECT s.name AS "sequence!", s.namespace AS "namespace!", c.serial AS "value!"
             FROM unnest($1::text[], $2::int8[]) AS c(format, serial)
             JOIN seqvend.sequences s ON s.format = c.format::jsonb
             JOIN seqvend.ranges r ON r.sequence_id = s.id
             JOIN seqvend.range_marks m ON m.range_id = r.id
            WHERE m.high_water IS NOT NULL
              AND CASE WHEN s.increment > 0
                       THEN c.serial BETWEEN r.start_value AND m.high_water
                       ELSE c.serial BETWEEN m.high_water AND r.start_value END
              AND (c.serial::numeric - r.start_value) % s.increment = 0
            ORDER BY s.id
            LIMIT 1"#,
        &formats,
        &serials
    )
    .fetch_optional(pool)
    .await
    .map_err(RegistryError::from_db)?;
    Ok(row)
}
