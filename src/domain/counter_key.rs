//! A counter's key within its family: 1–200 bytes of printable UTF-8 without `/`.
//!
//! Keys come from the path, so `/` could not be told from a separator; control characters
//! would make logs and errors unreadable. Everything else is served as given: a key only ever
//! reaches SQL as a parameter.

use std::fmt;

pub const MAX_KEY_BYTES: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CounterKey(String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    #[error("a counter key must not be empty")]
    Empty,
    #[error("a counter key must be at most {MAX_KEY_BYTES} bytes of UTF-8 (this one is {0})")]
    TooLong(usize),
    #[error("a counter key must not contain '/'")]
    Slash,
    #[error("a counter key must be printable: no control characters (found U+{0:04X})")]
    Control(u32),
}

impl CounterKey {
    pub fn parse(raw: &str) -> Result<Self, KeyError> {
        if raw.is_empty() {
            return Err(KeyError::Empty);
        }
        if raw.len() > MAX_KEY_BYTES {
            return Err(KeyError::TooLong(raw.len()));
        }
        if let Some(control) = raw.chars().find(|c| c.is_control()) {
            return Err(KeyError::Control(control.into()));
        }
        if raw.contains('/') {
            return Err(KeyError::Slash);
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CounterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_hostile_but_printable_keys_as_given() {
        let long = "é".repeat(100);
        for ok in [
            "a",
            "o'brien",
            "100%",
            "x\"; DROP TABLE",
            "日本語",
            "🚚",
            " ",
            &long,
        ] {
            assert_eq!(CounterKey::parse(ok).unwrap().as_str(), ok);
        }
    }

    #[test]
    fn refuses_keys_it_cannot_serve() {
        let cases = [
            (String::new(), KeyError::Empty),
            ("x".repeat(201), KeyError::TooLong(201)),
            (format!("{}a", "é".repeat(100)), KeyError::TooLong(201)),
            ("a/b".into(), KeyError::Slash),
            ("a\nb".into(), KeyError::Control(0x0a)),
            ("a\0".into(), KeyError::Control(0)),
            ("\u{7f}".into(), KeyError::Control(0x7f)),
        ];
        for (raw, expected) in cases {
            assert_eq!(CounterKey::parse(&raw), Err(expected), "{raw:?}");
        }
    }
}
