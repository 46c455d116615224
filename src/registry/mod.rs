//! The registry of sequences and their ranges: the queries that read and change it
//! (`queries`; many at a time in name order, `listing`), the views they answer with (`views`) and what can go wrong (`error`); what the
//! vend path needs of each sequence, read once and kept in memory (`formats`, `catalog`); the
//! settings, cache policy and the leases on cached blocks (`cache`); each sequence's history
//! (`events`); usage samples and raised alerts (`usage`), the samples as a series
//! (`samples`), and what the usage round reads (`watch`).

mod cache;
mod catalog;
mod error;
mod events;
mod families;
mod formats;
mod idempotency;
mod leases;
mod listing;
mod queries;
mod samples;
mod tokens;
mod usage;
mod views;
mod watch;

pub use cache::{
    await_instance_leases, change_settings, Change, ChangeKind, SettingsChange, CHANGES_CHANNEL,
};
pub use catalog::{Catalog, Entry, Known};
pub use error::RegistryError;
pub use events::{
    api_kind, list_all_events, list_events, EventCursor, EventPage, EventRange, EventView,
};
pub use families::{
    create_family, get_counter, get_family, list_families, retire_family, CounterView, FamilyPage,
    FamilyView,
};
pub use formats::{catalog_entry, issued, Issued};
pub use idempotency::{purge_answers, purge_steps, PurgeStep, StepOutcome};
pub use leases::{
    release_holder_leases, release_lease, release_sequence_leases, renew_instance_leases,
    sweep_leases,
};
pub use listing::{changed_since, list_sequences, sequences_between, sequences_named, slice_ends};
pub use queries::{add_range, create_sequence, get_sequence, retire_sequence, NewSequence};
pub use samples::{usage_samples, UsageSample};
pub use tokens::{
    create_token, list_tokens, revoke_token, token_by_id, touch_token, StoredToken, TokenView,
    TOKENS_CHANNEL,
};
pub use usage::{
    claim_sampling_round, record_alerts, record_samples, thin_samples_if_due, AlertEvent,
};
pub use views::{
    AlertsView, CacheView, RangeView, SequencePage, SequenceRecord, SequenceView, UsageView,
};
pub use watch::{live_sequence_marks, live_sequences, LiveSequence};
