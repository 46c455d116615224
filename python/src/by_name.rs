//! The takers behind `Client.next(name)` and `Client.try_next(name)`: a few sequences'
//! [`Taker`]s, found by the name object the caller passed.
//!
//! Under the stable ABI for Python 3.9, reading a `str` argument as Rust text copies it into
//! a new `bytes` object on every call, and the Rust client then hashes it to find the
//! sequence: together most of a cached `next(name)`. A call site passes the same `str`
//! object each time (a literal, a constant), so the object's identity finds the taker with
//! one pointer comparison; an equal string made anew compares by content, with no copy.
//! The list is short and kept under the GIL, which every call holds; a name not in it takes
//! the ordinary path and replaces the entry remembered longest ago.

use pyo3::prelude::*;
use pyo3::types::PyString;
use seqvend_client::Taker;

use crate::per_process::Stamp;

/// Names remembered per client: more sequences than a process usually takes from in one
/// place, few enough that a scan costs less than a hash.
const KEPT: usize = 8;

#[derive(Default)]
pub struct ByName {
    entries: Vec<(Py<PyString>, Stamp<Taker>)>,
    /// The entry a new name replaces once `entries` is full.
    oldest: usize,
}

impl ByName {
    /// A cached value of the sequence `name`, if its taker is remembered, made in this
    /// process, and has one.
    #[inline]
    pub fn take(&mut self, name: &Bound<'_, PyString>) -> Option<i64> {
        let index = self.find(name)?;
        self.entries[index].1.current()?.try_next().ok()
    }

    fn find(&self, name: &Bound<'_, PyString>) -> Option<usize> {
        let same = |(key, _): &(Py<PyString>, _)| key.as_ptr() == name.as_ptr();
        self.entries.iter().position(same).or_else(|| {
            let equal = |(key, _): &(Py<PyString>, _)| {
                PyAnyMethods::eq(name.as_any(), key.bind(name.py())).unwrap_or(false)
            };
            self.entries.iter().position(equal)
        })
    }

    /// Remembers `taker` as the one of `name`, in place of an older taker of that name (a
    /// parent's, after a fork) or of the name remembered longest ago.
    pub fn remember(&mut self, name: &Bound<'_, PyString>, taker: Stamp<Taker>) {
        let entry = (name.clone().unbind(), taker);
        match self.find(name) {
            Some(index) => self.entries[index] = entry,
            None if self.entries.len() < KEPT => self.entries.push(entry),
            None => {
                self.entries[self.oldest] = entry;
                self.oldest = (self.oldest + 1) % KEPT;
            }
        }
    }
}
