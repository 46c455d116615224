//! Use per second over the last minute.

/// Counts values taken over a sliding 60 s window in 1 s steps. Time is given as seconds
/// since the caller's own start, so the window never reads a clock itself.
#[derive(Debug, Clone)]
pub struct RateWindow {
    buckets: [u64; WINDOW],
    /// The second each bucket counts, so a bucket left from a minute ago reads as empty.
    seconds: [u64; WINDOW],
    first_second: Option<u64>,
}

const WINDOW: usize = 60;

impl Default for RateWindow {
    fn default() -> Self {
        Self {
            buckets: [0; WINDOW],
            seconds: [u64::MAX; WINDOW],
            first_second: None,
        }
    }
}

impl RateWindow {
    pub fn record(&mut self, second: u64, taken: u64) {
        let slot = (second % WINDOW as u64) as usize;
        if self.seconds[slot] != second {
            self.seconds[slot] = second;
            self.buckets[slot] = 0;
        }
        self.buckets[slot] = self.buckets[slot].saturating_add(taken);
        self.first_second.get_or_insert(second);
    }

    /// Values per second over the last minute (or since the first record, if that is more
    /// recent), counting the current second as a whole one.
    pub fn per_second(&self, now: u64) -> f64 {
        let Some(first) = self.first_second else {
            return 0.0;
        };
        let oldest = now.saturating_sub(WINDOW as u64 - 1).max(first);
        let taken: u64 = self
            .seconds
            .iter()
            .zip(&self.buckets)
            .filter(|(&second, _)| second != u64::MAX && second >= oldest && second <= now)
            .map(|(_, &count)| count)
            .sum();
        taken as f64 / (now.saturating_sub(oldest) + 1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_window_reads_zero() {
        assert_eq!(RateWindow::default().per_second(100), 0.0);
    }

    #[test]
    fn the_rate_is_averaged_over_the_seconds_seen_so_far() {
        let mut window = RateWindow::default();
        window.record(10, 100);
        window.record(11, 300);
        assert_eq!(window.per_second(11), 200.0);
        assert_eq!(window.per_second(13), 100.0);
    }

    #[test]
    fn use_older_than_a_minute_is_forgotten() {
        let mut window = RateWindow::default();
        for second in 0..60 {
            window.record(second, 10);
        }
        assert_eq!(window.per_second(59), 10.0);
        window.record(60, 70);
        assert_eq!(window.per_second(60), 11.0);
        assert_eq!(window.per_second(200), 0.0);
    }
}
