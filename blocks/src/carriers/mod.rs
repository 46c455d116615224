//! Carrier tracking numbers: the check-digit algorithms, the formats seqvend prints its
//! values in, and recognising any carrier's number. Pure computation: no HTTP, no database,
//! no I/O — the registry and the handlers bring those.

mod check;
mod countries;
mod format;
mod reading;
mod recognise;
mod usps;
#[cfg(test)]
mod vectors;

pub use format::{Format, FormatError, KINDS};
pub use reading::{Layout, Origin};
pub use recognise::{normalise, recognise, NumberError, Recognition, MAX_LEN};
