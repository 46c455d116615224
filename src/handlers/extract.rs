//! How malformed requests are answered: every extractor failure becomes a JSON error with a
//! stable code instead of actix's plain-text defaults.

use actix_web::error::{JsonPayloadError, PathError, QueryPayloadError};
use actix_web::web;

use super::error::ApiError;

/// Largest accepted JSON body. Requests here are a few hundred bytes.
pub const JSON_LIMIT: usize = 64 * 1024;

pub fn json_config() -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(JSON_LIMIT)
        .error_handler(|err, _| {
            match err {
                JsonPayloadError::Overflow { .. }
                | JsonPayloadError::OverflowKnownLength { .. } => {
                    ApiError::PayloadTooLarge(JSON_LIMIT)
                }
                JsonPayloadError::ContentType => ApiError::InvalidRequest(
                    "the body must be JSON, sent with Content-Type: application/json".into(),
                ),
                JsonPayloadError::Deserialize(err) => {
                    ApiError::InvalidRequest(format!("the JSON body is not valid here: {err}"))
                }
                other => ApiError::InvalidRequest(format!("the body could not be read: {other}")),
            }
            .into()
        })
}

pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err: QueryPayloadError, _| {
        ApiError::InvalidRequest(format!("the query string is not valid here: {err}")).into()
    })
}

pub fn path_config() -> web::PathConfig {
    web::PathConfig::default().error_handler(|err: PathError, _| {
        ApiError::InvalidRequest(format!("the path is not valid: {err}")).into()
    })
}
