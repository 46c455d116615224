//! Vending: requests for values become rows of one `seqvend.vend(...)` statement.
//!
//! With coalescing on, requests are routed by sequence name to lanes. A lane runs one
//! statement at a time and serves, in that statement, every request that arrived while the
//! previous one ran: a lone request goes out at once, and batches grow with load. One lane
//! per sequence keeps per-sequence order (a request taken earlier gets the earlier values);
//! lanes run in parallel over their own connections. With coalescing off, each request is
//! its own statement (the baseline the load tests compare against).
//!
//! Statements run in tasks of their own, so a client that gives up never cancels one half-way.

mod counters;
mod engine;
mod error;
mod lanes;
mod lease;
mod statement;
mod statement_outcome;

pub use counters::{CounterAsk, CounterOutcome, Counters};
pub use engine::{LeaseStatement, LeaseWait, Pending, Vender};
pub use error::VendError;
pub use lanes::{Lanes, Statement};
pub use lease::{Holder, Lease, LeaseReplay, Leased};
pub use statement::{Outcome, Replay};
pub use statement_outcome::StatementOutcome;
