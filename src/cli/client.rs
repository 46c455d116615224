//! The CLI's side of the HTTP API: one request per command, its JSON answer kept both as the
//! server wrote it (for `--json`) and parsed (for tables), and the server's error body turned
//! into an error that says what the server said.

use std::time::Duration;

use reqwest::{Method, Url};
use serde_json::Value;

/// A refused connection or an unknown host should not leave a terminal hanging.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longer than any answer seqvend takes: retiring a cached sequence waits out the instances'
/// leases (a minute by default) before it answers.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(180);

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The server's own error body: its message and stable code.
    #[error("{message} ({code}, HTTP {status})")]
    Server {
        status: u16,
        code: String,
        message: String,
    },
    #[error("seqvend answered HTTP {status} with something other than seqvend's JSON: {body}")]
    Unexpected { status: u16, body: String },
    #[error("could not reach seqvend at {url}: {reason}")]
    Unreachable { url: Url, reason: String },
    #[error("not a seqvend URL: {0:?} (expected http://HOST[:PORT] or https://…)")]
    InvalidUrl(String),
}

/// A successful answer.
pub struct Answer {
    /// The body exactly as the server wrote it.
    pub text: String,
    pub body: Value,
}

pub struct Client {
    http: reqwest::Client,
    base: Url,
    token: Option<String>,
}

impl Client {
    pub fn new(base: &str, token: Option<String>) -> Result<Self, CliError> {
        let invalid = || CliError::InvalidUrl(base.to_owned());
        let base = Url::parse(base).map_err(|_| invalid())?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(invalid());
        }
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .user_agent(concat!("seqvend-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| CliError::Unreachable {
                url: base.clone(),
                reason: causes(&err),
            })?;
        Ok(Self { http, base, token })
    }

    /// The URL of `segments` under the base URL, each segment percent-encoded: a name is
    /// never read as a path or a query.
    pub fn url(&self, segments: &[&str], query: &[(&str, String)]) -> Url {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .expect("checked to be a base URL")
            .pop_if_empty()
            .extend(segments);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        url
    }

    pub async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
    ) -> Result<Answer, CliError> {
        let mut request = self.http.request(method, url.clone());
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let unreachable = |err: reqwest::Error| CliError::Unreachable {
            url: url.clone(),
            reason: causes(&err),
        };
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        let text = response.text().await.map_err(unreachable)?;
        let parsed: Option<Value> = serde_json::from_str(&text).ok();
        match parsed {
            Some(body) if status.is_success() => Ok(Answer { text, body }),
            Some(body) if body["error"].is_string() => Err(CliError::Server {
                status: status.as_u16(),
                code: body["error"].as_str().unwrap_or_default().to_owned(),
                message: body["message"].as_str().unwrap_or_default().to_owned(),
            }),
            _ => Err(CliError::Unexpected {
                status: status.as_u16(),
                body: text.chars().take(200).collect(),
            }),
        }
    }
}

/// An error and its causes, one after another: reqwest's own message ("error sending
/// request") says nothing of why (connection refused, a timeout, a certificate).
fn causes(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_single_path_segments_under_the_base_url() {
        let client = Client::new("http://seqvend.internal:8080/api/", None).unwrap();
        let url = client.url(&["sequences", "a/b?c", "events"], &[("after", "7".into())]);
        assert_eq!(
            url.as_str(),
            "http://seqvend.internal:8080/api/sequences/a%2Fb%3Fc/events?after=7"
        );
        let bare = Client::new("http://127.0.0.1:8080", None).unwrap();
        assert_eq!(
            bare.url(&["tracking-numbers", "1Z 999"], &[]).as_str(),
            "http://127.0.0.1:8080/tracking-numbers/1Z%20999"
        );
    }

    #[test]
    fn only_http_and_https_base_urls_are_accepted() {
        for bad in ["127.0.0.1:8080", "ftp://host", "mailto:ops@example.com", ""] {
            assert!(
                matches!(Client::new(bad, None), Err(CliError::InvalidUrl(_))),
                "{bad}"
            );
        }
    }
}
