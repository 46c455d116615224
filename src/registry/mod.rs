//! The registry of sequences and their ranges: the queries that read and change it
//! (`queries`), the views they answer with (`views`) and what can go wrong (`error`); each
//! sequence's number format and the numbers it issued (`formats`, `format_cache`).

mod error;
mod format_cache;
mod formats;
mod queries;
mod views;

pub use error::RegistryError;
pub use format_cache::{FormatCache, Known};
pub use formats::{format_of, issued, Issued};
pub use queries::{
    add_range, create_sequence, get_sequence, list_sequences, live_sequences, retire_sequence,
    NewSequence,
};
pub use views::{RangeView, SequencePage, SequenceRecord, SequenceView};
