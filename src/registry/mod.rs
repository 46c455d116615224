//! The registry of sequences and their ranges: the queries that read and change it
//! (`queries`), the views they answer with (`views`) and what can go wrong (`error`).

mod error;
mod queries;
mod views;

pub use error::RegistryError;
pub use queries::{
    add_range, create_sequence, get_sequence, list_sequences, live_sequences, retire_sequence,
    NewSequence,
};
pub use views::{RangeView, SequencePage, SequenceRecord, SequenceView};
