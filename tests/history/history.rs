//! The history: every call a client made and what it was answered, every fault the operator
//! injected, every value another application drew, every retirement — each with its times,
//! counted from the start of the run. Recording only; judging is `check`'s job.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::world::Token;

/// What kind of call a client made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `POST /sequences/{name}/next?count=…`, strict or cached.
    Next,
    /// The same with an `Idempotency-Key` (first sends and retries alike).
    KeyedNext,
    /// `POST /sequences/{name}/leases?count=…`.
    Lease,
    /// The same with an `Idempotency-Key`.
    KeyedLease,
    /// Values the thick client (`seqvend-client`) handed out.
    ThickClient,
    /// `POST /families/{family}/counters/{key}/next`.
    Counter,
    /// `POST /ids/snowflake`.
    Snowflake,
    /// Snowflake ids the thick client made under a worker id of its own.
    ThickSnowflake,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Next => "next",
            Kind::KeyedNext => "next with Idempotency-Key",
            Kind::Lease => "client lease",
            Kind::KeyedLease => "client lease with Idempotency-Key",
            Kind::ThickClient => "thick client values",
            Kind::Counter => "counter draw",
            Kind::Snowflake => "Snowflake ids over HTTP",
            Kind::ThickSnowflake => "Snowflake ids of the thick client",
        }
    }

    /// Values of a sequence's number space (not counters, not ids).
    pub fn of_a_sequence(self) -> bool {
        !matches!(self, Kind::Counter | Kind::Snowflake | Kind::ThickSnowflake)
    }
}

/// What became of a call.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// 200: the values (or ids) it was given, in the order given.
    Values(Vec<i64>),
    /// An answer that gave nothing: status and error code (`503 unavailable`, `409 …`).
    Refused(String),
    /// No answer: timed out, connection refused or cut. Its values, if any, were never seen.
    Unknown(String),
}

/// One call and its answer.
#[derive(Clone, Debug)]
pub struct Op {
    pub kind: Kind,
    /// The sequence, or `family/key`, or the instance's ids.
    pub target: String,
    /// The `Idempotency-Key`, for keyed calls.
    pub key: Option<String>,
    /// The vend token it was sent with: the owner of its key.
    pub token: Token,
    /// What was asked (the path and query), so that a key sent with two requests shows.
    pub request: String,
    /// Marked `Idempotent-Replayed`: the answer repeats a stored one.
    pub replayed: bool,
    /// Which instance it was sent to (`thick` for the thick client).
    pub via: String,
    pub invoked: Duration,
    pub completed: Duration,
    pub outcome: Outcome,
}

impl Op {
    pub fn values(&self) -> &[i64] {
        match &self.outcome {
            Outcome::Values(values) => values,
            _ => &[],
        }
    }

    /// Answered 500: an error seqvend did not expect (the thick client words it its way).
    pub fn internal_error(&self) -> bool {
        match &self.outcome {
            Outcome::Refused(why) => why.starts_with("500 ") || why.contains("answered 500 "),
            _ => false,
        }
    }
}

/// One fault the operator injected.
#[derive(Clone, Debug)]
pub struct Fault {
    pub kind: &'static str,
    /// The PostgreSQL sequence, registry row, instance or cluster it hit.
    pub target: String,
    pub started: Duration,
    pub ended: Duration,
    /// False when PostgreSQL refused it (e.g. a `MAXVALUE` below the sequence's position).
    pub applied: bool,
    pub detail: String,
}

impl Fault {
    /// Moves a range's PostgreSQL sequence back (or may): after it, another application may
    /// draw values seqvend handed out before, and seqvend may not know of that application's
    /// earlier draws.
    pub fn moves_back(&self) -> bool {
        matches!(self.kind, "rewind" | "restart" | "restart with lower")
    }
}

/// Values another application drew with `nextval` from a range's PostgreSQL sequence, durably.
#[derive(Clone, Debug)]
pub struct Drawn {
    pub pg_sequence: String,
    pub values: Vec<i64>,
    pub at: Duration,
}

/// A `DELETE /sequences/{name}` that answered 200.
#[derive(Clone, Debug)]
pub struct Retirement {
    pub sequence: String,
    pub invoked: Duration,
    pub answered: Duration,
}

/// The whole history of one run.
pub struct History {
    started: Instant,
    pub seed: u64,
    pub ops: Mutex<Vec<Op>>,
    pub faults: Mutex<Vec<Fault>>,
    pub drawn: Mutex<Vec<Drawn>>,
    pub retirements: Mutex<Vec<Retirement>>,
    /// Phases as they ran: name, start, end.
    pub phases: Mutex<Vec<(String, Duration, Duration)>>,
}

impl History {
    pub fn new(seed: u64) -> Self {
        Self {
            started: Instant::now(),
            seed,
            ops: Mutex::default(),
            faults: Mutex::default(),
            drawn: Mutex::default(),
            retirements: Mutex::default(),
            phases: Mutex::default(),
        }
    }

    /// Time since the run started: every time in the history is on this clock.
    pub fn now(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn op(&self, op: Op) {
        self.ops.lock().unwrap().push(op);
    }

    pub fn fault(&self, fault: Fault) {
        self.faults.lock().unwrap().push(fault);
    }

    pub fn drawn(&self, drawn: Drawn) {
        self.drawn.lock().unwrap().push(drawn);
    }

    pub fn retired(&self, retirement: Retirement) {
        self.retirements.lock().unwrap().push(retirement);
    }
}
