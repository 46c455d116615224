//! `GET /overview`: every sequence the caller may read, one row each, sorted (by days left
//! by default), filtered and paged by the server, so that a console with 10,000 sequences
//! fetches one small page. The rows come from `Service::overview`, a reading of the
//! registry shared by every caller.

use std::cmp::Ordering;

use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::caller::Caller;
use super::error::{ApiError, ErrorBody, RegistryFailures};
use super::paging::page_limit;
use crate::auth::{Resource, Verb};
use crate::domain::{AlertKind, RangeStatus, SequenceStatus};
use crate::registry::SequenceView;
use crate::service::Service;

#[derive(Deserialize, Clone, Copy, Default, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OverviewSort {
    /// Soonest to run out first: exhausted, then by days left, then those not running out
    /// at their rate, then retired ones; by name within each.
    #[default]
    DaysLeft,
    Name,
    /// Fewest values left first.
    Remaining,
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OverviewQuery {
    /// `days_left` (default), `name` or `remaining`.
    #[param(value_type = Option<String>)]
    sort: Option<OverviewSort>,
    /// Keep the sequences whose name, namespace or carrier format kind (e.g. `ups_1z`)
    /// contains this, ignoring case.
    #[param(max_length = 100)]
    q: Option<String>,
    /// Rows to skip, 0–2147483647 (default 0).
    #[param(minimum = 0, maximum = 2147483647)]
    offset: Option<u32>,
    /// Page size, 1–1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

/// One sequence, as a row of the overview.
#[derive(Serialize, ToSchema)]
pub struct OverviewRow {
    name: String,
    namespace: String,
    /// The carrier format's kind (e.g. `ups_1z`); null for a plain sequence.
    kind: Option<&'static str>,
    #[schema(value_type = String)]
    status: SequenceStatus,
    /// Values left across the active and pending ranges.
    #[schema(value_type = u64)]
    remaining: u128,
    /// What the active and pending ranges held when added.
    #[schema(value_type = u64)]
    capacity: u128,
    per_second_1h: f64,
    per_second_24h: f64,
    exhausts_at: Option<DateTime<Utc>>,
    /// Days until `exhausts_at`; null while nothing is being used.
    days_left: Option<f64>,
    /// Alerts raised now: `remaining_below`, `days_left_below`.
    #[schema(value_type = Vec<String>)]
    alerts: Vec<AlertKind>,
    /// 0: strict.
    cache_size: u64,
}

#[derive(Serialize, ToSchema)]
pub struct OverviewPage {
    /// Rows matching the filter, across all pages.
    total: usize,
    offset: u32,
    /// When the registry was read. Readings are kept and renewed in the background (with
    /// many sequences one takes seconds), so this may be a minute or more ago; the
    /// sequences changed since (made, retired, settings changed, a range added or rolled
    /// over) are read afresh for every request all the same.
    as_of: DateTime<Utc>,
    sequences: Vec<OverviewRow>,
}

const MAX_FILTER: usize = 100;

#[utoipa::path(
    get, path = "/overview", tag = "read", params(OverviewQuery),
    responses(
        (status = 200, description = "A page of the sequences the token may read, sorted and filtered, as of `as_of`", body = OverviewPage),
        (status = 400, description = "invalid_request", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no read scope on any sequence", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn get(
    caller: Caller,
    service: web::Data<Service>,
    query: web::Query<OverviewQuery>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Verb::Read, Resource::AnySequence)?;
    let limit = page_limit(query.limit)?;
    let filter = filter(query.q.as_deref())?;
    let overview = service.into_inner().overview().await?;
    let now = Utc::now();
    let mut rows: Vec<OverviewRow> = overview
        .sequences()
        .filter(|sequence| readable(&caller, sequence) && matches(sequence, filter.as_deref()))
        .map(|sequence| OverviewRow::new(sequence, now))
        .collect();
    rows.sort_by(order(query.sort.unwrap_or_default()));
    let total = rows.len();
    let offset = page_offset(query.offset)?;
    let sequences = rows
        .into_iter()
        .skip(offset as usize)
        .take(limit as usize)
        .collect();
    Ok(HttpResponse::Ok().json(OverviewPage {
        total,
        offset,
        as_of: overview.as_of(),
        sequences,
    }))
}

fn filter(raw: Option<&str>) -> Result<Option<String>, ApiError> {
    let Some(raw) = raw.map(str::trim).filter(|raw| !raw.is_empty()) else {
        return Ok(None);
    };
    if raw.chars().count() > MAX_FILTER {
        return Err(ApiError::InvalidRequest(format!(
            "`q` must be at most {MAX_FILTER} characters"
        )));
    }
    Ok(Some(raw.to_lowercase()))
}

fn readable(caller: &Caller, sequence: &SequenceView) -> bool {
    caller.may(
        Verb::Read,
        Resource::Sequence {
            name: &sequence.name,
            namespace: Some(&sequence.namespace),
        },
    )
}

fn matches(sequence: &SequenceView, filter: Option<&str>) -> bool {
    let Some(filter) = filter else { return true };
    let kind = sequence
        .format
        .as_ref()
        .map_or("plain", |format| format.kind());
    [sequence.name.as_str(), sequence.namespace.as_str(), kind]
        .iter()
        .any(|text| text.to_lowercase().contains(filter))
}

impl OverviewRow {
    fn new(sequence: &SequenceView, now: DateTime<Utc>) -> Self {
        let capacity = sequence
            .ranges
            .iter()
            .filter(|range| range.status != RangeStatus::Exhausted)
            .map(|range| (i128::from(range.max) - i128::from(range.min) + 1) as u128)
            .sum();
        let days_left = sequence
            .usage
            .exhausts_at
            .map(|at| (at - now).num_milliseconds().max(0) as f64 / 86_400_000.0);
        Self {
            name: sequence.name.clone(),
            namespace: sequence.namespace.clone(),
            kind: sequence.format.as_ref().map(|format| format.kind()),
            status: sequence.status,
            remaining: sequence.remaining,
            capacity,
            per_second_1h: sequence.usage.per_second_1h,
            per_second_24h: sequence.usage.per_second_24h,
            exhausts_at: sequence.usage.exhausts_at,
            days_left,
            alerts: sequence.alerts.raised.clone(),
            cache_size: sequence.cache.size,
        }
    }

    /// Where a row falls when sorted by days left: out first, then running out, then not
    /// running out at its rate, then retired.
    fn urgency(&self) -> (u8, f64) {
        match (self.status, self.days_left) {
            (SequenceStatus::Exhausted, _) => (0, 0.0),
            (SequenceStatus::Retired, _) => (3, 0.0),
            (_, Some(days)) => (1, days),
            (_, None) => (2, 0.0),
        }
    }
}

fn order(sort: OverviewSort) -> impl Fn(&OverviewRow, &OverviewRow) -> Ordering {
    move |a, b| {
        let first = match sort {
            OverviewSort::DaysLeft => {
                let (ga, da) = a.urgency();
                let (gb, db) = b.urgency();
                ga.cmp(&gb).then(da.total_cmp(&db))
            }
            OverviewSort::Name => Ordering::Equal,
            OverviewSort::Remaining => a.remaining.cmp(&b.remaining),
        };
        first.then_with(|| a.name.cmp(&b.name))
    }
}

/// The rows an overview page skips: within what the API documents (a signed 32-bit count), so
/// that a client generated from the document never sends a value it cannot represent.
fn page_offset(offset: Option<u32>) -> Result<u32, ApiError> {
    let offset = offset.unwrap_or(0);
    if offset > i32::MAX as u32 {
        return Err(ApiError::InvalidRequest(format!(
            "`offset` must be between 0 and {}",
            i32::MAX
        )));
    }
    Ok(offset)
}
