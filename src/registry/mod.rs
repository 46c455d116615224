//! The registry of sequences and their ranges: the queries that read and change it
//! (`queries`) and the views they answer with (`views`).

mod queries;
mod views;

pub use queries::{
    add_range, create_sequence, get_sequence, list_sequences, live_sequences, retire_sequence,
    NewSequence,
};
pub use views::{RangeView, SequencePage, SequenceRecord, SequenceView};
