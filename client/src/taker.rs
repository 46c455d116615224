//! [`Taker`]: a [`Sequence`] for one caller that can hold it mutably (a thread, or a handle
//! guarded by a lock the caller holds anyway, such as Python's GIL), whose take skips the
//! shared pointer load.
//!
//! A take from a [`Sequence`] loads the active block through `ArcSwap::load`, which reaches
//! a thread-local debt list (a `__tls_get_addr` call in a dynamically loaded library) and
//! writes a debt slot: most of a take's cost outside the clock read. A `Taker` keeps its own
//! reference to the active block (`arc_swap::Cache`) and only compares the shared pointer
//! with it (one relaxed load); when they differ it reloads. Its take is otherwise the
//! sequence's: the same block, the same `fetch_add`, the same clock check against the lease's
//! last take; when the block gives nothing it falls back to [`Sequence::try_next`], which
//! advances to the next queued block and wakes the refill. A block the `Taker` still refers
//! to after it was closed gives nothing (a closed block's takes claim nothing), so holding it
//! longer hands out nothing the sequence would not.

use std::ops::Deref;
use std::sync::Arc;

use arc_swap::{ArcSwap, Cache};

use crate::active::ActiveBlock;
use crate::clock::Now;
use crate::shared::Shared;
use crate::{Error, Sequence};

/// The sequence's active-block pointer, reached through the sequence's shared state.
#[derive(Clone)]
struct ActiveOf(Arc<Shared>);

impl Deref for ActiveOf {
    type Target = ArcSwap<ActiveBlock>;

    fn deref(&self) -> &ArcSwap<ActiveBlock> {
        self.0.cache.active()
    }
}

/// A [`Sequence`] whose `try_next` takes `&mut self`, and in exchange skips the shared
/// pointer load on every take. Made by [`Sequence::taker`]; as cheap to make as a clone.
#[derive(Clone)]
pub struct Taker {
    sequence: Sequence,
    active: Cache<ActiveOf, Arc<ActiveBlock>>,
}

impl Taker {
    pub(crate) fn new(sequence: Sequence) -> Self {
        let active = Cache::new(ActiveOf(sequence.shared().clone()));
        Self { sequence, active }
    }

    /// As [`Sequence::try_next`]: a cached value, or at once an error. Never blocks.
    #[inline]
    pub fn try_next(&mut self) -> Result<i64, Error> {
        let active = self.active.load();
        match active.take(1, Now::Live).next() {
            Some(index) => Ok(active.value(index)),
            None => self.sequence.try_next(),
        }
    }

    /// The sequence this takes from.
    pub fn sequence(&self) -> &Sequence {
        &self.sequence
    }
}

impl std::fmt::Debug for Taker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Taker")
            .field("sequence", &self.sequence.name())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use seqvend_blocks::Block;

    use crate::Client;

    /// A client whose service never answers: its blocks are pushed by the test.
    fn offline() -> Client {
        Client::builder("http://127.0.0.1:9", "vend-token")
            .build()
            .unwrap()
    }

    fn drain(taker: &mut crate::Taker) -> Vec<i64> {
        std::iter::from_fn(|| taker.try_next().ok()).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn takers_and_the_sequence_hand_out_each_value_once_in_increasing_order_per_thread() {
        let client = offline();
        let orders = client.sequence("orders");
        let later = Instant::now() + Duration::from_secs(600);
        let blocks: Vec<Block> = (0..50)
            .map(|b| Block::new(b * 1000 + 1, b * 1000 + 1000, 1).unwrap())
            .collect();
        orders.shared().cache.push(&blocks, later);
        let per_thread: Vec<Vec<i64>> = std::thread::scope(|scope| {
            let takers: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| drain(&mut orders.taker())))
                .collect();
            let plain = std::iter::from_fn(|| orders.try_next().ok()).collect();
            let mut all: Vec<Vec<i64>> = takers.into_iter().map(|t| t.join().unwrap()).collect();
            all.push(plain);
            all
        });
        for values in &per_thread {
            assert!(values.windows(2).all(|pair| pair[0] < pair[1]));
        }
        let mut all = per_thread.concat();
        all.sort_unstable();
        assert_eq!(all, (1..=50_000).collect::<Vec<_>>());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_taker_gives_nothing_from_a_block_closed_or_past_its_last_take_it_still_holds() {
        let client = offline();
        let orders = client.sequence("orders");
        let mut taker = orders.taker();
        let cache = &orders.shared().cache;
        cache.push(
            &[Block::new(1, 100, 1).unwrap()],
            Instant::now() + Duration::from_secs(600),
        );
        assert_eq!(taker.try_next().ok(), Some(1));
        cache.close();
        assert!(taker.try_next().is_err(), "closed while the taker held it");

        let soon = client.sequence("parcels");
        let mut taker = soon.taker();
        let margin = soon.shared().options.expiry_margin;
        let deadline = Instant::now() + margin + Duration::from_millis(300);
        soon.shared()
            .cache
            .push(&[Block::new(1, 1_000_000, 1).unwrap()], deadline);
        assert_eq!(taker.try_next().ok(), Some(1));
        let last_take = deadline - margin;
        while Instant::now() <= last_take {
            std::hint::spin_loop();
        }
        assert!(taker.try_next().is_err(), "past the lease's last take");
    }
}
