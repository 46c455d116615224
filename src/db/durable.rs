//! Transactions of the registry pool whose commit must be durable before their effect is acted
//! on: a lease row, a renewal, a worker id. Durable means flushed here *and* confirmed by the
//! synchronous standby, if there is one — the node Patroni (or a person) promotes next.
//!
//! Two things stand in the way. `synchronous_commit = on` is a startup option of every seqvend
//! session (see `session_settings`), but a pooler may drop startup options and the server's or
//! role's default may be off, so each transaction sets it for itself. And when a commit's wait
//! for the standby is cancelled (a statement timeout, `pg_cancel_backend`, a primary cut off
//! from its standby), PostgreSQL commits locally and says so only in a WARNING: the commit
//! reports success. sqlx hands notices to `tracing` alone (target `sqlx::postgres::notice`),
//! so the commit runs under a dispatcher of this module's that catches that warning, and a
//! commit it caught is answered as an error. The vend pool does the same from its connections'
//! notices (`vend_pool::UnconfirmedCommit`).

use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::sync::LazyLock;

use super::registry_access::{Registry, RegistryTx};
use tracing::instrument::WithSubscriber;
use tracing::subscriber::Interest;
use tracing::{Dispatch, Event, Metadata};

/// The WARNING PostgreSQL sends (`syncrep.c`) when a commit's wait is cancelled.
const CANCELLED_SYNC_WAIT: &str = "canceling wait for synchronous replication";

/// A transaction whose commit waits for its WAL flush (and a synchronous standby), whatever
/// the session, role or server default says, and fails if that wait was cancelled.
pub struct DurableTransaction(RegistryTx);

/// Begins a `DurableTransaction`; queries run on `&mut *tx` as on a `RegistryTx`.
pub async fn begin_durable(registry: &Registry) -> sqlx::Result<DurableTransaction> {
    let mut tx = registry.begin().await?;
    sqlx::query_scalar!("SELECT set_config('synchronous_commit', 'on', true)")
        .fetch_one(&mut tx)
        .await?;
    Ok(DurableTransaction(tx))
}

impl DurableTransaction {
    /// Commits; an error (judged unavailable) if the synchronous standby did not confirm the
    /// commit. The transaction's effects then exist on this server only and must not be acted
    /// on: a failover may lose them.
    pub async fn commit(self) -> sqlx::Result<()> {
        let unconfirmed = UNCONFIRMED
            .scope(Cell::new(false), async {
                let committed = self.0.commit().with_subscriber(CATCHER.clone()).await;
                committed.map(|()| UNCONFIRMED.with(Cell::get))
            })
            .await?;
        if unconfirmed {
            tracing::warn!("a registry commit was not confirmed by the synchronous standby");
            return Err(sqlx::Error::Io(std::io::Error::other(
                "the commit's wait for the synchronous standby was cancelled: committed on this \
                 server only, not acted on",
            )));
        }
        Ok(())
    }
}

impl Deref for DurableTransaction {
    type Target = RegistryTx;

    fn deref(&self) -> &RegistryTx {
        &self.0
    }
}

impl DerefMut for DurableTransaction {
    fn deref_mut(&mut self) -> &mut RegistryTx {
        &mut self.0
    }
}

tokio::task_local! {
    /// Set by `NoticeCatcher` when the commit running in this task had its wait cancelled.
    static UNCONFIRMED: Cell<bool>;
}

/// One dispatcher for every durable commit: made once, because each new dispatcher makes
/// `tracing` recompute the interest of every call site in the process.
///
/// A second one is registered beside it and kept for good. While only one dispatcher exists
/// (a process with no global subscriber, such as a test binary), `tracing-core` settles a call
/// site's interest, and the global level ceiling, by asking whichever dispatcher is the current
/// thread's default when the call site is first reached: sqlx's WARNING call site, first reached
/// by a warning outside any durable commit, was then cached as "never" for the whole process,
/// and every later cancelled sync-rep wait went unseen (a commit answered as confirmed). With
/// two registered, every call site's interest is the union over all live dispatchers, this
/// catcher's included, whichever thread first reaches it.
static CATCHER: LazyLock<Dispatch> = LazyLock::new(|| {
    let catcher = Dispatch::new(NoticeCatcher);
    LazyLock::force(&ALWAYS_ASKED);
    catcher
});

/// The catcher's second registration (see `CATCHER`); never made the default anywhere.
static ALWAYS_ASKED: LazyLock<Dispatch> = LazyLock::new(|| Dispatch::new(NoticeCatcher));

/// The dispatcher a durable commit runs under: it listens to sqlx's notices only.
struct NoticeCatcher;

const NOTICE_TARGET: &str = "sqlx::postgres::notice";

impl tracing::Subscriber for NoticeCatcher {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if self.enabled(metadata) {
            Interest::sometimes()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == NOTICE_TARGET && *metadata.level() == tracing::Level::WARN
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::WARN)
    }

    fn event(&self, event: &Event<'_>) {
        let mut message = Message::default();
        event.record(&mut message);
        if message.0.starts_with(CANCELLED_SYNC_WAIT) {
            let _ = UNCONFIRMED.try_with(|flag| flag.set(true));
        }
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The `message` field of a notice event.
#[derive(Default)]
struct Message(String);

impl tracing::field::Visit for Message {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.0 = value.to_owned();
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}
