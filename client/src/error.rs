//! What a call can fail with. Every variant is a plain value (`Clone`), so one answer from
//! the service can be handed to every caller waiting on the same refill.

use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// 404: seqvend knows no sequence of this name.
    #[error("no sequence is named {0:?}")]
    NotFound(Arc<str>),
    /// 409: nothing is left to lease and nothing is cached. Values from a clipped lease are
    /// served first; this comes only once they are gone.
    #[error("sequence {0:?} has no values left")]
    Exhausted(Arc<str>),
    /// 410: the sequence is retired and vends nothing.
    #[error("sequence {0:?} is retired")]
    Retired(Arc<str>),
    /// 401: the token was refused.
    #[error("seqvend refused the token")]
    Unauthorized,
    /// 503: seqvend could not lease (its database is away, or it is overloaded).
    #[error("seqvend is unavailable: {message}")]
    Unavailable {
        message: String,
        retry_after: Option<Duration>,
    },
    /// Nothing was cached and no refill arrived within the wait timeout.
    #[error("no value within the wait timeout")]
    Timeout,
    /// `try_next` found nothing cached; a refill has been asked for.
    #[error("nothing cached yet; a refill is under way")]
    Empty,
    /// Any other answer of the service, with its stable error code.
    #[error("seqvend answered {status} {code}: {message}")]
    Service {
        status: u16,
        code: String,
        message: String,
    },
    /// The request did not get an answer (connection refused, reset, timed out).
    #[error("could not reach seqvend: {0}")]
    Transport(String),
    /// The service answered 200 with something this client cannot use.
    #[error("seqvend's answer was not understood: {0}")]
    Protocol(String),
    /// The builder was given something unusable (a bad URL, no tokio runtime).
    #[error("{0}")]
    Config(String),
    /// The client was closed (`Client::close`): it hands out nothing more.
    #[error("the client was closed")]
    Closed,
    /// Snowflake ids: this client holds no worker id now (its lease was taken over, and a
    /// new one is being leased).
    #[error("this client holds no worker id")]
    NoWorkerId,
    /// Snowflake ids: no renewal of the worker-id lease got through for 90 % of its length;
    /// ids resume once one does.
    #[error("the worker-id lease was not renewed in time")]
    LeaseLapsed,
    /// Snowflake ids: the clock reads this far below the last millisecond stamped (or the
    /// lease's first), beyond the tolerance; ids resume once it catches up.
    #[error("the clock moved back by {by_ms} ms")]
    ClockMovedBackwards { by_ms: i64 },
    /// Snowflake ids: the clock is past the last millisecond the lease covers; a renewal
    /// raises it.
    #[error("the clock is ahead of the time the worker-id lease covers")]
    ClockAheadOfLease,
    /// Snowflake ids: the clock reads a millisecond the layout cannot hold.
    #[error("the clock reads {now_ms} ms since 1970, outside the Snowflake layout's time span")]
    OutsideLayout { now_ms: i64 },
    /// Hybrid logical clock: a remote timestamp is further ahead of this machine's clock than
    /// the drift allowed; it was not observed.
    #[error("a remote timestamp is {by_ms} ms ahead of this clock, more than the drift allowed")]
    RemoteClockAhead { by_ms: u64 },
}

impl Error {
    /// Worth asking again soon: the service may answer differently in a moment.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Unavailable { .. }
            | Error::Timeout
            | Error::Empty
            | Error::Transport(_)
            | Error::Protocol(_)
            | Error::NoWorkerId
            | Error::LeaseLapsed
            | Error::ClockMovedBackwards { .. }
            | Error::ClockAheadOfLease => true,
            Error::Service { status, .. } => *status >= 500 || *status == 408 || *status == 429,
            _ => false,
        }
    }

    /// How long the service asked us to wait before asking again, if it said.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::Unavailable { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outages_are_transient_and_answers_about_the_sequence_are_not() {
        let name: Arc<str> = "orders".into();
        assert!(Error::Transport("reset".into()).is_transient());
        assert!(Error::Unavailable {
            message: "db".into(),
            retry_after: None
        }
        .is_transient());
        for status in [500, 502, 429] {
            let error = Error::Service {
                status,
                code: "x".into(),
                message: String::new(),
            };
            assert!(error.is_transient(), "{status}");
        }
        assert!(!Error::NotFound(name.clone()).is_transient());
        assert!(!Error::Exhausted(name.clone()).is_transient());
        assert!(!Error::Retired(name).is_transient());
        assert!(!Error::Unauthorized.is_transient());
        assert!(!Error::Service {
            status: 400,
            code: "invalid_name".into(),
            message: String::new()
        }
        .is_transient());
    }
}
