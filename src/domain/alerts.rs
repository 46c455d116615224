//! A sequence's alert thresholds: warn while few values remain, or while the sequence will
//! run out within a few days at the last day's rate. Getting a new range from a carrier takes
//! days, so the defaults speak up early.

use serde::Serialize;

use super::Usage;

/// Default for `remaining_below`: this fraction of the active and pending ranges' capacity
/// (at least 1).
pub const DEFAULT_REMAINING_FRACTION: f64 = 0.1;
/// Default for `days_left_below`.
pub const DEFAULT_DAYS_LEFT: f64 = 14.0;
/// Largest `days_left_below`: ten years.
pub const MAX_DAYS_LEFT: f64 = 3650.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    RemainingBelow,
    DaysLeftBelow,
}

impl AlertKind {
    pub const ALL: [Self; 2] = [Self::RemainingBelow, Self::DaysLeftBelow];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::RemainingBelow => "remaining_below",
            Self::DaysLeftBelow => "days_left_below",
        }
    }

    /// As stored in `alerts_raised`; unknown kinds (from a newer seqvend) are skipped.
    pub fn from_db(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == raw)
    }
}

/// `None` is the default; 0 turns an alert off.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AlertThresholds {
    remaining_below: Option<u64>,
    days_left_below: Option<f64>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AlertsError {
    #[error("`alerts.remaining_below` must be between 0 (off) and {}", i64::MAX)]
    RemainingTooLarge,
    #[error(
        "`alerts.days_left_below` must be a number of days between 0 (off) and {MAX_DAYS_LEFT}"
    )]
    DaysOutOfBounds,
}

/// Why an alert is raised, for its event and log line.
#[derive(Debug, Clone, PartialEq)]
pub struct Crossing {
    pub kind: AlertKind,
    pub detail: String,
}

impl AlertThresholds {
    pub fn parse(
        remaining_below: Option<u64>,
        days_left_below: Option<f64>,
    ) -> Result<Self, AlertsError> {
        if remaining_below.is_some_and(|n| i64::try_from(n).is_err()) {
            return Err(AlertsError::RemainingTooLarge);
        }
        if days_left_below.is_some_and(|d| !(0.0..=MAX_DAYS_LEFT).contains(&d)) {
            return Err(AlertsError::DaysOutOfBounds);
        }
        Ok(Self {
            remaining_below,
            days_left_below,
        })
    }

    /// As stored: trusted, since the database's checks mirror `parse`'s.
    pub fn from_db(remaining_below: Option<i64>, days_left_below: Option<f64>) -> Self {
        Self {
            remaining_below: remaining_below.map(|n| n.max(0) as u64),
            days_left_below,
        }
    }

    pub fn stored(&self) -> (Option<i64>, Option<f64>) {
        (self.remaining_below.map(|n| n as i64), self.days_left_below)
    }

    /// The `remaining_below` threshold in force for a sequence whose active and pending
    /// ranges hold `capacity` values. The default is at least 1, so that a sequence that ran
    /// out (nothing in play) is alerted on too.
    pub fn remaining_below(&self, capacity: u128) -> u128 {
        match self.remaining_below {
            Some(n) => u128::from(n),
            None => ((capacity as f64 * DEFAULT_REMAINING_FRACTION).ceil() as u128).max(1),
        }
    }

    pub fn days_left_below(&self) -> f64 {
        self.days_left_below.unwrap_or(DEFAULT_DAYS_LEFT)
    }

    /// The alerts a sequence's state crosses, in `AlertKind` order.
    pub fn crossed(&self, remaining: u128, capacity: u128, usage: &Usage) -> Vec<Crossing> {
        let mut crossed = Vec::new();
        let floor = self.remaining_below(capacity);
        if remaining < floor {
            crossed.push(Crossing {
                kind: AlertKind::RemainingBelow,
                detail: format!("{remaining} values left, below the threshold of {floor}"),
            });
        }
        let days = self.days_left_below();
        if let Some(left) = usage.seconds_left(remaining) {
            let days_left = left / 86_400.0;
            if days_left < days {
                crossed.push(Crossing {
                    kind: AlertKind::DaysLeftBelow,
                    detail: format!(
                        "{days_left:.1} days left at {:.3} values/s, below the threshold of {days} days",
                        usage.per_second_24h
                    ),
                });
            }
        }
        crossed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::UsageStart;

    fn usage(per_second: f64) -> Usage {
        let start = UsageStart {
            used: 0,
            span_seconds: 100.0,
        };
        Usage::from_samples((per_second * 100.0) as u128, Some(start), Some(start))
    }

    fn kinds(crossed: &[Crossing]) -> Vec<AlertKind> {
        crossed.iter().map(|c| c.kind).collect()
    }

    #[test]
    fn the_defaults_are_a_tenth_of_the_capacity_and_fourteen_days() {
        let defaults = AlertThresholds::default();
        assert_eq!(defaults.remaining_below(1000), 100);
        assert_eq!(defaults.remaining_below(1001), 101);
        assert_eq!(
            defaults.remaining_below(0),
            1,
            "an exhausted sequence is alerted on"
        );
        assert_eq!(defaults.days_left_below(), 14.0);
        assert!(kinds(&defaults.crossed(100, 1000, &usage(0.0))).is_empty());
        assert_eq!(
            kinds(&defaults.crossed(99, 1000, &usage(0.0))),
            [AlertKind::RemainingBelow]
        );
    }

    #[test]
    fn days_left_counts_only_while_the_sequence_is_used() {
        let thresholds = AlertThresholds::parse(Some(0), Some(1.0)).unwrap();
        // 1 value a second: 86,400 values last exactly a day, one fewer is under it.
        assert!(kinds(&thresholds.crossed(86_400, 10_000_000, &usage(1.0))).is_empty());
        assert_eq!(
            kinds(&thresholds.crossed(86_399, 10_000_000, &usage(1.0))),
            [AlertKind::DaysLeftBelow]
        );
        assert!(kinds(&thresholds.crossed(10, 10_000_000, &usage(0.0))).is_empty());
    }

    #[test]
    fn zero_turns_an_alert_off() {
        let off = AlertThresholds::parse(Some(0), Some(0.0)).unwrap();
        assert!(off.crossed(0, 1000, &usage(50.0)).is_empty());
    }

    #[test]
    fn thresholds_out_of_bounds_are_refused() {
        assert_eq!(
            AlertThresholds::parse(Some(u64::MAX), None),
            Err(AlertsError::RemainingTooLarge)
        );
        for days in [-1.0, 3650.5, f64::NAN, f64::INFINITY] {
            assert_eq!(
                AlertThresholds::parse(None, Some(days)),
                Err(AlertsError::DaysOutOfBounds),
                "{days}"
            );
        }
        assert!(AlertThresholds::parse(Some(i64::MAX as u64), Some(3650.0)).is_ok());
    }
}
