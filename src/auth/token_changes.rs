//! What the notification hub (one connection per instance, see
//! `service::spawn_notification_hub`) does with token changes: forget a changed token, and know whether
//! the connection still delivers. A frozen or partitioned server closes nothing, so the
//! instance pings itself through the tokens channel every half second; the store trusts what
//! it keeps only while a recent ping came back. On listening anew it forgets everything it
//! kept: changes may have gone unheard meanwhile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::db::Registry;

use super::TokenStore;
use crate::registry::TOKENS_CHANNEL;

const PING_EVERY: Duration = Duration::from_millis(500);

/// This instance's side of the tokens channel: its store, and its pings in flight (payload
/// `ping:<instance>:<n>`, and when each was sent).
pub struct TokenChanges {
    store: Arc<TokenStore>,
    instance: String,
    sent: Mutex<HashMap<u64, Instant>>,
}

impl TokenChanges {
    pub fn new(store: Arc<TokenStore>) -> Arc<Self> {
        Arc::new(Self {
            store,
            instance: uuid::Uuid::new_v4().simple().to_string(),
            sent: Mutex::new(HashMap::new()),
        })
    }

    /// The notification hub listens (again): whatever changed before may have gone unheard.
    pub fn listening(&self) {
        self.store.forget_all();
    }

    /// The notification hub lost its connection.
    pub fn lost(&self) {
        self.store.set_heard(None);
    }

    /// A notification on the tokens channel.
    pub fn heard(&self, payload: &str) {
        if let Some(ping) = payload.strip_prefix("ping:") {
            let mine = ping
                .strip_prefix(self.instance.as_str())
                .and_then(|rest| rest.strip_prefix(':'))
                .and_then(|n| n.parse::<u64>().ok());
            if let Some(n) = mine {
                let sent = self
                    .sent
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&n);
                if sent.is_some() {
                    self.store.set_heard(sent);
                }
            }
        } else if let Ok(id) = payload.parse::<i64>() {
            self.store.forget(id);
        } else {
            tracing::warn!(payload, "unreadable token change");
            self.store.forget_all();
        }
    }

    /// Pings the tokens channel every half second, for as long as the task runs.
    pub fn spawn_pinger(self: &Arc<Self>, registry: Registry) -> tokio::task::JoinHandle<()> {
        let changes = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(PING_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            for n in 0u64.. {
                tick.tick().await;
                changes.ping(&registry, n).await;
            }
        })
    }

    async fn ping(&self, registry: &Registry, n: u64) {
        {
            let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
            // Pings older than a few seconds will not be trusted anyway.
            sent.retain(|_, at| at.elapsed() < Duration::from_secs(5));
            sent.insert(n, Instant::now());
        }
        let payload = format!("ping:{}:{n}", self.instance);
        let notify = sqlx::query("SELECT pg_notify($1, $2)")
            .bind(TOKENS_CHANNEL)
            .bind(payload)
            .execute(registry);
        match tokio::time::timeout(PING_EVERY, notify).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => tracing::debug!(error = %err, "could not ping the token channel"),
            Err(_) => tracing::debug!("a token-channel ping took too long"),
        }
    }
}
