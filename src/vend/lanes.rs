//! Lanes: the coalescing every vend statement shares, whatever it draws from. Requests go to
//! a lane by their lane key; a lane runs one statement at a time and serves, in it, every
//! request that arrived while the previous one ran. With coalescing off, each request is its
//! own statement. Queues are bounded; a full queue refuses at once.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, Semaphore};

use super::VendError;
use crate::metrics::Metrics;
use crate::settings::VendSettings;

/// One kind of vend statement: what a request asks, what it gets, and the statement that
/// serves a batch of requests.
pub trait Statement: Send + Sync + 'static {
    type Ask: Send + 'static;
    type Outcome: Send + 'static;

    /// Requests with the same lane key share a lane, so they are served in the order they
    /// were submitted.
    fn lane_key(ask: &Self::Ask) -> u64;

    /// How many values the request draws (a statement draws at most `batch_max_values`).
    fn values(ask: &Self::Ask) -> u64;

    /// Serves `asks` with one statement: one outcome per ask, in the same order, durable.
    fn run<'a>(
        &'a self,
        asks: &'a [Self::Ask],
    ) -> impl Future<Output = anyhow::Result<Vec<Self::Outcome>>> + Send + 'a;
}

struct Job<S: Statement> {
    ask: S::Ask,
    reply: oneshot::Sender<Result<S::Outcome, VendError>>,
}

pub struct Lanes<S: Statement> {
    inner: Arc<Inner<S>>,
}

impl<S: Statement> Clone for Lanes<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<S: Statement> {
    statement: Arc<S>,
    metrics: Arc<Metrics>,
    settings: VendSettings,
    mode: Mode<S>,
}

enum Mode<S: Statement> {
    Coalescing {
        lanes: Vec<mpsc::Sender<Job<S>>>,
    },
    /// One statement per request; the semaphore bounds how many may wait.
    Direct {
        queue: Arc<Semaphore>,
    },
}

impl<S: Statement> Lanes<S> {
    /// Starts `lane_count` lanes (when coalescing); must be called within a Tokio runtime.
    pub fn start(
        statement: S,
        lane_count: usize,
        metrics: Arc<Metrics>,
        settings: VendSettings,
    ) -> Self {
        let statement = Arc::new(statement);
        let mode = if settings.coalesce {
            let lane_count = lane_count.max(1);
            let bound = settings.queue_bound.div_ceil(lane_count).max(1);
            let lanes = (0..lane_count)
                .map(|_| {
                    let (sender, receiver) = mpsc::channel(bound);
                    let lane = Lane {
                        statement: statement.clone(),
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
        Self {
            inner: Arc::new(Inner {
                statement,
                metrics,
                settings,
                mode,
            }),
        }
    }

    /// Queues a request now (refused at once if the queue is full); its outcome comes through
    /// the returned `Pending`.
    pub fn submit(&self, ask: S::Ask) -> Result<Pending<S::Outcome>, VendError> {
        let (reply, answer) = oneshot::channel();
        let inner = &self.inner;
        let job = Job { ask, reply };
        match &inner.mode {
            Mode::Coalescing { lanes } => {
                let lane = &lanes[lane_of(S::lane_key(&job.ask), lanes.len())];
                if lane.try_send(job).is_err() {
                    return Err(reject(&inner.metrics));
                }
            }
            Mode::Direct { queue } => {
                let Ok(permit) = queue.clone().try_acquire_owned() else {
                    return Err(reject(&inner.metrics));
                };
                let statement = inner.statement.clone();
                tokio::spawn(async move {
                    serve(&*statement, vec![job]).await;
                    drop(permit);
                });
            }
        }
        inner.metrics.vend_queue_depth.inc();
        Ok(Pending {
            answer,
            deadline: inner.settings.deadline,
            metrics: inner.metrics.clone(),
        })
    }
}

/// Counts a request refused at once because seqvend is at capacity.
pub(super) fn reject(metrics: &Metrics) -> VendError {
    metrics.vend_rejected.inc();
    VendError::AtCapacity
}

fn lane_of(key: u64, lanes: usize) -> usize {
    (key % lanes as u64) as usize
}

/// A submitted request, waiting for its statement.
pub struct Pending<O> {
    answer: oneshot::Receiver<Result<O, VendError>>,
    deadline: Duration,
    metrics: Arc<Metrics>,
}

impl<O> Pending<O> {
    /// The outcome, or 503's reason if it does not arrive within the vend deadline.
    pub async fn wait(mut self) -> Result<O, VendError> {
        match tokio::time::timeout(self.deadline, &mut self.answer).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(VendError::Internal(anyhow::anyhow!("vend lane stopped"))),
            Err(_) => Err(VendError::NoAnswerInTime),
        }
    }
}

/// A request leaves the queue when its caller stops waiting, whether it was answered, timed
/// out, or the caller went away (a dropped HTTP request drops its `Pending`).
impl<O> Drop for Pending<O> {
    fn drop(&mut self) {
        self.metrics.vend_queue_depth.dec();
    }
}

struct Lane<S: Statement> {
    statement: Arc<S>,
    settings: VendSettings,
}

impl<S: Statement> Lane<S> {
    async fn run(self, mut queue: mpsc::Receiver<Job<S>>) {
        let mut carried: Option<Job<S>> = None;
        loop {
            let first = match carried.take() {
                Some(job) => job,
                None => match queue.recv().await {
                    Some(job) => job,
                    None => return,
                },
            };
            let mut values = S::values(&first.ask);
            let mut batch = vec![first];
            while batch.len() < self.settings.batch_max_requests {
                let Ok(job) = queue.try_recv() else { break };
                values += S::values(&job.ask);
                if values > self.settings.batch_max_values {
                    carried = Some(job);
                    break;
                }
                batch.push(job);
            }
            serve(&*self.statement, batch).await;
        }
    }
}

/// Runs one statement for `jobs` and answers each. Jobs whose caller already gave up are
/// left out, so no values are drawn for nobody.
async fn serve<S: Statement>(statement: &S, mut jobs: Vec<Job<S>>) {
    jobs.retain(|job| !job.reply.is_closed());
    if jobs.is_empty() {
        return;
    }
    let (asks, replies): (Vec<S::Ask>, Vec<_>) =
        jobs.into_iter().map(|job| (job.ask, job.reply)).unzip();
    match statement.run(&asks).await {
        Ok(outcomes) => {
            for (reply, outcome) in replies.into_iter().zip(outcomes) {
                let _ = reply.send(Ok(outcome));
            }
        }
        Err(err) => {
            let answer = VendError::judge_failed_statement(&err);
            for reply in replies {
                let _ = reply.send(Err(answer()));
            }
        }
    }
}
