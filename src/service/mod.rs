//! The application layer: the state seqvend serves from (the catalog, the instance cache, the
//! vender and counters, the keys in flight, the id generators, the token store) and the
//! use-cases over it — vend, block lease, retire, counter draw, worker leases. It takes domain
//! inputs and answers domain outcomes; the HTTP edge (`http`) parses, authorises and maps
//! them to statuses.

mod keys;
mod lease;
mod notification_hub;
mod overview;
mod resources;
mod retire;
mod vend;
mod workers;

use std::sync::Arc;
use std::time::Duration;

use crate::db::Registry;

pub use keys::KeyInFlight;
pub use lease::{BlockLease, BlockLeaseAsk, LeaseRefused};
pub use notification_hub::spawn as spawn_notification_hub;
pub use overview::Overview;
pub use retire::RetireRefused;
pub use vend::{VendAsk, VendRefused, VendedValues};

use crate::auth::{self, AuthError, Principal, TokenStore, Tokens};
use crate::cache::InstanceCache;
use crate::db::VendPool;
use crate::domain::SequenceName;
use crate::idempotency::InFlight;
use crate::ids::{Snowflake, UuidV7s};
use crate::metrics::Metrics;
use crate::registry::{Catalog, Known, RegistryError};
use crate::settings::{CacheSettings, IdSettings};
use crate::vend::{CounterAsk, CounterOutcome, Counters, VendError, Vender};

/// Everything a request may need, built once at startup and shared by every worker: its
/// parts and the idempotency keys in flight.
pub struct Service {
    parts: Parts,
    in_flight: InFlight,
    overview: overview::Snapshot,
}

/// The parts a `Service` is made of (see `startup`).
pub struct Parts {
    pub registry: Registry,
    pub vend_pool: VendPool,
    pub vender: Vender,
    pub counters: Counters,
    pub catalog: Arc<Catalog>,
    pub cache: InstanceCache,
    pub cache_settings: CacheSettings,
    pub metrics: Arc<Metrics>,
    pub snowflake: Arc<Snowflake>,
    pub uuids: UuidV7s,
    pub id_settings: IdSettings,
    pub tokens: Tokens,
    pub token_store: Arc<TokenStore>,
    /// How long a registry request may take, by seqvend's clock.
    pub registry_deadline: Duration,
    /// How old the overview's kept reading may be before a caller has a newer one taken.
    pub overview_fresh_for: Duration,
}

impl Service {
    pub fn new(parts: Parts) -> Self {
        Self {
            overview: overview::Snapshot::new(parts.overview_fresh_for),
            parts,
            in_flight: InFlight::default(),
        }
    }

    /// The caller an `Authorization: Bearer` token (if one was sent) stands for.
    pub async fn authenticate(&self, bearer: Option<&str>) -> Result<Arc<Principal>, AuthError> {
        auth::authenticate(&self.parts.tokens, &self.parts.token_store, bearer).await
    }

    /// What the catalog knows of `name`: from memory after the first look, so the vend path
    /// costs no round trip for it.
    pub async fn sequence(&self, name: &SequenceName) -> Result<Known, RegistryError> {
        self.parts.catalog.lookup(&self.parts.registry, name).await
    }

    /// Draws `count` values of the counter `ask.key` of `ask.family`, creating it on first use.
    pub async fn draw_counter(&self, ask: CounterAsk) -> Result<CounterOutcome, VendError> {
        self.parts.counters.draw(ask).await
    }

    /// The registry pool, for the reads and writes of the registry's own resources.
    pub fn registry(&self) -> &Registry {
        &self.parts.registry
    }

    pub fn registry_deadline(&self) -> Duration {
        self.parts.registry_deadline
    }

    /// How long a request for numbers may take, by seqvend's clock.
    pub fn vend_deadline(&self) -> Duration {
        self.parts.vender.deadline()
    }

    pub fn vend_pool(&self) -> &VendPool {
        &self.parts.vend_pool
    }

    pub fn metrics(&self) -> &Metrics {
        &self.parts.metrics
    }

    pub fn cache(&self) -> &InstanceCache {
        &self.parts.cache
    }

    pub fn snowflake(&self) -> &Snowflake {
        &self.parts.snowflake
    }

    pub fn uuids(&self) -> &UuidV7s {
        &self.parts.uuids
    }

    pub fn id_settings(&self) -> &IdSettings {
        &self.parts.id_settings
    }
}
