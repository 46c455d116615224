//! Idempotency keys (`Idempotency-Key`, IETF httpapi draft): a vend or lease retried with
//! the key it was first sent with gets the first answer again, from any instance, instead of
//! burning new values. The answer is stored in the same transaction as the draw (see the
//! idempotency migration); this module holds what the instance needs around that: the key as
//! sent, the requests in flight here, and the purge of expired keys.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::db::Registry;
use crate::metrics::Metrics;

/// Longest key accepted, in characters.
pub const MAX_KEY_LEN: usize = 255;

/// A keyed request: whose key (the token's identity, `Caller::owner`), the key, and what was asked, so that the
/// same key sent with another request is told apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    pub owner: String,
    pub key: String,
    pub request: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`Idempotency-Key` must be 1 to {MAX_KEY_LEN} visible ASCII characters (no spaces)")]
pub struct InvalidKey;

/// Checks a key as sent: 1–255 visible ASCII characters, as the stored keys' CHECK demands.
pub fn parse_key(raw: &[u8]) -> Result<String, InvalidKey> {
    let visible = raw.iter().all(|b| (0x21..=0x7e).contains(b));
    if raw.is_empty() || raw.len() > MAX_KEY_LEN || !visible {
        return Err(InvalidKey);
    }
    Ok(String::from_utf8(raw.to_vec()).expect("visible ASCII is UTF-8"))
}

/// Keys being served by this instance. A repeat that arrives while the first is still being
/// served is answered 409 at once rather than racing it. (A repeat sent to another instance
/// meanwhile waits for the first's commit in the database, then replays its answer.)
#[derive(Default)]
pub struct InFlight {
    keys: Arc<Mutex<HashSet<(String, String)>>>,
}

/// Held while a keyed request is served; lets the key go when dropped.
pub struct Claim {
    keys: Arc<Mutex<HashSet<(String, String)>>>,
    entry: (String, String),
}

impl InFlight {
    /// None when the key is already being served here.
    pub fn claim(&self, key: &IdempotencyKey) -> Option<Claim> {
        let entry = (key.owner.clone(), key.key.clone());
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        keys.insert(entry.clone()).then(|| Claim {
            keys: self.keys.clone(),
            entry,
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.keys
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.entry);
    }
}

/// How often expired answers are purged.
const PURGE_EVERY: Duration = Duration::from_secs(60);

/// Purges expired answers, and the oldest of a token's beyond `keys_per_token`, every minute.
pub fn spawn_purge(
    pool: Registry,
    keys_per_token: i64,
    metrics: Arc<Metrics>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(PURGE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            purge_once(&pool, keys_per_token, &metrics).await;
        }
    })
}

/// One purge: each step's result counted in `metrics` (`seqvend_idempotency_purges_total`,
/// which the alert on a purge that keeps failing watches) and a failure logged.
pub async fn purge_once(pool: &Registry, keys_per_token: i64, metrics: &Metrics) {
    for (step, outcome) in crate::registry::purge_steps(pool, keys_per_token).await {
        let result = match outcome {
            Ok(Some(purged)) => {
                if purged > 0 {
                    metrics
                        .idempotency_answers_purged
                        .with_label_values(&[step.label()])
                        .inc_by(purged);
                    tracing::debug!(step = step.label(), purged, "purged idempotency answers");
                }
                "ok"
            }
            Ok(None) => "left_to_another",
            // Seen by operators: a purge that keeps failing lets stored answers grow.
            Err(err) => {
                tracing::warn!(
                    step = step.label(),
                    error = %err,
                    "could not purge idempotency answers"
                );
                "failed"
            }
        };
        metrics
            .idempotency_purges
            .with_label_values(&[step.label(), result])
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_one_to_255_visible_ascii_characters() {
        assert_eq!(
            parse_key(b"order-4471/label#1").unwrap(),
            "order-4471/label#1"
        );
        assert!(parse_key(&[b'k'; 255]).is_ok());
        for bad in [
            &b""[..],
            &[b'k'; 256],
            b"with space",
            b"tab\t",
            b"caf\xc3\xa9",
            b"\x7f",
        ] {
            assert_eq!(parse_key(bad), Err(InvalidKey), "{bad:?}");
        }
    }

    #[test]
    fn a_key_in_flight_is_refused_until_its_claim_ends() {
        let in_flight = InFlight::default();
        let key = IdempotencyKey {
            owner: "t".into(),
            key: "k".into(),
            request: "next:s:one".into(),
        };
        let claim = in_flight.claim(&key).expect("first");
        assert!(in_flight.claim(&key).is_none());
        let other_owner = IdempotencyKey {
            owner: "u".into(),
            ..key.clone()
        };
        assert!(in_flight.claim(&other_owner).is_some());
        drop(claim);
        assert!(in_flight.claim(&key).is_some());
    }
}
