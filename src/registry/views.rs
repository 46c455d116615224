//! What the registry answers with: sequences and their ranges as the API shows them, folded
//! from the rows the registry queries return. No SQL here.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::RegistryError;
use crate::carriers::Format;
use crate::domain::{
    AlertKind, AlertThresholds, CachePolicy, RangeState, RangeStatus, SequenceStatus, Usage,
    UsageStart,
};

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
    pub usage: UsageView,
    pub alerts: AlertsView,
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

/// How fast the sequence is being used, from samples PostgreSQL keeps (every instance and
/// every client lease counts), and when it runs out at the last day's rate.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct UsageView {
    /// Values used per second over the last hour (over the span observed, if shorter).
    pub per_second_1h: f64,
    /// Values used per second over the last day (over the span observed, if shorter).
    pub per_second_24h: f64,
    /// When the active and pending ranges run out at `per_second_24h`; null while nothing is
    /// being used. At most a century ahead.
    pub exhausts_at: Option<DateTime<Utc>>,
}

/// The alert thresholds in force and the alerts raised now. An alert is raised (and an
/// `alert_raised` event recorded) when the sequence crosses a threshold, and cleared when it
/// crosses back.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AlertsView {
    /// Raised while fewer values than this remain (default: 10% of the active and pending
    /// ranges' capacity; 0: off).
    #[schema(value_type = u64)]
    pub remaining_below: u128,
    /// Raised while the sequence runs out within this many days at the last day's rate
    /// (default 14; 0: off).
    pub days_left_below: f64,
    /// `remaining_below` and/or `days_left_below`, as of the last sampling round.
    #[schema(value_type = Vec<String>)]
    pub raised: Vec<AlertKind>,
}

/// Longest forecast shown: beyond it, the date means "not in our lifetime".
const MAX_FORECAST_SECONDS: f64 = 100.0 * 365.25 * 86_400.0;

impl UsageView {
    pub fn new(usage: Usage, remaining: u128, now: DateTime<Utc>) -> Self {
        let exhausts_at = usage.seconds_left(remaining).map(|seconds| {
            let seconds = seconds.min(MAX_FORECAST_SECONDS);
            now + chrono::Duration::milliseconds((seconds * 1000.0) as i64)
        });
        Self {
            per_second_1h: usage.per_second_1h,
            per_second_24h: usage.per_second_24h,
            exhausts_at,
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
    pub(super) alert_remaining_below: Option<i64>,
    pub(super) alert_days_left_below: Option<f64>,
    pub(super) alerts_raised: Vec<String>,
    pub(super) used_1h: Option<String>,
    pub(super) span_1h: Option<f64>,
    pub(super) used_24h: Option<String>,
    pub(super) span_24h: Option<f64>,
    pub(super) min_value: Option<i64>,
    pub(super) max_value: Option<i64>,
    pub(super) start_value: Option<i64>,
    pub(super) range_status: Option<String>,
    pub(super) pg_sequence: Option<String>,
    pub(super) last_value: Option<i64>,
}

impl SequenceRow {
    fn usage_start(used: Option<&str>, span_seconds: Option<f64>) -> Option<UsageStart> {
        Some(UsageStart {
            // Stored as integers; a count that does not parse reads as no sample.
            used: used?.parse().ok()?,
            span_seconds: span_seconds?,
        })
    }

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
    pub id: i32,
    pub view: SequenceView,
    pub states: Vec<RangeState>,
    pub thresholds: AlertThresholds,
    pub usage: Usage,
    /// The hour's and the day's window starts as read, and when: a record kept for a while
    /// works its usage out again as time passes (see `age_to`).
    starts: [Option<UsageStart>; 2],
    read_at: DateTime<Utc>,
}

impl SequenceRecord {
    /// Values drawn from all the sequence's ranges so far: what usage samples count.
    pub fn used(&self) -> u128 {
        self.states
            .iter()
            .map(|state| state.capacity() - state.remaining())
            .sum()
    }

    /// A sequence `id` with one active range of 1..=1000, drawn up to `last_value`.
    #[cfg(test)]
    pub fn for_tests(id: i32, last_value: Option<i64>) -> Self {
        let state = RangeState {
            min: 1,
            max: 1000,
            start: 1,
            increment: 1,
            status: RangeStatus::Active,
            last_value,
        };
        let now = Utc::now();
        let view = SequenceView {
            name: format!("s{id}"),
            namespace: format!("s{id}"),
            increment: 1,
            status: SequenceStatus::Active,
            format: None,
            cache: CachePolicy::STRICT.into(),
            remaining: state.remaining(),
            usage: UsageView::new(Usage::default(), state.remaining(), now),
            alerts: AlertsView {
                remaining_below: 0,
                days_left_below: 0.0,
                raised: Vec::new(),
            },
            ranges: vec![RangeView::new(state, String::new())],
            created_at: now,
            updated_at: now,
        };
        Self {
            id,
            view,
            states: vec![state],
            thresholds: AlertThresholds::from_db(None, None),
            usage: Usage::default(),
            starts: [None, None],
            read_at: now,
        }
    }

    /// Works the usage out again as of `now`, from the window starts as read: each span
    /// grows by the time since, up to its window (an hour, a day: the windows the registry
    /// queries read). A start that a newer sample would have replaced since is not seen.
    pub fn age_to(&mut self, now: DateTime<Utc>) {
        // A retired sequence is used no more.
        if self.view.status != SequenceStatus::Retired {
            let elapsed = (now - self.read_at).num_milliseconds().max(0) as f64 / 1000.0;
            let [start_1h, start_24h] = self.starts;
            let grown = |start: Option<UsageStart>, window: f64| {
                start.map(|start| UsageStart {
                    span_seconds: (start.span_seconds + elapsed).min(window),
                    ..start
                })
            };
            self.usage = Usage::from_samples(
                self.used(),
                grown(start_1h, 3_600.0),
                grown(start_24h, 86_400.0),
            );
        }
        self.view.usage = UsageView::new(self.usage, self.view.remaining, now);
    }

    /// What the active and pending ranges held when added: the base of the default
    /// `remaining_below` threshold.
    pub fn capacity_in_play(&self) -> u128 {
        self.states
            .iter()
            .filter(|state| state.status != RangeStatus::Exhausted)
            .map(RangeState::capacity)
            .sum()
    }
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

/// A record being folded, with what its usage and alerts are worked out from at the end: the
/// usage samples of an hour and a day ago, and the alerts raised.
type Folding = (SequenceRecord, Vec<AlertKind>);

/// Folds rows (ordered by sequence, then range) into records, then works out each one's
/// usage and alerts from its ranges.
pub(super) fn fold_rows(rows: Vec<SequenceRow>) -> Result<Vec<SequenceRecord>, RegistryError> {
    let now = Utc::now();
    let mut records: Vec<Folding> = Vec::new();
    for row in rows {
        if records.last().is_none_or(|(record, _)| record.id != row.id) {
            records.push(begin_record(&row, now)?);
        }
        let (record, _) = records.last_mut().expect("pushed above");
        add_range(record, &row);
    }
    let finished = records
        .into_iter()
        .map(|folding| finish_record(folding, now))
        .collect();
    Ok(finished)
}

/// A record from the first row of its sequence, with no range yet.
fn begin_record(row: &SequenceRow, now: DateTime<Utc>) -> Result<Folding, RegistryError> {
    let thresholds = AlertThresholds::from_db(row.alert_remaining_below, row.alert_days_left_below);
    let view = SequenceView {
        name: row.name.clone(),
        namespace: row.namespace.clone(),
        increment: row.increment,
        status: SequenceStatus::from_db(&row.status),
        format: row.format.as_deref().map(read_format).transpose()?,
        cache: CachePolicy::from_db(row.cache_size, row.cache_buffer_seconds, row.cache_min).into(),
        remaining: 0,
        usage: UsageView::new(Usage::default(), 0, now),
        alerts: AlertsView {
            remaining_below: 0,
            days_left_below: thresholds.days_left_below(),
            raised: Vec::new(),
        },
        ranges: Vec::new(),
        created_at: row.created_at,
        updated_at: row.updated_at,
    };
    let starts = [
        SequenceRow::usage_start(row.used_1h.as_deref(), row.span_1h),
        SequenceRow::usage_start(row.used_24h.as_deref(), row.span_24h),
    ];
    let raised = row
        .alerts_raised
        .iter()
        .filter_map(|raw| AlertKind::from_db(raw))
        .collect();
    let record = SequenceRecord {
        id: row.id,
        view,
        states: Vec::new(),
        thresholds,
        usage: Usage::default(),
        starts,
        read_at: now,
    };
    Ok((record, raised))
}

/// Adds the row's range, if it has one, to its sequence's record.
fn add_range(record: &mut SequenceRecord, row: &SequenceRow) {
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

/// A record with all its ranges: its usage and alerts worked out.
fn finish_record((mut record, raised): Folding, now: DateTime<Utc>) -> SequenceRecord {
    record.age_to(now);
    record.view.alerts.remaining_below =
        record.thresholds.remaining_below(record.capacity_in_play());
    record.view.alerts.raised = raised;
    record
}

/// A page of at most `limit` items, from `limit + 1` read (the extra one says there is more),
/// and where the next page starts: `next` of its last item, or none on the last page.
pub(super) fn cut_page<T, K>(
    mut items: Vec<T>,
    limit: u32,
    next: impl Fn(&T) -> K,
) -> (Vec<T>, Option<K>) {
    if items.len() <= limit as usize {
        return (items, None);
    }
    items.truncate(limit as usize);
    let next = items.last().map(next);
    (items, next)
}
