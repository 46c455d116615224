//! Registry endpoints: create, add a range, read, list, change settings (cache policy,
//! alert thresholds), retire.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::Number;

use utoipa::ToSchema;

use super::access::{readable_sequence, require_claim, require_on_sequence};
use super::caller::Caller;
use super::error::ApiError;
use super::error::{ErrorBody, RegistryFailures};
use super::extract::JsonObject;
use super::paging::{visible_page, ListQuery};
use crate::auth::{Resource, Verb};
use crate::carriers::{Format, FormatError};
use crate::domain::{AlertThresholds, CachePolicy, RangeBounds, SequenceName, SequenceSpec};
use crate::registry::{Known, NewSequence, RangeView, SequencePage, SequenceView, SettingsChange};
use crate::service::Service;

/// Bounds arrive as JSON numbers and are checked by the domain types, so a bound outside
/// i64 is `invalid_range` rather than a generic parse failure.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSequenceBody {
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")]
    name: String,
    #[schema(value_type = i64)]
    min: Number,
    /// Greater than `min`.
    #[schema(value_type = i64)]
    max: Number,
    /// Defaults to `min` (ascending) or `max` (descending).
    #[schema(value_type = Option<i64>)]
    start: Option<Number>,
    /// Not 0; negative for a descending sequence. Defaults to 1.
    #[schema(value_type = Option<i64>)]
    increment: Option<Number>,
    /// Ranges never overlap within a namespace. Defaults to the name; for a formatted
    /// sequence it is the format's number space (e.g. `ups_1z.5R8939.03`).
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")]
    namespace: Option<String>,
    /// Print vended values as carrier numbers: `{"kind": …, parameters…}`, e.g.
    /// `{"kind": "ups_1z", "account": "5R8939", "service": "03"}`. Kinds: ups_1z,
    /// fedex_express, fedex_ground, fedex_ground_96, sscc18, usps_impb, s10, dhl_express,
    /// ontrac, canada_post (see docs/carriers.md). Every range must fit the serial's width.
    #[schema(value_type = Option<Object>)]
    format: Option<serde_json::Value>,
    /// Absent (or `size` 0): strict, every value drawn on the request path.
    #[serde(default, deserialize_with = "object_only")]
    cache: Option<CacheBody>,
    /// Absent: the defaults (10% of the capacity, 14 days).
    #[serde(default, deserialize_with = "object_only")]
    alerts: Option<AlertsBody>,
}

/// A nested body part as a JSON object only. Serde would also read a struct from an array of
/// its fields in order (`[null, null]`), which the API does not document and so refuses.
fn object_only<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    use serde::de::Error;
    match Option::<serde_json::Value>::deserialize(deserializer)? {
        None => Ok(None),
        Some(object @ serde_json::Value::Object(_)) => serde_json::from_value(object)
            .map(Some)
            .map_err(D::Error::custom),
        Some(other) => Err(D::Error::custom(format!("expected an object, got {other}"))),
    }
}

/// Alert thresholds: an alert is raised (with an `alert_raised` event and
/// `seqvend_sequence_alert`) while the sequence crosses one, and cleared when it crosses
/// back. A threshold left out takes its default; 0 turns it off.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AlertsBody {
    /// Raise while fewer values than this remain in the active and pending ranges (default:
    /// 10% of their capacity).
    remaining_below: Option<u64>,
    /// Raise while the sequence runs out within this many days at the last day's rate,
    /// 0–3650 (default 14).
    #[schema(maximum = 3650)]
    days_left_below: Option<f64>,
}

impl TryFrom<&AlertsBody> for AlertThresholds {
    type Error = ApiError;

    fn try_from(body: &AlertsBody) -> Result<Self, ApiError> {
        Ok(AlertThresholds::parse(
            body.remaining_below,
            body.days_left_below,
        )?)
    }
}

/// A cache policy: each instance holds up to `size` values drawn ahead of need and draws more
/// when it holds fewer than `max(rate × buffer_seconds, min)`. Faster, at the price of gaps
/// (values cached by an instance that stops are never handed out); keep scarce carrier ranges
/// strict.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheBody {
    /// 0 (strict) to 100000.
    #[schema(maximum = 100000)]
    size: u64,
    /// Seconds of use to keep in hand, 0–3600 (default 30).
    #[schema(maximum = 3600)]
    buffer_seconds: Option<u64>,
    /// Refill below this many values whatever the rate; at most `size` (default `size`/5).
    min: Option<u64>,
}

impl TryFrom<&CacheBody> for CachePolicy {
    type Error = ApiError;

    fn try_from(body: &CacheBody) -> Result<Self, ApiError> {
        Ok(CachePolicy::parse(
            body.size,
            body.buffer_seconds,
            body.min,
        )?)
    }
}

/// What `PATCH /sequences/{name}` may change; at least one of them. Each given part
/// replaces that setting whole.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSequenceBody {
    #[serde(default, deserialize_with = "object_only")]
    cache: Option<CacheBody>,
    #[serde(default, deserialize_with = "object_only")]
    alerts: Option<AlertsBody>,
}

impl TryFrom<&UpdateSequenceBody> for SettingsChange {
    type Error = ApiError;

    fn try_from(body: &UpdateSequenceBody) -> Result<Self, ApiError> {
        if body.cache.is_none() && body.alerts.is_none() {
            return Err(ApiError::InvalidRequest(
                "give `cache`, `alerts` or both".to_owned(),
            ));
        }
        Ok(SettingsChange {
            cache: body.cache.as_ref().map(TryInto::try_into).transpose()?,
            alerts: body.alerts.as_ref().map(TryInto::try_into).transpose()?,
        })
    }
}

impl TryFrom<CreateSequenceBody> for NewSequence {
    type Error = ApiError;

    fn try_from(body: CreateSequenceBody) -> Result<Self, ApiError> {
        let name = SequenceName::parse(&body.name)?;
        let spec = SequenceSpec::parse(
            &body.min,
            &body.max,
            body.start.as_ref(),
            body.increment.as_ref(),
        )?;
        let format = match body.format {
            None | Some(serde_json::Value::Null) => None,
            Some(raw) => {
                let format = Format::parse(&raw)?;
                format.check_range(spec.bounds.min(), spec.bounds.max())?;
                Some(format)
            }
        };
        // A formatted sequence's namespace is its number space: two sequences printing the
        // same numbers then share it, and their ranges cannot overlap.
        let namespace = match (body.namespace, &format) {
            (None, None) => name.clone(),
            (Some(raw), None) => SequenceName::parse(&raw)?,
            (given, Some(format)) => {
                let space = format.number_space();
                if given.is_some_and(|raw| raw != space) {
                    return Err(FormatError::NamespaceNotNumberSpace { space }.into());
                }
                SequenceName::parse(&space)?
            }
        };
        let cache = match &body.cache {
            None => CachePolicy::STRICT,
            Some(cache) => cache.try_into()?,
        };
        let alerts = match &body.alerts {
            None => AlertThresholds::default(),
            Some(alerts) => alerts.try_into()?,
        };
        Ok(NewSequence {
            name,
            namespace,
            spec,
            format,
            cache,
            alerts,
        })
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddRangeBody {
    #[schema(value_type = i64)]
    min: Number,
    #[schema(value_type = i64)]
    max: Number,
}

#[utoipa::path(
    post, path = "/sequences", tag = "admin", request_body = CreateSequenceBody,
    responses(
        (status = 201, description = "Created", body = SequenceView),
        (status = 400, description = "invalid_name, invalid_request, invalid_range, invalid_format, invalid_cache_policy or invalid_alerts", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token lacks admin scope on the name or on the namespace (a formatted sequence's number space)", body = ErrorBody),
        (status = 409, description = "name_taken or range_overlap", body = ErrorBody),
        (status = 413, description = "payload_too_large", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn create(
    caller: Caller,
    service: web::Data<Service>,
    body: JsonObject<CreateSequenceBody>,
) -> Result<HttpResponse, ApiError> {
    let new = NewSequence::try_from(body.0)?;
    require_claim(&caller, new.name.as_str(), new.namespace.as_str())?;
    let sequence = service.create_sequence(new, caller.name()).await?;
    tracing::info!(sequence = %sequence.name, "sequence created");
    Ok(HttpResponse::Created().json(sequence))
}

#[utoipa::path(
    post, path = "/sequences/{name}/ranges", tag = "admin", request_body = AddRangeBody,
    params(("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")),
    responses(
        (status = 201, description = "Added: pending, or active if the sequence had run out", body = RangeView),
        (status = 400, description = "invalid_name, invalid_request, invalid_range, or invalid_format (the range does not fit the sequence's format)", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token lacks admin scope on the sequence, or on its namespace", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        (status = 409, description = "range_overlap", body = ErrorBody),
        (status = 410, description = "sequence_retired", body = ErrorBody),
        (status = 413, description = "payload_too_large", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn add_range(
    caller: Caller,
    service: web::Data<Service>,
    name: web::Path<String>,
    body: JsonObject<AddRangeBody>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    let known = require_on_sequence(&caller, Verb::Admin, &service, &name).await?;
    let bounds = RangeBounds::parse(&body.min, &body.max)?;
    // A namespace and a format never change and a name is never reused, so checking them
    // before the registry's transaction is race-free — once the sequence is known. One not
    // found is answered here: were it created before the registry's transaction began, the
    // range would go in unchecked.
    let Known::Sequence(entry) = known else {
        return Err(ApiError::sequence_not_found(name.as_str()));
    };
    // A range claims number space in the namespace for good: the name's scope (checked
    // above) is not enough, the namespace's is needed too.
    caller.require(Verb::Admin, Resource::Namespace(entry.namespace.as_str()))?;
    if let Some(format) = &entry.format {
        format.check_range(bounds.min(), bounds.max())?;
    }
    let range = service.add_range(&name, bounds, caller.name()).await?;
    tracing::info!(sequence = %name, min = range.min, max = range.max, "range added");
    Ok(HttpResponse::Created().json(range))
}

#[utoipa::path(
    get, path = "/sequences/{name}", tag = "read", params(("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")),
    responses(
        (status = 200, description = "The sequence", body = SequenceView),
        (status = 400, description = "invalid_name", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no read scope on the sequence (on any sequence, for the list)", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn get(
    caller: Caller,
    service: web::Data<Service>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = readable_sequence(&caller, &service, &name).await?;
    Ok(HttpResponse::Ok().json(service.get_sequence(&name).await?))
}

#[utoipa::path(
    get, path = "/sequences", tag = "read", params(ListQuery),
    responses(
        (status = 200, description = "A page of sequences, in name order", body = SequencePage),
        (status = 400, description = "invalid_request", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no read scope on the sequence (on any sequence, for the list)", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn list(
    caller: Caller,
    service: web::Data<Service>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Verb::Read, Resource::AnySequence)?;
    let asked = query.page("sequence")?;
    let service = &service;
    // A token scoped to some sequences sees those, and nothing of the others' names.
    let (sequences, next) = visible_page(
        asked.after,
        asked.limit,
        |after, size| async move {
            let page = service.list_sequences(after.as_ref(), size).await?;
            Ok::<_, ApiError>((page.sequences, page.next))
        },
        |sequence: &SequenceView| {
            caller.may(
                Verb::Read,
                Resource::Sequence {
                    name: &sequence.name,
                    namespace: Some(&sequence.namespace),
                },
            )
        },
        |sequence| &sequence.name,
    )
    .await?;
    Ok(HttpResponse::Ok().json(SequencePage { sequences, next }))
}

#[utoipa::path(
    patch, path = "/sequences/{name}", tag = "admin", request_body = UpdateSequenceBody,
    params(("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")),
    responses(
        (status = 200, description = "Changed; every instance applies it within a round trip of the commit (at most the cache renewal interval if it missed the notification)", body = SequenceView),
        (status = 400, description = "invalid_name, invalid_request, invalid_cache_policy or invalid_alerts", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no admin scope on the sequence", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        (status = 410, description = "sequence_retired", body = ErrorBody),
        (status = 413, description = "payload_too_large", body = ErrorBody),
        RegistryFailures,
    )
)]
pub async fn update(
    caller: Caller,
    service: web::Data<Service>,
    name: web::Path<String>,
    body: JsonObject<UpdateSequenceBody>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    require_on_sequence(&caller, Verb::Admin, &service, &name).await?;
    let change = SettingsChange::try_from(&*body)?;
    let sequence = service
        .change_settings(&name, change, caller.name())
        .await?;
    tracing::info!(sequence = %name, cache = ?sequence.cache, alerts = ?sequence.alerts, "settings changed");
    Ok(HttpResponse::Ok().json(sequence))
}

#[utoipa::path(
    delete, path = "/sequences/{name}", tag = "admin", params(("name" = String, Path, description = "Sequence name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")),
    responses(
        (status = 200, description = "Retired (retiring again answers the same). Answered once no instance can hand out a cached value of it", body = SequenceView),
        (status = 400, description = "invalid_name", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token has no admin scope on the sequence", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody),
        (status = 500, description = "internal", body = ErrorBody),
        (status = 503, description = "unavailable: the database did not answer, or instances still hold cached values (DELETE again to wait for them)", body = ErrorBody),
    )
)]
pub async fn retire(
    caller: Caller,
    service: web::Data<Service>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    let allowed = require_on_sequence(&caller, Verb::Admin, &service, &name);
    tokio::time::timeout(service.registry_deadline(), allowed)
        .await
        .map_err(|_| ApiError::Unavailable("the database did not answer in time"))??;
    let sequence = service.retire(&name, caller.name()).await?;
    Ok(HttpResponse::Ok().json(sequence))
}
