//! What both caching tiers of seqvend share: a leased [`Block`] of values, the sliding
//! [`RateWindow`] that measures use, and the [`RefillRule`] that says when to draw more.
//! No I/O and no clock of its own: callers pass the time, so the rules are tested exactly.

mod block;
mod rate;
mod refill;

pub use block::Block;
pub use rate::RateWindow;
pub use refill::RefillRule;
