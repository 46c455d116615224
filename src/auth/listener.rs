//! Hears token changes as they commit (LISTEN on the tokens channel), so a revocation reaches
//! this instance within a round trip. To know the connection still delivers (a frozen or
//! partitioned server closes nothing), the listener pings itself through the same channel
//! every half second; the store trusts what it keeps only while a recent ping came back. On
//! listening again it forgets everything it kept: changes may have gone unheard meanwhile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::postgres::PgListener;
use sqlx::PgPool;

use super::TokenStore;
use crate::registry::TOKENS_CHANNEL;

const PING_EVERY: Duration = Duration::from_millis(500);

/// This instance's pings in flight: payload `ping:<instance>:<n>`, and when each was sent.
struct Pings {
    instance: String,
    sent: Mutex<HashMap<u64, Instant>>,
}

pub fn spawn(registry: PgPool, store: Arc<TokenStore>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let pings = Arc::new(Pings {
            instance: uuid::Uuid::new_v4().simple().to_string(),
            sent: Mutex::new(HashMap::new()),
        });
        // Ends with this task (dropped when it is aborted).
        let _pinger = AbortOnDrop(tokio::spawn(ping(registry.clone(), pings.clone())));
        loop {
            let lost = listen(&registry, &store, &pings).await.err();
            store.set_heard(None);
            tracing::warn!(error = ?lost, "lost the token-change notifications; reconnecting");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn ping(registry: PgPool, pings: Arc<Pings>) {
    let mut tick = tokio::time::interval(PING_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for n in 0u64.. {
        tick.tick().await;
        {
            let mut sent = pings.sent.lock().unwrap_or_else(|p| p.into_inner());
            // Pings older than a few seconds will not be trusted anyway.
            sent.retain(|_, at| at.elapsed() < Duration::from_secs(5));
            sent.insert(n, Instant::now());
        }
        let payload = format!("ping:{}:{n}", pings.instance);
        let notify = sqlx::query("SELECT pg_notify($1, $2)")
            .bind(TOKENS_CHANNEL)
            .bind(payload)
            .execute(&registry);
        match tokio::time::timeout(PING_EVERY, notify).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => tracing::debug!(error = %err, "could not ping the token channel"),
            Err(_) => tracing::debug!("a token-channel ping took too long"),
        }
    }
}

async fn listen(registry: &PgPool, store: &TokenStore, pings: &Pings) -> Result<(), sqlx::Error> {
    let mut listener = PgListener::connect_with(registry).await?;
    listener.listen(TOKENS_CHANNEL).await?;
    // Whatever changed before LISTEN took effect may have gone unheard.
    store.forget_all();
    loop {
        let Some(notification) = listener.try_recv().await? else {
            return Ok(());
        };
        let payload = notification.payload();
        if let Some(ping) = payload.strip_prefix("ping:") {
            let mine = ping
                .strip_prefix(pings.instance.as_str())
                .and_then(|rest| rest.strip_prefix(':'))
                .and_then(|n| n.parse::<u64>().ok());
            if let Some(n) = mine {
                let sent = pings
                    .sent
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&n);
                if sent.is_some() {
                    store.set_heard(sent);
                }
            }
        } else if let Ok(id) = payload.parse::<i64>() {
            store.forget(id);
        } else {
            tracing::warn!(payload, "unreadable token change");
            store.forget_all();
        }
    }
}
