//! Strict vends over HTTP: `POST /sequences/{name}/next?count=n`, values durable before
//! they are answered, with the carrier numbers of a formatted sequence. Retries are safe by
//! construction: with an `Idempotency-Key`, any failure is retried (a retry replays the
//! first answer, never draws again); without one, only what cannot have drawn a value —
//! a connection never made, or a 503 (seqvend's refusals change nothing).

use std::time::Duration;

use pyo3::prelude::*;
use rand::Rng;
use reqwest::header::RETRY_AFTER;
use serde::Deserialize;

use crate::binding::Config;
use crate::errors::Failure;

/// A vend's answer.
#[pyclass(module = "seqvend._native", frozen, get_all)]
#[derive(Debug, Clone, Deserialize)]
pub struct Vended {
    /// The sequence vended from.
    sequence: String,
    /// The values, in the order vended.
    values: Vec<i64>,
    /// The carrier numbers of a formatted sequence, one per value; `None` for a plain one.
    #[serde(default)]
    formatted: Option<Vec<String>>,
    /// The sequence ran out: fewer values than asked for were left.
    #[serde(default)]
    exhausted: bool,
    /// The answer is a replay of an earlier request with the same idempotency key.
    #[serde(skip)]
    replayed: bool,
}

#[pymethods]
impl Vended {
    fn __repr__(&self) -> String {
        format!(
            "Vended(sequence={:?}, values={:?}, formatted={:?}, exhausted={}, replayed={})",
            self.sequence, self.values, self.formatted, self.exhausted, self.replayed
        )
    }

    fn __len__(&self) -> usize {
        self.values.len()
    }
}

/// A vend request, checked before anything is sent.
#[derive(Debug, Clone)]
pub struct Request {
    name: String,
    count: u32,
    key: Option<String>,
}

impl Request {
    pub fn new(name: &str, count: u32, key: Option<String>) -> Result<Self, Failure> {
        let name_ok = (1..=63).contains(&name.len())
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !name_ok {
            return Err(Failure::invalid(format!(
                "{name:?} is not a sequence name: 1-63 of A-Z a-z 0-9 . _ -, starting with a letter or digit"
            )));
        }
        if !(1..=10_000).contains(&count) {
            return Err(Failure::invalid(format!(
                "count must be 1..10000, not {count}"
            )));
        }
        if let Some(key) = &key {
            if !(1..=255).contains(&key.len()) || !key.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(Failure::invalid(
                    "an idempotency key is 1-255 visible ASCII characters".into(),
                ));
            }
        }
        Ok(Self {
            name: name.to_owned(),
            count,
            key,
        })
    }
}

/// Vends, retrying what is safe to retry, up to `config.retries` times.
pub async fn vend(
    http: &reqwest::Client,
    config: &Config,
    request: &Request,
) -> Result<Vended, Failure> {
    let mut attempt = 0;
    loop {
        let (failure, unsent) = match send(http, config, request).await {
            Ok(vended) => return Ok(vended),
            Err(outcome) => outcome,
        };
        let safe = request.key.is_some() || unsent || failure.code() == "unavailable";
        if attempt >= config.retries || !safe || !failure.is_transient() {
            return Err(failure);
        }
        tokio::time::sleep(pause(attempt, failure.retry_after())).await;
        attempt += 1;
    }
}

/// Full jitter over 100 ms × 2^attempt (at most 2 s), or what `Retry-After` asked, capped.
fn pause(attempt: u32, retry_after: Option<Duration>) -> Duration {
    let ceiling = Duration::from_millis(100 << attempt.min(4)).min(Duration::from_secs(2));
    let jittered = ceiling.mul_f64(rand::thread_rng().gen_range(0.0..=1.0));
    retry_after.map_or(jittered, |after| after.min(Duration::from_secs(5)))
}

/// One attempt; on failure also whether the request surely never reached seqvend.
async fn send(
    http: &reqwest::Client,
    config: &Config,
    request: &Request,
) -> Result<Vended, (Failure, bool)> {
    let url = format!(
        "{}/sequences/{}/next",
        config.url.trim_end_matches('/'),
        request.name
    );
    let mut call = http
        .post(url)
        .query(&[("count", request.count)])
        .bearer_auth(&config.token);
    if let Some(key) = &request.key {
        call = call.header("Idempotency-Key", key);
    }
    let answer = call
        .send()
        .await
        .map_err(|error| (Failure::transport(chain(&error)), error.is_connect()))?;
    let status = answer.status();
    let replayed = answer.headers().contains_key("idempotent-replayed");
    let retry_after = answer
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok()?.trim().parse().ok())
        .map(Duration::from_secs);
    let body = answer
        .bytes()
        .await
        .map_err(|error| (Failure::transport(chain(&error)), false))?;
    if !status.is_success() {
        return Err((refusal(status.as_u16(), &body, retry_after), false));
    }
    let mut vended: Vended = serde_json::from_slice(&body).map_err(|error| {
        let message = format!("seqvend's answer to a vend was not understood: {error}");
        (
            Failure::answered(status.as_u16(), "protocol", message),
            false,
        )
    })?;
    vended.replayed = replayed;
    Ok(vended)
}

/// A refusal (`{"error": code, "message": …}`) with seqvend's own code.
fn refusal(status: u16, body: &[u8], retry_after: Option<Duration>) -> Failure {
    #[derive(Deserialize)]
    struct Reply {
        error: String,
        #[serde(default)]
        message: String,
    }
    let failure = match serde_json::from_slice::<Reply>(body) {
        Ok(reply) => Failure::answered(status, &reply.error, reply.message),
        Err(_) => Failure::answered(
            status,
            &format!("http_{status}"),
            String::from_utf8_lossy(body).into_owned(),
        ),
    };
    failure.with_retry_after(retry_after)
}

/// The whole cause chain: reqwest's own message is often just "error sending request".
fn chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
