//! The handle on one sequence that applications keep for their hot loops.

use std::fmt;
use std::sync::Arc;

use crate::client::Inner;
use crate::clock::Now;
use crate::shared::Shared;
use crate::{Error, Metrics, Taker};

/// One sequence of a [`Client`](crate::Client): cheap to clone, and while any clone lives
/// the client's background work goes on.
///
/// Values come from leased blocks, in the order the service vended them; a value is never
/// handed out twice by one client, and never after its lease's deadline: each take checks
/// the deadline (a tenth short of the lease's ttl, counted from before the request left,
/// less the expiry margin) itself, so a runtime starved by a hot loop cannot stretch it.
/// Taking a value from the cache is one coarse clock read (the precise clock only in the last
/// second before the deadline), one atomic increment and one lock-free pointer load: no
/// lock, no allocation, no system call.
///
/// ```no_run
/// # async fn example() -> Result<(), seqvend_client::Error> {
/// let client = seqvend_client::Client::builder("http://127.0.0.1:8080", "vend-token").build()?;
/// let orders = client.sequence("orders");
/// let id = orders.next().await?;                 // waits only if nothing is cached
/// let batch = orders.next_n(100).await?;         // 100 values in vend order
/// assert!(batch.iter().all(|value| *value > id)); // for an ascending sequence
/// match orders.try_next() {                      // never waits
///     Ok(value) => println!("{value}"),
///     Err(error) => eprintln!("nothing cached: {error}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Sequence {
    shared: Arc<Shared>,
    _client: Arc<Inner>,
}

impl Sequence {
    pub(crate) fn new(shared: Arc<Shared>, client: Arc<Inner>) -> Self {
        Self {
            shared,
            _client: client,
        }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// A [`Taker`] of this sequence: the same values, taken through `&mut self` without the
    /// shared pointer load, for a caller that holds it under a lock it takes anyway.
    pub fn taker(&self) -> Taker {
        Taker::new(self.clone())
    }

    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// A cached value, or at once an error: [`Error::Empty`] while a refill is under way, or
    /// the last refill's failure (e.g. [`Error::Exhausted`]). Never blocks; safe to call
    /// outside any runtime.
    #[inline]
    pub fn try_next(&self) -> Result<i64, Error> {
        self.shared.try_next()
    }

    /// A value: from the cache, or, only when it is empty, from a refill awaited for at most
    /// the wait timeout ([`Error::Timeout`], or the refill's failure).
    pub async fn next(&self) -> Result<i64, Error> {
        if let Some(value) = self.shared.cache.take_one(Now::Live) {
            return Ok(value);
        }
        let mut values = Vec::with_capacity(1);
        self.shared.fill(1, &mut values).await?;
        Ok(values[0])
    }

    /// `count` values in vend order (several blocks' worth if needed), or none: if a refill
    /// fails half-way, the values already taken are discarded, never handed out later.
    pub async fn next_n(&self, count: usize) -> Result<Vec<i64>, Error> {
        let mut values = Vec::with_capacity(count);
        if self
            .shared
            .cache
            .take_into(count as u64, &mut values, Now::Live)
            < count as u64
        {
            self.shared.fill(count, &mut values).await?;
        }
        Ok(values)
    }

    /// Leases until at least `values` are cached, beyond what the refill rule would hold:
    /// to warm the cache before traffic starts. Fails on a refusal of the service, or when
    /// no lease succeeds within the wait timeout.
    pub async fn prefetch(&self, values: u64) -> Result<(), Error> {
        self.shared.prefetch(values).await
    }

    /// This sequence's counts (the client's are the sum over its sequences).
    pub fn metrics(&self) -> Metrics {
        self.shared.metrics()
    }
}

impl fmt::Debug for Sequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sequence")
            .field("name", &self.shared.name)
            .finish_non_exhaustive()
    }
}
