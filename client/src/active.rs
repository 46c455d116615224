//! The block values are being taken from right now: the fast path's only shared state.
//!
//! A take is one `fetch_add` on `taken`; the indices it returns below `len` belong to that
//! caller alone. Closing a block swaps `taken` past any index (`CLOSED`) instead of raising a
//! flag beside it: a flag read before the `fetch_add` could race with the close, and a value
//! would be handed out after it was counted as discarded. The swap returns exactly how many
//! values were taken before it, so what was used and what was discarded add up.
//!
//! A take first reads the clock: past `last_take` (the lease's fenced deadline less the
//! expiry margin) it claims nothing, whether or not the ticker has closed the block yet. The
//! ticker runs on the application's runtime, which a hot loop can starve; the take cannot be
//! starved. It reads the coarse clock, and the precise one only within a second of the last
//! take (`clock`): the precise read would cost more than the rest of the take.
//!
//! The value at an index is computed here rather than with `Block::value_at`, which
//! recomputes the block's length with an i128 division on every call: twice the cost of
//! everything else on the fast path. The index is checked against the length computed once.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use seqvend_blocks::Block;

use crate::clock::{self, Now};

/// Far beyond any block's length (a lease holds at most 10,000,000 values, queued in pieces
/// of 65,536), and far enough
/// below `u64::MAX` that takes on a closed block never wrap.
const CLOSED: u64 = 1 << 62;

#[derive(Debug)]
pub(crate) struct ActiveBlock {
    first: i64,
    increment: i64,
    len: u64,
    taken: AtomicU64,
    /// After this, no value of the block may be handed out.
    deadline: Instant,
    /// The last instant a take may claim a value: `deadline` less the expiry margin.
    last_take: Instant,
    /// Below this coarse clock reading, `last_take` is surely a second away or more.
    coarse_until: u64,
}

impl ActiveBlock {
    /// A block whose values may be taken until `margin` before `deadline`.
    pub fn new(block: Block, deadline: Instant, margin: Duration) -> Self {
        let last_take = deadline.checked_sub(margin).unwrap_or(deadline);
        Self {
            first: block.first(),
            increment: block.increment(),
            len: block.len().min(CLOSED),
            taken: AtomicU64::new(0),
            deadline,
            last_take,
            coarse_until: clock::coarse_until(last_take),
        }
    }

    /// A block with no values, where a sequence starts.
    pub fn empty(now: Instant) -> Self {
        Self {
            first: 0,
            increment: 1,
            len: 0,
            taken: AtomicU64::new(0),
            deadline: now,
            last_take: now,
            coarse_until: 0,
        }
    }

    /// Claims up to `count` indices at `now`; the range is empty when the block is spent,
    /// closed, or past its last take.
    #[inline]
    pub fn take(&self, count: u64, now: Now) -> Range<u64> {
        let open = match now {
            Now::Live if clock::coarse() < self.coarse_until => true,
            Now::Live => Instant::now() <= self.last_take,
            Now::At(now) => now <= self.last_take,
        };
        if !open {
            return 0..0;
        }
        let start = self.taken.fetch_add(count, Ordering::Relaxed);
        start.min(self.len)..start.saturating_add(count).min(self.len)
    }

    /// The value at a claimed index (below `len`). The exact value lies between `first`
    /// and `last`, so arithmetic modulo 2^64 gives it.
    #[inline]
    pub fn value(&self, index: u64) -> i64 {
        debug_assert!(index < self.len);
        self.first
            .wrapping_add((index as i64).wrapping_mul(self.increment))
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether takes at `now` are past the block's last take.
    pub fn past_last_take(&self, now: Instant) -> bool {
        now > self.last_take
    }

    /// Values still to take: 0 once spent or closed.
    pub fn remaining(&self) -> u64 {
        let taken = self.taken.load(Ordering::Acquire);
        if taken >= CLOSED {
            0
        } else {
            self.len - taken.min(self.len)
        }
    }

    /// Values taken so far, while open; 0 once closed (they were counted at the close).
    pub fn used_while_open(&self) -> u64 {
        let taken = self.taken.load(Ordering::Acquire);
        if taken >= CLOSED {
            0
        } else {
            taken.min(self.len)
        }
    }

    /// Ends every take: returns `(used, unused)` if this call closed it, `None` if it was
    /// closed already.
    pub fn close(&self) -> Option<(u64, u64)> {
        let before = self.taken.swap(CLOSED, Ordering::AcqRel);
        (before < CLOSED).then(|| {
            let used = before.min(self.len);
            (used, self.len - used)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARGIN: Duration = Duration::from_millis(200);

    fn active(first: i64, last: i64) -> ActiveBlock {
        let deadline = Instant::now() + Duration::from_secs(60);
        ActiveBlock::new(Block::new(first, last, 1).unwrap(), deadline, MARGIN)
    }

    fn take(block: &ActiveBlock, count: u64) -> Range<u64> {
        block.take(count, Now::Live)
    }

    #[test]
    fn takes_claim_disjoint_indices_until_the_block_is_spent() {
        let block = active(10, 14);
        assert_eq!(take(&block, 2), 0..2);
        assert_eq!(take(&block, 1), 2..3);
        assert_eq!(take(&block, 5), 3..5);
        assert_eq!(take(&block, 1), 5..5);
        assert_eq!(block.value(4), 14);
        assert_eq!(block.remaining(), 0);
    }

    #[test]
    fn closing_counts_used_and_unused_once_and_ends_every_take() {
        let block = active(1, 10);
        take(&block, 3);
        assert_eq!(block.close(), Some((3, 7)));
        assert_eq!(block.close(), None);
        assert!(take(&block, 1).is_empty());
        assert_eq!((block.remaining(), block.used_while_open()), (0, 0));
    }

    #[test]
    fn an_overshooting_take_counts_only_the_values_that_exist() {
        let block = active(1, 4);
        assert_eq!(take(&block, 10), 0..4);
        assert!(take(&block, 1).is_empty());
        assert_eq!(block.used_while_open(), 4);
        assert_eq!(block.close(), Some((4, 0)));
    }

    #[test]
    fn values_agree_with_the_blocks_own_arithmetic_at_the_edges_of_i64() {
        let blocks = [
            Block::new(i64::MIN, i64::MAX - (1 << 61) + 1, 1 << 61).unwrap(),
            Block::new(i64::MAX, -7 * (1 << 60) - 1, -(1 << 60)).unwrap(),
            Block::new(-5, 5, 5).unwrap(),
            Block::new(9, 9, -3).unwrap(),
        ];
        for block in blocks {
            let active = ActiveBlock::new(block, Instant::now() + MARGIN * 2, MARGIN);
            let claimed = take(&active, u64::from(u32::MAX));
            assert_eq!(claimed.end, block.len());
            for index in claimed {
                assert_eq!(Some(active.value(index)), block.value_at(index));
            }
        }
    }

    #[test]
    fn the_empty_block_gives_nothing() {
        let block = ActiveBlock::empty(Instant::now());
        assert!(take(&block, 1).is_empty());
        assert_eq!(block.close(), Some((0, 0)));
    }

    #[test]
    fn nothing_is_taken_past_the_deadline_less_the_margin_even_from_an_open_block() {
        let now = Instant::now();
        let block = ActiveBlock::new(Block::new(1, 10, 1).unwrap(), now + MARGIN * 2, MARGIN);
        assert_eq!(
            block.take(1, Now::At(now + MARGIN)),
            0..1,
            "at the last take"
        );
        assert!(block
            .take(1, Now::At(now + MARGIN + Duration::from_nanos(1)))
            .is_empty());
        assert!(block.past_last_take(now + MARGIN * 2));
        assert_eq!(block.remaining(), 9, "refused takes claim nothing");
        assert_eq!(block.close(), Some((1, 9)));
    }

    #[test]
    fn a_live_take_just_past_the_last_take_is_refused_though_the_coarse_clock_lags() {
        let last_take = Instant::now() + Duration::from_millis(2);
        let block = ActiveBlock::new(Block::new(1, 10, 1).unwrap(), last_take + MARGIN, MARGIN);
        // Waits on the precise clock, which the coarse one trails by a tick or more.
        while Instant::now() <= last_take {
            std::hint::spin_loop();
        }
        assert!(take(&block, 1).is_empty());
        assert_eq!(block.remaining(), 10);
    }
}
