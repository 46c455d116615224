//! The vend pool: deadpool over connections made by `Connector`, each carrying what its
//! connection task saw that the statement running on it must know: whether a commit's wait
//! for the synchronous standby was cancelled. PostgreSQL then commits locally and says so
//! only in a WARNING, which tokio-postgres hands to the connection task, not to the query.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use deadpool::managed::{self, Metrics, RecycleError, RecycleResult};
use deadpool_postgres::ClientWrapper;

use super::connect::Connector;

pub type VendPool = managed::Pool<VendManager>;
pub type VendConnection = managed::Object<VendManager>;

/// Set by a connection's task when PostgreSQL reports that a commit on it stopped waiting for
/// the synchronous standby; taken by the statement that ran the commit.
#[derive(Clone, Default)]
pub struct UnconfirmedCommit(Arc<AtomicBool>);

impl UnconfirmedCommit {
    /// The WARNING PostgreSQL sends (`syncrep.c`) when the wait is cancelled.
    const MESSAGE: &'static str = "canceling wait for synchronous replication";

    pub fn observe(&self, notice: &tokio_postgres::error::DbError) {
        if notice.message().starts_with(Self::MESSAGE) {
            tracing::warn!(
                "a commit was not confirmed by the synchronous standby: {}",
                notice.message()
            );
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// True once per cancelled wait. The notice arrives before the statement's answer and
    /// the connection task handles it first, so a statement that has its answer sees it here.
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}

pub struct VendClient {
    client: ClientWrapper,
    unconfirmed: UnconfirmedCommit,
}

impl VendClient {
    /// Whether the last commit on this connection went unconfirmed by the synchronous standby.
    pub fn commit_unconfirmed(&self) -> bool {
        self.unconfirmed.take()
    }
}

impl std::fmt::Debug for VendClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VendClient").finish_non_exhaustive()
    }
}

impl Deref for VendClient {
    type Target = ClientWrapper;

    fn deref(&self) -> &ClientWrapper {
        &self.client
    }
}

pub struct VendManager {
    connector: Connector,
}

impl std::fmt::Debug for VendManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VendManager").finish_non_exhaustive()
    }
}

impl VendManager {
    pub fn new(connector: Connector) -> Self {
        Self { connector }
    }
}

impl managed::Manager for VendManager {
    type Type = VendClient;
    type Error = tokio_postgres::Error;

    async fn create(&self) -> Result<VendClient, tokio_postgres::Error> {
        let (client, task, unconfirmed) = self.connector.connect_primary().await?;
        Ok(VendClient {
            client: ClientWrapper::new(client, task),
            unconfirmed,
        })
    }

    async fn recycle(
        &self,
        client: &mut VendClient,
        _: &Metrics,
    ) -> RecycleResult<tokio_postgres::Error> {
        if client.is_closed() {
            return Err(RecycleError::message("the connection is closed"));
        }
        Ok(())
    }
}

/// Closes a vend connection instead of returning it to the pool: for a connection whose
/// statement was abandoned (its client-side deadline passed). It may still be waiting for that
/// statement's answer, and the next statement sent on it would wait behind it.
pub fn discard(client: VendConnection) {
    // Taken out of the pool, the connection's task is aborted when it drops, closing the socket.
    drop(managed::Object::take(client));
}
