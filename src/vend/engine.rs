//! Routing vend requests to statements: lanes when coalescing, one statement per request
//! otherwise. Queues are bounded; a full queue refuses at once.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use crate::db::VendPool as Pool;
use tokio::sync::{mpsc, oneshot, Semaphore};

use super::lease::{self, Holder, LeaseAsk, Leased};
use super::statement::{self, Ask, Outcome};
use super::VendError;
use crate::domain::SequenceName;
use crate::idempotency::IdempotencyKey;
use crate::metrics::Metrics;
use crate::settings::VendSettings;

type Reply = oneshot::Sender<Result<Outcome, VendError>>;

struct Job {
    name: SequenceName,
    count: u32,
    key: Option<IdempotencyKey>,
    reply: Reply,
}

#[derive(Clone)]
pub struct Vender {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    metrics: Arc<Metrics>,
    settings: VendSettings,
    mode: Mode,
    /// Bounds the lease statements waiting for a connection, as `queue_bound` does vends.
    leases: Arc<Semaphore>,
}

enum Mode {
    Coalescing {
        lanes: Vec<mpsc::Sender<Job>>,
    },
    /// One statement per request; the semaphore bounds how many may wait.
    Direct {
        queue: Arc<Semaphore>,
    },
}

impl Vender {
    /// Starts the lanes (when coalescing); must be called within a Tokio runtime.
    pub fn start(pool: Pool, metrics: Arc<Metrics>, settings: VendSettings) -> Self {
        let mode = if settings.coalesce {
            let lane_count = pool.status().max_size.max(1);
            let bound = settings.queue_bound.div_ceil(lane_count).max(1);
            let lanes = (0..lane_count)
                .map(|_| {
                    let (sender, receiver) = mpsc::channel(bound);
                    let lane = Lane {
                        pool: pool.clone(),
                        metrics: metrics.clone(),
                        settings: settings.clone(),
                    };
                    tokio::spawn(lane.run(receiver));
                    sender
                })
                .collect();
            Mode::Coalescing { lanes }
        } else {
            Mode::Direct {
                queue: Arc::new(Semaphore::new(settings.queue_bound)),
            }
        };
        let leases = Arc::new(Semaphore::new(settings.queue_bound));
        Self {
            inner: Arc::new(Inner {
                pool,
                metrics,
                settings,
                mode,
                leases,
            }),
        }
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
        let inner = &self.inner;
        let Ok(permit) = inner.leases.clone().try_acquire_owned() else {
            return Err(inner.reject());
        };
        let (pool, metrics) = (inner.pool.clone(), inner.metrics.clone());
        let (deadline, key_ttl) = (inner.settings.statement_deadline, inner.settings.key_ttl);
        let statement = tokio::spawn(async move {
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
        });
        match tokio::time::timeout(inner.settings.deadline, statement).await {
            Ok(Ok(Ok(leased))) => Ok(leased),
            Ok(Ok(Err(err))) => Err(VendError::judge_failed_statement(&err)()),
            Ok(Err(_)) => Err(VendError::Internal(anyhow::anyhow!("lease task stopped"))),
            Err(_) => Err(VendError::NoAnswerInTime),
        }
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
        let (reply, answer) = oneshot::channel();
        let job = Job {
            name,
            count,
            key,
            reply,
        };
        let inner = &self.inner;
        match &inner.mode {
            Mode::Coalescing { lanes } => {
                let lane = &lanes[lane_of(&job.name, lanes.len())];
                if lane.try_send(job).is_err() {
                    return Err(inner.reject());
                }
            }
            Mode::Direct { queue } => {
                let Ok(permit) = queue.clone().try_acquire_owned() else {
                    return Err(inner.reject());
                };
                let (pool, metrics) = (inner.pool.clone(), inner.metrics.clone());
                let settings = inner.settings.clone();
                tokio::spawn(async move {
                    serve(&pool, &metrics, vec![job], &settings).await;
                    drop(permit);
                });
            }
        }
        inner.metrics.vend_queue_depth.inc();
        Ok(Pending {
            answer,
            inner: self.inner.clone(),
        })
    }
}

/// A submitted vend request, waiting for its statement.
pub struct Pending {
    answer: oneshot::Receiver<Result<Outcome, VendError>>,
    inner: Arc<Inner>,
}

impl Pending {
    pub async fn wait(mut self) -> Result<Outcome, VendError> {
        let deadline = self.inner.settings.deadline;
        match tokio::time::timeout(deadline, &mut self.answer).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(VendError::Internal(anyhow::anyhow!("vend lane stopped"))),
            Err(_) => Err(VendError::NoAnswerInTime),
        }
    }
}

/// A request leaves the queue when its caller stops waiting, whether it was answered, timed
/// out, or the caller went away (a dropped HTTP request drops its `Pending`).
impl Drop for Pending {
    fn drop(&mut self) {
        self.inner.metrics.vend_queue_depth.dec();
    }
}

impl Inner {
    fn reject(&self) -> VendError {
        self.metrics.vend_rejected.inc();
        VendError::AtCapacity
    }
}

fn lane_of(name: &SequenceName, lanes: usize) -> usize {
    let mut hasher = DefaultHasher::new();
    name.hash(&mut hasher);
    (hasher.finish() % lanes as u64) as usize
}

struct Lane {
    pool: Pool,
    metrics: Arc<Metrics>,
    settings: VendSettings,
}

impl Lane {
    async fn run(self, mut queue: mpsc::Receiver<Job>) {
        let mut carried: Option<Job> = None;
        loop {
            let first = match carried.take() {
                Some(job) => job,
                None => match queue.recv().await {
                    Some(job) => job,
                    None => return,
                },
            };
            let mut values = u64::from(first.count);
            let mut batch = vec![first];
            while batch.len() < self.settings.batch_max_requests {
                let Ok(job) = queue.try_recv() else { break };
                values += u64::from(job.count);
                if values > self.settings.batch_max_values {
                    carried = Some(job);
                    break;
                }
                batch.push(job);
            }
            serve(&self.pool, &self.metrics, batch, &self.settings).await;
        }
    }
}

/// Runs one statement for `jobs` and answers each. Jobs whose caller already gave up are
/// left out, so no values are drawn for nobody.
async fn serve(pool: &Pool, metrics: &Metrics, mut jobs: Vec<Job>, settings: &VendSettings) {
    jobs.retain(|job| !job.reply.is_closed());
    if jobs.is_empty() {
        return;
    }
    let asks: Vec<Ask<'_>> = jobs
        .iter()
        .map(|j| Ask {
            name: &j.name,
            count: j.count,
            key: j.key.as_ref(),
        })
        .collect();
    let (deadline, key_ttl) = (settings.statement_deadline, settings.key_ttl);
    match statement::vend(pool, metrics, &asks, deadline, key_ttl).await {
        Ok(outcomes) => {
            for (job, outcome) in jobs.into_iter().zip(outcomes) {
                let _ = job.reply.send(Ok(outcome));
            }
        }
        Err(err) => {
            let answer = VendError::judge_failed_statement(&err);
            for job in jobs {
                let _ = job.reply.send(Err(answer()));
            }
        }
    }
}
