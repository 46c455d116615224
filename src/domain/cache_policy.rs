//! A sequence's cache policy: strict (every value drawn on the request path), or cached in
//! blocks that each instance holds in memory.

use seqvend_blocks::RefillRule;

/// Most values one instance may hold per sequence: also the most one lease draws.
pub const MAX_CACHE_SIZE: u64 = 100_000;
/// Most values one block lease may ask for (`POST …/leases?count=N`): a lease is drawn as
/// runs in constant time, so its size costs nothing but where its block is declined, and
/// there the value-by-value draw stops at 100,000 (migration 20261126130000).
pub const MAX_LEASE_COUNT: u64 = 10_000_000;
/// Longest buffer a policy may ask for.
pub const MAX_BUFFER_SECONDS: u64 = 3600;
/// Buffer when none is given: half a minute of use, enough to ride out a PostgreSQL restart
/// or a failover without a request waiting.
pub const DEFAULT_BUFFER_SECONDS: u64 = 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePolicy {
    rule: RefillRule,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CachePolicyError {
    #[error("`cache.size` must be between 0 (strict) and {MAX_CACHE_SIZE}")]
    SizeTooLarge,
    #[error("`cache.buffer_seconds` must be between 0 and {MAX_BUFFER_SECONDS}")]
    BufferTooLong,
    #[error("`cache.min` ({min}) must not exceed `cache.size` ({size})")]
    MinAboveSize { min: u64, size: u64 },
    #[error("a strict sequence (`cache.size` 0) takes no `buffer_seconds` or `min`")]
    StrictWithSettings,
}

impl CachePolicy {
    pub const STRICT: Self = Self {
        rule: RefillRule {
            size: 0,
            buffer_seconds: 0,
            min: 0,
        },
    };

    /// Checks a requested policy and fills in defaults: `buffer_seconds` 30, and `min` a
    /// fifth of `size`, so that even at a trickle a refill starts when 80% is used, not when
    /// a request finds the cache empty.
    pub fn parse(
        size: u64,
        buffer_seconds: Option<u64>,
        min: Option<u64>,
    ) -> Result<Self, CachePolicyError> {
        if size == 0 {
            return match (buffer_seconds, min) {
                (None | Some(0), None | Some(0)) => Ok(Self::STRICT),
                _ => Err(CachePolicyError::StrictWithSettings),
            };
        }
        if size > MAX_CACHE_SIZE {
            return Err(CachePolicyError::SizeTooLarge);
        }
        let buffer_seconds = buffer_seconds.unwrap_or(DEFAULT_BUFFER_SECONDS);
        if buffer_seconds > MAX_BUFFER_SECONDS {
            return Err(CachePolicyError::BufferTooLong);
        }
        let min = min.unwrap_or(size / 5);
        if min > size {
            return Err(CachePolicyError::MinAboveSize { min, size });
        }
        Ok(Self {
            rule: RefillRule {
                size,
                buffer_seconds,
                min,
            },
        })
    }

    /// As stored: trusted, since the database's checks mirror `parse`'s.
    pub fn from_db(size: i64, buffer_seconds: i32, min: i64) -> Self {
        Self {
            rule: RefillRule {
                size: size.max(0) as u64,
                buffer_seconds: buffer_seconds.max(0) as u64,
                min: min.max(0) as u64,
            },
        }
    }

    pub fn is_strict(&self) -> bool {
        self.rule.size == 0
    }

    pub fn rule(&self) -> RefillRule {
        self.rule
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_alone_gets_the_default_buffer_and_a_fifth_as_min() {
        let rule = CachePolicy::parse(1000, None, None).unwrap().rule();
        assert_eq!((rule.size, rule.buffer_seconds, rule.min), (1000, 30, 200));
    }

    #[test]
    fn size_zero_is_strict_and_takes_no_other_settings() {
        assert!(CachePolicy::parse(0, None, None).unwrap().is_strict());
        assert!(CachePolicy::parse(0, Some(0), Some(0)).unwrap().is_strict());
        assert_eq!(
            CachePolicy::parse(0, Some(5), None),
            Err(CachePolicyError::StrictWithSettings)
        );
    }

    #[test]
    fn out_of_bounds_policies_are_refused() {
        assert_eq!(
            CachePolicy::parse(100_001, None, None),
            Err(CachePolicyError::SizeTooLarge)
        );
        assert!(CachePolicy::parse(100_000, Some(3600), Some(100_000)).is_ok());
        assert_eq!(
            CachePolicy::parse(10, Some(3601), None),
            Err(CachePolicyError::BufferTooLong)
        );
        assert_eq!(
            CachePolicy::parse(10, None, Some(11)),
            Err(CachePolicyError::MinAboveSize { min: 11, size: 10 })
        );
    }
}
