//! How fast a sequence is being used and when it runs out, from the count of values drawn
//! now and at the start of each window (the samples PostgreSQL keeps).

/// The count at a window's start and how long ago that was (the window, or less while the
/// sequence has been observed for less than the window).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsageStart {
    pub used: u128,
    pub span_seconds: f64,
}

/// Shortest span a rate is computed over: below it, one draw would read as a huge rate.
const MIN_SPAN_SECONDS: f64 = 1.0;

#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    /// Values used per second over the last hour.
    pub per_second_1h: f64,
    /// Values used per second over the last day: the rate forecasts use.
    pub per_second_24h: f64,
}

impl Usage {
    /// `used` is the count drawn so far; a missing start (no sample yet) reads as no use.
    pub fn from_samples(
        used: u128,
        start_1h: Option<UsageStart>,
        start_24h: Option<UsageStart>,
    ) -> Self {
        Self {
            per_second_1h: rate(used, start_1h),
            per_second_24h: rate(used, start_24h),
        }
    }

    /// Seconds until `remaining` values are used at the last day's rate; None while nothing
    /// is being used.
    pub fn seconds_left(&self, remaining: u128) -> Option<f64> {
        (self.per_second_24h > 0.0).then(|| remaining as f64 / self.per_second_24h)
    }
}

fn rate(used: u128, start: Option<UsageStart>) -> f64 {
    match start {
        Some(start) if start.span_seconds >= MIN_SPAN_SECONDS => {
            // A count below the start's (a DBA rewound a range seqvend then repaired, or the
            // samples were edited) is no use, not negative use.
            used.saturating_sub(start.used) as f64 / start.span_seconds
        }
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(used: u128, span_seconds: f64) -> Option<UsageStart> {
        Some(UsageStart { used, span_seconds })
    }

    #[test]
    fn each_window_divides_what_was_used_since_its_start_by_its_span() {
        let usage = Usage::from_samples(10_000, start(6_400, 3600.0), start(1_360, 86_400.0));
        assert_eq!(usage.per_second_1h, 1.0);
        assert_eq!(usage.per_second_24h, 0.1);
        assert_eq!(usage.seconds_left(500), Some(5000.0));
    }

    #[test]
    fn no_sample_a_too_short_span_or_no_use_forecasts_nothing() {
        assert_eq!(Usage::from_samples(10, None, None), Usage::default());
        assert_eq!(
            Usage::from_samples(10, start(0, 0.5), start(0, 0.5)),
            Usage::default()
        );
        let idle = Usage::from_samples(10, start(10, 60.0), start(10, 60.0));
        assert_eq!(idle.seconds_left(100), None);
    }

    #[test]
    fn a_count_below_the_start_reads_as_no_use() {
        let usage = Usage::from_samples(5, start(10, 60.0), start(10, 60.0));
        assert_eq!(usage, Usage::default());
    }
}
