//! `seqvend.Sequence`: one sequence of a client, for hot loops. It is an iterator:
//! `next(orders)` reaches the value through the interpreter's `tp_iternext` slot, with no
//! argument to parse and no name to look up, the cheapest call CPython has.

use pyo3::prelude::*;

use crate::client::{cached, Client};
use crate::errors::raise;
use crate::metrics::Metrics;
use crate::per_process::{Current, PerProcess};

/// A handle on one sequence of a [`Client`]; made again in a forked child, as the client is.
#[pyclass(module = "seqvend._native", frozen)]
pub struct Sequence {
    client: Py<Client>,
    name: String,
    handle: PerProcess<seqvend_client::Sequence>,
}

impl Sequence {
    pub fn new(client: Py<Client>, name: &str) -> Self {
        Self {
            client,
            name: name.to_owned(),
            handle: PerProcess::default(),
        }
    }

    fn make(&self) -> PyResult<seqvend_client::Sequence> {
        Ok(self.client.get().bound()?.client.sequence(&self.name))
    }

    #[inline]
    fn handle(&self) -> PyResult<Current<seqvend_client::Sequence>> {
        self.handle.get(|| self.make())
    }

    fn take(&self, py: Python<'_>) -> PyResult<i64> {
        if let Some(value) = cached(self.handle()?.try_next())? {
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
    fn try_next(&self) -> PyResult<Option<i64>> {
        cached(self.handle()?.try_next())
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
