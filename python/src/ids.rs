//! Time ids that need no client: UUIDv7s made in this process, and Snowflake ids decoded.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use seqvend_blocks::snowflake::Layout;

use crate::errors::Failure;

/// The 16 bytes of a UUIDv7, above every one this process made before (see the docs).
#[pyfunction]
pub fn uuid7_bytes(py: Python<'_>) -> Bound<'_, PyBytes> {
    PyBytes::new(py, seqvend_client::uuidv7().as_bytes())
}

/// `(timestamp_ms, worker_id, sequence)` of a Snowflake id under a layout (`"41/10/12"` and
/// an epoch in ms; by default seqvend's own).
#[pyfunction]
#[pyo3(signature = (id, *, bits = None, epoch_ms = None))]
pub fn decode_snowflake(
    id: i64,
    bits: Option<&str>,
    epoch_ms: Option<i64>,
) -> PyResult<(i64, u32, u32)> {
    let layout = match (bits, epoch_ms) {
        (None, None) => Layout::DEFAULT,
        (bits, epoch_ms) => Layout::parse(
            bits.unwrap_or("41/10/12"),
            epoch_ms.unwrap_or(Layout::DEFAULT.epoch_ms()),
        )
        .map_err(|error| Failure::invalid(error.to_string()))?,
    };
    let parts = layout
        .decompose(id)
        .ok_or_else(|| Failure::invalid(format!("{id} is not a Snowflake id of this layout")))?;
    Ok((parts.timestamp_ms, parts.worker_id, parts.sequence))
}
