//! A DBA reading ranges' sequences as relations (`SELECT last_value, is_called FROM seq`, as
//! psql's `\d`, monitoring and pg_dump do) in a loop beside the clients and the other faults.
//! PostgreSQL must always find the sequence's one row: a read that finds none is what a
//! sequence given a new file under a lock weaker than the reader's looks like (every
//! `ALTER SEQUENCE` option but `OWNER TO` and `OWNED BY` does that on PostgreSQL 15), and the
//! checker counts it as a broken promise.

use rand::Rng;

use super::{bounded, Operator};
use crate::world::{CACHED, DOWN, HOT, STEP, UPS, ZIGZAG};

/// The fault recorded for a read that found no row.
pub const ROW_MISSING: &str = "sequence read found no row";

impl Operator {
    /// Reads a random sequence every 5–50 ms until the phase ends; records each read that
    /// found no row, and one summary of them all.
    pub(super) async fn read_sequences_in_a_loop(mut self) {
        let sequences = [HOT, DOWN, STEP, CACHED, UPS, ZIGZAG];
        let started = self.ctx.history.now();
        let (mut reads, mut missing) = (0u64, 0u64);
        while self.running() {
            let name = sequences[self.rng.gen_range(0..sequences.len())];
            match self.read_sequence(name).await {
                Some(true) => reads += 1,
                Some(false) => {
                    reads += 1;
                    missing += 1;
                }
                None => {}
            }
            self.pause(5, 50).await;
        }
        let detail = format!("{reads} reads of a sequence relation, {missing} found no row");
        self.record("sequence read by hand", "sequences", started, true, detail);
    }

    /// One read of `name`'s active range's sequence: whether it found a row; `None` when
    /// there was no answer (a crash, a cut session, a lock held past the operator's timeout).
    async fn read_sequence(&mut self, name: &str) -> Option<bool> {
        let range = self.active_range(name).await?;
        let started = self.ctx.history.now();
        let sql = format!("SELECT last_value, is_called FROM {}", range.pg_sequence);
        let rows = bounded(self.db().await?.query(&sql, &[])).await?.ok()?;
        if rows.is_empty() {
            self.record(ROW_MISSING, &range.pg_sequence, started, true, sql);
        }
        Some(!rows.is_empty())
    }
}
