//! The thick client of seqvend: sequence values for applications, served from a local cache
//! of blocks leased with `POST /sequences/{name}/leases`; and time-ordered ids made in the
//! process: [`Snowflakes`] under a worker id leased from seqvend, [`uuidv7`]s, and the
//! timestamps of a hybrid logical clock ([`Hlc`]).
//!
//! ```no_run
//! # async fn example() -> Result<(), seqvend_client::Error> {
//! use seqvend_client::Client;
//!
//! let client = Client::builder("http://127.0.0.1:8080", "vend-token").build()?;
//! let id = client.next("orders").await?;
//! let orders = client.sequence("orders"); // for hot loops: no lookup by name
//! let ids = orders.next_n(500).await?;
//! if let Ok(id) = orders.try_next() { /* never waits */ }
//! println!("{:?}", client.metrics());
//! # Ok(()) }
//! ```
//!
//! # Guarantees
//! - **Unique**: a value is handed out at most once by a client (the service never leases
//!   it twice, across clients and instances).
//! - **Per-process monotonic**: values leave in the order the service vended them. Blocks
//!   are queued in lease order (one lease in flight per sequence), and within a block each
//!   taker claims the next index; a value taken after another is later in vend order.
//! - **Expiry honoured**: no value is handed out after its lease's deadline, counted on the
//!   monotonic clock from the moment *before* the lease request left, fenced a tenth short of
//!   the ttl as the instance cache is (`sent + 0.9 × ttl_seconds`: for seqvend's clock and
//!   ours running at slightly other rates), less `expiry_margin`. Every take checks it: a
//!   runtime starved by a hot `try_next` loop, whose ticker never runs, still gets no value
//!   past it. The ticker (every 100 ms) closes blocks two ticks before their deadline and
//!   counts their unused values as discarded; a take past the deadline closes the block
//!   itself when the ticker has not.
//!   A take reads the coarse monotonic clock (`CLOCK_MONOTONIC_COARSE`, a few ns), which
//!   lags the precise one by a kernel tick or more; within a second of the last take, where
//!   that lag could matter, it reads the precise clock (`Instant::now`) and compares with it.
//! - **A few atomic operations per value**: the fast path reads the coarse clock (a vDSO
//!   load on Linux), loads the active block (`ArcSwap`), claims an index with one
//!   `fetch_add` on that block's own counter, and computes the value. No lock, no
//!   allocation, no system call, no metrics counter: how many values were taken is read from
//!   the blocks themselves.
//! - **Retirement** reaches a client at its next lease (410): values it leased before the
//!   retirement were vended before it, and are still handed out until they run out or expire.
//!
//! # Refill
//! Per sequence, use is sampled into the sliding one-minute [`RateWindow`] of
//! `seqvend-blocks` every tick and, under the default [`Growth::Adaptive`], at every refill
//! decision too, so a cold start at full speed is seen when its first lease runs out (the
//! last second's rate counts too, so a burst is met at once). With the service's suggested
//! policy (or, for a strict sequence, [`STRICT_DEFAULT`]: 10,000 values, 120 s), the client
//! holds `buffer = max(suggested, 120 s, 4 × the slowest recent refill)` of use, at most half
//! a lease's life; its size is `max(suggested size, 2 × rate × buffer)`, capped at
//! `max_cached` (4,000,000); a refill starts below [`RefillRule::mark`] (at most half the
//! size, so a refill never trickles) and tops up in leases of at most `max_lease`
//! (10,000,000, the service's limit). A refill is weighed every tick and whenever a taker
//! reaches the end of a 65,536-value piece of a lease. Values in blocks that expire within the buffer do not count as
//! held. At 1,000 ids/s the default holds 120,000–240,000 values: a 60 s outage of the
//! service causes no wait. The price is paid at low rates: what a lease held when it expired
//! is discarded (a gap in the sequence). What is held never exceeds `max_cached` (or what a
//! [`Sequence::prefetch`] asked for), so that bounds the values discarded per lease's life
//! and at [`Client::close`], however large leases grow. See `docs/client.md` for the rule
//! and how it compares with Leaf's segment step.
//!
//! # Failure modes
//! - **Service down or slow**: cached values keep flowing; the refill task retries with
//!   exponential backoff and full jitter (50 ms base, 5 s cap, 5 attempts a round, the
//!   backoff growing across rounds until a lease succeeds).
//! - **Cache empty**: only then does `next`/`next_n` wait, for at most the wait timeout
//!   (2 s): [`Error::Timeout`], or the last refill's failure ([`Error::Unavailable`],
//!   [`Error::Transport`]). [`Sequence::try_next`] never waits: [`Error::Empty`] or the
//!   last failure. A `next_n` that fails discards the values it had taken.
//! - **Definite answers** ([`Error::NotFound`], [`Error::Exhausted`], [`Error::Retired`],
//!   [`Error::Unauthorized`], other 4xx) are returned once nothing is cached, and repeated
//!   without asking the service again for the retry cap (5 s). A clipped lease's values
//!   are served before `Exhausted`.
//! - **Close**: [`Client::close`] stops every handle at once ([`Error::Closed`]) and counts
//!   what the caches held as discarded; it returns the final counts.
//! - **Drop**: background work (one ticker per client, one refill task per sequence) runs on
//!   the runtime the client was built in, and stops when the last [`Client`] or
//!   [`Sequence`] handle is dropped.
//!
//! [`RateWindow`]: seqvend_blocks::RateWindow
//! [`RefillRule::mark`]: seqvend_blocks::RefillRule::mark

mod active;
mod backoff;
mod builder;
mod cache;
mod client;
mod clock;
mod error;
mod growth;
mod hlc;
mod metrics;
mod policy;
mod refill;
mod sequence;
mod service;
mod shared;
mod snowflake;
mod taker;
mod ticker;
mod uuidv7;

pub use builder::{ClientBuilder, DEFAULT_MAX_CACHED, STRICT_DEFAULT};
pub use client::Client;
pub use error::Error;
pub use growth::Growth;
pub use hlc::{Hlc, HlcTimestamp, PhysicalClock};
pub use metrics::Metrics;
pub use policy::CachePolicy;
pub use sequence::Sequence;
pub use snowflake::Snowflakes;
pub use taker::Taker;
pub use uuid::Uuid;
pub use uuidv7::{uuidv7, uuidv7_n};
