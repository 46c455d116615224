//! This instance's cache of cached sequences (those with a cache policy): values drawn
//! durably in leased blocks ahead of need, handed out from memory, refilled in the background
//! before they run out. Strict sequences never come here.
//!
//! Never twice: every cached value was drawn by a vend statement and leased to this instance
//! alone. Never after retirement: a block is handed out only while its lease is trusted (a
//! tenth short of its expiry, by this instance's clock from before the lease was asked for);
//! on a retirement or a policy change the reservoir closes first and its leases are released
//! after, and DELETE waits for those releases (or the expiries). Gaps are the price: values
//! cached when an instance stops or crashes are never handed out.

mod keeper;
mod reservoir;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::db::Registry;

pub use keeper::spawn as spawn_keeper;
pub use reservoir::Closed;
use reservoir::{RefillEnd, Reservoir, Step};

use crate::domain::{CachePolicy, SequenceName, MAX_CACHE_SIZE};
use crate::metrics::Metrics;
use crate::registry;
use crate::settings::CacheSettings;
use crate::vend::{Holder, LeaseStatement, LeaseWait, Leased, Outcome, VendError, Vender};

#[derive(Clone)]
pub struct InstanceCache {
    shared: Arc<Shared>,
}

struct Shared {
    /// This instance's name on its leases.
    holder_name: Arc<str>,
    vender: Vender,
    registry: Registry,
    metrics: Arc<Metrics>,
    settings: CacheSettings,
    /// How long a request may wait for a refill.
    patience: Duration,
    reservoirs: RwLock<HashMap<String, Arc<Reservoir>>>,
}

impl InstanceCache {
    pub fn new(
        vender: Vender,
        registry: Registry,
        metrics: Arc<Metrics>,
        settings: CacheSettings,
        patience: Duration,
    ) -> Self {
        let holder_name: Arc<str> = format!("instance:{}", uuid::Uuid::new_v4()).into();
        Self {
            shared: Arc::new(Shared {
                holder_name,
                vender,
                registry,
                metrics,
                settings,
                patience,
                reservoirs: RwLock::new(HashMap::new()),
            }),
        }
    }

    /// Takes `count` values of a cached sequence: from memory when enough are held, otherwise
    /// after the refill under way (waiting at most the vend deadline).
    pub async fn take(
        &self,
        name: &SequenceName,
        policy: CachePolicy,
        count: u32,
    ) -> Result<Outcome, VendError> {
        let shared = &self.shared;
        let give_up = tokio::time::Instant::now() + shared.patience;
        // A reservoir closed for a new policy is replaced: go on with its successor.
        'reservoirs: loop {
            let reservoir = self.reservoir(name, policy);
            let mut seen = None;
            loop {
                let taken = reservoir.take(u64::from(count), seen, Instant::now());
                if taken.discarded > 0 {
                    shared.metrics.cache_discarded.inc_by(taken.discarded);
                }
                if taken.start_refill {
                    self.spawn_refill(name.clone(), reservoir.clone());
                }
                let ended = match taken.step {
                    Step::Served(values) => {
                        self.count_served(name, values.len(), seen.is_some());
                        return Ok(Outcome::Values(values));
                    }
                    Step::Answer(outcome) => return Ok(outcome),
                    Step::Unavailable => return Err(VendError::Unavailable),
                    Step::Closed(Closed::Retired) => return Ok(Outcome::Retired),
                    Step::Closed(Closed::Replaced) => continue 'reservoirs,
                    Step::Wait { ended, generation } => {
                        seen = Some(generation);
                        ended
                    }
                };
                if tokio::time::timeout_at(give_up, ended).await.is_err() {
                    return Err(VendError::NoAnswerInTime);
                }
            }
        }
    }

    fn count_served(&self, name: &SequenceName, values: usize, waited: bool) {
        let metrics = &self.shared.metrics;
        match waited {
            false => metrics.cache_hits.inc(),
            true => metrics.cache_waits.inc(),
        }
        metrics.count_vended(name.as_str(), values as u64);
    }

    /// The sequence was retired or its policy changed: hand out nothing more of it, then
    /// release its leases so that a retirement need not wait for their expiry.
    ///
    /// Only the closed reservoir's leases: a successor (the policy changed back) may lease
    /// before the release runs, and a released lease is one a retirement no longer waits
    /// for while its blocks are still handed out. The reservoir is closed under the map's
    /// lock, so no successor exists before it is closed; every lease a successor gets is
    /// asked for after the closed reservoir's last one was granted, and lease ids are an
    /// identity column, so greater.
    pub(crate) async fn evict(&self, name: &str, why: Closed) {
        let dropped = {
            let mut reservoirs = self.write();
            reservoirs
                .remove(name)
                .map(|reservoir| reservoir.close(why))
        };
        let Some(dropped) = dropped else {
            return;
        };
        self.shared.metrics.cache_discarded.inc_by(dropped.values);
        let Some(up_to) = dropped.leases_up_to else {
            return;
        };
        let registry = &self.shared.registry;
        let holder = &self.shared.holder_name;
        if let Err(err) = registry::release_sequence_leases(registry, holder, name, up_to).await {
            tracing::warn!(sequence = name, error = %err, "could not release cached leases; they expire unrenewed");
        }
    }

    /// A sequence's policy changed but it stays cached: refill by the new rule.
    pub(crate) fn update_policy(&self, name: &str, policy: CachePolicy) {
        if let Some(reservoir) = self.read().get(name) {
            reservoir.set_rule(policy.rule());
        }
    }

    /// Stops handing out anything and releases every lease of this instance (at shutdown).
    pub async fn release_all(&self) {
        let all: Vec<Arc<Reservoir>> = self.write().drain().map(|(_, r)| r).collect();
        for reservoir in all {
            self.shared
                .metrics
                .cache_discarded
                .inc_by(reservoir.close(Closed::Replaced).values);
        }
        if let Err(err) =
            registry::release_holder_leases(&self.shared.registry, &self.shared.holder_name).await
        {
            tracing::warn!(error = %err, "could not release cached leases at shutdown; they expire unrenewed");
        }
    }

    fn reservoir(&self, name: &SequenceName, policy: CachePolicy) -> Arc<Reservoir> {
        if let Some(reservoir) = self.read().get(name.as_str()) {
            return reservoir.clone();
        }
        self.write()
            .entry(name.as_str().to_owned())
            .or_insert_with(|| Arc::new(Reservoir::new(policy.rule(), Instant::now())))
            .clone()
    }

    /// Values this instance holds, across its cached sequences.
    pub fn held_values(&self) -> u64 {
        self.read().values().map(|reservoir| reservoir.held()).sum()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<Reservoir>>> {
        self.shared
            .reservoirs
            .read()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<Reservoir>>> {
        self.shared
            .reservoirs
            .write()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// A refill gave up on its lease statement, which may still grant the lease: no reservoir
    /// holds it, and `evict` releases only the leases its reservoir held, so it is released
    /// here (else a retirement would wait out its expiry).
    fn release_when_granted(&self, statement: LeaseStatement) {
        let registry = self.shared.registry.clone();
        let metrics = self.shared.metrics.clone();
        tokio::spawn(async move {
            if let Ok(Ok(Leased::Granted(lease))) = statement.await {
                metrics.cache_discarded.inc_by(lease.count);
                if let Err(err) = registry::release_lease(&registry, lease.id).await {
                    tracing::warn!(error = %err, "could not release a lease granted too late; it expires unrenewed");
                }
            }
        });
    }

    fn spawn_refill(&self, name: SequenceName, reservoir: Arc<Reservoir>) {
        let cache = self.clone();
        tokio::spawn(async move { cache.refill(name, reservoir).await });
    }

    /// One refill: a lease of what the reservoir lacks, kept if the reservoir is still open.
    async fn refill(&self, name: SequenceName, reservoir: Arc<Reservoir>) {
        let shared = &self.shared;
        let Some(size) = reservoir.refill_size() else {
            reservoir.end_refill(RefillEnd::Answered(Outcome::Retired), None);
            return;
        };
        let count = size.min(MAX_CACHE_SIZE) as u32;
        let ttl = shared.settings.instance_lease;
        let holder = Holder::Instance(shared.holder_name.clone());
        let leased = match shared
            .vender
            .start_lease(name.clone(), count, holder, ttl, None)
        {
            Ok(statement) => match shared.vender.await_lease(statement).await {
                LeaseWait::Answered(leased) => leased,
                LeaseWait::GaveUp(statement) => {
                    self.release_when_granted(statement);
                    Err(VendError::NoAnswerInTime)
                }
            },
            Err(refused) => Err(refused),
        };
        let (end, lease, label) = match leased {
            Ok(Leased::Granted(lease)) => (
                RefillEnd::Granted {
                    clipped: lease.clipped,
                },
                Some((lease, shared.settings.fenced_lease())),
                "granted",
            ),
            Ok(Leased::Exhausted) => (RefillEnd::Answered(Outcome::Exhausted), None, "exhausted"),
            Ok(Leased::Retired) => (RefillEnd::Answered(Outcome::Retired), None, "retired"),
            Ok(Leased::NotFound) => (RefillEnd::Answered(Outcome::NotFound), None, "not_found"),
            Ok(Leased::Failed(reason)) => {
                (RefillEnd::Answered(Outcome::Failed(reason)), None, "failed")
            }
            // An instance's own leases carry no idempotency key.
            Ok(Leased::Replayed(_) | Leased::KeyReused | Leased::KeyInFlight) | Err(_) => {
                (RefillEnd::Unavailable, None, "unavailable")
            }
        };
        let rejected = reservoir.end_refill(end, lease);
        // Counted once the values are in hand.
        let refills = &shared.metrics.cache_refills;
        refills.with_label_values(&[label]).inc();
        if let Some(rejected) = rejected {
            shared.metrics.cache_discarded.inc_by(rejected.count);
            if let Err(err) = registry::release_lease(&shared.registry, rejected.id).await {
                tracing::warn!(sequence = name.as_str(), error = %err, "could not release a lease; it expires unrenewed");
            }
        }
    }
}
