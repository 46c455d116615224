//! How many values to hold for one sequence, and when to lease more: the service's cache
//! policy (or the client's defaults for a strict sequence), widened to what the application
//! is seen to use and, under the adaptive [`Growth`], to how long leases take. Pure: the
//! caller samples use and passes the time.

use std::collections::VecDeque;
use std::time::Duration;

use seqvend_blocks::{RateWindow, RefillRule};
use serde::Deserialize;

use crate::growth::{Growth, RefillTimes};

/// The most one lease may ask for (the service refuses more: its `MAX_LEASE_COUNT`, since
/// leases are drawn in constant time), and the default `max_lease`.
pub const MAX_LEASE: u64 = 10_000_000;

/// The most an older service allows in one lease: a refusal of a larger count brings leases
/// back to it, and the fixed rule never asks for more.
pub const OLDER_SERVICE_MAX_LEASE: u64 = 100_000;

/// A sequence's cache policy as the service suggests it (`cache` in a lease's answer):
/// hold up to `size` values, lease more below `max(rate × buffer_seconds, min)`.
/// `size` 0 means the sequence is strict; the client then uses its own defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct CachePolicy {
    pub size: u64,
    pub buffer_seconds: u64,
    pub min: u64,
}

/// The client's side of the policy, from the builder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Used for strict sequences, and before the first answer.
    pub strict_default: CachePolicy,
    /// The buffer held at the least, whatever the service suggests.
    pub buffer: Duration,
    /// The most values held for one sequence, however fast it is used: what bounds the
    /// values a client can discard (see `Planner::lease_count`).
    pub max_cached: u64,
    /// The most one lease asks for.
    pub max_lease: u64,
    pub growth: Growth,
}

#[derive(Debug)]
pub(crate) struct Planner {
    limits: Limits,
    suggested: Option<CachePolicy>,
    ttl: Option<Duration>,
    window: RateWindow,
    /// Samples `(time since start, values taken)` covering the last second.
    recent: VecDeque<(Duration, u64)>,
    recent_rate: f64,
    last_taken: u64,
    refills: RefillTimes,
    /// `max_lease`, lowered to `OLDER_SERVICE_MAX_LEASE` if the service refused a larger count.
    lease_ceiling: u64,
}

impl Planner {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            suggested: None,
            ttl: None,
            window: RateWindow::default(),
            recent: VecDeque::new(),
            recent_rate: 0.0,
            last_taken: 0,
            refills: RefillTimes::default(),
            lease_ceiling: limits.max_lease.max(1),
        }
    }

    pub fn growth(&self) -> Growth {
        self.limits.growth
    }

    /// A lease came back `took` after its request left.
    pub fn refilled(&mut self, took: Duration) {
        self.refills.observe(took);
    }

    /// The service refused a lease of `count` as too large: from now on ask for at most the
    /// highest documented limit below `count`, the service's (`MAX_LEASE`) or an older
    /// service's (`OLDER_SERVICE_MAX_LEASE`), so a refusal at the one leads to the other.
    /// False if neither is below both `count` and the current ceiling: nothing changes.
    pub fn refused_as_too_large(&mut self, count: u64) -> bool {
        let limit = [MAX_LEASE, OLDER_SERVICE_MAX_LEASE]
            .into_iter()
            .find(|&limit| count > limit && self.lease_ceiling > limit);
        if let Some(limit) = limit {
            self.lease_ceiling = limit;
        }
        limit.is_some()
    }

    /// The most one lease asks for: the old rule's fixed 100,000, or `max_lease`.
    fn ceiling(&self) -> u64 {
        match self.limits.growth {
            Growth::Fixed => OLDER_SERVICE_MAX_LEASE,
            _ => self.lease_ceiling,
        }
    }

    /// What the last lease said: the sequence's policy and how long a lease lasts.
    pub fn learn(&mut self, suggested: Option<CachePolicy>, ttl: Duration) {
        self.suggested = suggested;
        self.ttl = Some(ttl);
    }

    /// Records how many values were taken since the start, at `at` since the start.
    pub fn sample(&mut self, at: Duration, taken: u64) {
        let delta = taken.saturating_sub(self.last_taken);
        self.last_taken = self.last_taken.max(taken);
        self.window.record(at.as_secs(), delta);
        self.recent.push_back((at, self.last_taken));
        while self.recent.len() > 2 && at.saturating_sub(self.recent[1].0) >= Duration::from_secs(1)
        {
            self.recent.pop_front();
        }
        self.recent_rate = match (self.recent.front(), self.recent.back()) {
            (Some(&(t0, n0)), Some(&(t1, n1))) if t1 > t0 => {
                (n1 - n0) as f64 / (t1 - t0).as_secs_f64()
            }
            _ => 0.0,
        };
    }

    /// Values per second: the last minute's average, or the last second's if higher, so a
    /// burst is met at once and the buffer stays for a minute after it.
    pub fn rate(&self, at: Duration) -> f64 {
        self.window.per_second(at.as_secs()).max(self.recent_rate)
    }

    fn policy(&self) -> CachePolicy {
        self.suggested
            .filter(|policy| policy.size > 0)
            .unwrap_or(self.limits.strict_default)
    }

    /// Seconds of use to hold: the longer of the service's and the client's buffer (and under
    /// the adaptive rule of four refill times), but at most half a lease's life, or most
    /// values would expire unused.
    pub fn buffer_seconds(&self) -> u64 {
        let refills = match self.limits.growth {
            Growth::Fixed => 0,
            _ => self.refills.window().as_secs_f64().ceil() as u64,
        };
        let wanted = self
            .policy()
            .buffer_seconds
            .max(self.limits.buffer.as_secs())
            .max(refills);
        match self.ttl {
            Some(ttl) => wanted.min((ttl.as_secs() / 2).max(1)),
            None => wanted,
        }
    }

    /// Values in blocks that expire sooner than this do not count as held.
    pub fn horizon(&self) -> Duration {
        Duration::from_secs(self.buffer_seconds())
    }

    /// The rule at `rate`: the suggested size, or twice the buffer's worth if more (so a
    /// refill starts halfway), never beyond the client's cap.
    pub fn rule(&self, rate: f64) -> RefillRule {
        let policy = self.policy();
        let buffer_seconds = self.buffer_seconds();
        // `as` saturates: an absurd rate gives u64::MAX, then the cap.
        let wanted = (2.0 * rate * buffer_seconds as f64).ceil() as u64;
        let size = policy.size.max(wanted).min(self.limits.max_cached).max(1);
        RefillRule {
            size,
            buffer_seconds,
            min: policy.min.min(size),
        }
    }

    /// How many values to lease now, holding `held` at `rate`, with at least `floor` wanted
    /// (a prefetch); `None` while enough is held. The rule's mark is at most half its size,
    /// so a refill never draws a trickle.
    ///
    /// What is held never exceeds the rule's size, at most `max_cached`, but for a prefetch's
    /// floor: a lease tops up to it and no further. So the values a client can discard, when
    /// its leases expire unused or it shuts down, are at most `max_cached` (or the prefetch
    /// asked for) per sequence, however large its leases grew.
    pub fn lease_count(&self, held: u64, rate: f64, floor: u64) -> Option<u64> {
        let rule = self.rule(rate);
        let needed = rule.needs_refill(held, || rate) || held < floor;
        needed.then(|| {
            let top_up = rule.top_up(held).max(floor.saturating_sub(held));
            top_up.clamp(1, self.ceiling())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        strict_default: CachePolicy {
            size: 10_000,
            buffer_seconds: 120,
            min: 0,
        },
        buffer: Duration::from_secs(120),
        max_cached: 1_000_000,
        max_lease: OLDER_SERVICE_MAX_LEASE,
        growth: Growth::Adaptive,
    };
    const TEN_MINUTES: Duration = Duration::from_secs(600);

    fn suggesting(size: u64, buffer_seconds: u64, min: u64) -> Planner {
        let mut planner = Planner::new(LIMITS);
        let policy = CachePolicy {
            size,
            buffer_seconds,
            min,
        };
        planner.learn(Some(policy), TEN_MINUTES);
        planner
    }

    #[test]
    fn a_strict_sequence_is_cached_with_the_client_defaults() {
        let planner = suggesting(0, 0, 0);
        let rule = planner.rule(0.0);
        assert_eq!((rule.size, rule.buffer_seconds, rule.min), (10_000, 120, 0));
        assert_eq!(planner.lease_count(0, 0.0, 0), Some(10_000));
    }

    #[test]
    fn the_buffer_is_the_longer_of_the_services_and_the_clients_but_at_most_half_a_lease() {
        assert_eq!(suggesting(100, 60, 0).buffer_seconds(), 120);
        assert_eq!(suggesting(100, 300, 0).buffer_seconds(), 300);
        let mut short_leases = suggesting(100, 300, 0);
        short_leases.learn(None, Duration::from_secs(100));
        assert_eq!(short_leases.buffer_seconds(), 50);
        assert_eq!(short_leases.horizon(), Duration::from_secs(50));
    }

    #[test]
    fn at_1k_ids_per_second_what_is_held_at_the_mark_outlasts_a_60_second_outage() {
        let planner = suggesting(0, 0, 0);
        let mark = planner.rule(1000.0).mark(1000.0);
        assert!(mark >= 60_000 * 2, "mark {mark}");
        assert_eq!(planner.lease_count(mark, 1000.0, 0), None);
        assert!(planner.lease_count(mark - 1, 1000.0, 0).is_some());
    }

    #[test]
    fn the_size_follows_use_up_to_the_cap() {
        let planner = suggesting(10_000, 60, 0);
        assert_eq!(planner.rule(10.0).size, 10_000);
        assert_eq!(planner.rule(100.0).size, 24_000);
        assert_eq!(planner.rule(10_000.0).size, 1_000_000);
        assert_eq!(planner.rule(f64::INFINITY).size, 1_000_000);
    }

    #[test]
    fn a_refill_draws_at_least_half_the_size_and_at_most_one_lease() {
        let planner = suggesting(1000, 120, 1000);
        assert_eq!(planner.rule(0.0).mark(0.0), 500);
        assert_eq!(planner.lease_count(500, 0.0, 0), None);
        assert_eq!(planner.lease_count(499, 0.0, 0), Some(501));
        let busy = suggesting(0, 0, 0);
        assert_eq!(
            busy.lease_count(0, 10_000.0, 0),
            Some(OLDER_SERVICE_MAX_LEASE)
        );
    }

    #[test]
    fn an_empty_cache_always_refills_and_a_full_one_never_does() {
        let planner = suggesting(10_000, 120, 0);
        assert_eq!(planner.lease_count(0, 0.0, 0), Some(10_000));
        assert_eq!(planner.lease_count(1, 0.0, 0), None);
        assert_eq!(planner.lease_count(10_000, 1.0, 0), None);
    }

    #[test]
    fn a_prefetch_floor_is_leased_beyond_the_size() {
        let planner = suggesting(10_000, 120, 0);
        assert_eq!(
            planner.lease_count(10_000, 0.0, 250_000),
            Some(OLDER_SERVICE_MAX_LEASE)
        );
        assert_eq!(planner.lease_count(200_000, 0.0, 250_000), Some(50_000));
        assert_eq!(planner.lease_count(250_000, 0.0, 250_000), None);
    }

    #[test]
    fn the_rate_follows_a_burst_at_once_and_remembers_the_last_minute() {
        let mut planner = Planner::new(LIMITS);
        let ms = Duration::from_millis;
        planner.sample(ms(0), 0);
        planner.sample(ms(100), 1000);
        assert_eq!(planner.rate(ms(100)), 10_000.0);
        for tick in 2..=30 {
            planner.sample(ms(100 * tick), 1000);
        }
        let after = ms(3000);
        assert!(planner.rate(after) < 10_000.0);
        assert!(
            planner.rate(after) > 0.0,
            "the minute's average remembers the burst"
        );
    }

    fn with_limits(limits: Limits) -> Planner {
        let mut planner = Planner::new(limits);
        planner.learn(None, TEN_MINUTES);
        planner
    }

    #[test]
    fn a_slow_service_makes_the_adaptive_rule_hold_four_refill_times_and_the_fixed_one_not() {
        let short = Limits {
            buffer: Duration::from_secs(1),
            strict_default: CachePolicy {
                buffer_seconds: 1,
                ..LIMITS.strict_default
            },
            ..LIMITS
        };
        let mut adaptive = with_limits(short);
        let mut fixed = with_limits(Limits {
            growth: Growth::Fixed,
            ..short
        });
        for planner in [&mut adaptive, &mut fixed] {
            assert_eq!(planner.buffer_seconds(), 1);
            planner.refilled(Duration::from_millis(1500));
        }
        assert_eq!((adaptive.buffer_seconds(), fixed.buffer_seconds()), (6, 1));
        assert_eq!(adaptive.rule(10_000.0).size, 120_000);
        assert_eq!(fixed.rule(10_000.0).size, 20_000);
    }

    #[test]
    fn leases_grow_to_max_lease_under_the_adaptive_rule_and_stop_at_100k_under_the_fixed() {
        let big = Limits {
            max_cached: 8_000_000,
            max_lease: 2_000_000,
            ..LIMITS
        };
        let adaptive = with_limits(big);
        let fixed = with_limits(Limits {
            growth: Growth::Fixed,
            ..big
        });
        let fast = 10_000_000.0;
        assert_eq!(adaptive.lease_count(0, fast, 0), Some(2_000_000));
        assert_eq!(
            adaptive.lease_count(4_000_000, fast, 0),
            None,
            "half of max_cached held"
        );
        assert_eq!(fixed.lease_count(0, fast, 0), Some(OLDER_SERVICE_MAX_LEASE));
        assert_eq!(
            adaptive.lease_count(0, 0.0, 0),
            Some(10_000),
            "idle: the base size"
        );
    }

    #[test]
    fn a_refusal_of_a_large_count_brings_leases_back_to_the_services_limit_once() {
        let mut planner = with_limits(Limits {
            max_lease: 500_000,
            ..LIMITS
        });
        assert_eq!(planner.lease_count(0, 1e9, 0), Some(500_000));
        assert!(
            !planner.refused_as_too_large(OLDER_SERVICE_MAX_LEASE),
            "not a larger count"
        );
        assert!(planner.refused_as_too_large(500_000));
        assert_eq!(
            planner.lease_count(0, 1e9, 0),
            Some(OLDER_SERVICE_MAX_LEASE)
        );
        assert!(!planner.refused_as_too_large(500_000), "lowered already");
    }

    /// The defaults against a service at its limit: a cold start at 10 M ids/s leases what
    /// `max_cached` holds in one lease; an older service's refusal brings leases to 100,000.
    #[test]
    fn by_default_one_lease_fills_max_cached_and_an_older_services_refusal_brings_100k() {
        let defaults = crate::builder::ClientBuilder::default_options().limits;
        assert_eq!(
            (defaults.max_lease, defaults.max_cached),
            (MAX_LEASE, 4_000_000)
        );
        let mut planner = with_limits(defaults);
        assert_eq!(planner.lease_count(0, 1e7, 0), Some(4_000_000));
        assert_eq!(planner.lease_count(1_999_999, 1e7, 0), Some(2_000_001));
        assert_eq!(planner.lease_count(2_000_000, 1e7, 0), None, "half held");
        assert!(planner.refused_as_too_large(4_000_000));
        assert_eq!(
            planner.lease_count(0, 1e7, 0),
            Some(OLDER_SERVICE_MAX_LEASE)
        );
    }

    /// A client told to lease beyond the service's limit comes down to it at the first
    /// refusal, and to an older service's at a second.
    #[test]
    fn refusals_bring_leases_down_to_the_services_limit_then_an_older_services() {
        let mut planner = with_limits(Limits {
            max_lease: 20_000_000,
            max_cached: 40_000_000,
            ..LIMITS
        });
        assert_eq!(planner.lease_count(0, 1e9, 0), Some(20_000_000));
        assert!(planner.refused_as_too_large(20_000_000));
        assert_eq!(planner.lease_count(0, 1e9, 0), Some(MAX_LEASE));
        assert!(planner.refused_as_too_large(MAX_LEASE));
        assert_eq!(
            planner.lease_count(0, 1e9, 0),
            Some(OLDER_SERVICE_MAX_LEASE)
        );
        assert!(!planner.refused_as_too_large(OLDER_SERVICE_MAX_LEASE));
    }

    /// What a client can discard is what it holds: never more than `max_cached` (or a
    /// prefetch's floor), whatever the rate, the refill time and the lease size.
    #[test]
    fn what_is_held_never_exceeds_max_cached_or_the_prefetch_floor_however_leases_grow() {
        for growth in [Growth::Adaptive, Growth::Fixed] {
            for max_lease in [1_000, OLDER_SERVICE_MAX_LEASE, 3_000_000, MAX_LEASE] {
                let mut planner = with_limits(Limits {
                    max_lease,
                    growth,
                    ..LIMITS
                });
                planner.refilled(Duration::from_secs(20));
                for rate in [0.0, 1.0, 999.0, 1e5, 1e7, f64::INFINITY] {
                    for floor in [0, 5_000, 2_000_000] {
                        let mut held = 0;
                        while let Some(count) = planner.lease_count(held, rate, floor) {
                            held += count;
                        }
                        let bound = LIMITS.max_cached.max(floor);
                        assert!(
                            held <= bound,
                            "{growth:?} {max_lease} {rate} {floor}: {held}"
                        );
                    }
                }
            }
        }
    }
}
