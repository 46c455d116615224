//! A sequence's refill task: the only place its leases are requested, one at a time, so
//! blocks are queued in the order the service vended them. It leases until the refill rule
//! is satisfied, retrying transient failures with full-jitter backoff, a bounded number of
//! attempts per round; the backoff keeps growing across rounds until a lease succeeds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;
use reqwest::Url;
use tokio_util::sync::CancellationToken;

use crate::metrics::Counters;
use crate::service::Service;
use crate::shared::Shared;

pub(crate) async fn run(shared: Arc<Shared>, service: Service, url: Url, stop: CancellationToken) {
    stop.run_until_cancelled(refill_forever(&shared, &service, &url))
        .await;
}

async fn refill_forever(shared: &Shared, service: &Service, url: &Url) {
    let options = &shared.options;
    let mut rng = StdRng::from_entropy();
    let mut failures = 0u32;
    let mut retry_after: Option<Duration> = None;
    loop {
        shared.wake.notified().await;
        let mut attempts = 0;
        while let Some(count) = shared.next_lease(Instant::now()) {
            if failures > 0 {
                let delay = options.backoff.delay(failures - 1, retry_after, &mut rng);
                tokio::time::sleep(delay).await;
            }
            Counters::bump(&shared.counters.service_calls, 1);
            let sent = Instant::now();
            match service.lease(url, &shared.name, count).await {
                Ok(lease) => {
                    failures = 0;
                    shared.accept(lease, sent);
                }
                Err(error) => {
                    Counters::bump(&shared.counters.failed_calls, 1);
                    if shared.refused_as_too_large(count, &error) {
                        continue; // asked again at once, for the service's limit
                    }
                    attempts += 1;
                    let transient = error.is_transient();
                    // A definite answer is repeated for the quiet period instead of retried.
                    failures = if transient {
                        failures.saturating_add(1)
                    } else {
                        0
                    };
                    retry_after = error.retry_after();
                    shared.fail(error, Instant::now());
                    if !transient || attempts >= options.attempts {
                        break;
                    }
                }
            }
        }
    }
}
