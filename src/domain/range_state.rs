//! What a range would vend next and how much it has left, from its PostgreSQL sequence's
//! `last_value`. Counts use i128/u128: a full i64 range holds 2^64 values.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SequenceStatus {
    Active,
    Exhausted,
    Retired,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RangeStatus {
    Pending,
    Active,
    Exhausted,
}

impl SequenceStatus {
    pub fn from_db(raw: &str) -> Self {
        match raw {
            "active" => Self::Active,
            "exhausted" => Self::Exhausted,
            "retired" => Self::Retired,
            other => unreachable!("status {other:?} is excluded by a CHECK constraint"),
        }
    }
}

impl RangeStatus {
    pub fn as_db(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Active => "active",
            Self::Exhausted => "exhausted",
        }
    }

    pub fn from_db(raw: &str) -> Self {
        match raw {
            "pending" => Self::Pending,
            "active" => Self::Active,
            "exhausted" => Self::Exhausted,
            other => unreachable!("status {other:?} is excluded by a CHECK constraint"),
        }
    }
}

/// A range as stored, plus the last value taken from it: the furthest of its sequence's
/// position and its high-water mark (None until the first draw).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeState {
    pub min: i64,
    pub max: i64,
    pub start: i64,
    pub increment: i64,
    pub status: RangeStatus,
    pub last_value: Option<i64>,
}

impl RangeState {
    /// The value the range would vend next, or None when it has nothing left.
    pub fn next(&self) -> Option<i64> {
        if self.status == RangeStatus::Exhausted {
            return None;
        }
        let candidate = match self.last_value {
            None => i128::from(self.start),
            Some(last) => i128::from(last) + i128::from(self.increment),
        };
        let inside = (i128::from(self.min)..=i128::from(self.max)).contains(&candidate);
        inside.then_some(candidate as i64)
    }

    /// How many values the range can still vend.
    pub fn remaining(&self) -> u128 {
        let Some(next) = self.next() else { return 0 };
        let step = self.increment.unsigned_abs() as u128;
        let distance = if self.increment > 0 {
            (i128::from(self.max) - i128::from(next)) as u128
        } else {
            (i128::from(next) - i128::from(self.min)) as u128
        };
        distance / step + 1
    }

    /// How many values the range held when it was created.
    pub fn capacity(&self) -> u128 {
        RangeState {
            last_value: None,
            status: RangeStatus::Pending,
            ..*self
        }
        .remaining()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(min: i64, max: i64, start: i64, increment: i64, last: Option<i64>) -> RangeState {
        RangeState {
            min,
            max,
            start,
            increment,
            status: RangeStatus::Active,
            last_value: last,
        }
    }

    #[test]
    fn an_untouched_range_offers_its_start() {
        let r = range(10, 19, 10, 1, None);
        assert_eq!((r.next(), r.remaining(), r.capacity()), (Some(10), 10, 10));
    }

    #[test]
    fn a_used_range_offers_the_value_after_its_last() {
        let r = range(10, 19, 10, 3, Some(13));
        assert_eq!((r.next(), r.remaining()), (Some(16), 2));
        assert_eq!(r.capacity(), 4);
    }

    #[test]
    fn a_descending_range_counts_down_to_its_minimum() {
        let r = range(1, 10, 10, -4, Some(6));
        assert_eq!((r.next(), r.remaining()), (Some(2), 1));
        let r = range(3, 20, 20, -2, Some(11));
        assert_eq!((r.next(), r.remaining(), r.capacity()), (Some(9), 4, 9));
    }

    #[test]
    fn a_range_at_its_end_offers_nothing() {
        assert_eq!(range(1, 5, 1, 1, Some(5)).next(), None);
        assert_eq!(range(1, 5, 1, 1, Some(5)).remaining(), 0);
        assert_eq!(range(i64::MIN, i64::MAX, 0, 1, Some(i64::MAX)).next(), None);
        let exhausted = RangeState {
            status: RangeStatus::Exhausted,
            ..range(1, 5, 1, 1, None)
        };
        assert_eq!(exhausted.remaining(), 0);
        assert_eq!(exhausted.capacity(), 5, "what it held, not what is left");
    }

    #[test]
    fn the_full_i64_span_holds_two_to_the_64_values() {
        let r = range(i64::MIN, i64::MAX, i64::MIN, 1, None);
        assert_eq!(r.remaining(), 1u128 << 64);
    }
}
