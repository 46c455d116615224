//! Errors as Python exceptions carrying seqvend's stable error codes. A [`Failure`] is a
//! plain value (it crosses threads and the runtime); it becomes an instance of one of the
//! classes of `seqvend.errors` only once the GIL is held.

use std::time::Duration;

use pyo3::prelude::*;
use seqvend_client::Error;

/// What went wrong, as the Python exception will say it.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The class's name in `seqvend.errors`.
    class: &'static str,
    code: String,
    status: Option<u16>,
    message: String,
    retry_after: Option<Duration>,
}

impl Failure {
    fn new(class: &'static str, code: &str, status: Option<u16>, message: String) -> Self {
        Self {
            class,
            code: code.to_owned(),
            status,
            message,
            retry_after: None,
        }
    }

    pub fn config(message: String) -> Self {
        Self::new("ConfigurationError", "invalid_configuration", None, message)
    }

    pub fn invalid(message: String) -> Self {
        Self::new("InvalidRequest", "invalid_request", None, message)
    }

    pub fn transport(message: String) -> Self {
        Self::new("Unavailable", "transport", None, message)
    }

    /// Any answer of seqvend, by its stable code (or its status, for codes this version of
    /// the package does not know).
    pub fn answered(status: u16, code: &str, message: String) -> Self {
        Self::new(class_for(status, code), code, Some(status), message)
    }

    pub fn with_retry_after(mut self, retry_after: Option<Duration>) -> Self {
        self.retry_after = retry_after;
        self
    }

    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    pub fn code(&self) -> &str {
        &self.code
    }

    /// Worth asking again: seqvend (or the network) may answer otherwise in a moment.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.class,
            "Unavailable" | "Timeout" | "IdempotencyKeyInFlight"
        )
    }
}

fn class_for(status: u16, code: &str) -> &'static str {
    match code {
        "not_found" => "NotFound",
        "unauthorized" => "Unauthorized",
        "forbidden" => "Forbidden",
        "sequence_exhausted" => "SequenceExhausted",
        "sequence_retired" => "SequenceRetired",
        "idempotency_key_reused" => "IdempotencyKeyReused",
        "idempotency_key_in_flight" => "IdempotencyKeyInFlight",
        "sequence_failed" => "SequenceFailed",
        "no_worker_id" | "clock_moved_backwards" | "clock_ahead_of_lease" => "SnowflakeUnavailable",
        code if code.starts_with("invalid_") => "InvalidRequest",
        _ if status == 503 || status == 502 || status == 504 => "Unavailable",
        _ => "SeqvendError",
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        let message = error.to_string();
        let mut failure = match &error {
            Error::NotFound(_) => Self::answered(404, "not_found", message),
            Error::Exhausted(_) => Self::answered(409, "sequence_exhausted", message),
            Error::Retired(_) => Self::answered(410, "sequence_retired", message),
            Error::Unauthorized => Self::answered(401, "unauthorized", message),
            Error::Unavailable { .. } => Self::answered(503, "unavailable", message),
            Error::Timeout => Self::new("Timeout", "timeout", None, message),
            Error::Empty => Self::new("Unavailable", "empty", None, message),
            Error::Service { status, code, .. } => Self::answered(*status, code, message),
            Error::Transport(_) => Self::transport(message),
            Error::Protocol(_) => Self::new("ProtocolError", "protocol", None, message),
            Error::Config(_) => Self::config(message),
            Error::NoWorkerId => snowflake("no_worker_id", message),
            Error::LeaseLapsed => snowflake("lease_lapsed", message),
            Error::ClockMovedBackwards { .. } => snowflake("clock_moved_backwards", message),
            Error::ClockAheadOfLease => snowflake("clock_ahead_of_lease", message),
            Error::OutsideLayout { .. } => snowflake("outside_layout", message),
            _ => Self::new("SeqvendError", "client", None, message),
        };
        failure.retry_after = error_retry_after(&error);
        failure
    }
}

fn snowflake(code: &str, message: String) -> Failure {
    Failure::new("SnowflakeUnavailable", code, None, message)
}

fn error_retry_after(error: &Error) -> Option<Duration> {
    match error {
        Error::Unavailable { retry_after, .. } => *retry_after,
        _ => None,
    }
}

impl Failure {
    /// The Python exception: `seqvend.errors.<class>(message, code, status, retry_after)`.
    pub fn into_pyerr(self, py: Python<'_>) -> PyErr {
        let made = py
            .import("seqvend.errors")
            .and_then(|module| module.getattr(self.class))
            .and_then(|class| {
                let retry_after = self.retry_after.map(|after| after.as_secs_f64());
                class.call1((self.message, self.code, self.status, retry_after))
            });
        match made {
            Ok(exception) => PyErr::from_value(exception),
            Err(error) => error,
        }
    }
}

impl From<Failure> for PyErr {
    fn from(failure: Failure) -> Self {
        Python::attach(|py| failure.into_pyerr(py))
    }
}

/// A client error raised as its Python exception.
pub fn raise(error: Error) -> PyErr {
    Failure::from(error).into()
}
