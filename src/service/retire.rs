//! The retire use-case: a sequence retired in the registry, then waited on until no instance
//! holds cached values of it (each releases its block leases when told).

use super::Service;
use crate::domain::SequenceName;
use crate::registry::{self, RegistryError, SequenceView};

/// Why a retirement was not confirmed.
#[derive(Debug)]
pub enum RetireRefused {
    Registry(RegistryError),
    /// A statement did not answer within the registry deadline.
    NoAnswerInTime,
    /// Retired, but an instance may still hold cached values of it.
    StillCached,
}

impl From<RegistryError> for RetireRefused {
    fn from(err: RegistryError) -> Self {
        Self::Registry(err)
    }
}

impl Service {
    /// Retires `name` on behalf of the token named `by`. The caller was authorised first.
    pub async fn retire(
        &self,
        name: &SequenceName,
        by: &str,
    ) -> Result<SequenceView, RetireRefused> {
        let (pool, deadline) = (&self.parts.registry, self.parts.registry_deadline);
        let retired = registry::retire_sequence(pool, name, by);
        let sequence = tokio::time::timeout(deadline, retired)
            .await
            .map_err(|_| RetireRefused::NoAnswerInTime)??;
        // Instances release their leases when told; one that did not hear stops when its lease
        // expires, which no wait here outlasts.
        let patience = self.parts.cache_settings.instance_lease + deadline;
        let waited = registry::await_instance_leases(pool, name, patience);
        let released = tokio::time::timeout(patience + deadline, waited)
            .await
            .map_err(|_| RetireRefused::NoAnswerInTime)??;
        if !released {
            return Err(RetireRefused::StillCached);
        }
        tracing::info!(sequence = %name, "sequence retired");
        Ok(sequence)
    }
}
