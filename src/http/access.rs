//! What a caller may touch: the scope checks handlers share.

use super::caller::Caller;
use super::error::ApiError;
use crate::auth::{Resource, Verb};
use crate::domain::SequenceName;
use crate::registry::Known;
use crate::service::Service;

/// Checks that `caller` may create the sequence `name` in `namespace`, claiming both: admin
/// over the name **and** over the namespace (adding a range claims the namespace only). Either
/// alone is not enough: a name scope would let one tenant put a sequence into another's
/// namespace (or carrier account, a formatted sequence's namespace), and a namespace scope
/// would let it take a name another tenant's name scopes cover. Ranges are never deleted, so
/// what is claimed is claimed for good.
pub fn require_claim(caller: &Caller, name: &str, namespace: &str) -> Result<(), ApiError> {
    let sequence = Resource::Sequence {
        name,
        namespace: None,
    };
    caller.require(Verb::Admin, sequence)?;
    caller.require(Verb::Admin, Resource::Namespace(namespace))
}

/// Checks that `caller` may `verb` on the sequence `name` (its namespace read from the
/// catalog, kept in memory), and returns what the catalog knows of it. A caller without the
/// scope is answered 403 whether or not the sequence exists, so scopes tell nothing of names
/// outside them.
pub async fn require_on_sequence(
    caller: &Caller,
    verb: Verb,
    service: &Service,
    name: &SequenceName,
) -> Result<Known, ApiError> {
    let known = service.sequence(name).await?;
    let namespace = match &known {
        Known::Sequence(entry) => Some(entry.namespace.as_str()),
        Known::NoSuchSequence => None,
    };
    caller.require(
        verb,
        Resource::Sequence {
            name: name.as_str(),
            namespace,
        },
    )?;
    Ok(known)
}

/// The sequence a read handler's path names, once `caller` may read it: the name parsed
/// (400 `invalid_name`) and the read scope checked (403) before anything is looked up.
pub async fn readable_sequence(
    caller: &Caller,
    service: &Service,
    raw: &str,
) -> Result<SequenceName, ApiError> {
    let name = SequenceName::parse(raw)?;
    require_on_sequence(caller, Verb::Read, service, &name).await?;
    Ok(name)
}
