//! The one vend statement, run on a pooled connection.

use std::time::Instant;

use anyhow::Context;
use deadpool_postgres::{Object, Pool};

use crate::domain::SequenceName;
use crate::metrics::Metrics;

const VEND_SQL: &str = "SELECT request, outcome, vals FROM seqvend.vend($1::text[], $2::int4[])";

/// What one request got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Values in vend order; fewer than asked when the sequence ran out.
    Values(Vec<i64>),
    Exhausted,
    Retired,
    NotFound,
}

/// One request of a statement.
pub struct Ask<'a> {
    pub name: &'a SequenceName,
    pub count: u32,
}

/// Serves `asks` with one statement; the outcomes come back in the same order. The values
/// are durable when this returns: the statement's commit waited for their WAL flush.
pub async fn vend(
    pool: &Pool,
    metrics: &Metrics,
    asks: &[Ask<'_>],
) -> anyhow::Result<Vec<Outcome>> {
    let names: Vec<&str> = asks.iter().map(|a| a.name.as_str()).collect();
    let counts: Vec<i32> = asks.iter().map(|a| a.count as i32).collect();
    let client = pool.get().await.context("getting a vend connection")?;
    let started = Instant::now();
    let rows = run(&client, &names, &counts).await?;
    metrics
        .vend_statement_seconds
        .observe(started.elapsed().as_secs_f64());
    metrics.vend_batch_requests.observe(asks.len() as f64);

    let mut outcomes = vec![Outcome::NotFound; asks.len()];
    for row in rows {
        let index = usize::try_from(row.get::<_, i32>(0) - 1).context("request index")?;
        let outcome = match row.get::<_, &str>(1) {
            "ok" => {
                let values: Vec<i64> = row.get(2);
                metrics
                    .values_vended
                    .with_label_values(&[names[index]])
                    .inc_by(values.len() as u64);
                Outcome::Values(values)
            }
            "exhausted" => Outcome::Exhausted,
            "retired" => Outcome::Retired,
            "not_found" => Outcome::NotFound,
            other => anyhow::bail!("unexpected vend outcome {other:?}"),
        };
        *outcomes
            .get_mut(index)
            .context("request index out of bounds")? = outcome;
    }
    Ok(outcomes)
}

async fn run(
    client: &Object,
    names: &[&str],
    counts: &[i32],
) -> anyhow::Result<Vec<tokio_postgres::Row>> {
    let statement = client
        .prepare_cached(VEND_SQL)
        .await
        .context("preparing the vend statement")?;
    client
        .query(&statement, &[&names, &counts])
        .await
        .context("running the vend statement")
}
