//! The registry of sequences and their ranges: the queries that read and change it
//! (`queries`), the views they answer with (`views`) and what can go wrong (`error`); what the
//! vend path needs of each sequence, read once and kept in memory (`formats`, `catalog`); the
//! cache policy and the leases on cached blocks (`cache`); each sequence's history (`events`).

mod cache;
mod catalog;
mod error;
mod events;
mod formats;
mod queries;
mod views;

pub use cache::{await_instance_leases, set_cache_policy, Change, ChangeKind, CHANGES_CHANNEL};
pub use catalog::{Catalog, Entry, Known};
pub use error::RegistryError;
pub use events::{api_kind, list_events, EventPage, EventRange, EventView};
pub use formats::{catalog_entry, issued, Issued};
pub use queries::{
    add_range, create_sequence, get_sequence, list_sequences, live_sequences, retire_sequence,
    NewSequence,
};
pub use views::{CacheView, RangeView, SequencePage, SequenceRecord, SequenceView};
