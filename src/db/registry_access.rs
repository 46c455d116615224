//! The registry handle: the only way seqvend's code runs SQL on the registry pool (sqlx), so
//! that every statement survives a pooler in transaction mode (PgBouncer) on the way.
//!
//! Behind a pooler, a statement must not outlive its transaction: the pooler hands the next
//! transaction to whichever server connection is free. sqlx's statements are named
//! (`sqlx_s_N`, per client connection) unless marked not persistent, and named ones would
//! collide there. An unnamed statement is sent by sqlx in two halves (Parse/Describe/Sync,
//! then Bind/Execute/Sync): outside a transaction the pooler may hand the second half to
//! another server connection; inside one, the server connection stays the client's. So on the
//! pooled route every statement runs unnamed inside an explicit transaction that begins by
//! setting seqvend's settings for itself (`set_config(…, true)`, see `pooler::Route`):
//!
//! - `&Registry` is an executor of its own: each statement run on it gets a transaction of
//!   its own on the pooled route (begin, the statement, commit); straight to PostgreSQL it
//!   runs on the pool as before, autocommit, prepared once per connection.
//! - `Registry::begin` returns a `RegistryTx`; statements run on `&mut RegistryTx` are unnamed
//!   on the pooled route and named (cached) on the direct one.
//!
//! Neither hands out the pool or a connection, and `clippy.toml` forbids naming sqlx's pool,
//! connection and transaction types outside `db` (and migrations): a new query site cannot
//! go around these two.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream, StreamExt, TryStreamExt};
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArguments, PgListener, PgQueryResult, PgRow, PgStatement, PgTypeInfo};
use sqlx::{Describe, Either, Execute, Executor, PgPool, Postgres, Transaction};

use super::pooler::Route;

/// The registry pool, and how its statements must run. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Registry {
    pool: PgPool,
    /// The `BEGIN` that opens each transaction behind a pooler; `None` straight to PostgreSQL.
    pooled_begin: Option<Arc<str>>,
    /// Straight to PostgreSQL, for what needs a session: `LISTEN` and migrations.
    session: PgPool,
}

impl Registry {
    pub(super) fn new(pool: PgPool, route: &Route, session: PgPool) -> Self {
        let pooled_begin = match route {
            Route::Direct => None,
            Route::Pooled { begin } => Some(begin.clone()),
        };
        Self {
            pool,
            pooled_begin,
            session,
        }
    }

    /// Whether the registry's statements go through a pooler in transaction mode.
    pub fn is_pooled(&self) -> bool {
        self.pooled_begin.is_some()
    }

    /// Begins a transaction; run statements on `&mut` it, then `commit` (dropped, it rolls
    /// back). Behind a pooler its `BEGIN` also sets seqvend's settings for the transaction.
    pub async fn begin(&self) -> sqlx::Result<RegistryTx> {
        let tx = match &self.pooled_begin {
            None => self.pool.begin().await?,
            Some(begin) => self.pool.begin_with(begin.to_string()).await?,
        };
        Ok(RegistryTx {
            tx,
            named: !self.is_pooled(),
        })
    }

    /// A listener for notifications, on a session of its own straight to PostgreSQL
    /// (`LISTEN` belongs to a session; a pooler would hand it to other clients).
    pub async fn listener(&self) -> sqlx::Result<PgListener> {
        PgListener::connect_with(&self.session).await
    }

    /// The pool straight to PostgreSQL, for migrations alone: their session advisory lock
    /// needs a session of its own. Nothing else may run on it (see `clippy.toml`).
    pub fn session_pool(&self) -> &PgPool {
        &self.session
    }

    /// Connections open and idle, and the most there may be (for `/metrics`).
    pub fn connections(&self) -> (u32, usize, u32) {
        let max = self.pool.options().get_max_connections();
        (self.pool.size(), self.pool.num_idle(), max)
    }

    /// A registry on `pool`, straight to PostgreSQL: for tools and tests that set up a pool
    /// of their own (e.g. one without seqvend's session settings).
    pub fn from_pool(pool: PgPool) -> Self {
        Self::new(pool.clone(), &Route::Direct, pool)
    }

    /// Runs `query` in a transaction of its own (behind a pooler), all its results at once.
    async fn in_own_transaction<'q, E>(&self, query: E) -> sqlx::Result<Vec<Step>>
    where
        E: 'q + Execute<'q, Postgres>,
    {
        let mut tx = self.begin().await?;
        let steps = (&mut tx).fetch_many(query).try_collect().await?;
        tx.commit().await?;
        Ok(steps)
    }
}

type Step = Either<PgQueryResult, PgRow>;

/// A transaction on the registry pool: the only connection a registry function gets.
#[derive(Debug)]
pub struct RegistryTx {
    tx: Transaction<'static, Postgres>,
    /// Whether statements may be named (prepared once per connection): straight to PostgreSQL.
    named: bool,
}

impl RegistryTx {
    pub async fn commit(self) -> sqlx::Result<()> {
        self.tx.commit().await
    }

    pub async fn rollback(self) -> sqlx::Result<()> {
        self.tx.rollback().await
    }

    fn statement<'q, E: Execute<'q, Postgres>>(&self, query: E) -> Statement<E> {
        Statement {
            query,
            named: self.named,
        }
    }
}

/// A query as given, but unnamed (not persistent) unless `named`.
struct Statement<E> {
    query: E,
    named: bool,
}

impl<'q, E: Execute<'q, Postgres>> Execute<'q, Postgres> for Statement<E> {
    fn sql(&self) -> &'q str {
        self.query.sql()
    }

    fn statement(&self) -> Option<&PgStatement<'q>> {
        self.query.statement()
    }

    fn take_arguments(&mut self) -> Result<Option<PgArguments>, BoxDynError> {
        self.query.take_arguments()
    }

    fn persistent(&self) -> bool {
        self.named && self.query.persistent()
    }
}

/// Behind a pooler a prepared statement would outlive its transaction.
fn no_prepared_statements<T>() -> sqlx::Result<T> {
    Err(sqlx::Error::Configuration(
        "statements cannot be prepared ahead behind a pooler in transaction mode".into(),
    ))
}

impl<'c> Executor<'c> for &'c mut RegistryTx {
    type Database = Postgres;

    fn fetch_many<'e, 'q: 'e, E>(self, query: E) -> BoxStream<'e, sqlx::Result<Step>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        let statement = self.statement(query);
        (&mut *self.tx).fetch_many(statement)
    }

    fn fetch_optional<'e, 'q: 'e, E>(self, query: E) -> BoxFuture<'e, sqlx::Result<Option<PgRow>>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        let statement = self.statement(query);
        (&mut *self.tx).fetch_optional(statement)
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [PgTypeInfo],
    ) -> BoxFuture<'e, sqlx::Result<PgStatement<'q>>>
    where
        'c: 'e,
    {
        if !self.named {
            return Box::pin(async { no_prepared_statements() });
        }
        (&mut *self.tx).prepare_with(sql, parameters)
    }

    fn describe<'e, 'q: 'e>(self, sql: &'q str) -> BoxFuture<'e, sqlx::Result<Describe<Postgres>>>
    where
        'c: 'e,
    {
        (&mut *self.tx).describe(sql)
    }
}

impl<'c> Executor<'c> for &'c Registry {
    type Database = Postgres;

    fn fetch_many<'e, 'q: 'e, E>(self, query: E) -> BoxStream<'e, sqlx::Result<Step>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        if !self.is_pooled() {
            return self.pool.fetch_many(query);
        }
        stream::once(self.in_own_transaction(query))
            .map_ok(|steps| stream::iter(steps.into_iter().map(Ok)))
            .try_flatten()
            .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(self, query: E) -> BoxFuture<'e, sqlx::Result<Option<PgRow>>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        if !self.is_pooled() {
            return self.pool.fetch_optional(query);
        }
        Box::pin(async move {
            let mut tx = self.begin().await?;
            let row = (&mut tx).fetch_optional(query).await?;
            tx.commit().await?;
            Ok(row)
        })
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [PgTypeInfo],
    ) -> BoxFuture<'e, sqlx::Result<PgStatement<'q>>>
    where
        'c: 'e,
    {
        if self.is_pooled() {
            return Box::pin(async { no_prepared_statements() });
        }
        self.pool.prepare_with(sql, parameters)
    }

    fn describe<'e, 'q: 'e>(self, sql: &'q str) -> BoxFuture<'e, sqlx::Result<Describe<Postgres>>>
    where
        'c: 'e,
    {
        self.pool.describe(sql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behind_a_pooler_every_statement_is_unnamed() {
        let unnamed = Statement {
            query: sqlx::query("SELECT 1"),
            named: false,
        };
        assert!(!unnamed.persistent());
        assert_eq!(unnamed.sql(), "SELECT 1");
    }

    #[test]
    fn straight_to_postgresql_statements_stay_as_asked() {
        let cached = Statement {
            query: sqlx::query("SELECT 1"),
            named: true,
        };
        assert!(cached.persistent());
        let asked_unnamed = Statement {
            query: sqlx::query("SELECT 1").persistent(false),
            named: true,
        };
        assert!(!asked_unnamed.persistent());
    }
}
