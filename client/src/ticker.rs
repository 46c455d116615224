//! The client's ticker: every tick, for each sequence, closes blocks near their deadline,
//! samples use, and wakes the refill task if the cache is low. It holds the client weakly,
//! so dropping the last handle ends it.

use std::sync::Weak;
use std::time::{Duration, Instant};

use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use crate::client::Inner;

pub(crate) async fn run(client: Weak<Inner>, tick: Duration, stop: CancellationToken) {
    let mut ticks = tokio::time::interval(tick);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    while stop.run_until_cancelled(ticks.tick()).await.is_some() {
        let Some(client) = client.upgrade() else {
            return;
        };
        let now = Instant::now();
        for shared in client.sequences().values() {
            shared.tick(now);
        }
    }
}
