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

/// A JSON body that must be an object. `web::Json` would also read a struct from an array of
/// its fields in order (`["name", ["read:*"]]`), which the API does not document and so
/// refuses. Errors are `web::Json`'s, through `json_config`.
pub struct JsonObject<T>(pub T);

impl<T: serde::de::DeserializeOwned> actix_web::FromRequest for JsonObject<T> {
    type Error = actix_web::Error;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(
        req: &actix_web::HttpRequest,
        payload: &mut actix_web::dev::Payload,
    ) -> Self::Future {
        let json = web::Json::<serde_json::Value>::from_request(req, payload);
        Box::pin(async move {
            let object = match json.await?.into_inner() {
                object @ serde_json::Value::Object(_) => object,
                other => {
                    return Err(ApiError::InvalidRequest(format!(
                        "the JSON body must be an object, not {}",
                        kind_of(&other)
                    ))
                    .into())
                }
            };
            serde_json::from_value(object)
                .map(JsonObject)
                .map_err(|err| {
                    ApiError::InvalidRequest(format!("the JSON body is not valid here: {err}"))
                        .into()
                })
        })
    }
}

impl<T> std::ops::Deref for JsonObject<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

fn kind_of(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
