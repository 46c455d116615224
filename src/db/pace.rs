//! Pacing background reads (the usage rounds, the overview's renewals): they go in small
//! pages with a rest after each, so that they never hold a database core (or a Tokio worker)
//! for long. The vends beside them feel a burst, not an average: with 10,000 sequences a
//! usage round read in one go was tens of milliseconds of PostgreSQL's CPU at a time, enough
//! to set strict vends' p99 at a constant 2,000 req/s (docs/performance.md, "Background work
//! and the tail").

use std::time::Duration;

use tokio::time::Instant;

/// Rest after a page this many times as long as the page took: paced work then takes at most
/// a fifth of a core while it runs.
const REST_PER_WORK: u32 = 4;

/// The share of its interval paced work may spread over; past it, the rest runs without
/// rests, so a large round still ends well within its interval.
const SPREAD_OVER: f64 = 0.5;

pub struct Pace {
    started: Instant,
    spread_until: Duration,
}

impl Pace {
    /// Paces work that starts now and must end within `interval`.
    pub fn new(interval: Duration) -> Self {
        Self {
            started: Instant::now(),
            spread_until: interval.mul_f64(SPREAD_OVER),
        }
    }

    /// Runs one page of the work, then rests in proportion to how long it took.
    pub async fn page<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        let began = Instant::now();
        let done = work.await;
        if let Some(rest) = rest_after(began.elapsed(), self.started.elapsed(), self.spread_until) {
            tokio::time::sleep(rest).await;
        }
        done
    }
}

/// The rest after a page that took `work`, `elapsed` into work that spreads over at most
/// `spread_until`: none once the spread is used up, and never past it.
fn rest_after(work: Duration, elapsed: Duration, spread_until: Duration) -> Option<Duration> {
    let left = spread_until.checked_sub(elapsed)?;
    Some((work * REST_PER_WORK).min(left)).filter(|rest| !rest.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_page_is_followed_by_a_rest_in_proportion() {
        assert_eq!(rest_after(5 * MS, 100 * MS, 5000 * MS), Some(20 * MS));
    }

    #[test]
    fn rests_never_reach_past_the_spread() {
        assert_eq!(rest_after(5 * MS, 4990 * MS, 5000 * MS), Some(10 * MS));
        assert_eq!(rest_after(5 * MS, 5000 * MS, 5000 * MS), None);
        assert_eq!(rest_after(5 * MS, 7000 * MS, 5000 * MS), None);
    }
}
