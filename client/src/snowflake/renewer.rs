//! The background task that keeps a [`Snowflakes`](crate::Snowflakes) handle's worker id:
//! renews the lease every third of its length, and when the service answers that it was lost
//! (taken over after it expired), drops it and leases another at once. Failures are retried
//! with full-jitter backoff; nothing here has to succeed for issuing to stop in time, which
//! the monotonic deadline in `Held` sees to. It holds the issuer weakly, so dropping the last
//! handle ends it.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use rand::rngs::StdRng;
use rand::SeedableRng;
use tokio_util::sync::CancellationToken;

use super::held::Held;
use super::lease;
use crate::backoff::Backoff;
use crate::service::Service;
use crate::Error;

/// What the handles and the renewer share.
pub(crate) struct Issuer {
    pub held: ArcSwapOption<Held>,
    /// The monotonic clock's zero for `Held`'s deadlines.
    pub origin: Instant,
    pub tolerance_ms: i64,
    service: Service,
    stop: CancellationToken,
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Issuer {
    pub fn new(service: Service, tolerance: Duration) -> Self {
        Self {
            held: ArcSwapOption::empty(),
            origin: Instant::now(),
            tolerance_ms: i64::try_from(tolerance.as_millis()).unwrap_or(i64::MAX),
            service,
            stop: CancellationToken::new(),
        }
    }

    /// Nanoseconds of the monotonic clock since `origin`.
    #[inline]
    pub fn mono_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    /// Where issuing under a lease stops: 90 % of its length after its request left. The
    /// service counted it from later, so the holder stops first; the tenth covers the two
    /// clocks running at slightly different rates.
    fn deadline(&self, sent: Instant, ttl: Duration) -> u64 {
        (sent.duration_since(self.origin) + ttl - ttl / 10).as_nanos() as u64
    }

    /// Renews the lease held, or takes one; on success, how long until the next renewal.
    async fn keep(&self) -> Result<Duration, Error> {
        let Some(held) = self.held.load_full() else {
            return self.take().await;
        };
        let sent = Instant::now();
        match lease::renew(&self.service, held.worker_id, &held.holder).await? {
            Some(lease) => {
                held.extend(lease.not_after_ms, self.deadline(sent, lease.ttl));
                Ok(lease.ttl / 3)
            }
            None => {
                self.held.store(None);
                self.take().await
            }
        }
    }

    /// Takes a worker id (a new holder: the last id issued under the old one is forgotten).
    pub async fn take(&self) -> Result<Duration, Error> {
        let sent = Instant::now();
        let lease = lease::take(&self.service).await?;
        let renew_every = lease.ttl / 3;
        let deadline = self.deadline(sent, lease.ttl);
        self.held.store(Some(Arc::new(Held::new(lease, deadline))));
        Ok(renew_every)
    }

    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }
}

pub(crate) async fn run(
    issuer: Weak<Issuer>,
    first_wait: Duration,
    backoff: Backoff,
    stop: CancellationToken,
) {
    stop.run_until_cancelled(keep_forever(issuer, first_wait, backoff))
        .await;
}

async fn keep_forever(issuer: Weak<Issuer>, mut wait: Duration, backoff: Backoff) {
    let mut rng = StdRng::from_entropy();
    let mut failures = 0u32;
    let mut renew_every = wait;
    loop {
        tokio::time::sleep(wait).await;
        let Some(issuer) = issuer.upgrade() else {
            return;
        };
        match issuer.keep().await {
            Ok(every) => {
                (failures, renew_every, wait) = (0, every, every);
            }
            Err(error) => {
                // Several tries within a lease, however long the backoff would grow.
                let delay = backoff.delay(failures, error.retry_after(), &mut rng);
                failures = failures.saturating_add(1);
                wait = delay.min(renew_every / 3).max(Duration::from_millis(1));
            }
        }
    }
}
