//! The asyncio side: an operation runs as a task on the module's runtime and, once done,
//! hands its outcome to a Python callback (which the package's `AsyncClient` turns into
//! `loop.call_soon_threadsafe(...)` settling an asyncio future). The event loop never waits
//! on anything here; a cancelled await leaves the task to finish and its values unused
//! (gaps, never handed out twice).

use std::future::Future;

use pyo3::prelude::*;
use pyo3::BoundObject;

use crate::client::Client;
use crate::errors::Failure;
use crate::vend;

/// Runs `work` on the client's runtime and calls `done(ok, value_or_exception)` with the GIL.
fn spawn<T, F>(client: &Client, done: Py<PyAny>, work: F) -> PyResult<()>
where
    F: Future<Output = Result<T, Failure>> + Send + 'static,
    T: for<'py> IntoPyObject<'py> + Send + 'static,
{
    let runtime = client.bound_checked()?.runtime.clone();
    runtime.spawn(async move {
        let outcome = work.await;
        Python::attach(|py| {
            let (ok, value) = match outcome.map_err(|failure| failure.into_pyerr(py)) {
                Ok(value) => match value.into_pyobject(py) {
                    Ok(object) => (true, object.into_any().unbind()),
                    Err(error) => (false, Into::<PyErr>::into(error).into_value(py).into_any()),
                },
                Err(error) => (false, error.into_value(py).into_any()),
            };
            if let Err(error) = done.call1(py, (ok, value)) {
                error.write_unraisable(py, None);
            }
        });
    });
    Ok(())
}

/// `next(name)` for asyncio: the value, or the error, passed to `done`.
#[pyfunction]
pub fn spawn_next(client: &Client, name: String, done: Py<PyAny>) -> PyResult<()> {
    let bound = client.bound_checked()?;
    let sequence = bound.client.sequence(&name);
    spawn(client, done, async move {
        sequence.next().await.map_err(Failure::from)
    })
}

/// `next_n(name, count)` for asyncio.
#[pyfunction]
pub fn spawn_next_n(client: &Client, name: String, count: usize, done: Py<PyAny>) -> PyResult<()> {
    let bound = client.bound_checked()?;
    let sequence = bound.client.sequence(&name);
    spawn(client, done, async move {
        sequence.next_n(count).await.map_err(Failure::from)
    })
}

/// `prefetch(name, values)` for asyncio.
#[pyfunction]
pub fn spawn_prefetch(client: &Client, name: String, values: u64, done: Py<PyAny>) -> PyResult<()> {
    let bound = client.bound_checked()?;
    let sequence = bound.client.sequence(&name);
    spawn(client, done, async move {
        sequence.prefetch(values).await.map_err(Failure::from)
    })
}

/// `vend(name, count, idempotency_key=…)` for asyncio.
#[pyfunction]
#[pyo3(signature = (client, name, count, idempotency_key, done))]
pub fn spawn_vend(
    client: &Client,
    name: &str,
    count: u32,
    idempotency_key: Option<String>,
    done: Py<PyAny>,
) -> PyResult<()> {
    let request = vend::Request::new(name, count, idempotency_key)?;
    let http = client.bound_checked()?.http.clone();
    let config = client.config().clone();
    spawn(client, done, async move {
        vend::vend(&http, &config, &request).await
    })
}

/// A cached value of `name` now, or `None` (then `spawn_next`): the asyncio fast path.
#[pyfunction]
pub fn take_cached(client: &Client, name: &str) -> PyResult<Option<i64>> {
    crate::client::cached(client.bound()?.client.try_next(name))
}
