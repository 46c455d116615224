//! What one layout makes of a number: the layout's name, whether the check digit holds, the
//! serial, and which seqvend format (with which serial) would have printed it.

use super::format::Format;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub carrier: &'static str,
    pub kind: &'static str,
}

/// A format and serial that print exactly this number: where to look for it among the
/// sequences seqvend vends from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub format: Format,
    pub serial: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub layout: Layout,
    /// The check digit is right (always, for layouts without one).
    pub check_ok: bool,
    pub serial: Option<String>,
    pub origins: Vec<Origin>,
}

impl Reading {
    pub fn new(carrier: &'static str, kind: &'static str, check_ok: bool) -> Self {
        Self {
            layout: Layout { carrier, kind },
            check_ok,
            serial: None,
            origins: Vec::new(),
        }
    }

    pub fn serial(mut self, serial: &[u8]) -> Self {
        self.serial = Some(text(serial));
        self
    }

    /// Adds an origin; a serial that is not a plain decimal number has none.
    pub fn origin(mut self, format: Format, serial: &[u8]) -> Self {
        if let Some(value) = text(serial).parse::<i64>().ok().filter(|_| digits(serial)) {
            self.origins.push(Origin {
                format,
                serial: value,
            });
        }
        self
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn digits(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.iter().all(u8::is_ascii_digit)
}

pub fn letters(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.iter().all(u8::is_ascii_uppercase)
}

/// The printed check character equals `expected`.
pub fn printed(check: u8, expected: u8) -> bool {
    check == b'0' + expected
}
