//! The vend pool: deadpool over connections made by `Connector`, each carrying what its
//! connection task saw that the statement running on it must know: whether a commit's wait
//! for the synchronous standby was cancelled. PostgreSQL then commits locally and says so
//! only in a WARNING, which tokio-postgres hands to the connection task, not to the query.
//! Also how a statement runs on a connection: as a cached named statement straight to
//! PostgreSQL, or, behind a pooler in transaction mode, as an unnamed one in a transaction of
//! its own that carries seqvend's settings (see `pooler`).

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use deadpool::managed::{self, Metrics, RecycleError, RecycleResult};
use deadpool_postgres::ClientWrapper;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Row;

use super::connect::Connector;
use super::pooler::Route;

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

/// A statement's parameter and its PostgreSQL type (an unnamed statement is sent with them).
pub type TypedParam<'a> = (&'a (dyn ToSql + Sync), Type);

pub struct VendClient {
    client: ClientWrapper,
    unconfirmed: UnconfirmedCommit,
    route: Route,
}

impl VendClient {
    /// Whether the last commit on this connection went unconfirmed by the synchronous standby.
    pub fn commit_unconfirmed(&self) -> bool {
        self.unconfirmed.take()
    }

    /// Runs one statement as a transaction of its own and returns its rows once it committed
    /// (whether the commit was confirmed by the standby: `commit_unconfirmed`).
    ///
    /// Straight to PostgreSQL the session already has seqvend's settings (startup options),
    /// and the statement is prepared once per connection. Behind a pooler the statement is
    /// unnamed (parsed, bound and run under one Sync, so it never outlives the pooler's
    /// transaction), between a `BEGIN` that sets seqvend's settings for this transaction only
    /// and a `COMMIT`; the three are pipelined, one round trip like the direct path's.
    pub async fn run_statement(
        &self,
        sql: &str,
        params: &[TypedParam<'_>],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        match &self.route {
            Route::Direct => {
                let types: Vec<Type> = params.iter().map(|(_, ty)| ty.clone()).collect();
                let values: Vec<&(dyn ToSql + Sync)> = params.iter().map(|(v, _)| *v).collect();
                let statement = self.client.prepare_typed_cached(sql, &types).await?;
                self.client.query(&statement, &values).await
            }
            Route::Pooled { begin } => {
                // Each is sent when first polled, in this order: one flight to the server.
                let (_, rows, _) = tokio::try_join!(
                    self.client.batch_execute(begin),
                    self.client.query_typed(sql, params),
                    self.client.batch_execute("COMMIT"),
                )?;
                Ok(rows)
            }
        }
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
    route: Route,
}

impl std::fmt::Debug for VendManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VendManager").finish_non_exhaustive()
    }
}

impl VendManager {
    pub fn new(connector: Connector, route: Route) -> Self {
        Self { connector, route }
    }

    /// Whether its connections prepare each statement once (straight to PostgreSQL), rather
    /// than parse and plan it on every run (behind a pooler).
    pub fn prepares_statements(&self) -> bool {
        matches!(self.route, Route::Direct)
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
            route: self.route.clone(),
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
