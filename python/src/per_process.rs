//! Fork safety: values that belong to one process — the tokio runtime, a client's cache,
//! its worker id — held so that a forked child never uses its parent's.
//!
//! A fork copies memory but not threads: in a child, the parent's runtime has no workers,
//! its cached blocks are the parent's (handing them out would repeat the parent's values),
//! and its Snowflake worker id is the parent's (ids would collide). `forked()` runs in every
//! child made by `os.fork()` (registered with `os.register_at_fork` by the package) and
//! bumps the generation; a [`PerProcess`] made in an older generation is then replaced on
//! its next use. The old value is leaked, never dropped: dropping it would return nothing
//! useful and could wait forever on threads that no longer exist (a runtime joins its
//! workers) or on a lock one of them held at the fork.
//!
//! The generation is one atomic load on every call: it is the process id as the at-fork hook
//! last saw it, compared without a system call. Slow paths (a wait, an HTTP request) also
//! compare the process id itself, for forks made outside Python's `os.fork` (which skip the
//! hook); the fast path does not, as `getpid` is a system call. A hot handle's own state
//! ([`Stamp`]) carries the generation it was made in and is compared the same way.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::{ArcSwapOption, Guard};

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Marks this process as a new one: every [`PerProcess`] value is rebuilt on next use.
pub fn forked() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
}

/// This process's fork generation: bumped in every child by [`forked`].
#[inline]
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// A value held by one owner (under a lock it holds anyway) with the generation it was made
/// in: usable only in that generation, and in a forked child leaked, never dropped (as a
/// [`PerProcess`] value is).
pub struct Stamp<T> {
    generation: u64,
    value: Option<T>,
}

impl<T> Stamp<T> {
    pub fn new(generation: u64, value: T) -> Self {
        Self {
            generation,
            value: Some(value),
        }
    }

    /// The value, if it was made in this process.
    #[inline]
    pub fn current(&mut self) -> Option<&mut T> {
        let fresh = self.generation == generation();
        self.value.as_mut().filter(|_| fresh)
    }
}

impl<T> Drop for Stamp<T> {
    fn drop(&mut self) {
        if let Some(value) = self.value.take() {
            if self.generation != generation() {
                std::mem::forget(value);
            }
        }
    }
}

/// A value together with the process it was made in.
#[derive(Debug)]
pub struct Stamped<T> {
    generation: u64,
    pid: u32,
    pub value: T,
}

impl<T> std::ops::Deref for Stamped<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

/// This process's value, as loaded (no reference count touched on the fast path).
pub struct Current<T>(Guard<Option<Arc<Stamped<T>>>>);

impl<T> Current<T> {
    /// The fork generation the value was made in.
    pub fn generation(&self) -> u64 {
        self.0
            .as_ref()
            .expect("a current value is always made")
            .generation
    }
}

impl<T> std::ops::Deref for Current<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self
            .0
            .as_ref()
            .expect("a current value is always made")
            .value
    }
}

/// A value of this process, made again (by the caller's `make`) in a forked child.
#[derive(Debug)]
pub struct PerProcess<T> {
    slot: ArcSwapOption<Stamped<T>>,
}

impl<T> Default for PerProcess<T> {
    fn default() -> Self {
        Self {
            slot: ArcSwapOption::const_empty(),
        }
    }
}

impl<T> PerProcess<T> {
    pub const fn new() -> Self {
        Self {
            slot: ArcSwapOption::const_empty(),
        }
    }

    /// The value of this process (by the fork generation alone: the fast path), made with
    /// `make` if there is none yet or it is a parent's.
    #[inline]
    pub fn get<E>(&self, make: impl FnOnce() -> Result<T, E>) -> Result<Current<T>, E> {
        let current = self.slot.load();
        if matches!(&*current, Some(held) if held.generation == generation()) {
            return Ok(Current(current));
        }
        self.replace(current, make)
    }

    /// As [`get`](Self::get), and also checking the process id: for the slow paths.
    pub fn get_checked<E>(&self, make: impl FnOnce() -> Result<T, E>) -> Result<Current<T>, E> {
        let current = self.slot.load();
        if let Some(held) = &*current {
            if held.pid != std::process::id() && held.generation == generation() {
                // A fork Python's hook did not see (made from C): same treatment.
                forked();
            }
        }
        self.get(make)
    }

    #[cold]
    fn replace<E>(
        &self,
        stale: Guard<Option<Arc<Stamped<T>>>>,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<Current<T>, E> {
        let fresh = Arc::new(Stamped {
            generation: generation(),
            pid: std::process::id(),
            value: make()?,
        });
        let previous = self.slot.compare_and_swap(&stale, Some(fresh));
        let won = match (&*previous, &*stale) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        drop(stale);
        if won {
            // The parent's value (or nothing): leaked, never dropped in this process.
            std::mem::forget(arc_swap::Guard::into_inner(previous));
        }
        // When another thread replaced it first, compare_and_swap dropped ours (made in this
        // process: safe to drop); either way the slot now holds this process's value.
        Ok(Current(self.slot.load()))
    }
}

impl<T> Drop for PerProcess<T> {
    fn drop(&mut self) {
        if let Some(held) = self.slot.swap(None) {
            if held.generation != generation() || held.pid != std::process::id() {
                std::mem::forget(held);
            }
        }
    }
}
