//! The notification hub: hears the registry's changes as they commit, on one connection per
//! instance (LISTEN on the cache channel and the tokens channel), and fans them out to the
//! instance cache, the catalog and the token store: a PATCH reaches this instance within a round trip, a
//! retirement's DELETE need not wait for lease expiries, and a revoked token is forgotten at
//! once (see `auth::TokenChanges`). A lost connection is re-opened, and everything that may
//! have been missed meanwhile is re-read; the keeper re-reads the policies periodically too.

use std::sync::Arc;
use std::time::Duration;

use crate::db::Registry;

use crate::auth::TokenChanges;
use crate::cache::{Closed, InstanceCache};
use crate::domain::SequenceName;
use crate::registry::{Catalog, Change, ChangeKind, Known, CHANGES_CHANNEL, TOKENS_CHANNEL};

/// Starts the hub; it reconnects for as long as the task runs.
pub fn spawn(
    registry: Registry,
    cache: InstanceCache,
    catalog: Arc<Catalog>,
    tokens: Arc<TokenChanges>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let lost = listen(&registry, &cache, &catalog, &tokens).await.err();
            tokens.lost();
            tracing::warn!(error = ?lost, "lost the registry's notifications; reconnecting");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
}

async fn listen(
    registry: &Registry,
    cache: &InstanceCache,
    catalog: &Catalog,
    tokens: &TokenChanges,
) -> Result<(), sqlx::Error> {
    let mut listener = registry.listener().await?;
    listener
        .listen_all([CHANGES_CHANNEL, TOKENS_CHANNEL])
        .await?;
    tokens.listening();
    catch_up(cache, catalog).await;
    loop {
        match listener.try_recv().await? {
            Some(notification) if notification.channel() == TOKENS_CHANNEL => {
                tokens.heard(notification.payload())
            }
            Some(notification) => match serde_json::from_str::<Change>(notification.payload()) {
                Ok(change) => apply(registry, cache, catalog, change).await,
                Err(err) => {
                    tracing::warn!(error = %err, payload = notification.payload(), "unreadable cache change")
                }
            },
            // The connection was lost. Catching up now would forget the catalog while the
            // database may be unreachable, and cached sequences could no longer be served
            // from memory: open a new listener first, and catch up once it listens.
            None => return Ok(()),
        }
    }
}

async fn catch_up(cache: &InstanceCache, catalog: &Catalog) {
    catalog.forget_all();
    if let Err(err) = cache.resync().await {
        tracing::debug!(error = %err, "could not re-read the cache policies");
    }
}

async fn apply(registry: &Registry, cache: &InstanceCache, catalog: &Catalog, change: Change) {
    catalog.forget(&change.sequence);
    match change.kind {
        ChangeKind::Retired => cache.evict(&change.sequence, Closed::Retired).await,
        ChangeKind::Policy => {
            let Ok(name) = SequenceName::parse(&change.sequence) else {
                return;
            };
            match catalog.lookup(registry, &name).await {
                Ok(Known::Sequence(entry)) if !entry.cache.is_strict() => {
                    cache.update_policy(name.as_str(), entry.cache)
                }
                Ok(_) => cache.evict(name.as_str(), Closed::Replaced).await,
                // The keeper's next resync applies it.
                Err(err) => tracing::debug!(error = %err, "could not read a changed policy"),
            }
        }
    }
}
