//! The `outcome` column of the vend, block-lease and counter statements (see the migrations),
//! parsed once for all three.

/// What a statement says of one sequence (or counter family).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementOutcome {
    Ok,
    Replayed,
    KeyReused,
    /// The idempotency key is still being served by another transaction (past lock_timeout).
    KeyInFlight,
    Retired,
    NotFound,
    Unavailable,
    Failed,
}

impl StatementOutcome {
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        Ok(match text {
            "ok" => Self::Ok,
            "replayed" => Self::Replayed,
            "key_reused" => Self::KeyReused,
            "key_in_flight" => Self::KeyInFlight,
            "retired" => Self::Retired,
            "not_found" => Self::NotFound,
            "unavailable" => Self::Unavailable,
            "failed" => Self::Failed,
            other => anyhow::bail!("unexpected statement outcome {other:?}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_the_statements_write_parses_and_nothing_else_does() {
        let written = [
            "ok",
            "replayed",
            "key_reused",
            "key_in_flight",
            "retired",
            "not_found",
            "unavailable",
            "failed",
        ];
        for text in written {
            assert!(StatementOutcome::parse(text).is_ok(), "{text}");
        }
        assert!(StatementOutcome::parse("OK").is_err());
        assert!(StatementOutcome::parse("").is_err());
    }
}
