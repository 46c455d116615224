//! The calls this client makes: `POST {url}/sequences/{name}/leases?count=N` (here, with the
//! translation of its answers into blocks or an [`Error`]) and the worker-id leases of
//! `crate::snowflake::lease`, which share the transport and the refusals.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use seqvend_blocks::Block;
use serde::Deserialize;

use crate::policy::CachePolicy;
use crate::Error;

/// The bearer token: never printed.
#[derive(Clone)]
pub(crate) struct Token(Arc<str>);

impl Token {
    pub fn new(token: String) -> Self {
        Self(token.into())
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// A lease as this client uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lease {
    pub blocks: Vec<Block>,
    /// Fewer values than asked: the sequence ran out.
    pub exhausted: bool,
    /// How long the values may be handed out, counted from before the request left.
    pub ttl: Duration,
    pub cache: Option<CachePolicy>,
}

#[derive(Debug, Clone)]
pub(crate) struct Service {
    http: reqwest::Client,
    base: Url,
    token: Token,
}

impl Service {
    pub fn new(http: reqwest::Client, base: Url, token: Token) -> Self {
        Self { http, base, token }
    }

    /// Where `name`'s leases are asked for, its name escaped as one path segment.
    pub fn leases_url(&self, name: &str) -> Url {
        self.url(&["sequences", name, "leases"])
    }

    /// `path` under the base URL (segments already escaped).
    pub fn url(&self, path: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().extend(path);
        }
        url
    }

    pub async fn lease(&self, url: &Url, name: &Arc<str>, count: u64) -> Result<Lease, Error> {
        let request = self.http.post(url.clone()).query(&[("count", count)]);
        let body = self.send(request, name).await?;
        parse_lease(&body)
    }

    /// POSTs `body` as JSON (or nothing) to `url`: the 200's body, or the refusal as an
    /// [`Error`] (`about` names what a 404, 409 or 410 is about).
    pub async fn post(
        &self,
        url: Url,
        body: Option<&serde_json::Value>,
        about: &Arc<str>,
    ) -> Result<Vec<u8>, Error> {
        let mut request = self.http.post(url);
        if let Some(body) = body {
            request = request.json(body);
        }
        self.send(request, about).await
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        about: &Arc<str>,
    ) -> Result<Vec<u8>, Error> {
        let response = request
            .bearer_auth(&self.token.0)
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let body = response.bytes().await.map_err(transport)?;
        if status == StatusCode::OK {
            Ok(body.to_vec())
        } else {
            Err(refusal(about, status, retry_after, &body))
        }
    }
}

#[derive(Deserialize)]
struct LeaseReply {
    blocks: Vec<BlockReply>,
    count: u64,
    exhausted: bool,
    ttl_seconds: f64,
    #[serde(default)]
    cache: Option<CachePolicy>,
}

#[derive(Deserialize)]
struct BlockReply {
    first: i64,
    last: i64,
    increment: i64,
}

/// A 200's body, checked: valid blocks whose values add up to `count`, a usable ttl.
pub(crate) fn parse_lease(body: &[u8]) -> Result<Lease, Error> {
    let reply: LeaseReply =
        serde_json::from_slice(body).map_err(|e| Error::Protocol(e.to_string()))?;
    let blocks = reply
        .blocks
        .iter()
        .map(|b| Block::new(b.first, b.last, b.increment))
        .collect::<Option<Vec<Block>>>()
        .ok_or_else(|| Error::Protocol("a block's last value is unreachable".into()))?;
    let values: u64 = blocks.iter().map(Block::len).sum();
    if values != reply.count || values == 0 {
        return Err(Error::Protocol(format!(
            "blocks of {values} values for a count of {}",
            reply.count
        )));
    }
    let ttl = Duration::try_from_secs_f64(reply.ttl_seconds)
        .map_err(|_| Error::Protocol(format!("ttl_seconds {}", reply.ttl_seconds)))?;
    Ok(Lease {
        blocks,
        exhausted: reply.exhausted,
        ttl,
        cache: reply.cache,
    })
}

/// `{"error": "<code>", "message": "…"}`, or the code and message nested in `error`.
#[derive(Deserialize)]
struct ErrorReply {
    error: ErrorField,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ErrorField {
    Code(String),
    Nested { code: String, message: String },
}

/// Any answer but 200, as an [`Error`].
pub(crate) fn refusal(
    name: &Arc<str>,
    status: StatusCode,
    retry_after: Option<Duration>,
    body: &[u8],
) -> Error {
    let (code, message) = match serde_json::from_slice::<ErrorReply>(body) {
        Ok(ErrorReply {
            error: ErrorField::Code(code),
            message,
        }) => (code, message),
        Ok(ErrorReply {
            error: ErrorField::Nested { code, message },
            ..
        }) => (code, message),
        Err(_) => (String::new(), String::from_utf8_lossy(body).into_owned()),
    };
    match (status.as_u16(), code.as_str()) {
        (401, _) => Error::Unauthorized,
        (404, "not_found") => Error::NotFound(name.clone()),
        (409, "sequence_exhausted") => Error::Exhausted(name.clone()),
        (410, _) => Error::Retired(name.clone()),
        (503, _) => Error::Unavailable {
            message,
            retry_after,
        },
        (status, _) => Error::Service {
            status,
            code,
            message,
        },
    }
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds: u64 = headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds))
}

/// The whole cause chain: reqwest's own message is often just "error sending request".
fn transport(error: reqwest::Error) -> Error {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    Error::Transport(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name() -> Arc<str> {
        "orders".into()
    }

    #[test]
    fn a_lease_reply_becomes_blocks_in_vend_order() {
        let body = br#"{"sequence":"orders","blocks":[{"first":998,"last":1000,"increment":1},
            {"first":5001,"last":5002,"increment":1}],"count":5,"exhausted":false,
            "expires_at":"2026-11-23T16:30:00.123Z","ttl_seconds":600,
            "cache":{"size":10000,"buffer_seconds":60,"min":0}}"#;
        let lease = parse_lease(body).unwrap();
        let firsts: Vec<i64> = lease.blocks.iter().map(Block::first).collect();
        assert_eq!(firsts, [998, 5001]);
        assert_eq!(lease.ttl, Duration::from_secs(600));
        assert_eq!(lease.cache.unwrap().size, 10_000);
        assert!(!lease.exhausted);
    }

    #[test]
    fn a_lease_whose_blocks_do_not_add_up_to_its_count_is_refused() {
        let body = br#"{"blocks":[{"first":1,"last":3,"increment":1}],"count":4,
            "exhausted":false,"ttl_seconds":600}"#;
        assert!(matches!(parse_lease(body), Err(Error::Protocol(_))));
        let backwards = br#"{"blocks":[{"first":3,"last":1,"increment":1}],"count":3,
            "exhausted":false,"ttl_seconds":600}"#;
        assert!(matches!(parse_lease(backwards), Err(Error::Protocol(_))));
    }

    #[test]
    fn refusals_map_to_their_variants_in_either_error_shape() {
        let flat = br#"{"error":"sequence_exhausted","message":"add a range"}"#;
        let nested = br#"{"error":{"code":"sequence_exhausted","message":"add a range"}}"#;
        for body in [&flat[..], &nested[..]] {
            let error = refusal(&name(), StatusCode::CONFLICT, None, body);
            assert_eq!(error, Error::Exhausted(name()));
        }
        let gone = br#"{"error":"sequence_retired","message":"retired"}"#;
        assert_eq!(
            refusal(&name(), StatusCode::GONE, None, gone),
            Error::Retired(name())
        );
        let missing = br#"{"error":"not_found","message":"no such"}"#;
        assert_eq!(
            refusal(&name(), StatusCode::NOT_FOUND, None, missing),
            Error::NotFound(name())
        );
        let unauthorized = refusal(&name(), StatusCode::UNAUTHORIZED, None, b"");
        assert_eq!(unauthorized, Error::Unauthorized);
    }

    #[test]
    fn a_503_carries_its_retry_after_and_unknown_answers_keep_their_code() {
        let body = br#"{"error":"unavailable","message":"database away; retry shortly"}"#;
        let second = Some(Duration::from_secs(1));
        let unavailable = refusal(&name(), StatusCode::SERVICE_UNAVAILABLE, second, body);
        assert_eq!(unavailable.retry_after(), second);
        let body = br#"{"error":"invalid_name","message":"bad"}"#;
        assert_eq!(
            refusal(&name(), StatusCode::BAD_REQUEST, None, body),
            Error::Service {
                status: 400,
                code: "invalid_name".into(),
                message: "bad".into()
            }
        );
        let html = refusal(&name(), StatusCode::BAD_GATEWAY, None, b"<html>");
        assert!(html.is_transient());
    }

    #[test]
    fn a_name_is_escaped_as_one_path_segment() {
        let service = Service::new(
            reqwest::Client::new(),
            Url::parse("http://localhost:8080/seqvend/").unwrap(),
            Token::new("t".into()),
        );
        assert_eq!(
            service.leases_url("a/b c").as_str(),
            "http://localhost:8080/seqvend/sequences/a%2Fb%20c/leases"
        );
    }
}
