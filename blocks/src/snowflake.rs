//! Snowflake ids as pure arithmetic, shared by seqvend's own issuer and the client crate's:
//! the [`Layout`] of an id and the [`Generator`] of one worker id's ids. The caller reads the
//! clock and keeps the lease; nothing here does I/O.

mod generator;
mod layout;

pub use generator::{Generator, Hold};
pub use layout::{Layout, LayoutError, SnowflakeParts};
