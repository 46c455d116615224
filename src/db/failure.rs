//! How a failed database call is judged, once for every caller (the registry, worker leases,
//! the vend engine): the database cannot serve now (unavailable), a transient conflict with
//! another session that a retry gets past, or a fault in the request or in seqvend. Callers
//! answer the first two alike ("retry shortly") and the last as an internal error.

/// A failed database call, judged.
#[derive(Debug)]
pub enum DbFailure {
    /// Down, restarting, failing over, overloaded or too slow.
    Unavailable(anyhow::Error),
    /// A lock not granted in time, a deadlock or a serialization failure.
    Conflict(anyhow::Error),
    Fault(anyhow::Error),
}

impl DbFailure {
    pub fn judge(err: impl Into<anyhow::Error>) -> Self {
        let err = err.into();
        match kind(&err) {
            Kind::Unavailable => Self::Unavailable(err),
            Kind::Conflict => Self::Conflict(err),
            Kind::Fault => Self::Fault(err),
        }
    }
}

/// One sequence the database could not serve now, while the statement itself succeeded: a
/// lock another session held past the vend statement's lock timeout, a deadlock or a
/// serialization conflict. Says which.
#[derive(Debug, thiserror::Error)]
#[error("the sequence could not be served now: {0}")]
pub struct Busy(pub String);

/// True when the failure means "the database cannot serve now" (unavailable, or a transient
/// conflict) rather than a fault in the request or in seqvend.
pub fn is_unavailable(err: &anyhow::Error) -> bool {
    kind(err) != Kind::Fault
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Unavailable,
    Conflict,
    Fault,
}

/// The first cause in `err`'s chain that says anything decides.
fn kind(err: &anyhow::Error) -> Kind {
    err.chain().find_map(kind_of_cause).unwrap_or(Kind::Fault)
}

fn kind_of_cause(cause: &(dyn std::error::Error + 'static)) -> Option<Kind> {
    if cause.downcast_ref::<Busy>().is_some() {
        return Some(Kind::Conflict);
    }
    if let Some(pg) = cause.downcast_ref::<tokio_postgres::Error>() {
        if pg.is_closed() {
            return Some(Kind::Unavailable);
        }
        return match pg.code() {
            None => Some(Kind::Unavailable),
            Some(code) => code_kind(code.code()),
        };
    }
    if let Some(pool) = cause.downcast_ref::<deadpool::managed::PoolError<tokio_postgres::Error>>()
    {
        return (!matches!(pool, deadpool::managed::PoolError::PostCreateHook(_)))
            .then_some(Kind::Unavailable);
    }
    if let Some(sqlx) = cause.downcast_ref::<sqlx::Error>() {
        return match sqlx {
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => {
                Some(Kind::Unavailable)
            }
            sqlx::Error::Database(db) => db.code().and_then(|c| code_kind(&c)),
            _ => None,
        };
    }
    let timed_out = cause
        .downcast_ref::<tokio::time::error::Elapsed>()
        .is_some();
    (cause.downcast_ref::<std::io::Error>().is_some() || timed_out).then_some(Kind::Unavailable)
}

/// SQLSTATEs that mean the server cannot take work now: connection exceptions (08),
/// shutdowns and cancellations (57), lack of resources (53), a read-only standby (25006); and
/// the transient conflicts a retry gets past: a lock not granted within `lock_timeout`
/// (55P03), a deadlock (40P01), a serialization failure (40001).
fn code_kind(code: &str) -> Option<Kind> {
    if matches!(code, "55P03" | "40P01" | "40001") {
        Some(Kind::Conflict)
    } else if code.starts_with("08")
        || code.starts_with("57")
        || code.starts_with("53")
        || code == "25006"
    {
        Some(Kind::Unavailable)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_conflicts_are_unavailable_and_faults_are_not() {
        for code in ["57014", "08006", "53300", "25006"] {
            assert_eq!(code_kind(code), Some(Kind::Unavailable), "{code}");
        }
        for code in ["55P03", "40P01", "40001"] {
            assert_eq!(code_kind(code), Some(Kind::Conflict), "{code}");
        }
        for code in ["2200H", "42P01", "XX000", "23505"] {
            assert_eq!(code_kind(code), None, "{code}");
        }
        let busy = anyhow::Error::new(Busy("lock timeout".into())).context("leasing");
        assert!(is_unavailable(&busy));
        assert!(matches!(DbFailure::judge(busy), DbFailure::Conflict(_)));
        assert!(!is_unavailable(&anyhow::anyhow!("a bug")));
    }
}
