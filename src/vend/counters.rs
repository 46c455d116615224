//! Counters by key: requests to a family's counters become rows of one
//! `seqvend.draw_counters(...)` statement per batch (see the counters migration), routed to
//! lanes by family, durable before they are answered.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio_postgres::types::Type;

use super::lanes::{Lanes, Statement};
use super::statement::{hand_out, request_indexes, run_durably};
use super::StatementOutcome;
use super::VendError;
use crate::db::VendPool as Pool;
use crate::domain::{CounterKey, SequenceName};
use crate::metrics::{FamilyDraw, Metrics};
use crate::settings::VendSettings;

const DRAW_SQL: &str = "SELECT requests, outcome, first_value, taken, step, created \
     FROM seqvend.draw_counters($1::text[], $2::text[], $3::int4[])";

/// What one counter request got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CounterOutcome {
    /// Values in draw order; fewer than asked when the counter ran out.
    Values(Vec<i64>),
    Exhausted,
    Retired,
    /// No family of that name.
    NotFound,
}

pub struct CounterAsk {
    pub family: SequenceName,
    pub key: CounterKey,
    pub count: u32,
}

/// Draws from counters; cheap to clone.
#[derive(Clone)]
pub struct Counters {
    lanes: Lanes<CounterStatement>,
}

impl Counters {
    /// Starts the lanes (when coalescing); must be called within a Tokio runtime.
    pub fn start(pool: Pool, metrics: Arc<Metrics>, settings: VendSettings) -> Self {
        let lane_count = pool.status().max_size;
        let statement = CounterStatement {
            pool,
            metrics: metrics.clone(),
            deadline: settings.statement_deadline,
        };
        Self {
            lanes: Lanes::start(statement, lane_count, metrics, settings),
        }
    }

    /// Draws `count` values of the counter `key` of `family`, creating it on first use.
    pub async fn draw(&self, ask: CounterAsk) -> Result<CounterOutcome, VendError> {
        self.lanes.submit(ask)?.wait().await
    }
}

struct CounterStatement {
    pool: Pool,
    metrics: Arc<Metrics>,
    deadline: Duration,
}

impl Statement for CounterStatement {
    type Ask = CounterAsk;
    type Outcome = CounterOutcome;

    /// By family, as sequences go by name: a counter's requests are served in order, and a
    /// family's requests share statements however many keys they name. (By key, they would
    /// spread over every lane in smaller statements, each paying for its own commit.)
    fn lane_key(ask: &CounterAsk) -> u64 {
        let mut hasher = DefaultHasher::new();
        ask.family.hash(&mut hasher);
        hasher.finish()
    }

    fn values(ask: &CounterAsk) -> u64 {
        u64::from(ask.count)
    }

    async fn run(&self, asks: &[CounterAsk]) -> anyhow::Result<Vec<CounterOutcome>> {
        let families: Vec<&str> = asks.iter().map(|a| a.family.as_str()).collect();
        let keys: Vec<&str> = asks.iter().map(|a| a.key.as_str()).collect();
        let counts: Vec<i32> = asks.iter().map(|a| a.count as i32).collect();
        let started = Instant::now();
        let rows = run_durably(
            &self.pool,
            DRAW_SQL,
            &[
                (&families, Type::TEXT_ARRAY),
                (&keys, Type::TEXT_ARRAY),
                (&counts, Type::INT4_ARRAY),
            ],
            self.deadline,
        )
        .await?;
        let metrics = &self.metrics.counters;
        metrics
            .statement_seconds
            .observe(started.elapsed().as_secs_f64());
        metrics.batch_requests.observe(asks.len() as f64);

        let mut outcomes = vec![CounterOutcome::NotFound; asks.len()];
        for row in rows {
            let indexes = request_indexes(&row, asks.len())?;
            let handed_out = match StatementOutcome::parse(row.get(1))? {
                StatementOutcome::Ok => {
                    let drawn = Drawn {
                        first: row.get(2),
                        taken: row.get(3),
                        step: row.get(4),
                    };
                    let counts: Vec<u32> = indexes.iter().map(|&i| asks[i].count).collect();
                    let handed_out = hand_out(
                        drawn.values()?,
                        &counts,
                        CounterOutcome::Values,
                        CounterOutcome::Exhausted,
                    );
                    metrics.record(FamilyDraw {
                        family: asks[indexes[0]].family.as_str(),
                        values: u64::try_from(drawn.taken).unwrap_or(0),
                        created: u64::from(row.get::<_, bool>(5)),
                        exhausted: handed_out
                            .iter()
                            .filter(|o| **o == CounterOutcome::Exhausted)
                            .count() as u64,
                    });
                    handed_out
                }
                StatementOutcome::Retired => vec![CounterOutcome::Retired; indexes.len()],
                StatementOutcome::NotFound => vec![CounterOutcome::NotFound; indexes.len()],
                other => anyhow::bail!("unexpected counter outcome {other:?}"),
            };
            for (index, outcome) in indexes.into_iter().zip(handed_out) {
                outcomes[index] = outcome;
            }
        }
        Ok(outcomes)
    }
}

/// The run of values one counter gave a statement: `taken` values from `first` by `step`.
struct Drawn {
    first: Option<i64>,
    taken: i64,
    step: i64,
}

impl Drawn {
    /// The values, each checked: the statement only draws values within the family's bounds,
    /// so an overflow here means the row was changed by hand.
    fn values(&self) -> anyhow::Result<Vec<i64>> {
        let Some(first) = self.first else {
            return Ok(Vec::new());
        };
        // In i128: the offset of a value far from `first` may not fit a bigint though the value
        // does (a family spanning most of bigint by a large step).
        (0..self.taken)
            .map(|i| {
                let value = i128::from(first) + i128::from(i) * i128::from(self.step);
                i64::try_from(value).context("a counter's values overflow a bigint")
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_its_values_by_step() {
        let down = Drawn {
            first: Some(10),
            taken: 4,
            step: -3,
        };
        assert_eq!(down.values().unwrap(), vec![10, 7, 4, 1]);
        let none = Drawn {
            first: None,
            taken: 0,
            step: 1,
        };
        assert_eq!(none.values().unwrap(), Vec::<i64>::new());
        let overflowing = Drawn {
            first: Some(i64::MAX - 1),
            taken: 3,
            step: 1,
        };
        assert!(overflowing.values().is_err());
        // Offsets past a bigint, values inside it.
        let wide = Drawn {
            first: Some(-5_000_000_000_000_000_000),
            taken: 101,
            step: 100_000_000_000_000_000,
        };
        let values = wide.values().unwrap();
        assert_eq!(values.len(), 101);
        assert_eq!(values[100], 5_000_000_000_000_000_000);
    }
}
