//! The only place where identifiers are spliced into SQL text, and only for DDL.
//!
//! Each range is one PostgreSQL sequence named `seqvend_ranges.r<range id>`: the name comes
//! from the range's integer id, never from a user's name, so it is short, unique and never
//! truncated. The registry stores it as a `regclass` (dump-safe); at request time it is passed
//! to `nextval` as that value, never spliced. (Two SQL functions splice a `regclass`'s own
//! printed, quoted name, where PostgreSQL offers nothing else: `repair_rewind` locks a
//! sequence with `ALTER SEQUENCE`, and `range_last_value` reads `is_called`.)

use crate::db::RegistryTx;
use sqlx::postgres::types::Oid;

use crate::domain::{Increment, RangeBounds};

const SCHEMA: &str = "seqvend_ranges";

/// Quotes an identifier the way PostgreSQL's `quote_ident` does: always in double quotes,
/// inner double quotes doubled.
fn quote_ident(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

fn range_sequence_name(range_id: i32) -> String {
    format!(
        "{}.{}",
        quote_ident(SCHEMA),
        quote_ident(&format!("r{range_id}"))
    )
}

/// The range's sequence as `regclass::text` prints it (seqvend's sessions do not have
/// `seqvend_ranges` on their search path, and the name needs no quotes).
pub fn range_sequence_text(range_id: i32) -> String {
    format!("{SCHEMA}.r{range_id}")
}

/// Creates the PostgreSQL sequence for a range and returns its oid. `CACHE 1`: every value
/// a session draws is visible to all, and nothing is pre-allocated to a session that may die.
pub async fn create_range_sequence(
    tx: &mut RegistryTx,
    range_id: i32,
    bounds: RangeBounds,
    increment: Increment,
    start: i64,
) -> sqlx::Result<Oid> {
    let name = range_sequence_name(range_id);
    let ddl = format!(
        "CREATE SEQUENCE {name} AS bigint INCREMENT BY {} MINVALUE {} MAXVALUE {} START WITH {} \
         CACHE 1 NO CYCLE",
        increment.get(),
        bounds.min(),
        bounds.max(),
        start
    );
    sqlx::raw_sql(&ddl).execute(&mut *tx).await?;
    sqlx::query_scalar!(r#"SELECT $1::text::regclass::oid AS "oid!""#, name)
        .fetch_one(&mut *tx)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a quoted identifier back the way PostgreSQL's lexer does.
    fn unquote(quoted: &str) -> Option<String> {
        let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
        let mut out = String::new();
        let mut chars = inner.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '"' {
                // Inside the quotes a double quote only appears doubled.
                if chars.next() != Some('"') {
                    return None;
                }
            }
            out.push(c);
        }
        Some(out)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        /// Whatever the identifier, quoting yields one token that reads back as exactly it:
        /// nothing can end the identifier early and splice SQL after it.
        #[test]
        fn quoting_round_trips_every_identifier(ident in "(?s).{0,80}|[\"a-z; ]{0,40}") {
            proptest::prop_assert_eq!(unquote(&quote_ident(&ident)), Some(ident));
        }
    }

    #[test]
    fn identifiers_are_always_quoted() {
        assert_eq!(quote_ident("r1"), "\"r1\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(range_sequence_name(42), "\"seqvend_ranges\".\"r42\"");
    }
}
