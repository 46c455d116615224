//! How a Snowflake id is laid out: from the top, milliseconds since the epoch, the worker id,
//! the sequence within the millisecond; the sign bit stays 0 so ids are positive `i64`s.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    timestamp_bits: u8,
    worker_bits: u8,
    sequence_bits: u8,
    epoch_ms: i64,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LayoutError {
    #[error("a Snowflake layout is three bit counts, timestamp/worker/sequence, e.g. 41/10/12; got {0:?}")]
    Malformed(String),
    #[error(
        "timestamp, worker and sequence bits must each be at least 1 and add up to at most 63 \
         (worker at most 16, sequence at most 22); got {0}/{1}/{2}"
    )]
    OutOfBounds(u8, u8, u8),
}

/// What an id says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnowflakeParts {
    pub timestamp_ms: i64,
    pub worker_id: u32,
    pub sequence: u32,
}

impl Layout {
    /// 41/10/12 bits from 2020-01-01T00:00:00Z: 69 years, 1,024 workers, 4,096 ids per
    /// millisecond per worker.
    pub const DEFAULT: Layout = Layout {
        timestamp_bits: 41,
        worker_bits: 10,
        sequence_bits: 12,
        epoch_ms: 1_577_836_800_000,
    };

    pub fn new(
        timestamp_bits: u8,
        worker_bits: u8,
        sequence_bits: u8,
        epoch_ms: i64,
    ) -> Result<Self, LayoutError> {
        let bits = [timestamp_bits, worker_bits, sequence_bits];
        if bits.contains(&0)
            || bits.iter().map(|&b| u32::from(b)).sum::<u32>() > 63
            || worker_bits > 16
            || sequence_bits > 22
        {
            return Err(LayoutError::OutOfBounds(
                timestamp_bits,
                worker_bits,
                sequence_bits,
            ));
        }
        Ok(Self {
            timestamp_bits,
            worker_bits,
            sequence_bits,
            epoch_ms,
        })
    }

    /// `"41/10/12"` with the given epoch.
    pub fn parse(bits: &str, epoch_ms: i64) -> Result<Self, LayoutError> {
        let malformed = || LayoutError::Malformed(bits.to_owned());
        let counts: Vec<u8> = bits
            .split('/')
            .map(|b| b.trim().parse().map_err(|_| malformed()))
            .collect::<Result<_, _>>()?;
        match counts[..] {
            [t, w, s] => Self::new(t, w, s, epoch_ms),
            _ => Err(malformed()),
        }
    }

    pub fn bits(&self) -> (u8, u8, u8) {
        (self.timestamp_bits, self.worker_bits, self.sequence_bits)
    }

    pub const fn epoch_ms(&self) -> i64 {
        self.epoch_ms
    }

    /// How many worker ids there are.
    pub fn worker_ids(&self) -> u32 {
        1 << self.worker_bits
    }

    pub fn max_sequence(&self) -> u32 {
        (1 << self.sequence_bits) - 1
    }

    /// The id for these parts; None when the millisecond is before the epoch or past the
    /// layout's last one.
    pub fn compose(&self, timestamp_ms: i64, worker_id: u32, sequence: u32) -> Option<i64> {
        let since_epoch = timestamp_ms.checked_sub(self.epoch_ms)?;
        if since_epoch < 0 || since_epoch >= 1 << self.timestamp_bits {
            return None;
        }
        debug_assert!(worker_id < self.worker_ids() && sequence <= self.max_sequence());
        Some(
            (since_epoch << (self.worker_bits + self.sequence_bits))
                | (i64::from(worker_id) << self.sequence_bits)
                | i64::from(sequence),
        )
    }

    /// The parts of `id`; None when it cannot be an id of this layout.
    pub fn decompose(&self, id: i64) -> Option<SnowflakeParts> {
        let total = self.timestamp_bits + self.worker_bits + self.sequence_bits;
        if id < 0 || (total < 63 && id >> total != 0) {
            return None;
        }
        let mask = |bits: u8| (1i64 << bits) - 1;
        Some(SnowflakeParts {
            timestamp_ms: self.epoch_ms + (id >> (self.worker_bits + self.sequence_bits)),
            worker_id: ((id >> self.sequence_bits) & mask(self.worker_bits)) as u32,
            sequence: (id & mask(self.sequence_bits)) as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_decomposes_into_what_composed_it() {
        let layout = Layout::DEFAULT;
        let ms = layout.epoch_ms() + 123_456_789;
        let id = layout.compose(ms, 1023, 4095).unwrap();
        assert_eq!(
            layout.decompose(id),
            Some(SnowflakeParts {
                timestamp_ms: ms,
                worker_id: 1023,
                sequence: 4095
            })
        );
        assert!(layout.compose(ms, 0, 1).unwrap() > layout.compose(ms - 1, 1023, 4095).unwrap());
    }

    #[test]
    fn milliseconds_outside_the_layout_make_no_id() {
        let layout = Layout::new(10, 1, 1, 1000).unwrap();
        assert_eq!(layout.compose(999, 0, 0), None);
        assert_eq!(layout.compose(1000 + 1023, 1, 1), Some((1023 << 2) | 3));
        assert_eq!(layout.compose(1000 + 1024, 0, 0), None);
        assert_eq!(layout.decompose(1 << 12), None);
        assert_eq!(layout.decompose(-1), None);
    }

    #[test]
    fn layouts_are_parsed_and_bounded() {
        assert_eq!(
            Layout::parse("41/10/12", Layout::DEFAULT.epoch_ms()),
            Ok(Layout::DEFAULT)
        );
        assert!(matches!(
            Layout::parse("41/10", 0),
            Err(LayoutError::Malformed(_))
        ));
        assert!(matches!(
            Layout::parse("41/x/12", 0),
            Err(LayoutError::Malformed(_))
        ));
        assert!(matches!(
            Layout::parse("42/10/12", 0),
            Err(LayoutError::OutOfBounds(..))
        ));
        assert!(matches!(
            Layout::parse("41/0/22", 0),
            Err(LayoutError::OutOfBounds(..))
        ));
        assert!(matches!(
            Layout::parse("30/17/12", 0),
            Err(LayoutError::OutOfBounds(..))
        ));
    }
}
