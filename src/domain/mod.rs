//! Domain types: parsed once at the edge, trusted everywhere inside.

mod bounds;
mod cache_policy;
mod name;
mod range_state;

pub use bounds::{Increment, RangeBounds, RangeError, SequenceSpec};
pub use cache_policy::{CachePolicy, CachePolicyError, MAX_CACHE_SIZE};
pub use name::{NameError, SequenceName};
pub use range_state::{RangeState, RangeStatus, SequenceStatus};
