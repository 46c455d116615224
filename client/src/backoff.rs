//! Exponential backoff with full jitter: after `failures` failed calls in a row, wait a
//! uniformly random time in `[0, min(cap, base × 2^failures)]`. The randomness spreads the
//! clients of one seqvend instance apart when it comes back from an outage.

use std::time::Duration;

use rand::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    pub base: Duration,
    pub cap: Duration,
}

impl Backoff {
    /// The longest wait after `failures` failures in a row.
    pub fn ceiling(&self, failures: u32) -> Duration {
        let factor = 1u32.checked_shl(failures).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// A wait drawn from `[0, ceiling(failures)]`, never shorter than what the service asked
    /// for (`at_least`, from Retry-After) unless that is beyond the cap.
    pub fn delay(&self, failures: u32, at_least: Option<Duration>, rng: &mut impl Rng) -> Duration {
        let ceiling = self.ceiling(failures);
        let drawn = ceiling.mul_f64(rng.gen::<f64>());
        drawn.max(at_least.unwrap_or_default().min(self.cap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    const BACKOFF: Backoff = Backoff {
        base: Duration::from_millis(50),
        cap: Duration::from_secs(5),
    };

    #[test]
    fn the_ceiling_doubles_from_the_base_up_to_the_cap() {
        let ceilings: Vec<u128> = (0..9).map(|f| BACKOFF.ceiling(f).as_millis()).collect();
        assert_eq!(ceilings, [50, 100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        assert_eq!(BACKOFF.ceiling(u32::MAX), BACKOFF.cap);
    }

    #[test]
    fn every_delay_lies_between_zero_and_the_ceiling_and_they_spread_out() {
        let mut rng = StdRng::seed_from_u64(7);
        for failures in 0..12 {
            let delays: Vec<Duration> = (0..200)
                .map(|_| BACKOFF.delay(failures, None, &mut rng))
                .collect();
            assert!(delays.iter().all(|d| *d <= BACKOFF.ceiling(failures)));
            let shortest = delays.iter().min().unwrap();
            let longest = delays.iter().max().unwrap();
            assert!(*longest - *shortest > BACKOFF.ceiling(failures) / 2);
        }
    }

    #[test]
    fn a_retry_after_from_the_service_is_a_floor_but_never_beyond_the_cap() {
        let mut rng = StdRng::seed_from_u64(1);
        let second = Some(Duration::from_secs(1));
        assert!((0..100).all(|_| BACKOFF.delay(0, second, &mut rng) >= Duration::from_secs(1)));
        let hour = Some(Duration::from_secs(3600));
        assert_eq!(BACKOFF.delay(0, hour, &mut rng), BACKOFF.cap);
    }
}
