//! `seqvend.Client`: values from the thick client's cache, strict vends over HTTP, and
//! Snowflake ids, for Python threads. The cache's fast path runs with the GIL held (it is a
//! few atomic operations, through a taker found by the name object: `by_name`); every wait
//! and every request runs with the GIL released.

use std::cell::RefCell;
use std::time::Duration;

use pyo3::prelude::*;
// See `sequence.rs` for why the deprecated `GILProtected` is sound here.
#[allow(deprecated)]
use pyo3::sync::GILProtected;
use pyo3::types::PyString;
use seqvend_client::Error;

use crate::binding::{Binding, Config};
use crate::by_name::ByName;
use crate::errors::{raise, Failure};
use crate::metrics::Metrics;
use crate::per_process::{Current, PerProcess, Stamp};
use crate::sequence::Sequence;
use crate::vend::{self, Vended};

/// A seqvend client (see the package's docs).
#[pyclass(module = "seqvend._native", frozen)]
pub struct Client {
    config: Config,
    binding: PerProcess<Binding>,
    #[allow(deprecated)]
    by_name: GILProtected<RefCell<ByName>>,
}

impl Client {
    /// This process's binding, by the fork generation (the fast path).
    #[inline]
    pub fn bound(&self) -> PyResult<Current<Binding>> {
        Ok(self.binding.get(|| Binding::build(&self.config))?)
    }

    /// This process's binding, checking the process id too (before a wait or a request).
    pub fn bound_checked(&self) -> PyResult<Current<Binding>> {
        Ok(self.binding.get_checked(|| Binding::build(&self.config))?)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// A cached value of `name` through its remembered taker (the fast path).
    #[inline]
    fn take_by_name(&self, py: Python<'_>, name: &Bound<'_, PyString>) -> Option<i64> {
        #[allow(deprecated)]
        let mut by_name = self.by_name.get(py).try_borrow_mut().ok()?;
        by_name.take(name)
    }

    /// A cached value of `name` by the client's own lookup, remembering the sequence's taker
    /// for the next call; `None` when the caller must wait.
    #[cold]
    fn take_named(&self, py: Python<'_>, name: &Bound<'_, PyString>) -> PyResult<Option<i64>> {
        let text = name.to_cow()?;
        let bound = self.bound_checked()?;
        let value = cached(bound.client.try_next(&text))?;
        #[allow(deprecated)]
        let by_name = self.by_name.get(py).try_borrow_mut();
        if let (Some(_), Ok(mut by_name)) = (value, by_name) {
            let taker = bound.client.sequence(&text).taker();
            by_name.remember(name, Stamp::new(bound.generation(), taker));
        }
        Ok(value)
    }
}

/// A cached value now, `None` when the caller must wait for one, or an error that waiting
/// would not change (exhausted, retired, forbidden, …).
pub fn cached(result: Result<i64, Error>) -> PyResult<Option<i64>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(error) if error.is_transient() => Ok(None),
        Err(error) => Err(raise(error)),
    }
}

fn seconds(value: f64, what: &str) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|duration| !duration.is_zero())
        .ok_or_else(|| {
            Failure::config(format!("{what} must be a positive number of seconds")).into()
        })
}

#[pymethods]
impl Client {
    #[new]
    #[pyo3(signature = (url, token, *, max_cached = 1_000_000, timeout = 2.0, request_timeout = 10.0, retries = 3))]
    fn new(
        url: String,
        token: String,
        max_cached: u64,
        timeout: f64,
        request_timeout: f64,
        retries: u32,
    ) -> PyResult<Self> {
        let config = Config {
            url,
            token,
            max_cached,
            wait_timeout: seconds(timeout, "timeout")?,
            request_timeout: seconds(request_timeout, "request_timeout")?,
            retries,
        };
        #[allow(deprecated)]
        let by_name = GILProtected::new(RefCell::new(ByName::default()));
        let client = Self {
            config,
            binding: PerProcess::default(),
            by_name,
        };
        client.bound()?;
        Ok(client)
    }

    /// The next value of sequence `name`: from the cache, or (only when it is empty) after a
    /// refill, waited for with the GIL released, up to `timeout`.
    fn next(&self, py: Python<'_>, name: &Bound<'_, PyString>) -> PyResult<i64> {
        if let Some(value) = self.take_by_name(py, name) {
            return Ok(value);
        }
        if let Some(value) = self.take_named(py, name)? {
            return Ok(value);
        }
        let name = name.to_cow()?;
        let bound = self.bound_checked()?;
        py.detach(|| bound.runtime.block_on(bound.client.next(&name)))
            .map_err(raise)
    }

    /// `count` values of `name`, in the order seqvend vended them; all or none.
    fn next_n(&self, py: Python<'_>, name: &str, count: usize) -> PyResult<Vec<i64>> {
        let bound = self.bound_checked()?;
        py.detach(|| bound.runtime.block_on(bound.client.next_n(name, count)))
            .map_err(raise)
    }

    /// A handle on sequence `name` for hot loops: an iterator (`next(handle)`) with no name
    /// lookup per value. Its cache is the client's.
    fn sequence(slf: Py<Self>, name: &str) -> Sequence {
        Sequence::new(slf, name)
    }

    /// A cached value of `name`, or `None` at once when nothing is cached (a refill is then
    /// under way). Never waits; raises only what waiting would not change.
    fn try_next(&self, py: Python<'_>, name: &Bound<'_, PyString>) -> PyResult<Option<i64>> {
        match self.take_by_name(py, name) {
            Some(value) => Ok(Some(value)),
            None => self.take_named(py, name),
        }
    }

    /// Leases until at least `values` of `name` are cached (the GIL released meanwhile).
    #[pyo3(signature = (name, values = 1))]
    fn prefetch(&self, py: Python<'_>, name: &str, values: u64) -> PyResult<()> {
        let bound = self.bound_checked()?;
        py.detach(|| {
            let sequence = bound.client.sequence(name);
            bound.runtime.block_on(sequence.prefetch(values))
        })
        .map_err(raise)
    }

    /// Counts over every sequence this client has served in this process.
    fn metrics(&self) -> PyResult<Metrics> {
        Ok(self.bound()?.client.metrics().into())
    }

    /// A strict vend over HTTP: `count` values durable before they are answered, with the
    /// carrier numbers of a formatted sequence. With `idempotency_key`, retried safely.
    #[pyo3(signature = (name, count = 1, *, idempotency_key = None))]
    fn vend(
        &self,
        py: Python<'_>,
        name: &str,
        count: u32,
        idempotency_key: Option<String>,
    ) -> PyResult<Vended> {
        let request = vend::Request::new(name, count, idempotency_key)?;
        let bound = self.bound_checked()?;
        let config = &self.config;
        py.detach(|| {
            bound
                .runtime
                .block_on(vend::vend(&bound.http, config, &request))
        })
        .map_err(PyErr::from)
    }

    /// A Snowflake id made in this process under a worker id leased from seqvend (leased on
    /// the first call, renewed in the background).
    fn snowflake(&self, py: Python<'_>) -> PyResult<i64> {
        let bound = self.bound()?;
        let next = bound.snowflakes_ready().map(|issuer| issuer.next());
        match next {
            Some(id) => id.map_err(raise),
            None => {
                let bound = self.bound_checked()?;
                py.detach(|| {
                    let issuer = bound.runtime.block_on(bound.snowflakes())?;
                    issuer.next().map_err(Failure::from)
                })
                .map_err(PyErr::from)
            }
        }
    }

    /// `count` Snowflake ids, ascending.
    fn snowflake_n(&self, py: Python<'_>, count: usize) -> PyResult<Vec<i64>> {
        let bound = self.bound_checked()?;
        py.detach(|| {
            let issuer = bound.runtime.block_on(bound.snowflakes())?;
            issuer.next_n(count).map_err(Failure::from)
        })
        .map_err(PyErr::from)
    }

    /// The worker id this process's Snowflake ids carry, once one is leased.
    #[getter]
    fn worker_id(&self) -> PyResult<Option<u32>> {
        Ok(self
            .bound()?
            .snowflakes_ready()
            .and_then(|issuer| issuer.worker_id()))
    }

    /// The seqvend this client talks to.
    #[getter]
    fn url(&self) -> &str {
        &self.config.url
    }

    fn __repr__(&self) -> String {
        format!("seqvend.Client({:?})", self.config.url)
    }
}
