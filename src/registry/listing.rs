//! Reading sequences in name order, many at a time: the list API's pages, and the slices the
//! console's overview reads side by side. One statement per page or slice; each range's
//! position comes from `range_last_value` (a plain `pg_sequence_last_value` call for a range
//! that has handed out a value) and usage from `usage_since`, which the planner inlines into
//! two index probes per sequence (see the overview-reads migration). And which sequences
//! changed since a time, so that a kept reading can be brought up to date by re-reading them.

use chrono::{DateTime, Utc};

use crate::db::Registry;

use super::views::{cut_page, fold_rows, SequencePage, SequenceRow, SequenceView};
use super::RegistryError;
use crate::domain::SequenceName;

/// Sequences in name order, after `after`, at most `limit` of them.
pub async fn list_sequences(
    pool: &Registry,
    after: Option<&SequenceName>,
    limit: u32,
) -> Result<SequencePage, RegistryError> {
    let after = after.map_or("", SequenceName::as_str);
    let slice = Slice {
        after,
        through: None,
        named: None,
    };
    let sequences = read_slice(pool, slice, i64::from(limit) + 1).await?;
    let (sequences, next) = cut_page(sequences, limit, |s| s.name.clone());
    Ok(SequencePage { sequences, next })
}

/// The database's clock, and the names that cut the registry into slices of about
/// `per_slice` sequences each, in name order: a slice ends at each of them (inclusive), the
/// last one at the end. The clock is read first: whatever changes after it is stamped later.
pub async fn slice_ends(
    pool: &Registry,
    per_slice: u32,
) -> Result<(DateTime<Utc>, Vec<String>), RegistryError> {
    let now = sqlx::query_scalar!(r#"SELECT now() AS "now!""#)
        .fetch_one(pool)
        .await
        .map_err(RegistryError::from_db)?;
    let ends = sqlx::query_scalar!(
        r#"SELECT name AS "name!"
             FROM (SELECT name, row_number() OVER (ORDER BY name) AS n
                     FROM seqvend.sequences) numbered
            WHERE n % $1 = 0
            ORDER BY name"#,
        i64::from(per_slice.max(1))
    )
    .fetch_all(pool)
    .await
    .map_err(RegistryError::from_db)?;
    Ok((now, ends))
}

/// Every sequence named after `after` and up to `through` (inclusive; to the end if none).
pub async fn sequences_between(
    pool: &Registry,
    after: &str,
    through: Option<&str>,
) -> Result<Vec<SequenceView>, RegistryError> {
    let slice = Slice {
        after,
        through,
        named: None,
    };
    read_slice(pool, slice, i64::MAX).await
}

/// The names of the sequences changed at or after `since` (by the database's clock): made,
/// retired, their settings or status changed, a range added or rolled over; `at_most` of
/// them and one more (so the caller knows there are more). Alerts raised by the usage rounds
/// are not among them. Two scans of small tables, no sequence opened.
pub async fn changed_since(
    pool: &Registry,
    since: DateTime<Utc>,
    at_most: usize,
) -> Result<Vec<String>, RegistryError> {
    sqlx::query_scalar!(
        r#"SELECT name AS "name!" FROM seqvend.sequences WHERE updated_at >= $1
           UNION
           SELECT s.name FROM seqvend.ranges r JOIN seqvend.sequences s ON s.id = r.sequence_id
            WHERE r.updated_at >= $1
           LIMIT $2"#,
        since,
        at_most as i64 + 1
    )
    .fetch_all(pool)
    .await
    .map_err(RegistryError::from_db)
}

/// The sequences named `names` (those that exist), in name order.
pub async fn sequences_named(
    pool: &Registry,
    names: &[String],
) -> Result<Vec<SequenceView>, RegistryError> {
    let slice = Slice {
        after: "",
        through: None,
        named: Some(names),
    };
    read_slice(pool, slice, i64::MAX).await
}

/// Which sequences a statement reads: named after `after` and up to `through` (to the end
/// if none), and among `named` when given.
struct Slice<'a> {
    after: &'a str,
    through: Option<&'a str>,
    named: Option<&'a [String]>,
}

/// At most `limit` sequences of `slice`, in name order. An exhausted range's position is not
/// read: it has nothing left whatever it says.
async fn read_slice(
    pool: &Registry,
    slice: Slice<'_>,
    limit: i64,
) -> Result<Vec<SequenceView>, RegistryError> {
    let rows = sqlx::query_as!(
        SequenceRow,
        r#"SELECT s.id, s.name, s.namespace, s.increment, s.status, s.format::text AS format,
                  s.created_at, s.updated_at,
                  s.cache_size, s.cache_buffer_seconds, s.cache_min,
                  s.alert_remaining_below, s.alert_days_left_below, s.alerts_raised,
                  u1.used::text AS "used_1h?", u1.span_seconds AS "span_1h?",
                  u24.used::text AS "used_24h?", u24.span_seconds AS "span_24h?",
                  r.min_value AS "min_value?", r.max_value AS "max_value?",
                  r.start_value AS "start_value?", r.status AS "range_status?",
                  r.pg_sequence::text AS "pg_sequence?",
                  CASE WHEN r.status <> 'exhausted'
                       THEN seqvend.range_last_value(r.pg_sequence, m.high_water, s.increment) END AS last_value
             FROM (SELECT * FROM seqvend.sequences
                    WHERE name > $1 AND ($2::text IS NULL OR name <= $2)
                      AND ($4::text[] IS NULL OR name = ANY($4))
                    ORDER BY name LIMIT $3) s
             LEFT JOIN LATERAL seqvend.usage_since(s.id, interval '1 hour') u1 ON true
             LEFT JOIN LATERAL seqvend.usage_since(s.id, interval '1 day') u24 ON true
             LEFT JOIN seqvend.ranges r ON r.sequence_id = s.id
             LEFT JOIN seqvend.range_marks m ON m.range_id = r.id
            ORDER BY s.name, r.id"#,
        slice.after,
        slice.through,
        limit,
        slice.named
    )
    .fetch_all(pool)
    .await
    .map_err(RegistryError::from_db)?;
    let views = fold_rows(rows)?
        .into_iter()
        .map(|record| record.view)
        .collect();
    Ok(views)
}
