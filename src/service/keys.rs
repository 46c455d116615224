//! Idempotency keys around a use-case: the caller's key, claimed on this instance for as long
//! as its request is served (see `idempotency::InFlight`).

use super::Service;
use crate::idempotency::{Claim, IdempotencyKey};

/// A request with the key is still being served here; names the key.
#[derive(Debug)]
pub struct KeyInFlight(pub String);

impl Service {
    /// `owner`'s `key` for `request` (what was asked, e.g. `next:fedex-1:count=5`, written
    /// only when a key was sent), claimed for as long as the returned `Claim` lives; None
    /// without a key.
    pub(super) fn claim(
        &self,
        owner: &str,
        key: Option<&str>,
        request: impl FnOnce() -> String,
    ) -> Result<Option<(IdempotencyKey, Claim)>, KeyInFlight> {
        let Some(key) = key else {
            return Ok(None);
        };
        let key = IdempotencyKey {
            owner: owner.to_owned(),
            key: key.to_owned(),
            request: request(),
        };
        let claim = self
            .in_flight
            .claim(&key)
            .ok_or_else(|| KeyInFlight(key.key.clone()))?;
        Ok(Some((key, claim)))
    }
}
