//! When a cache draws more, and how much.

/// A sequence's cache policy: hold up to `size` values, and draw more when what is held
/// drops below `max(rate × buffer_seconds, min)`, but never above half of `size`: so every
/// refill draws at least half a cache's worth. (A mark at `size` would refill after every
/// value taken, one statement per handful of values; a rate whose buffer does not fit in
/// half the cache calls for a larger `size`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefillRule {
    pub size: u64,
    pub buffer_seconds: u64,
    pub min: u64,
}

impl RefillRule {
    /// Below this many values held, a refill starts.
    pub fn mark(&self, per_second: f64) -> u64 {
        let wanted = (per_second * self.buffer_seconds as f64).ceil();
        // `as` saturates: a huge rate gives u64::MAX, then the cap.
        (wanted as u64).max(self.min).min(self.size / 2)
    }

    /// The rate is asked for only when it can matter: holding half the size or more, no
    /// refill is due whatever the rate (the mark never exceeds it).
    pub fn needs_refill(&self, held: u64, per_second: impl FnOnce() -> f64) -> bool {
        held == 0 || (held < self.size / 2 && held < self.mark(per_second()))
    }

    /// How many values a refill draws: back up to `size`.
    pub fn top_up(&self, held: u64) -> u64 {
        self.size.saturating_sub(held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: RefillRule = RefillRule {
        size: 1000,
        buffer_seconds: 5,
        min: 100,
    };

    #[test]
    fn the_mark_follows_the_rate_between_min_and_half_the_size() {
        assert_eq!(RULE.mark(0.0), 100);
        assert_eq!(RULE.mark(50.0), 250);
        assert_eq!(RULE.mark(101.0), 500);
        assert_eq!(RULE.mark(f64::INFINITY), 500);
    }

    #[test]
    fn a_refill_starts_below_the_mark_and_tops_up_to_size() {
        assert!(!RULE.needs_refill(250, || 50.0));
        assert!(RULE.needs_refill(249, || 50.0));
        assert_eq!(RULE.top_up(249), 751);
        assert_eq!(RULE.top_up(2000), 0);
    }

    #[test]
    fn an_empty_cache_always_refills() {
        let lazy = RefillRule {
            size: 10,
            buffer_seconds: 0,
            min: 0,
        };
        assert!(lazy.needs_refill(0, || 0.0));
        assert!(!lazy.needs_refill(1, || 0.0));
    }
}
