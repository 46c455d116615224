//! Sequence and namespace names: 1–63 characters of `[A-Za-z0-9._-]`, the first alphanumeric.
//!
//! 63 is PostgreSQL's identifier limit; names never become identifiers anyway (range
//! sequences are named after range ids), but the limit keeps them usable as labels anywhere.

use std::fmt;

const MAX_LEN: usize = 63;

/// A valid, case-sensitive sequence (or namespace) name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SequenceName(String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NameError {
    #[error("a name must not be empty")]
    Empty,
    #[error("a name must be at most {MAX_LEN} characters long")]
    TooLong,
    #[error("a name must start with a letter or a digit")]
    BadFirst,
    #[error("a name may contain only letters A-Z and a-z, digits, '.', '_' and '-'")]
    BadCharacter,
}

impl SequenceName {
    pub fn parse(raw: &str) -> Result<Self, NameError> {
        let first = raw.bytes().next().ok_or(NameError::Empty)?;
        if raw.len() > MAX_LEN {
            return Err(NameError::TooLong);
        }
        if !raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            return Err(NameError::BadCharacter);
        }
        if !first.is_ascii_alphanumeric() {
            return Err(NameError::BadFirst);
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SequenceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_alphabet() {
        for ok in ["a", "Z", "0", "fedex-acct.7_x", "UPS", &"x".repeat(63)] {
            assert_eq!(SequenceName::parse(ok).unwrap().as_str(), ok);
        }
    }

    #[test]
    fn rejects_hostile_names() {
        let cases = [
            ("", NameError::Empty),
            (&"x".repeat(64), NameError::TooLong),
            ("-a", NameError::BadFirst),
            (".a", NameError::BadFirst),
            ("_a", NameError::BadFirst),
            ("a b", NameError::BadCharacter),
            ("a\"b", NameError::BadCharacter),
            ("a;drop", NameError::BadCharacter),
            ("a'b", NameError::BadCharacter),
            ("é", NameError::BadCharacter),
            ("a/b", NameError::BadCharacter),
            ("a\0", NameError::BadCharacter),
        ];
        for (raw, expected) in cases {
            assert_eq!(SequenceName::parse(raw), Err(expected), "{raw:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        /// Any string at all: accepted exactly when it follows the rule, and then kept as is.
        #[test]
        fn parse_accepts_exactly_the_documented_names(raw in "(?s).{0,70}|[A-Za-z0-9._\\-\"'; ]{0,70}") {
            let follows_rule = (1..=63).contains(&raw.len())
                && raw.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
                && raw.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
            match SequenceName::parse(&raw) {
                Ok(name) => {
                    proptest::prop_assert!(follows_rule);
                    proptest::prop_assert_eq!(name.as_str(), raw.as_str());
                }
                Err(_) => proptest::prop_assert!(!follows_rule),
            }
        }
    }

    #[test]
    fn a_long_multibyte_name_is_rejected_not_truncated() {
        // 32 two-byte characters: 32 characters but 64 bytes.
        assert!(SequenceName::parse(&"é".repeat(32)).is_err());
    }
}
