//! The vend use-case: values of a sequence, from this instance's cache or drawn by the vend
//! statement, replayed when the idempotency key already has an answer, and printed as carrier
//! numbers when the sequence has a format.

use super::keys::KeyInFlight;
use super::Service;
use crate::carriers::Format;
use crate::domain::SequenceName;
use crate::registry::Entry;
use crate::vend::{Outcome, Replay, VendError};

/// A vend as asked: `count` values (one without it) of the sequence `name`, whose catalog
/// entry the caller was authorised against, with the caller's idempotency key if it sent one.
pub struct VendAsk<'a> {
    pub name: &'a SequenceName,
    pub entry: &'a Entry,
    pub count: Option<u32>,
    pub key: Option<&'a str>,
    /// Who owns the key (`Caller::owner`).
    pub owner: &'a str,
}

/// Values, durable, in vend order (fewer than asked when the sequence ran out).
pub struct VendedValues {
    pub values: Vec<i64>,
    /// The carrier numbers, one per value; None for a plain sequence.
    pub formatted: Option<Vec<String>>,
    /// The answer repeats the one stored for the idempotency key.
    pub replayed: bool,
}

/// Why no values were vended.
#[derive(Debug)]
pub enum VendRefused {
    KeyInFlight(String),
    /// The key was first sent with another request; names the key.
    KeyReused(String),
    /// The sequence has no values left (`replayed`: the stored answer for the key said so).
    Exhausted {
        replayed: bool,
    },
    Retired,
    NotFound,
    /// The sequence failed on its own; says why.
    Failed(String),
    /// Another database session holds the sequence (a lock or a conflicting draw).
    Busy,
    Engine(VendError),
    /// A value that does not print in the sequence's format: a range was changed by hand.
    Unprintable(anyhow::Error),
}

impl From<KeyInFlight> for VendRefused {
    fn from(KeyInFlight(key): KeyInFlight) -> Self {
        Self::KeyInFlight(key)
    }
}

impl From<VendError> for VendRefused {
    fn from(err: VendError) -> Self {
        Self::Engine(err)
    }
}

impl Service {
    pub async fn vend(&self, ask: VendAsk<'_>) -> Result<VendedValues, VendRefused> {
        let VendAsk {
            name,
            entry,
            count,
            key,
            owner,
        } = ask;
        let wanted = count.unwrap_or(1);
        let keyed = self.claim(owner, key, || match count {
            None => format!("next:{name}:one"),
            Some(n) => format!("next:{name}:count={n}"),
        })?;
        // A cached sequence is served from this instance's memory; a batch larger than the
        // cache holds is drawn like a strict one, and so is a keyed request, whose answer is
        // stored with its draw.
        let cached = !entry.cache.is_strict()
            && u64::from(wanted) <= entry.cache.rule().size
            && keyed.is_none();
        let outcome = if cached {
            self.parts.cache.take(name, entry.cache, wanted).await?
        } else {
            let key = keyed.as_ref().map(|(key, _)| key.clone());
            self.parts
                .vender
                .vend_keyed(name.clone(), wanted, key)
                .await?
        };
        let (values, replayed) = match outcome {
            Outcome::Values(values) => (values, false),
            Outcome::Replayed(Replay::Values(values)) => (values, true),
            Outcome::Replayed(Replay::Exhausted) => {
                return Err(VendRefused::Exhausted { replayed: true })
            }
            Outcome::KeyReused => {
                let (key, _) = keyed.expect("only a keyed request is told its key was reused");
                return Err(VendRefused::KeyReused(key.key));
            }
            Outcome::KeyInFlight => {
                let (key, _) = keyed.expect("only a keyed request waits on its key");
                return Err(VendRefused::KeyInFlight(key.key));
            }
            Outcome::Exhausted => return Err(VendRefused::Exhausted { replayed: false }),
            Outcome::Retired => return Err(VendRefused::Retired),
            Outcome::NotFound => return Err(VendRefused::NotFound),
            Outcome::Failed(reason) => return Err(VendRefused::Failed(reason)),
            // Logged, with its reason, where the statement answered.
            Outcome::Unavailable(_) => return Err(VendRefused::Busy),
        };
        let formatted = entry
            .format
            .as_ref()
            .map(|format| print(format, name, &values))
            .transpose()
            .map_err(VendRefused::Unprintable)?;
        Ok(VendedValues {
            values,
            formatted,
            replayed,
        })
    }
}

/// Every range was checked against the format when it was added, so a value that does not
/// print means a range was changed by hand.
fn print(format: &Format, name: &SequenceName, values: &[i64]) -> anyhow::Result<Vec<String>> {
    values
        .iter()
        .map(|&value| {
            format.render(value).ok_or_else(|| {
                anyhow::anyhow!(
                    "value {value} of sequence {name} does not fit its {} format",
                    format.kind()
                )
            })
        })
        .collect()
}
