//! `seqvend.Metrics`: the thick client's counts, as read-only attributes.

use pyo3::prelude::*;

/// Counts since the client was made (in this process).
#[pyclass(module = "seqvend._native", frozen, get_all, eq)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metrics {
    /// Values handed out without waiting for a refill.
    hits: u64,
    /// Leases that brought values.
    refills: u64,
    /// Calls that found nothing cached and waited for a refill.
    waits: u64,
    /// Values leased but never handed out (their lease ran out first): gaps.
    discarded: u64,
    /// Lease requests sent.
    service_calls: u64,
    /// Lease requests that failed.
    failed_calls: u64,
}

impl From<seqvend_client::Metrics> for Metrics {
    fn from(m: seqvend_client::Metrics) -> Self {
        Self {
            hits: m.hits,
            refills: m.refills,
            waits: m.waits,
            discarded: m.discarded,
            service_calls: m.service_calls,
            failed_calls: m.failed_calls,
        }
    }
}

#[pymethods]
impl Metrics {
    fn __repr__(&self) -> String {
        format!(
            "Metrics(hits={}, refills={}, waits={}, discarded={}, service_calls={}, failed_calls={})",
            self.hits, self.refills, self.waits, self.discarded, self.service_calls, self.failed_calls
        )
    }
}
