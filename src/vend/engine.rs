//! The sequences' vend path: requests routed by sequence name to lanes (see `lanes`), and
//! leases drawn with statements of their own.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use crate::db::VendPool as Pool;
use tokio::sync::Semaphore;

use super::lanes::{self, Lanes, Statement};
use super::lease::{self, Holder, LeaseAsk, Leased};
use super::statement::{self, Ask, Outcome};
use super::VendError;
use crate::domain::SequenceName;
use crate::idempotency::IdempotencyKey;
use crate::metrics::Metrics;
use crate::settings::VendSettings;

/// A lease statement running on its own task (`Vender::start_lease`).
pub type LeaseStatement = tokio::task::JoinHandle<anyhow::Result<Leased>>;

/// How waiting for a started lease ended.
pub enum LeaseWait {
    Answered(Result<Leased, VendError>),
    /// The vend deadline passed: the statement still runs and may yet grant its lease.
    GaveUp(LeaseStatement),
}

/// Draws from sequences: `seqvend.vend`, one statement per batch.
struct SequenceStatement {
    pool: Pool,
    metrics: Arc<Metrics>,
    deadline: Duration,
    key_ttl: Duration,
}

struct SequenceAsk {
    name: SequenceName,
    count: u32,
    key: Option<IdempotencyKey>,
}

impl Statement for SequenceStatement {
    type Ask = SequenceAsk;
    type Outcome = Outcome;

    /// By sequence name: one sequence's requests are served in order.
    fn lane_key(ask: &SequenceAsk) -> u64 {
        let mut hasher = DefaultHasher::new();
        ask.name.hash(&mut hasher);
        hasher.finish()
    }

    fn values(ask: &SequenceAsk) -> u64 {
        u64::from(ask.count)
    }

    async fn run(&self, asks: &[SequenceAsk]) -> anyhow::Result<Vec<Outcome>> {
        let asks: Vec<Ask<'_>> = asks
            .iter()
            .map(|a| Ask {
                name: &a.name,
                count: a.count,
                key: a.key.as_ref(),
            })
            .collect();
        statement::vend(
            &self.pool,
            &self.metrics,
            &asks,
            self.deadline,
            self.key_ttl,
        )
        .await
    }
}

/// A sequence request waiting for its statement.
pub type Pending = lanes::Pending<Outcome>;

#[derive(Clone)]
pub struct Vender {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    metrics: Arc<Metrics>,
    settings: VendSettings,
    lanes: Lanes<SequenceStatement>,
    /// Bounds the lease statements waiting for a connection, as `queue_bound` does vends.
    leases: Arc<Semaphore>,
}

impl Vender {
    /// Starts the lanes (when coalescing); must be called within a Tokio runtime.
    pub fn start(pool: Pool, metrics: Arc<Metrics>, settings: VendSettings) -> Self {
        let statement = SequenceStatement {
            pool: pool.clone(),
            metrics: metrics.clone(),
            deadline: settings.statement_deadline,
            key_ttl: settings.key_ttl,
        };
        let lane_count = pool.status().max_size;
        let lanes = Lanes::start(statement, lane_count, metrics.clone(), settings.clone());
        let leases = Arc::new(Semaphore::new(settings.queue_bound));
        Self {
            inner: Arc::new(Inner {
                pool,
                metrics,
                settings,
                lanes,
                leases,
            }),
        }
    }

    /// How long a request may wait for its values, from its arrival.
    pub fn deadline(&self) -> Duration {
        self.inner.settings.deadline
    }

    /// Draws `count` values of `name` as one lease for `holder`, lasting `ttl`. The statement
    /// runs on a task of its own, so a caller that gives up never cancels it half-way; its
    /// values are then never handed out.
    pub async fn lease(
        &self,
        name: SequenceName,
        count: u32,
        holder: Holder,
        ttl: Duration,
        key: Option<IdempotencyKey>,
    ) -> Result<Leased, VendError> {
        let statement = self.start_lease(name, count, holder, ttl, key)?;
        match self.await_lease(statement).await {
            LeaseWait::Answered(leased) => leased,
            LeaseWait::GaveUp(_) => Err(VendError::NoAnswerInTime),
        }
    }

    /// `lease`'s statement, started on its own task (refused at once if too many run).
    pub fn start_lease(
        &self,
        name: SequenceName,
        count: u32,
        holder: Holder,
        ttl: Duration,
        key: Option<IdempotencyKey>,
    ) -> Result<LeaseStatement, VendError> {
        let inner = &self.inner;
        let Ok(permit) = inner.leases.clone().try_acquire_owned() else {
            return Err(lanes::reject(&inner.metrics));
        };
        let (pool, metrics) = (inner.pool.clone(), inner.metrics.clone());
        let (deadline, key_ttl) = (inner.settings.statement_deadline, inner.settings.key_ttl);
        Ok(tokio::spawn(async move {
            let ask = LeaseAsk {
                name: &name,
                count,
                holder: &holder,
                ttl,
                key: key.as_ref().map(|key| (key, key_ttl)),
            };
            let leased = lease::lease(&pool, &metrics, ask, deadline).await;
            drop(permit);
            leased
        }))
    }

    /// A started lease's answer, waited for at most the vend deadline.
    pub async fn await_lease(&self, mut statement: LeaseStatement) -> LeaseWait {
        let answered =
            match tokio::time::timeout(self.inner.settings.deadline, &mut statement).await {
                Ok(answered) => answered,
                Err(_) => return LeaseWait::GaveUp(statement),
            };
        LeaseWait::Answered(match answered {
            Ok(Ok(leased)) => Ok(leased),
            Ok(Err(err)) => Err(VendError::judge_failed_statement(&err)()),
            Err(_) => Err(VendError::Internal(anyhow::anyhow!("lease task stopped"))),
        })
    }

    /// Draws `count` values from `name`; refused if the queue is full or the values do not
    /// arrive within the vend deadline.
    pub async fn vend(&self, name: SequenceName, count: u32) -> Result<Outcome, VendError> {
        self.vend_keyed(name, count, None).await
    }

    /// `vend`, answered from the stored answer if `key` has one (else storing this one).
    pub async fn vend_keyed(
        &self,
        name: SequenceName,
        count: u32,
        key: Option<IdempotencyKey>,
    ) -> Result<Outcome, VendError> {
        self.submit_keyed(name, count, key)?.wait().await
    }

    /// Queues a request now (refused at once if the queue is full); its values come through the
    /// returned `Pending`. Requests to one sequence are served in the order they were submitted.
    pub fn submit(&self, name: SequenceName, count: u32) -> Result<Pending, VendError> {
        self.submit_keyed(name, count, None)
    }

    /// `submit`, with the idempotency key the request was sent with.
    pub fn submit_keyed(
        &self,
        name: SequenceName,
        count: u32,
        key: Option<IdempotencyKey>,
    ) -> Result<Pending, VendError> {
        self.inner.lanes.submit(SequenceAsk { name, count, key })
    }
}
