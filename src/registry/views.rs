//! What the registry answers with: sequences and their ranges as the API shows them, folded
//! from the rows the registry queries return. No SQL here.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::RegistryError;
use crate::carriers::Format;
use crate::domain::{CachePolicy, RangeState, RangeStatus, SequenceStatus};

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SequenceView {
    pub name: String,
    pub namespace: String,
    pub increment: i64,
    pub status: SequenceStatus,
    /// How vended values are printed, e.g. `{"kind": "ups_1z", "account": "5R8939",
    /// "service": "03"}`; absent for a plain sequence.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub format: Option<Format>,
    pub cache: CacheView,
    /// Values still to vend across the active and pending ranges (may exceed 2^63).
    #[schema(value_type = u64)]
    pub remaining: u128,
    pub ranges: Vec<RangeView>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// How instances cache the sequence: `size` 0 is strict (every value drawn on the request
/// path); otherwise each instance holds up to `size` values and draws more when it holds fewer
/// than `max(rate × buffer_seconds, min)`.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct CacheView {
    pub size: u64,
    pub buffer_seconds: u64,
    pub min: u64,
}

impl From<CachePolicy> for CacheView {
    fn from(policy: CachePolicy) -> Self {
        let rule = policy.rule();
        Self {
            size: rule.size,
            buffer_seconds: rule.buffer_seconds,
            min: rule.min,
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RangeView {
    pub min: i64,
    pub max: i64,
    pub status: RangeStatus,
    /// What the range would vend next; null when it has nothing left.
    pub next: Option<i64>,
    #[schema(value_type = u64)]
    pub remaining: u128,
    /// The range's PostgreSQL sequence, as `regclass::text` prints it (e.g.
    /// `seqvend_ranges.r12`), for a DBA to find it.
    pub pg_sequence: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SequencePage {
    pub sequences: Vec<SequenceView>,
    /// Pass as `after` for the next page; null on the last page.
    pub next: Option<String>,
}

impl RangeView {
    pub(super) fn new(state: RangeState, pg_sequence: String) -> Self {
        Self {
            min: state.min,
            max: state.max,
            status: state.status,
            next: state.next(),
            remaining: state.remaining(),
            pg_sequence,
        }
    }
}

/// One row per (sequence, range); a sequence without ranges cannot exist, but the LEFT JOIN
/// keeps the shape honest.
pub(super) struct SequenceRow {
    pub(super) id: i32,
    pub(super) name: String,
    pub(super) namespace: String,
    pub(super) increment: i64,
    pub(super) status: String,
    pub(super) format: Option<String>,
    pub(super) created_at: DateTime<Utc>,
    pub(super) updated_at: DateTime<Utc>,
    pub(super) cache_size: i64,
    pub(super) cache_buffer_seconds: i32,
    pub(super) cache_min: i64,
    pub(super) min_value: Option<i64>,
    pub(super) max_value: Option<i64>,
    pub(super) start_value: Option<i64>,
    pub(super) range_status: Option<String>,
    pub(super) pg_sequence: Option<String>,
    pub(super) last_value: Option<i64>,
}

impl SequenceRow {
    fn range_state(&self) -> Option<RangeState> {
        Some(RangeState {
            min: self.min_value?,
            max: self.max_value?,
            start: self.start_value?,
            increment: self.increment,
            status: RangeStatus::from_db(self.range_status.as_deref()?),
            last_value: self.last_value,
        })
    }
}

/// A sequence with the states of its ranges, in the order the ranges were added.
pub struct SequenceRecord {
    pub view: SequenceView,
    pub states: Vec<RangeState>,
}

/// A format as the registry stores it (jsonb, written as text).
pub(super) fn stored_format(format: &Format) -> String {
    serde_json::to_string(format).expect("a format serialises")
}

/// Reads a stored format back; it was checked when the sequence was created.
pub(super) fn read_format(stored: &str) -> Result<Format, RegistryError> {
    serde_json::from_str(stored)
        .map_err(|err| RegistryError::Internal(anyhow::anyhow!("stored format {stored}: {err}")))
}

/// Folds rows (ordered by sequence, then range) into records.
pub(super) fn fold_rows(rows: Vec<SequenceRow>) -> Result<Vec<SequenceRecord>, RegistryError> {
    let mut records: Vec<(i32, SequenceRecord)> = Vec::new();
    for row in rows {
        if records.last().is_none_or(|(id, _)| *id != row.id) {
            let view = SequenceView {
                name: row.name.clone(),
                namespace: row.namespace.clone(),
                increment: row.increment,
                status: SequenceStatus::from_db(&row.status),
                format: row.format.as_deref().map(read_format).transpose()?,
                cache: CachePolicy::from_db(
                    row.cache_size,
                    row.cache_buffer_seconds,
                    row.cache_min,
                )
                .into(),
                remaining: 0,
                ranges: Vec::new(),
                created_at: row.created_at,
                updated_at: row.updated_at,
            };
            records.push((
                row.id,
                SequenceRecord {
                    view,
                    states: Vec::new(),
                },
            ));
        }
        let (_, record) = records.last_mut().expect("pushed above");
        if let Some(state) = row.range_state() {
            // A retired sequence vends nothing more, whatever its ranges hold.
            if record.view.status != SequenceStatus::Retired {
                record.view.remaining += state.remaining();
            }
            let pg_sequence = row.pg_sequence.clone().unwrap_or_default();
            record.view.ranges.push(RangeView::new(state, pg_sequence));
            record.states.push(state);
        }
    }
    Ok(records.into_iter().map(|(_, record)| record).collect())
}
