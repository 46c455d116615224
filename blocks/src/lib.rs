//! The pure rules seqvend's server and its client crate share: for cached sequences, a leased
//! [`Block`] of values, the sliding [`RateWindow`] that measures use, and the [`RefillRule`]
//! that says when to draw more; for Snowflake ids, the [`snowflake`] layout and generator; for
//! carrier tracking numbers, the [`carriers`] formats, check digits and recognition.
//! No I/O and no clock of its own: callers pass the time, so the rules are tested exactly.

mod block;
pub mod carriers;
mod rate;
mod refill;
pub mod snowflake;

pub use block::Block;
pub use rate::RateWindow;
pub use refill::RefillRule;
