//! One sequence's leased values: the active block (taken from without a lock) and the
//! blocks queued behind it in lease order. Values leave in that order, so what one process
//! hands out follows the sequence's vend order. It reads no clock but for takes at `Now::Live`:
//! callers pass `now`.
//!
//! Every close of a block and every change of the queue happens under `queue`'s lock, which
//! the fast path never takes; so what was used and what expired always add up.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use seqvend_blocks::Block;

use crate::active::ActiveBlock;
use crate::clock::Now;

/// Leases are queued in pieces of at most this many values. The end of a piece is where a
/// taker leaves the fast path, and that wakes the refill task (`Shared::advance`): a refill
/// is thus weighed at least every `PIECE` values taken, however large the leases. The ticker
/// alone weighs it every 100 ms, a million values at 10 M/s: more than a small cache holds
/// above its mark. A piece costs one lock and one pointer swap, under 1 ns per value.
pub(crate) const PIECE: u64 = 1 << 16;

/// A block as leased: its values may be handed out until `deadline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Leased {
    pub block: Block,
    pub deadline: Instant,
}

#[derive(Debug)]
pub(crate) struct BlockCache {
    active: ArcSwap<ActiveBlock>,
    queue: Mutex<Queue>,
}

#[derive(Debug, Default)]
struct Queue {
    blocks: VecDeque<Leased>,
    /// Values taken from blocks closed since.
    used: u64,
    /// Values never taken because their block's deadline came first, or the client closed.
    expired: u64,
    /// Set by `close`: blocks pushed later are counted as discarded, never queued.
    closed: bool,
}

impl BlockCache {
    pub fn new(now: Instant) -> Self {
        Self {
            active: ArcSwap::from_pointee(ActiveBlock::empty(now)),
            queue: Mutex::default(),
        }
    }

    /// The fast path: one value from the active block, or `None` if it is spent or `now` is
    /// past its deadline less the margin.
    #[inline]
    pub fn take_one(&self, now: Now) -> Option<i64> {
        let active = self.active.load();
        let index = active.take(1, now).next()?;
        Some(active.value(index))
    }

    /// The active block's pointer, for a [`Taker`](crate::Taker)'s cached view of it.
    pub fn active(&self) -> &ArcSwap<ActiveBlock> {
        &self.active
    }

    /// Up to `count` values from the active block, appended to `out`; how many.
    pub fn take_into(&self, count: u64, out: &mut Vec<i64>, now: Now) -> u64 {
        let active = self.active.load();
        let claimed = active.take(count, now);
        let taken = claimed.end - claimed.start;
        out.extend(claimed.map(|index| active.value(index)));
        taken
    }

    /// The slow path, once the active block is spent or past its last take: makes the next
    /// queued block active, skipping those whose deadline is within `margin`. False when
    /// nothing is left.
    pub fn advance(&self, now: Instant, margin: Duration) -> bool {
        let mut queue = self.lock();
        let current = self.active.load();
        if queue.closed {
            return false;
        }
        if current.remaining() > 0 && !current.past_last_take(now) {
            return true; // another caller advanced already
        }
        if let Some((used, unused)) = current.close() {
            queue.used += used;
            queue.expired += unused;
        }
        while let Some(next) = queue.blocks.pop_front() {
            if next.deadline > now + margin {
                let active = ActiveBlock::new(next.block, next.deadline, margin);
                self.active.store(Arc::new(active));
                return true;
            }
            queue.expired += next.block.len();
        }
        false
    }

    /// Queues a lease's blocks behind those held already, in pieces of at most [`PIECE`]
    /// values (once closed, counts them as discarded instead).
    pub fn push(&self, blocks: &[Block], deadline: Instant) {
        let mut queue = self.lock();
        if queue.closed {
            queue.expired += blocks.iter().map(Block::len).sum::<u64>();
            return;
        }
        queue.blocks.extend(
            blocks
                .iter()
                .flat_map(|&block| pieces(block))
                .map(|block| Leased { block, deadline }),
        );
    }

    /// Closes the active block and drops queued ones if their deadline is within `margin`;
    /// returns how many values were discarded.
    pub fn expire(&self, now: Instant, margin: Duration) -> u64 {
        let limit = now + margin;
        let mut queue = self.lock();
        let mut discarded = 0;
        let current = self.active.load();
        if current.deadline() <= limit {
            if let Some((used, unused)) = current.close() {
                queue.used += used;
                discarded += unused;
            }
        }
        queue.blocks.retain(|leased| {
            let keep = leased.deadline > limit;
            if !keep {
                discarded += leased.block.len();
            }
            keep
        });
        queue.expired += discarded;
        discarded
    }

    /// Ends every take for good: the active block is closed and the queue emptied, their
    /// unused values counted as discarded (returned), as are those of any block pushed later.
    pub fn close(&self) -> u64 {
        let mut queue = self.lock();
        queue.closed = true;
        let mut discarded = 0;
        if let Some((used, unused)) = self.active.load().close() {
            queue.used += used;
            discarded += unused;
        }
        discarded += queue.blocks.drain(..).map(|l| l.block.len()).sum::<u64>();
        queue.expired += discarded;
        discarded
    }

    /// Values held in blocks that last beyond `now + horizon`: what a refill may count on.
    pub fn held(&self, now: Instant, horizon: Duration) -> u64 {
        let limit = now + horizon;
        let queue = self.lock();
        let current = self.active.load();
        let active = if current.deadline() > limit {
            current.remaining()
        } else {
            0
        };
        let queued: u64 = queue
            .blocks
            .iter()
            .filter(|leased| leased.deadline > limit)
            .map(|leased| leased.block.len())
            .sum();
        active + queued
    }

    /// Values taken since the start (each one once, whoever took it).
    pub fn taken(&self) -> u64 {
        let queue = self.lock();
        queue.used + self.active.load().used_while_open()
    }

    /// Values discarded at their deadline since the start.
    pub fn expired(&self) -> u64 {
        self.lock().expired
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic under this lock leaves plain counters and a queue: still consistent.
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// `block` cut into consecutive pieces of at most [`PIECE`] values, in vend order.
fn pieces(block: Block) -> impl Iterator<Item = Block> {
    let mut rest = Some(block);
    std::iter::from_fn(move || {
        let (piece, tail) = rest?.split(PIECE);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARGIN: Duration = Duration::from_millis(200);

    fn block(first: i64, last: i64) -> Block {
        Block::new(first, last, 1).unwrap()
    }

    /// Takes everything the cache will give, one value at a time, as `next` would.
    fn drain(cache: &BlockCache, now: Instant) -> Vec<i64> {
        let mut values = Vec::new();
        loop {
            match cache.take_one(Now::At(now)) {
                Some(value) => values.push(value),
                None if cache.advance(now, MARGIN) => {}
                None => return values,
            }
        }
    }

    #[test]
    fn values_leave_in_lease_order_across_blocks() {
        let now = Instant::now();
        let later = now + Duration::from_secs(60);
        let cache = BlockCache::new(now);
        assert_eq!(cache.take_one(Now::At(now)), None);
        cache.push(&[block(1, 3), block(100, 101)], later);
        cache.push(&[block(7, 8)], later);
        assert_eq!(drain(&cache, now), [1, 2, 3, 100, 101, 7, 8]);
        assert_eq!(cache.taken(), 7);
    }

    #[test]
    fn a_large_lease_is_queued_in_pieces_that_hand_out_its_values_in_order() {
        let now = Instant::now();
        let cache = BlockCache::new(now);
        let len = 3 * PIECE + 5;
        cache.push(&[block(11, 10 + len as i64)], now + Duration::from_secs(60));
        assert_eq!(cache.lock().blocks.len(), 4);
        assert_eq!(cache.held(now, Duration::ZERO), len);
        let mut advances = 0;
        let mut values = Vec::new();
        loop {
            match cache.take_one(Now::At(now)) {
                Some(value) => values.push(value),
                None if cache.advance(now, MARGIN) => advances += 1,
                None => break,
            }
        }
        assert_eq!(advances, 4, "one slow path per piece");
        assert_eq!(values, (11..=10 + len as i64).collect::<Vec<_>>());
        assert_eq!(cache.taken(), len);
    }

    #[test]
    fn a_batch_spans_blocks_and_keeps_their_order() {
        let now = Instant::now();
        let cache = BlockCache::new(now);
        cache.push(&[block(1, 3), block(10, 12)], now + Duration::from_secs(60));
        let mut values = Vec::new();
        while values.len() < 5 {
            let wanted = 5 - values.len() as u64;
            if cache.take_into(wanted, &mut values, Now::At(now)) < wanted {
                assert!(cache.advance(now, MARGIN));
            }
        }
        assert_eq!(values, [1, 2, 3, 10, 11]);
        assert_eq!(cache.take_one(Now::At(now)), Some(12));
    }

    #[test]
    fn concurrent_takers_get_each_value_once_and_each_sees_them_increase() {
        let now = Instant::now();
        let cache = BlockCache::new(now);
        let later = now + Duration::from_secs(60);
        for start in (0..100).map(|b| b * 1000 + 1) {
            cache.push(&[block(start, start + 999)], later);
        }
        let per_thread: Vec<Vec<i64>> = std::thread::scope(|scope| {
            let takers: Vec<_> = (0..4).map(|_| scope.spawn(|| drain(&cache, now))).collect();
            takers.into_iter().map(|t| t.join().unwrap()).collect()
        });
        for values in &per_thread {
            assert!(values.windows(2).all(|pair| pair[0] < pair[1]));
        }
        let mut all: Vec<i64> = per_thread.concat();
        all.sort_unstable();
        assert_eq!(all, (1..=100_000).collect::<Vec<_>>());
        assert_eq!(cache.taken(), 100_000);
    }

    #[test]
    fn expiry_closes_blocks_ending_within_the_margin_and_counts_what_they_still_held() {
        let now = Instant::now();
        let cache = BlockCache::new(now);
        cache.push(&[block(1, 10)], now + Duration::from_millis(150));
        cache.push(&[block(11, 20)], now + Duration::from_millis(190));
        cache.push(&[block(21, 30)], now + Duration::from_secs(60));
        let earlier = now - Duration::from_secs(1);
        assert!(cache.advance(earlier, MARGIN));
        assert_eq!(cache.take_one(Now::At(earlier)), Some(1));

        assert_eq!(cache.expire(now, MARGIN), 9 + 10);
        assert_eq!(
            cache.take_one(Now::At(earlier)),
            None,
            "the closed block gives nothing more"
        );
        assert_eq!(drain(&cache, now), (21..=30).collect::<Vec<_>>());
        assert_eq!((cache.taken(), cache.expired()), (11, 19));
        assert_eq!(cache.expire(now, MARGIN), 0);
    }

    #[test]
    fn advancing_skips_queued_blocks_already_past_their_deadline() {
        let now = Instant::now();
        let cache = BlockCache::new(now);
        cache.push(&[block(1, 5)], now + Duration::from_millis(100));
        cache.push(&[block(6, 6)], now + Duration::from_secs(60));
        assert_eq!(drain(&cache, now), [6]);
        assert_eq!(cache.expired(), 5);
    }

    #[test]
    fn a_block_past_its_last_take_is_closed_by_the_next_advance_not_only_by_the_ticker() {
        let now = Instant::now();
        let cache = BlockCache::new(now);
        cache.push(&[block(1, 10)], now + Duration::from_millis(300));
        cache.push(&[block(11, 12)], now + Duration::from_secs(60));
        assert!(cache.advance(now, MARGIN));
        assert_eq!(cache.take_one(Now::At(now)), Some(1));
        let late = now + Duration::from_millis(150);
        assert_eq!(
            cache.take_one(Now::At(late)),
            None,
            "past deadline less margin"
        );
        assert_eq!(drain(&cache, late), [11, 12]);
        assert_eq!((cache.taken(), cache.expired()), (3, 9));
    }

    #[test]
    fn blocks_ending_within_the_horizon_are_not_counted_as_held() {
        let now = Instant::now();
        let cache = BlockCache::new(now);
        cache.push(&[block(1, 100)], now + Duration::from_secs(30));
        cache.push(&[block(101, 150)], now + Duration::from_secs(600));
        assert_eq!(cache.held(now, Duration::from_secs(10)), 150);
        assert_eq!(cache.held(now, Duration::from_secs(120)), 50);
        assert!(cache.advance(now, MARGIN));
        assert_eq!(
            cache.held(now, Duration::ZERO),
            150,
            "the active block counts"
        );
        assert_eq!(cache.take_one(Now::At(now)), Some(1));
        assert_eq!(cache.held(now, Duration::ZERO), 149);
    }

    #[test]
    fn closing_counts_everything_held_as_discarded_and_nothing_is_taken_or_queued_after() {
        let now = Instant::now();
        let cache = BlockCache::new(now);
        let later = now + Duration::from_secs(60);
        cache.push(&[block(1, 10), block(11, 15)], later);
        assert_eq!(cache.take_one(Now::At(now)), None);
        assert!(cache.advance(now, MARGIN));
        assert_eq!(cache.take_one(Now::At(now)), Some(1));
        assert_eq!(cache.close(), 9 + 5);
        cache.push(&[block(16, 20)], later);
        assert_eq!(drain(&cache, now), Vec::<i64>::new(), "closed");
        assert_eq!((cache.taken(), cache.expired()), (1, 19));
        assert_eq!(cache.close(), 0, "closed already");
    }
}
