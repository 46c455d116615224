//! Leases: blocks of values drawn by one vend and recorded in the same transaction, for a
//! cache to hand out later (this instance's own, or a client's).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use seqvend_blocks::Block;

use super::statement::run_durably;
use crate::db::VendPool as Pool;
use crate::domain::SequenceName;
use crate::metrics::Metrics;

const LEASE_SQL: &str = "SELECT outcome, vals, detail, lease_id, \
     (extract(epoch FROM expires_at) * 1000)::int8 AS expires_ms, increment \
     FROM seqvend.lease($1, $2, $3, $4, make_interval(secs => $5))";

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
    /// Fewer values than asked: the sequence ran out.
    pub clipped: bool,
}

#[derive(Debug, Clone)]
pub enum Leased {
    Granted(Lease),
    Exhausted,
    Retired,
    NotFound,
    /// The sequence failed on its own (see `Outcome::Failed`).
    Failed(String),
}

pub async fn lease(
    pool: &Pool,
    metrics: &Metrics,
    name: &SequenceName,
    count: u32,
    holder: &Holder,
    ttl: Duration,
    deadline: Duration,
) -> anyhow::Result<Leased> {
    let sent_at = Instant::now();
    let (kind, holder_name) = (holder.kind(), holder.name());
    let rows = run_durably(
        pool,
        LEASE_SQL,
        &[
            &name.as_str(),
            &(count as i32),
            &kind,
            &holder_name,
            &ttl.as_secs_f64(),
        ],
        deadline,
    )
    .await?;
    let row = rows
        .first()
        .context("the lease statement returned no row")?;
    let detail: Option<String> = row.get(2);
    Ok(match row.get::<_, &str>(0) {
        "ok" => {
            let values: Vec<i64> = row.get(1);
            if let Some(repaired) = &detail {
                tracing::warn!(sequence = name.as_str(), "{repaired}");
                metrics
                    .sequence_repairs
                    .with_label_values(&[name.as_str()])
                    .inc();
            }
            if values.is_empty() {
                return Ok(Leased::Exhausted);
            }
            let increment: i64 = row.get(5);
            let expires_ms: i64 = row.get(4);
            metrics.leases_granted.with_label_values(&[kind]).inc();
            if *holder == Holder::Client {
                // A client's values have left; an instance's count when it hands them out.
                metrics.count_vended(name.as_str(), values.len() as u64);
            }
            Leased::Granted(Lease {
                id: row.get(3),
                blocks: Block::runs_of(&values, increment),
                count: values.len() as u64,
                expires_at: DateTime::from_timestamp_millis(expires_ms)
                    .context("lease expiry out of range")?,
                sent_at,
                clipped: values.len() < count as usize,
            })
        }
        "retired" => Leased::Retired,
        "not_found" => Leased::NotFound,
        "failed" => {
            let reason = detail.unwrap_or_default();
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
        other => anyhow::bail!("unexpected lease outcome {other:?}"),
    })
}
