//! Snowflake ids issued by this process under a worker id of its own, leased from seqvend.

mod held;
mod lease;
mod renewer;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use held::Refusal;
pub(crate) use renewer::Issuer;

use crate::client::Inner;
use crate::Error;

/// Snowflake ids made in this process, under a worker id leased with `POST /workers/lease`
/// (see [`Client::snowflake`](crate::Client::snowflake)). Cheap to clone; while any clone
/// lives, a background task renews the lease.
///
/// ```no_run
/// # async fn example() -> Result<(), seqvend_client::Error> {
/// let client = seqvend_client::Client::builder("http://127.0.0.1:8080", "vend-token").build()?;
/// let snowflakes = client.snowflake().await?;    // leases a worker id
/// let id = snowflakes.next()?;                   // no round trip, no lock
/// let batch = snowflakes.next_n(1000)?;          // ascending, all above `id`
/// assert!(batch[0] > id);
/// # Ok(()) }
/// ```
///
/// # Guarantees
/// - **Unique across holders**: ids carry the worker id, which one holder at a time leases.
///   This handle stamps only milliseconds the lease covers (`not_before_ms ..=
///   not_after_ms`); a renewal raises the bound to the service's clock plus the lease in
///   the same durable commit that extends the lease, and a later holder of the worker id
///   starts above it. So a takeover's ids are above this handle's.
/// - **Strictly increasing per worker id**: every id is claimed with a compare-and-swap on
///   the last one issued, so across all threads and clones each id is above the one before;
///   a millisecond below the last stamped is never stamped. When the layout's sequence (4,096
///   ids with the default 12 bits) runs out within a millisecond, `next` waits for the next.
/// - **Fenced by the monotonic clock**: issuing stops once 90 % of the lease has passed since
///   the last successful renewal's request left, whether or not the service is reachable;
///   the service lets another holder take the worker id only after the whole lease, counted
///   from later. Renewals go every third of the lease, so two may fail before issuing stops.
/// - **Cheap**: an id costs one lock-free pointer load, two clock reads (vDSO, no system
///   call), a few shifts and one compare-and-swap; no allocation, no lock.
///
/// # Failure modes
/// - **Clock steps back** by at most the tolerance (5 ms by default,
///   [`ClientBuilder::clock_step_tolerance`](crate::ClientBuilder::clock_step_tolerance)):
///   waited out. Further: [`Error::ClockMovedBackwards`] until the clock catches up.
/// - **Clock jumps ahead** past the lease's bound: [`Error::ClockAheadOfLease`] until the
///   next renewal raises it.
/// - **Service unreachable** for 90 % of a lease: [`Error::LeaseLapsed`]; ids resume when a
///   renewal gets through (nobody else can have taken the worker id while it answered 200).
/// - **Lease lost** (the service answers 409 `lease_lost`: it expired and was taken over):
///   the worker id is dropped at once and another leased; meanwhile [`Error::NoWorkerId`].
///   Ids under the new worker id are unique, but not ordered against the old one's.
/// - **Waiting** blocks the calling thread: at most a millisecond for a full sequence, at
///   most the tolerance for a step back. At the layout's limit (4,096,000 ids/s per worker id)
///   callers wait in turn; use more handles (worker ids) for more.
/// - **Drop**: the renewal task stops with the last handle; the worker id is not handed back
///   and frees itself when its lease expires.
#[derive(Clone)]
pub struct Snowflakes {
    issuer: Arc<Issuer>,
    _client: Arc<Inner>,
}

impl fmt::Debug for Snowflakes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snowflakes")
            .field("worker_id", &self.worker_id())
            .finish_non_exhaustive()
    }
}

impl Snowflakes {
    /// Leases a worker id and starts renewing it on the client's runtime.
    pub(crate) async fn start(client: Arc<Inner>) -> Result<Self, Error> {
        let issuer = Arc::new(Issuer::new(
            client.service.clone(),
            client.options.clock_step_tolerance,
        ));
        let renew_every = issuer.take().await?;
        let task = renewer::run(
            Arc::downgrade(&issuer),
            renew_every,
            client.options.backoff,
            issuer.stop_token(),
        );
        client.runtime.spawn(task);
        Ok(Self {
            issuer,
            _client: client,
        })
    }

    /// The worker id ids are issued under now, if any.
    pub fn worker_id(&self) -> Option<u32> {
        self.issuer.held.load().as_ref().map(|held| held.worker_id)
    }

    /// One id, above every id this handle (and its clones) issued before under the same
    /// worker id. Blocks the thread only to wait for the next millisecond, or out a small
    /// step of the clock back.
    #[inline]
    pub fn next(&self) -> Result<i64, Error> {
        let mut stale = StaleRead::default();
        loop {
            let (refusal, now_ms) = {
                let held = self.issuer.held.load();
                let held = held.as_ref().ok_or(Error::NoWorkerId)?;
                let mono_ns = self.issuer.mono_ns();
                let now_ms = now_ms();
                match held.issue_one(mono_ns, now_ms, self.issuer.tolerance_ms) {
                    Ok(id) => return Ok(id),
                    Err(refusal) => (refusal, now_ms),
                }
            };
            stale.wait_or_fail(refusal, now_ms)?;
        }
    }

    /// `count` ids, ascending, claimed a millisecond's worth at a time. Fails as a whole:
    /// on an error, the ids it had claimed are dropped (a gap, never a repeat).
    pub fn next_n(&self, count: usize) -> Result<Vec<i64>, Error> {
        let mut ids = Vec::with_capacity(count);
        let mut stale = StaleRead::default();
        while ids.len() < count {
            let (refusal, now_ms) = {
                let held = self.issuer.held.load();
                let held = held.as_ref().ok_or(Error::NoWorkerId)?;
                let mono_ns = self.issuer.mono_ns();
                let now_ms = now_ms();
                let tolerance = self.issuer.tolerance_ms;
                match held.issue_many(mono_ns, now_ms, tolerance, count, &mut ids) {
                    Ok(()) => continue,
                    Err(refusal) => (refusal, now_ms),
                }
            };
            stale.wait_or_fail(refusal, now_ms)?;
        }
        Ok(ids)
    }
}

/// Milliseconds since the Unix epoch by the wall clock.
#[inline]
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as i64)
}

/// Whether a clock reading was already found behind the last id issued. The wall clock is
/// read before the last id is loaded, so a thread descheduled between the two compares a
/// stale reading with an id another thread stamped later, and sees a step back that never
/// happened. The first time, the clock is read again; a step back seen twice is real.
#[derive(Default)]
struct StaleRead {
    retried: bool,
}

impl StaleRead {
    #[cold]
    fn wait_or_fail(&mut self, refusal: Refusal, now_ms: i64) -> Result<(), Error> {
        if let Refusal::Fail(Error::ClockMovedBackwards { .. }) = refusal {
            if !std::mem::replace(&mut self.retried, true) {
                return Ok(());
            }
        }
        wait_or_fail(refusal, now_ms)
    }
}

#[cold]
fn wait_or_fail(refusal: Refusal, now_ms: i64) -> Result<(), Error> {
    match refusal {
        Refusal::Fail(error) => Err(error),
        // The next millisecond is near: yielding wakes closer to it than a sleep would.
        Refusal::Wait { until_ms } if until_ms - now_ms <= 1 => {
            std::thread::yield_now();
            Ok(())
        }
        Refusal::Wait { until_ms } => {
            let ms = (until_ms - now_ms - 1) as u64;
            std::thread::sleep(Duration::from_millis(ms));
            Ok(())
        }
    }
}
