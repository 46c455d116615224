//! Domain types: parsed once at the edge, trusted everywhere inside.

mod alerts;
mod bounds;
mod cache_policy;
mod counter_key;
mod name;
mod range_state;
mod usage;

pub use alerts::{AlertKind, AlertThresholds, AlertsError, Crossing};
pub use bounds::{Increment, RangeBounds, RangeError, SequenceSpec};
pub use cache_policy::{CachePolicy, CachePolicyError, MAX_CACHE_SIZE, MAX_LEASE_COUNT};
pub use counter_key::{CounterKey, KeyError, MAX_KEY_BYTES};
pub use name::{NameError, SequenceName};
pub use range_state::{RangeState, RangeStatus, SequenceStatus};
pub use usage::{Usage, UsageStart};
