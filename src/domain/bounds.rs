//! Range bounds, increments and start values, checked before anything reaches PostgreSQL.

use serde_json::Number;

/// `[min, max]`, both inclusive, `min <= max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeBounds {
    min: i64,
    max: i64,
}

/// A non-zero step; negative means a descending sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Increment(i64);

/// Everything needed to create a sequence's first range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequenceSpec {
    pub bounds: RangeBounds,
    pub increment: Increment,
    pub start: i64,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RangeError {
    #[error("`{0}` must be a whole number between -9223372036854775808 and 9223372036854775807")]
    NotAnInteger(&'static str),
    #[error("`min` ({min}) must be less than `max` ({max}): a range holds at least two values")]
    MinNotBelowMax { min: i64, max: i64 },
    #[error("`increment` must not be 0")]
    ZeroIncrement,
    #[error("`increment` must be between -9223372036854775807 and 9223372036854775807")]
    IncrementTooLarge,
    #[error("`start` ({start}) must lie within [min, max] = [{min}, {max}]")]
    StartOutside { start: i64, min: i64, max: i64 },
}

/// Largest magnitude up to which every whole f64 is exact.
const EXACT_F64: f64 = 9_007_199_254_740_992.0;

/// Reads a JSON number that must be an i64; fractions and out-of-range values are refused.
/// A whole number written with a fraction (`5.0`) is an integer to JSON Schema, so it is
/// accepted where a float can hold it exactly.
pub fn whole_number(field: &'static str, value: &Number) -> Result<i64, RangeError> {
    value
        .as_i64()
        .or_else(|| {
            let float = value.as_f64()?;
            (float.fract() == 0.0 && float.abs() <= EXACT_F64).then_some(float as i64)
        })
        .ok_or(RangeError::NotAnInteger(field))
}

impl RangeBounds {
    pub fn parse(min: &Number, max: &Number) -> Result<Self, RangeError> {
        let (min, max) = (whole_number("min", min)?, whole_number("max", max)?);
        // A PostgreSQL sequence needs MINVALUE < MAXVALUE.
        if min >= max {
            return Err(RangeError::MinNotBelowMax { min, max });
        }
        Ok(Self { min, max })
    }

    pub fn min(&self) -> i64 {
        self.min
    }

    pub fn max(&self) -> i64 {
        self.max
    }

    /// Where a range starts when nothing else is said: its low end going up, its high end
    /// going down.
    pub fn natural_start(&self, increment: Increment) -> i64 {
        if increment.is_ascending() {
            self.min
        } else {
            self.max
        }
    }
}

impl Increment {
    pub const ONE: Increment = Increment(1);

    pub fn parse(value: &Number) -> Result<Self, RangeError> {
        Self::new(whole_number("increment", value)?)
    }

    pub fn new(step: i64) -> Result<Self, RangeError> {
        match step {
            0 => Err(RangeError::ZeroIncrement),
            // Its magnitude must fit in an i64 (the vend statement negates it).
            i64::MIN => Err(RangeError::IncrementTooLarge),
            step => Ok(Self(step)),
        }
    }

    pub fn get(&self) -> i64 {
        self.0
    }

    pub fn is_ascending(&self) -> bool {
        self.0 > 0
    }
}

impl SequenceSpec {
    pub fn parse(
        min: &Number,
        max: &Number,
        start: Option<&Number>,
        increment: Option<&Number>,
    ) -> Result<Self, RangeError> {
        let bounds = RangeBounds::parse(min, max)?;
        let increment = increment
            .map(Increment::parse)
            .transpose()?
            .unwrap_or(Increment::ONE);
        Self::starting(bounds, increment, start)
    }

    /// `parse`, with PostgreSQL's defaults for a missing bound (as `CREATE SEQUENCE` has
    /// them): 1 to 2^63−1 going up, −2^63 to −1 going down.
    pub fn parse_with_defaults(
        min: Option<&Number>,
        max: Option<&Number>,
        start: Option<&Number>,
        increment: Option<&Number>,
    ) -> Result<Self, RangeError> {
        let increment = increment
            .map(Increment::parse)
            .transpose()?
            .unwrap_or(Increment::ONE);
        let (default_min, default_max) = if increment.is_ascending() {
            (1, i64::MAX)
        } else {
            (i64::MIN, -1)
        };
        let bound = |field, value: Option<&Number>, default| {
            value.map_or(Ok(default), |value| whole_number(field, value))
        };
        let (min, max) = (
            bound("min", min, default_min)?,
            bound("max", max, default_max)?,
        );
        if min >= max {
            return Err(RangeError::MinNotBelowMax { min, max });
        }
        Self::starting(RangeBounds { min, max }, increment, start)
    }

    fn starting(
        bounds: RangeBounds,
        increment: Increment,
        start: Option<&Number>,
    ) -> Result<Self, RangeError> {
        let start = match start {
            Some(raw) => whole_number("start", raw)?,
            None => bounds.natural_start(increment),
        };
        if !(bounds.min..=bounds.max).contains(&start) {
            return Err(RangeError::StartOutside {
                start,
                min: bounds.min,
                max: bounds.max,
            });
        }
        Ok(Self {
            bounds,
            increment,
            start,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: serde_json::Value) -> Number {
        match v {
            serde_json::Value::Number(n) => n,
            other => panic!("not a number: {other}"),
        }
    }

    #[test]
    fn start_defaults_to_the_end_the_increment_moves_away_from() {
        let up = SequenceSpec::parse(&n(1.into()), &n(9.into()), None, None).unwrap();
        assert_eq!((up.start, up.increment), (1, Increment::ONE));
        let down = SequenceSpec::parse(&n(1.into()), &n(9.into()), None, Some(&n((-2).into())));
        assert_eq!(down.unwrap().start, 9);
    }

    #[test]
    fn refuses_what_postgresql_would_refuse_or_misread() {
        let (one, nine) = (n(1.into()), n(9.into()));
        assert_eq!(
            RangeBounds::parse(&nine, &one),
            Err(RangeError::MinNotBelowMax { min: 9, max: 1 })
        );
        assert_eq!(
            RangeBounds::parse(&one, &one),
            Err(RangeError::MinNotBelowMax { min: 1, max: 1 })
        );
        assert_eq!(
            Increment::parse(&n(0.into())),
            Err(RangeError::ZeroIncrement)
        );
        assert_eq!(
            Increment::parse(&n(i64::MIN.into())),
            Err(RangeError::IncrementTooLarge)
        );
        assert_eq!(
            SequenceSpec::parse(&one, &nine, Some(&n(10.into())), None),
            Err(RangeError::StartOutside {
                start: 10,
                min: 1,
                max: 9
            })
        );
        let too_big: Number = serde_json::from_str("9223372036854775808").unwrap();
        assert_eq!(
            RangeBounds::parse(&one, &too_big),
            Err(RangeError::NotAnInteger("max"))
        );
        let fraction: Number = serde_json::from_str("1.5").unwrap();
        let inexact: Number = serde_json::from_str("9007199254740993.0").unwrap();
        assert_eq!(
            RangeBounds::parse(&one, &inexact),
            Err(RangeError::NotAnInteger("max"))
        );
        assert_eq!(
            RangeBounds::parse(&fraction, &nine),
            Err(RangeError::NotAnInteger("min"))
        );
    }

    #[test]
    fn missing_bounds_are_postgresql_sequence_defaults() {
        let up = SequenceSpec::parse_with_defaults(None, None, None, None).unwrap();
        assert_eq!(
            (up.bounds.min(), up.bounds.max(), up.start),
            (1, i64::MAX, 1)
        );
        let step = n((-2).into());
        let down = SequenceSpec::parse_with_defaults(None, None, None, Some(&step)).unwrap();
        assert_eq!(
            (down.bounds.min(), down.bounds.max(), down.start),
            (i64::MIN, -1, -1)
        );
        let zero = n(0.into());
        assert_eq!(
            SequenceSpec::parse_with_defaults(None, Some(&zero), None, None),
            Err(RangeError::MinNotBelowMax { min: 1, max: 0 })
        );
    }

    #[test]
    fn a_whole_number_written_with_a_fraction_is_an_integer() {
        let five: Number = serde_json::from_str("5.0").unwrap();
        assert_eq!(whole_number("min", &five), Ok(5));
    }

    #[test]
    fn accepts_the_whole_i64_span() {
        let bounds = RangeBounds::parse(&n(i64::MIN.into()), &n(i64::MAX.into())).unwrap();
        assert_eq!((bounds.min(), bounds.max()), (i64::MIN, i64::MAX));
    }
}
