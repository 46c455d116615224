//! `seqvend._native`, the extension module under the `seqvend` Python package: the thick
//! client of `seqvend-client` (its cache, leases and refills, unchanged), strict vends over
//! HTTP, Snowflake ids and UUIDv7s, and the carrier-number code of `seqvend-blocks`. The
//! Python layer (`python/pysrc/seqvend`) adds the exception classes, `AsyncClient`, and
//! the fork hook that calls [`forked`].

mod binding;
mod bridge;
mod by_name;
mod client;
mod errors;
mod ids;
mod metrics;
mod per_process;
mod runtime;
mod sequence;
mod tracking;
mod vend;

use pyo3::prelude::*;

/// Called in every child of `os.fork()`: the parent's runtime, caches and worker ids are
/// left behind, and each is made anew on its next use.
#[pyfunction]
fn forked() {
    per_process::forked();
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<client::Client>()?;
    module.add_class::<metrics::Metrics>()?;
    module.add_class::<sequence::Sequence>()?;
    module.add_class::<vend::Vended>()?;
    module.add_function(wrap_pyfunction!(forked, module)?)?;
    module.add_function(wrap_pyfunction!(ids::uuid7_bytes, module)?)?;
    module.add_function(wrap_pyfunction!(ids::decode_snowflake, module)?)?;
    module.add_function(wrap_pyfunction!(tracking::recognise, module)?)?;
    module.add_function(wrap_pyfunction!(tracking::render, module)?)?;
    module.add_function(wrap_pyfunction!(bridge::spawn_next, module)?)?;
    module.add_function(wrap_pyfunction!(bridge::spawn_next_n, module)?)?;
    module.add_function(wrap_pyfunction!(bridge::spawn_prefetch, module)?)?;
    module.add_function(wrap_pyfunction!(bridge::spawn_vend, module)?)?;
    module.add_function(wrap_pyfunction!(bridge::take_cached, module)?)?;
    Ok(())
}
