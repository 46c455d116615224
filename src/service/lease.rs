//! The block-lease use-case: a block of a sequence's values for a client's own cache (the
//! thick client), drawn durably like any vend and held until a deadline; replayed when the
//! idempotency key already has an answer.

use chrono::{DateTime, Utc};
use seqvend_blocks::Block;

use super::keys::KeyInFlight;
use super::Service;
use crate::domain::SequenceName;
use crate::vend::{Holder, LeaseReplay, Leased, VendError};

/// A block lease as asked: `count` values of `name`, with the caller's idempotency key if it
/// sent one.
pub struct BlockLeaseAsk<'a> {
    pub name: &'a SequenceName,
    pub count: u32,
    pub key: Option<&'a str>,
    /// Who owns the key (`Caller::owner`).
    pub owner: &'a str,
}

/// Leased values as contiguous blocks in vend order.
pub struct BlockLease {
    pub blocks: Vec<Block>,
    /// Values in all blocks.
    pub count: u64,
    /// The sequence ran out before `count` values.
    pub exhausted: bool,
    pub expires_at: DateTime<Utc>,
    /// How long the lease lasts from this answer.
    pub ttl_seconds: u64,
    /// The answer repeats the one stored for the idempotency key.
    pub replayed: bool,
}

/// Why no block was leased (see `VendRefused`).
#[derive(Debug)]
pub enum LeaseRefused {
    KeyInFlight(String),
    KeyReused(String),
    Exhausted { replayed: bool },
    Retired,
    NotFound,
    Failed(String),
    Engine(VendError),
}

impl From<KeyInFlight> for LeaseRefused {
    fn from(KeyInFlight(key): KeyInFlight) -> Self {
        Self::KeyInFlight(key)
    }
}

impl From<VendError> for LeaseRefused {
    fn from(err: VendError) -> Self {
        Self::Engine(err)
    }
}

impl Service {
    pub async fn lease(&self, ask: BlockLeaseAsk<'_>) -> Result<BlockLease, LeaseRefused> {
        let BlockLeaseAsk {
            name,
            count,
            key,
            owner,
        } = ask;
        let keyed = self.claim(owner, key, || format!("lease:{name}:count={count}"))?;
        let ttl = self.parts.cache_settings.client_lease;
        let key = keyed.as_ref().map(|(key, _)| key.clone());
        let leased = self
            .parts
            .vender
            .lease(name.clone(), count, Holder::Client, ttl, key)
            .await?;
        match leased {
            Leased::Granted(lease) => Ok(BlockLease {
                blocks: lease.blocks,
                count: lease.count,
                exhausted: lease.clipped,
                expires_at: lease.expires_at,
                ttl_seconds: ttl.as_secs(),
                replayed: false,
            }),
            Leased::Replayed(LeaseReplay::Granted {
                blocks,
                expires_at,
                clipped,
            }) => {
                let leased: u64 = blocks.iter().map(Block::len).sum();
                let left = (expires_at - Utc::now()).num_seconds().max(0) as u64;
                Ok(BlockLease {
                    blocks,
                    count: leased,
                    exhausted: clipped,
                    expires_at,
                    ttl_seconds: left,
                    replayed: true,
                })
            }
            Leased::Replayed(LeaseReplay::Exhausted) => {
                Err(LeaseRefused::Exhausted { replayed: true })
            }
            Leased::KeyReused => {
                let (key, _) = keyed.expect("only a keyed lease is told its key was reused");
                Err(LeaseRefused::KeyReused(key.key))
            }
            Leased::KeyInFlight => {
                let (key, _) = keyed.expect("only a keyed lease waits on its key");
                Err(LeaseRefused::KeyInFlight(key.key))
            }
            Leased::Exhausted => Err(LeaseRefused::Exhausted { replayed: false }),
            Leased::Retired => Err(LeaseRefused::Retired),
            Leased::NotFound => Err(LeaseRefused::NotFound),
            Leased::Failed(reason) => Err(LeaseRefused::Failed(reason)),
        }
    }
}
