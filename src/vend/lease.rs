//! Leases: blocks of values drawn by one vend and recorded in the same transaction, for a
//! cache to hand out later (this instance's own, or a client's).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use seqvend_blocks::Block;

use tokio_postgres::types::Type;
use tokio_postgres::Row;

use super::statement::run_durably;
use super::StatementOutcome;
use crate::db::{TypedParam, VendPool as Pool};
use crate::domain::SequenceName;
use crate::idempotency::IdempotencyKey;
use crate::metrics::Metrics;

/// The lease statement's columns, keyed or not, from `$from`: its values come as runs
/// (`runs_first[i]` to `runs_last[i]` by `increment`), so a lease of any size is one short row.
macro_rules! lease_sql {
    ($from:literal) => {
        concat!(
            "SELECT outcome, runs_first, runs_last, detail, lease_id, \
             (extract(epoch FROM expires_at) * 1000)::int8 AS expires_ms, increment, ran_out ",
            $from
        )
    };
}

const LEASE_SQL: &str = lease_sql!("FROM seqvend.lease($1, $2, $3, $4, make_interval(secs => $5))");

/// The same, for a lease sent with an idempotency key: its answer is stored with the draw, or
/// replayed if the key has one.
const LEASE_KEYED_SQL: &str = lease_sql!(
    "FROM seqvend.lease_keyed($1, $2, $3, $4, make_interval(secs => $5), $6, $7, $8, \
     make_interval(secs => $9))"
);

/// Who holds a lease: a seqvend instance (named) or a client of the lease endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    Instance(Arc<str>),
    Client,
}

impl Holder {
    fn kind(&self) -> &'static str {
        match self {
            Holder::Instance(_) => "instance",
            Holder::Client => "client",
        }
    }

    fn name(&self) -> &str {
        match self {
            Holder::Instance(name) => name,
            Holder::Client => "client",
        }
    }
}

/// Values drawn for a lease: durable, recorded, in vend order.
#[derive(Debug, Clone)]
pub struct Lease {
    pub id: i64,
    /// Contiguous runs in vend order: one, two when the draw rolled over into the next range,
    /// more only if something else drew from the sequence meanwhile.
    pub blocks: Vec<Block>,
    pub count: u64,
    /// By the database's clock.
    pub expires_at: DateTime<Utc>,
    /// By this instance's clock, before the statement left: the lease ends no later than
    /// `sent_at + ttl`, whatever the clocks say.
    pub sent_at: Instant,
    /// Fewer values than asked because the sequence ran out (a lease whose block was declined
    /// may come back short without: see migration 20261126130000).
    pub clipped: bool,
}

#[derive(Debug, Clone)]
pub enum Leased {
    Granted(Lease),
    /// The lease's idempotency key already had an answer: the one it got then.
    Replayed(LeaseReplay),
    /// The idempotency key was first used with another request.
    KeyReused,
    /// A lease with the same idempotency key is still being served elsewhere: nothing drawn.
    KeyInFlight,
    Exhausted,
    Retired,
    NotFound,
    /// The sequence failed on its own (see `Outcome::Failed`).
    Failed(String),
}

/// A stored answer to a keyed block lease.
#[derive(Debug, Clone)]
pub enum LeaseReplay {
    /// The blocks it was granted, leased until `expires_at`; `clipped` as first answered
    /// (see `Lease::clipped`).
    Granted {
        blocks: Vec<Block>,
        expires_at: DateTime<Utc>,
        clipped: bool,
    },
    /// It met an exhausted sequence.
    Exhausted,
}

impl LeaseReplay {
    /// The stored answer from its record: the status the statement kept (`detail`, 200 when
    /// absent), the blocks, their expiry and whether they were clipped.
    fn of(
        detail: Option<&str>,
        blocks: Vec<Block>,
        expires_at: Option<DateTime<Utc>>,
        clipped: bool,
    ) -> Self {
        let status = detail.and_then(|d| d.parse::<u16>().ok()).unwrap_or(200);
        match expires_at {
            Some(expires_at) if status == 200 && !blocks.is_empty() => Self::Granted {
                blocks,
                expires_at,
                clipped,
            },
            _ => Self::Exhausted,
        }
    }
}

/// What a lease asks for.
pub struct LeaseAsk<'a> {
    pub name: &'a SequenceName,
    pub count: u32,
    pub holder: &'a Holder,
    pub ttl: Duration,
    /// With the time its answer is kept.
    pub key: Option<(&'a IdempotencyKey, Duration)>,
}

pub async fn lease(
    pool: &Pool,
    metrics: &Metrics,
    ask: LeaseAsk<'_>,
    deadline: Duration,
) -> anyhow::Result<Leased> {
    let sent_at = Instant::now();
    let rows = run_lease(pool, &ask, deadline).await?;
    let row = rows
        .first()
        .context("the lease statement returned no row")?;
    let name = ask.name;
    let detail: Option<String> = row.get(3);
    Ok(match StatementOutcome::parse(row.get(0))? {
        StatementOutcome::Replayed => replayed(row, detail.as_deref(), ask.count)?,
        StatementOutcome::KeyReused => Leased::KeyReused,
        StatementOutcome::KeyInFlight => Leased::KeyInFlight,
        StatementOutcome::Ok => granted(row, detail.as_deref(), metrics, &ask, sent_at)?,
        StatementOutcome::Retired => Leased::Retired,
        StatementOutcome::NotFound => Leased::NotFound,
        StatementOutcome::Unavailable => {
            // Judged "unavailable" with the statement's other failures (`db::is_unavailable`).
            return Err(anyhow::Error::new(crate::db::Busy(
                detail.unwrap_or_default(),
            )))
            .context(format!("leasing from sequence {name}"));
        }
        StatementOutcome::Failed => failed(name, detail.unwrap_or_default(), metrics),
    })
}

/// Runs the lease statement, keyed or not, and returns its rows.
async fn run_lease(
    pool: &Pool,
    ask: &LeaseAsk<'_>,
    deadline: Duration,
) -> anyhow::Result<Vec<Row>> {
    let (kind, holder_name) = (ask.holder.kind(), ask.holder.name());
    let (name_text, count_param, ttl_seconds) =
        (ask.name.as_str(), ask.count as i32, ask.ttl.as_secs_f64());
    match ask.key {
        None => {
            let params: [TypedParam; 5] = [
                (&name_text, Type::TEXT),
                (&count_param, Type::INT4),
                (&kind, Type::TEXT),
                (&holder_name, Type::TEXT),
                (&ttl_seconds, Type::FLOAT8),
            ];
            run_durably(pool, LEASE_SQL, &params, deadline).await
        }
        Some((key, key_ttl)) => {
            let key_ttl = key_ttl.as_secs_f64();
            let params: [TypedParam; 9] = [
                (&name_text, Type::TEXT),
                (&count_param, Type::INT4),
                (&kind, Type::TEXT),
                (&holder_name, Type::TEXT),
                (&ttl_seconds, Type::FLOAT8),
                (&key.owner, Type::TEXT),
                (&key.key, Type::TEXT),
                (&key.request, Type::TEXT),
                (&key_ttl, Type::FLOAT8),
            ];
            run_durably(pool, LEASE_KEYED_SQL, &params, deadline).await
        }
    }
}

/// The stored answer of a keyed lease, rebuilt from its runs.
fn replayed(row: &Row, detail: Option<&str>, asked: u32) -> anyhow::Result<Leased> {
    let blocks = blocks_of(row).context("a stored lease's runs do not fit its increment")?;
    let clipped = clipped(row, blocks.iter().map(Block::len).sum(), asked);
    let expires_ms: Option<i64> = row.get(5);
    let expires_at = expires_ms.and_then(DateTime::from_timestamp_millis);
    Ok(Leased::Replayed(LeaseReplay::of(
        detail, blocks, expires_at, clipped,
    )))
}

/// Whether a lease's `count` values are fewer than `asked` because the sequence ran out: the
/// statement's `ran_out`, or, where it has none (a replayed answer stored before it was kept),
/// whether they are fewer.
fn clipped(row: &Row, count: u64, asked: u32) -> bool {
    row.get::<_, Option<bool>>(7)
        .unwrap_or(count < u64::from(asked))
}

/// The answer's runs as blocks, in vend order; `None` when a run does not fit the increment.
fn blocks_of(row: &Row) -> Option<Vec<Block>> {
    let increment: i64 = row.get(6);
    let firsts: Vec<i64> = row.get::<_, Option<Vec<i64>>>(1).unwrap_or_default();
    let lasts: Vec<i64> = row.get::<_, Option<Vec<i64>>>(2).unwrap_or_default();
    firsts
        .into_iter()
        .zip(lasts)
        .map(|(first, last)| Block::new(first, last, increment))
        .collect()
}

/// A fresh draw: the values as blocks, counted (a repair the statement made is logged), or
/// `Exhausted` when it drew none.
fn granted(
    row: &Row,
    repaired: Option<&str>,
    metrics: &Metrics,
    ask: &LeaseAsk<'_>,
    sent_at: Instant,
) -> anyhow::Result<Leased> {
    let name = ask.name.as_str();
    if let Some(repaired) = repaired {
        tracing::warn!(sequence = name, "{repaired}");
        metrics.sequence_repairs.with_label_values(&[name]).inc();
    }
    let blocks = blocks_of(row).context("a lease's runs do not fit its increment")?;
    let count: u64 = blocks.iter().map(Block::len).sum();
    if count == 0 {
        return Ok(Leased::Exhausted);
    }
    let expires_ms: i64 = row.get(5);
    let clipped = clipped(row, count, ask.count);
    metrics
        .leases_granted
        .with_label_values(&[ask.holder.kind()])
        .inc();
    if *ask.holder == Holder::Client {
        // A client's values have left; an instance's count when it hands them out.
        metrics.count_vended(name, count);
    }
    Ok(Leased::Granted(Lease {
        id: row.get(4),
        blocks,
        count,
        expires_at: DateTime::from_timestamp_millis(expires_ms)
            .context("lease expiry out of range")?,
        sent_at,
        clipped,
    }))
}

/// The sequence failed on its own: logged and counted, its reason kept for the caller.
fn failed(name: &SequenceName, reason: String, metrics: &Metrics) -> Leased {
    tracing::error!(
        sequence = name.as_str(),
        reason,
        "leasing from a sequence failed"
    );
    metrics
        .sequence_failures
        .with_label_values(&[name.as_str()])
        .inc();
    Leased::Failed(reason)
}
