//! The asyncio side: an operation runs as a task on the module's runtime and, once done,
//! hands its outcome to a Python callback (which the package's `AsyncClient` turns into
//! `loop.call_soon_threadsafe(...)` settling an asyncio future). The event loop never waits
//! on anything here; a cancelled await leaves the task to finish and its values unused
//! (gaps, never handed out twice).

use std::future::Future;

use pyo3::prelude::*;
use pyo3::BoundObject;

use seqvend_client::Sequence;

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

/// Runs `work` on one sequence of the client (a handle: no lookup by name in the task).
fn spawn_on<T, F, W>(client: &Client, name: &str, done: Py<PyAny>, work: W) -> PyResult<()>
where
    W: FnOnce(Sequence) -> F,
    F: Future<Output = Result<T, seqvend_client::Error>> + Send + 'static,
    T: for<'py> IntoPyObject<'py> + Send + 'static,
{
    let sequence = client.bound_checked()?.client.sequence(name);
    let work = work(sequence);
    spawn(
        client,
        done,
        async move { work.await.map_err(Failure::from) },
    )
}

/// `next(name)` for asyncio: the value, or the error, passed to `done`.
#[pyfunction]
pub fn spawn_next(client: &Client, name: &str, done: Py<PyAny>) -> PyResult<()> {
    spawn_on(client, name, done, |s| async move { s.next().await })
}

/// `next_n(name, count)` for asyncio.
#[pyfunction]
pub fn spawn_next_n(client: &Client, name: &str, count: usize, done: Py<PyAny>) -> PyResult<()> {
    spawn_on(client, name, done, |s| async move { s.next_n(count).await })
}

/// `prefetch(name, values)` for asyncio.
#[pyfunction]
pub fn spawn_prefetch(client: &Client, name: &str, values: u64, done: Py<PyAny>) -> PyResult<()> {
    spawn_on(
        client,
        name,
        done,
        |s| async move { s.prefetch(values).await },
    )
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
