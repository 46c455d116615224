//! The one vend statement, run on a pooled connection.

use std::time::{Duration, Instant};

use anyhow::Context;
use tokio_postgres::types::Type;
use tokio_postgres::Row;

use super::StatementOutcome;
use crate::db::{TypedParam, VendConnection, VendPool as Pool};

use crate::domain::SequenceName;
use crate::idempotency::IdempotencyKey;
use crate::metrics::Metrics;

const VEND_SQL: &str =
    "SELECT requests, outcome, vals, detail FROM seqvend.vend($1::text[], $2::int4[])";

/// The same statement for a batch of unkeyed requests on one sequence, for at most
/// `ONE_SEQUENCE_MAX_VALUES`: `vend_one_sequence`, the common case's function, asked for
/// directly rather than through `vend()`, which cost a fifth more of PostgreSQL's CPU
/// (docs/performance.md, "The one-sequence statement, asked for directly"). Its answer is the
/// last column: the values, or an empty array when a lock was not granted within
/// `lock_timeout`. Only when it is NULL (not the common case; nothing handed out) does the
/// general `vend_batch` run, in the same statement, under the locks already taken, and answer
/// in the first four columns as `vend()` does. Only where statements are prepared once: behind
/// a pooler each run is planned again, and this plan costs about twice `VEND_SQL`'s.
const VEND_ONE_SEQUENCE_SQL: &str = "SELECT b.requests, b.outcome, b.vals, b.detail, o.vals \
     FROM (SELECT seqvend.vend_one_sequence($1::text, $2::int4[]) AS vals OFFSET 0) AS o \
     LEFT JOIN LATERAL (SELECT * FROM seqvend.vend_batch( \
                            array_fill($1::text, ARRAY[cardinality($2::int4[])]), $2::int4[]) \
                         WHERE o.vals IS NULL OFFSET 0) AS b ON true";

/// The most values `vend_one_sequence` draws (its common case; `total > 64` there). Should the
/// two differ, a batch is only offered to it in vain, or not offered: never served wrongly.
const ONE_SEQUENCE_MAX_VALUES: u64 = 64;

/// Why `vend_one_sequence` answered an empty array, in the words of `vend()`.
const LOCK_NOT_GRANTED: &str = "a lock it needs was not granted within lock_timeout: another \
     session holds its PostgreSQL sequence (an open ALTER SEQUENCE?), its range's registry row \
     or its range's mark (seqvend.range_marks)";

/// The same statement for a batch in which some requests carry an idempotency key: their
/// answers are stored with the draw (see the idempotency migration).
const VEND_KEYED_SQL: &str = "SELECT requests, outcome, vals, detail \
     FROM seqvend.vend_keyed($1::text[], $2::int4[], $3::text[], $4::text[], $5::text[], \
                             make_interval(secs => $6))";

/// What one request got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Values in vend order; fewer than asked when the sequence ran out.
    Values(Vec<i64>),
    Exhausted,
    Retired,
    NotFound,
    /// The sequence failed on its own (e.g. its PostgreSQL sequence was dropped or altered
    /// beyond repair); the other sequences of the statement were served. Says why.
    Failed(String),
    /// The sequence could not be served now (a lock another session held past the statement's
    /// lock timeout, a deadlock, a conflict): worth retrying; the other sequences of the
    /// statement were served. Says why.
    Unavailable(String),
    /// The request's idempotency key already had an answer: the one it got then.
    Replayed(Replay),
    /// The request's idempotency key was first used with another request.
    KeyReused,
    /// A request with the same idempotency key is still being served (by another instance's
    /// statement, which held the key past the lock timeout): nothing was drawn.
    KeyInFlight,
}

/// A stored answer to a keyed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replay {
    /// The values it was given.
    Values(Vec<i64>),
    /// It met an exhausted sequence.
    Exhausted,
}

impl Replay {
    /// The stored answer from its HTTP-free record: the status the statement kept (`detail`,
    /// 200 when absent) and the values, if any.
    fn of(detail: Option<&str>, values: Option<Vec<i64>>) -> Self {
        let exhausted = detail.and_then(|d| d.parse::<u16>().ok()) == Some(409);
        match values {
            Some(values) if !exhausted && !values.is_empty() => Self::Values(values),
            _ => Self::Exhausted,
        }
    }
}

/// One request of a statement.
pub struct Ask<'a> {
    pub name: &'a SequenceName,
    pub count: u32,
    pub key: Option<&'a IdempotencyKey>,
}

/// Serves `asks` with one statement; the outcomes come back in the same order, durable (see
/// `run_durably`).
pub async fn vend(
    pool: &Pool,
    metrics: &Metrics,
    asks: &[Ask<'_>],
    deadline: Duration,
    key_ttl: Duration,
) -> anyhow::Result<Vec<Outcome>> {
    let names: Vec<&str> = asks.iter().map(|a| a.name.as_str()).collect();
    let counts: Vec<i32> = asks.iter().map(|a| a.count as i32).collect();
    let one_sequence = is_one_sequence(asks) && pool.manager().prepares_statements();
    let started = Instant::now();
    let rows = if asks.iter().any(|a| a.key.is_some()) {
        let field = |f: fn(&IdempotencyKey) -> &str| -> Vec<Option<&str>> {
            asks.iter().map(|a| a.key.map(f)).collect()
        };
        let (owners, keys, requests) = (
            field(|k| &k.owner),
            field(|k| &k.key),
            field(|k| &k.request),
        );
        let ttl = key_ttl.as_secs_f64();
        let params: [TypedParam; 6] = [
            (&names, Type::TEXT_ARRAY),
            (&counts, Type::INT4_ARRAY),
            (&owners, Type::TEXT_ARRAY),
            (&keys, Type::TEXT_ARRAY),
            (&requests, Type::TEXT_ARRAY),
            (&ttl, Type::FLOAT8),
        ];
        run_durably(pool, VEND_KEYED_SQL, &params, deadline).await?
    } else if one_sequence {
        let params: [TypedParam; 2] = [(&names[0], Type::TEXT), (&counts, Type::INT4_ARRAY)];
        run_durably(pool, VEND_ONE_SEQUENCE_SQL, &params, deadline).await?
    } else {
        let params: [TypedParam; 2] = [(&names, Type::TEXT_ARRAY), (&counts, Type::INT4_ARRAY)];
        run_durably(pool, VEND_SQL, &params, deadline).await?
    };
    metrics
        .vend_statement_seconds
        .observe(started.elapsed().as_secs_f64());
    metrics.vend_batch_requests.observe(asks.len() as f64);

    let mut outcomes = vec![Outcome::NotFound; asks.len()];
    for row in rows {
        if one_sequence {
            let answered: Option<Vec<i64>> = row
                .try_get(4)
                .context("reading the one-sequence statement's values")?;
            if let Some(values) = answered {
                return Ok(one_sequence_outcomes(values, asks, metrics));
            }
        }
        let (indexes, handed_out) = row_outcomes(&row, asks, metrics)?;
        for (index, outcome) in indexes.into_iter().zip(handed_out) {
            outcomes[index] = outcome;
        }
    }
    Ok(outcomes)
}

/// Whether `asks` is a batch for `VEND_ONE_SEQUENCE_SQL`: requests on one sequence, none with
/// an idempotency key (a keyed batch has `VEND_KEYED_SQL`), for no more values than its common
/// case draws.
fn is_one_sequence(asks: &[Ask<'_>]) -> bool {
    let values: u64 = asks.iter().map(|a| u64::from(a.count)).sum();
    !asks.is_empty()
        && values <= ONE_SEQUENCE_MAX_VALUES
        && asks
            .iter()
            .all(|a| a.key.is_none() && a.name == asks[0].name)
}

/// The outcomes of a batch on one sequence that `vend_one_sequence` answered: its values
/// handed to the requests in order, or, when it drew none, `unavailable` for each.
fn one_sequence_outcomes(values: Vec<i64>, asks: &[Ask<'_>], metrics: &Metrics) -> Vec<Outcome> {
    let name = asks[0].name.as_str();
    if values.is_empty() {
        tracing::warn!(
            sequence = name,
            reason = LOCK_NOT_GRANTED,
            "a sequence could not be served now"
        );
        return vec![Outcome::Unavailable(LOCK_NOT_GRANTED.into()); asks.len()];
    }
    metrics.count_vended(name, values.len() as u64);
    let counts: Vec<u32> = asks.iter().map(|a| a.count).collect();
    hand_out(values, &counts, Outcome::Values, Outcome::Exhausted)
}

/// What one row of the vend statement answers: the requests it is for (as indexes into
/// `asks`) and, in the same order, their outcomes. Repairs and failures are logged and counted
/// here, vended values counted.
fn row_outcomes(
    row: &Row,
    asks: &[Ask<'_>],
    metrics: &Metrics,
) -> anyhow::Result<(Vec<usize>, Vec<Outcome>)> {
    let indexes = request_indexes(row, asks.len())?;
    let name = asks[indexes[0]].name.as_str();
    let detail: Option<String> = row.get(3);
    let handed_out = match StatementOutcome::parse(row.get(1))? {
        StatementOutcome::Ok => {
            if let Some(repaired) = detail {
                tracing::warn!(sequence = name, "{repaired}");
                metrics.sequence_repairs.with_label_values(&[name]).inc();
            }
            let values: Vec<i64> = row.get(2);
            metrics.count_vended(name, values.len() as u64);
            let counts: Vec<u32> = indexes.iter().map(|&i| asks[i].count).collect();
            hand_out(values, &counts, Outcome::Values, Outcome::Exhausted)
        }
        StatementOutcome::Replayed => {
            let replay = Replay::of(detail.as_deref(), row.get(2));
            vec![Outcome::Replayed(replay); indexes.len()]
        }
        StatementOutcome::KeyReused => vec![Outcome::KeyReused; indexes.len()],
        StatementOutcome::KeyInFlight => vec![Outcome::KeyInFlight; indexes.len()],
        StatementOutcome::Retired => vec![Outcome::Retired; indexes.len()],
        StatementOutcome::NotFound => vec![Outcome::NotFound; indexes.len()],
        StatementOutcome::Unavailable => {
            let reason = detail.unwrap_or_default();
            tracing::warn!(
                sequence = name,
                reason,
                "a sequence could not be served now"
            );
            vec![Outcome::Unavailable(reason); indexes.len()]
        }
        StatementOutcome::Failed => {
            let reason = detail.unwrap_or_default();
            tracing::error!(sequence = name, reason, "vending from a sequence failed");
            metrics.sequence_failures.with_label_values(&[name]).inc();
            vec![Outcome::Failed(reason); indexes.len()]
        }
    };
    Ok((indexes, handed_out))
}

/// The requests a row of a vend statement answers (its first column, 1-based), as indexes
/// into the statement's `count` requests.
pub(super) fn request_indexes(row: &Row, count: usize) -> anyhow::Result<Vec<usize>> {
    let requests: Vec<i32> = row
        .try_get(0)
        .context("a vend statement row without requests")?;
    requests
        .iter()
        .map(|r| usize::try_from(r - 1).ok().filter(|&i| i < count))
        .collect::<Option<Vec<usize>>>()
        .context("request index out of bounds")
}

/// Splits the values drawn for one sequence (or counter) among its requests, in the order
/// they were taken: each gets what it asked for while values last (`got`), then what is
/// left, then nothing (`none`).
pub(super) fn hand_out<O: Clone>(
    values: Vec<i64>,
    counts: &[u32],
    got: fn(Vec<i64>) -> O,
    none: O,
) -> Vec<O> {
    let mut rest = values.as_slice();
    counts
        .iter()
        .map(|&count| {
            let (mine, others) = rest.split_at(rest.len().min(count as usize));
            rest = others;
            if mine.is_empty() {
                none.clone()
            } else {
                got(mine.to_vec())
            }
        })
        .collect()
}

/// Runs `sql` on a vend connection and returns its rows once its commit is durable: flushed
/// here and confirmed by the synchronous standby, if there is one. A statement not answered
/// within `deadline` is abandoned with its connection: whatever it drew is never handed out.
pub(super) async fn run_durably(
    pool: &Pool,
    sql: &str,
    params: &[TypedParam<'_>],
    deadline: Duration,
) -> anyhow::Result<Vec<Row>> {
    let client = pool.get().await.context("getting a vend connection")?;
    let rows = match tokio::time::timeout(deadline, query(&client, sql, params)).await {
        Ok(rows) => rows?,
        Err(elapsed) => {
            // Never a cancel request: cancelling a commit's wait for the synchronous standby
            // would leave it committed locally only. Closing the connection leaves nothing
            // waiting behind the statement.
            crate::db::discard(client);
            return Err(anyhow::Error::new(elapsed).context(format!(
                "the vend statement did not answer within {deadline:?}"
            )));
        }
    };
    if client.commit_unconfirmed() {
        // Committed here but perhaps not on the standby a failover would promote: handing
        // these values out could hand them out twice. They become a gap.
        return Err(anyhow::Error::new(std::io::Error::other(
            "the commit's wait for the synchronous standby was cancelled: values withheld",
        )));
    }
    Ok(rows)
}

async fn query(
    client: &VendConnection,
    sql: &str,
    params: &[TypedParam<'_>],
) -> anyhow::Result<Vec<Row>> {
    client
        .run_statement(sql, params)
        .await
        .context("running the vend statement")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_go_to_requests_in_the_order_they_were_taken() {
        let handed = hand_out(
            vec![1, 2, 3, 4, 5, 6],
            &[1, 3, 2],
            Outcome::Values,
            Outcome::Exhausted,
        );
        let expected = [vec![1], vec![2, 3, 4], vec![5, 6]].map(Outcome::Values);
        assert_eq!(handed, expected);
    }

    #[test]
    fn when_values_run_out_a_request_gets_what_is_left_and_later_ones_nothing() {
        let handed = hand_out(
            vec![7, 8, 9],
            &[2, 5, 1],
            Outcome::Values,
            Outcome::Exhausted,
        );
        let expected = vec![
            Outcome::Values(vec![7, 8]),
            Outcome::Values(vec![9]),
            Outcome::Exhausted,
        ];
        assert_eq!(handed, expected);
        assert_eq!(
            hand_out(vec![], &[1, 1], Outcome::Values, Outcome::Exhausted),
            vec![Outcome::Exhausted; 2]
        );
    }
}
