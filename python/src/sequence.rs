//! `seqvend.Sequence`: one sequence of a client, for hot loops. It is an iterator:
//! `next(orders)` reaches the value through the interpreter's `tp_iternext` slot, with no
//! argument to parse and no name to look up, the cheapest call CPython has.
//!
//! The hot path holds its own [`Taker`] of the sequence under the GIL, which every call
//! holds anyway: no lock, no borrow flag of PyO3's (the class is frozen), no shared pointer
//! load; a take is the Rust client's own (the same block, `fetch_add` and lease-deadline
//! check), plus one comparison of the fork generation. Only a call that finds nothing cached
//! goes to the slow path, which checks the process id too and releases the GIL to wait.

use std::cell::RefCell;

use pyo3::prelude::*;
// Deprecated for free-threaded Python, where the GIL protects nothing: this module is built
// for the stable ABI (abi3), which free-threaded CPython does not load, and `GILProtected`
// does not exist in a free-threaded build, so one could not compile unsoundly.
#[allow(deprecated)]
use pyo3::sync::GILProtected;
use seqvend_client::Taker;

use crate::client::{cached, Client};
use crate::errors::raise;
use crate::metrics::Metrics;
use crate::per_process::{Current, PerProcess, Stamp};

/// A handle on one sequence of a [`Client`]; made again in a forked child, as the client is.
#[pyclass(module = "seqvend._native", frozen)]
pub struct Sequence {
    client: Py<Client>,
    name: String,
    handle: PerProcess<seqvend_client::Sequence>,
    /// The hot path's taker, made from `handle` on first use and again after a fork.
    #[allow(deprecated)]
    taker: GILProtected<RefCell<Option<Stamp<Taker>>>>,
}

impl Sequence {
    pub fn new(client: Py<Client>, name: &str) -> Self {
        #[allow(deprecated)]
        let taker = GILProtected::new(RefCell::new(None));
        Self {
            client,
            name: name.to_owned(),
            handle: PerProcess::default(),
            taker,
        }
    }

    fn make(&self) -> PyResult<seqvend_client::Sequence> {
        Ok(self.client.get().bound()?.client.sequence(&self.name))
    }

    #[inline]
    fn handle(&self) -> PyResult<Current<seqvend_client::Sequence>> {
        self.handle.get(|| self.make())
    }

    /// A cached value from this process's taker, if there is one and it has a value.
    #[inline]
    fn take_fast(&self, py: Python<'_>) -> Option<i64> {
        #[allow(deprecated)]
        let mut slot = self.taker.get(py).try_borrow_mut().ok()?;
        slot.as_mut()?.current()?.try_next().ok()
    }

    /// As `take_fast`, after (re)making the taker from this process's handle; the error
    /// when nothing is cached (transient: a wait may bring a value).
    #[cold]
    fn take_cached(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        let handle = self.handle.get_checked(|| self.make())?;
        #[allow(deprecated)]
        let fresh = match self.taker.get(py).try_borrow_mut() {
            Ok(mut slot) => {
                let stamp = Stamp::new(handle.generation(), handle.taker());
                let taker = slot.insert(stamp).current().expect("made in this process");
                taker.try_next()
            }
            Err(_) => handle.try_next(),
        };
        cached(fresh)
    }

    #[inline]
    fn take(&self, py: Python<'_>) -> PyResult<i64> {
        match self.take_fast(py) {
            Some(value) => Ok(value),
            None => self.take_slow(py),
        }
    }

    #[cold]
    fn take_slow(&self, py: Python<'_>) -> PyResult<i64> {
        if let Some(value) = self.take_cached(py)? {
            return Ok(value);
        }
        let handle = self.handle.get_checked(|| self.make())?;
        let bound = self.client.get().bound_checked()?;
        py.detach(|| bound.runtime.block_on(handle.next()))
            .map_err(raise)
    }
}

#[pymethods]
impl Sequence {
    /// The next value; see `Client.next`.
    fn next(&self, py: Python<'_>) -> PyResult<i64> {
        self.take(py)
    }

    /// A cached value, or `None` at once; see `Client.try_next`.
    fn try_next(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        match self.take_fast(py) {
            Some(value) => Ok(Some(value)),
            None => self.take_cached(py),
        }
    }

    /// `count` values in vend order; see `Client.next_n`.
    fn next_n(&self, py: Python<'_>, count: usize) -> PyResult<Vec<i64>> {
        let handle = self.handle.get_checked(|| self.make())?;
        let bound = self.client.get().bound_checked()?;
        py.detach(|| bound.runtime.block_on(handle.next_n(count)))
            .map_err(raise)
    }

    /// This sequence's counts.
    fn metrics(&self) -> PyResult<Metrics> {
        Ok(self.handle()?.metrics().into())
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<i64> {
        self.take(py)
    }

    fn __repr__(&self) -> String {
        format!("seqvend.Sequence({:?})", self.name)
    }
}
