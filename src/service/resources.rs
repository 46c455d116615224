//! The registry's own resources as use-cases: sequences and their ranges and settings,
//! counter families and counters, events, tokens and the tracking numbers seqvend issued.
//! Each reads or writes the registry and answers its views; the HTTP edge authorises first.

use super::Service;
use crate::carriers::Origin;
use crate::domain::{CounterKey, RangeBounds, SequenceName, SequenceSpec};
use crate::registry::{
    self, CounterView, EventCursor, EventPage, FamilyPage, FamilyView, Issued, NewSequence,
    RangeView, RegistryError, SequencePage, SequenceView, SettingsChange, TokenView, UsageSample,
};

impl Service {
    pub async fn create_sequence(
        &self,
        new: NewSequence,
        by: &str,
    ) -> Result<SequenceView, RegistryError> {
        registry::create_sequence(&self.parts.registry, new, by).await
    }

    pub async fn add_range(
        &self,
        name: &SequenceName,
        bounds: RangeBounds,
        by: &str,
    ) -> Result<RangeView, RegistryError> {
        registry::add_range(&self.parts.registry, name, bounds, by).await
    }

    pub async fn get_sequence(&self, name: &SequenceName) -> Result<SequenceView, RegistryError> {
        registry::get_sequence(&self.parts.registry, name).await
    }

    /// Sequences in name order, after `after`, at most `limit` of them.
    pub async fn list_sequences(
        &self,
        after: Option<&SequenceName>,
        limit: u32,
    ) -> Result<SequencePage, RegistryError> {
        registry::list_sequences(&self.parts.registry, after, limit).await
    }

    pub async fn change_settings(
        &self,
        name: &SequenceName,
        change: SettingsChange,
        by: &str,
    ) -> Result<SequenceView, RegistryError> {
        registry::change_settings(&self.parts.registry, name, change, by).await
    }

    /// A sequence's usage samples, oldest first.
    pub async fn usage_samples(
        &self,
        name: &SequenceName,
    ) -> Result<Vec<UsageSample>, RegistryError> {
        registry::usage_samples(&self.parts.registry, name).await
    }

    /// A sequence's events from `cursor` on, at most `limit` of them.
    pub async fn list_events(
        &self,
        name: &SequenceName,
        cursor: EventCursor,
        limit: u32,
    ) -> Result<EventPage, RegistryError> {
        registry::list_events(&self.parts.registry, name, cursor, limit).await
    }

    /// Every sequence's events from `cursor` on, at most `limit` of them.
    pub async fn list_all_events(
        &self,
        cursor: EventCursor,
        limit: u32,
    ) -> Result<EventPage, RegistryError> {
        registry::list_all_events(&self.parts.registry, cursor, limit).await
    }

    pub async fn create_family(
        &self,
        name: &SequenceName,
        spec: SequenceSpec,
        by: &str,
    ) -> Result<FamilyView, RegistryError> {
        registry::create_family(&self.parts.registry, name, spec, by).await
    }

    pub async fn get_family(&self, name: &SequenceName) -> Result<FamilyView, RegistryError> {
        registry::get_family(&self.parts.registry, name).await
    }

    /// Families in name order, after `after`, at most `limit` of them.
    pub async fn list_families(
        &self,
        after: Option<&SequenceName>,
        limit: u32,
    ) -> Result<FamilyPage, RegistryError> {
        registry::list_families(&self.parts.registry, after, limit).await
    }

    pub async fn retire_family(
        &self,
        name: &SequenceName,
        by: &str,
    ) -> Result<FamilyView, RegistryError> {
        registry::retire_family(&self.parts.registry, name, by).await
    }

    pub async fn get_counter(
        &self,
        family: &SequenceName,
        key: &CounterKey,
    ) -> Result<CounterView, RegistryError> {
        registry::get_counter(&self.parts.registry, family, key).await
    }

    /// Stores a new token: its name, the hash of its secret and its scopes as written.
    pub async fn create_token(
        &self,
        name: &str,
        secret_hash: &[u8],
        scopes: &[String],
        by: &str,
    ) -> Result<TokenView, RegistryError> {
        registry::create_token(&self.parts.registry, name, secret_hash, scopes, by).await
    }

    pub async fn list_tokens(&self) -> Result<Vec<TokenView>, RegistryError> {
        registry::list_tokens(&self.parts.registry).await
    }

    pub async fn revoke_token(&self, id: i64, by: &str) -> Result<TokenView, RegistryError> {
        registry::revoke_token(&self.parts.registry, id, by).await
    }

    /// Which sequence issued a number read as `origins`, if seqvend did.
    pub async fn issued(&self, origins: &[Origin]) -> Result<Option<Issued>, RegistryError> {
        registry::issued(&self.parts.registry, origins).await
    }
}
