//! The Snowflake layout lives in `seqvend-blocks`, shared with the client crate; the server
//! adds only what needs `chrono`.

use chrono::{DateTime, Utc};
pub use seqvend_blocks::snowflake::{Layout, LayoutError, SnowflakeParts};

/// The layout's epoch as a time, for messages and the API.
pub fn epoch(layout: &Layout) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(layout.epoch_ms()).unwrap_or_default()
}
