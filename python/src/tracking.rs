//! Carrier tracking numbers offline, with the server's own code (`seqvend-blocks`):
//! recognising a number and printing one from a format.

use pyo3::prelude::*;
use seqvend_blocks::carriers::{normalise, recognise as recognise_number, Format};

use crate::errors::Failure;

/// `(number, valid, carrier, kind, serial)`, as `seqvend.tracking.Recognition` holds it.
type Seen = (
    String,
    bool,
    Option<&'static str>,
    Option<&'static str>,
    Option<String>,
);

/// What a number is: the number normalised (spaces removed, upper case), whether it is
/// valid, and its layout's carrier, kind and serial (`None` when no layout matches).
#[pyfunction]
pub fn recognise(number: &str) -> PyResult<Seen> {
    let number = normalise(number).map_err(|error| Failure::invalid(error.to_string()))?;
    let seen = recognise_number(&number);
    let carrier = seen.layout.map(|layout| layout.carrier);
    let kind = seen.layout.map(|layout| layout.kind);
    Ok((number, seen.valid, carrier, kind, seen.serial))
}

/// The carrier number a format (as JSON, e.g. `{"kind": "ups_1z", …}`) prints for `serial`.
#[pyfunction]
pub fn render(format_json: &str, serial: i64) -> PyResult<String> {
    let raw: serde_json::Value = serde_json::from_str(format_json)
        .map_err(|error| Failure::invalid(format!("a format is a JSON object: {error}")))?;
    let format = Format::parse(&raw).map_err(|error| Failure::invalid(error.to_string()))?;
    let (min, max) = format.serial_span();
    format.render(serial).ok_or_else(|| {
        Failure::invalid(format!(
            "serial {serial} is outside {min}..={max}, what {} prints",
            format.kind()
        ))
        .into()
    })
}
