//! What a token may do: scopes of the form `<verb>:<target>`. Verbs are `read`, `vend`,
//! `lease` and `admin`, each including the ones before it; a target is `*` (every sequence), a
//! sequence name, a name prefix ending in `*` (`fedex-*`), `namespace:<namespace>`, or a
//! namespace prefix `namespace:<prefix>*` (`namespace:ups_1z.5R8939.*`, a UPS account's
//! every service).
//!
//! `lease` stands apart from `vend` because it takes in bulk what `vend` takes one request
//! at a time: up to 100,000 values a call (gaps, if the client never uses them) and worker
//! ids, of which there are few.

use std::fmt;

use crate::carriers::Format;
use crate::domain::SequenceName;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verb {
    Read,
    Vend,
    Lease,
    Admin,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Vend => "vend",
            Self::Lease => "lease",
            Self::Admin => "admin",
        }
    }

    fn parse(raw: &str) -> Option<Self> {
        [Self::Read, Self::Vend, Self::Lease, Self::Admin]
            .into_iter()
            .find(|verb| verb.as_str() == raw)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Everything,
    Name(String),
    Prefix(String),
    Namespace(String),
    NamespacePrefix(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    verb: Verb,
    target: Target,
}

/// What a request acts on.
#[derive(Debug, Clone, Copy)]
pub enum Resource<'a> {
    /// A sequence, with its namespace when it exists.
    Sequence {
        name: &'a str,
        namespace: Option<&'a str>,
    },
    /// A namespace's number space, which creating a sequence or adding a range claims for
    /// good (ranges are never deleted). Covered by a namespace target, and by a name or
    /// prefix target of the same spelling (a sequence's namespace is by default its name)
    /// unless it is a carrier's number space.
    Namespace(&'a str),
    /// Something no sequence scope names: the token list, the whole event log. Only `*`
    /// covers it.
    Service,
    /// Whatever sequence it may be: a token with the verb on any target is let in (the list
    /// of sequences, which is then filtered; time-ordered ids, which belong to no sequence).
    AnySequence,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "a scope is `<verb>:<target>`: verb read, vend, lease or admin; target `*`, a sequence \
     name, a name prefix ending in `*`, `namespace:<namespace>`, or a namespace prefix \
     `namespace:<prefix>*` (got {0:?})"
)]
pub struct ScopeError(pub String);

impl Scope {
    pub const ADMIN_ALL: Scope = Scope {
        verb: Verb::Admin,
        target: Target::Everything,
    };
    pub const LEASE_ALL: Scope = Scope {
        verb: Verb::Lease,
        target: Target::Everything,
    };

    pub fn parse(raw: &str) -> Result<Self, ScopeError> {
        let invalid = || ScopeError(raw.to_owned());
        let (verb, target) = raw.split_once(':').ok_or_else(invalid)?;
        let verb = Verb::parse(verb).ok_or_else(invalid)?;
        let target = if target == "*" {
            Target::Everything
        } else if let Some(namespace) = target.strip_prefix("namespace:") {
            match namespace.strip_suffix('*') {
                Some(prefix) => Target::NamespacePrefix(valid_name(prefix).ok_or_else(invalid)?),
                None => Target::Namespace(valid_name(namespace).ok_or_else(invalid)?),
            }
        } else if let Some(prefix) = target.strip_suffix('*') {
            // A prefix is the start of a name: checked as a name would be.
            Target::Prefix(valid_name(prefix).ok_or_else(invalid)?)
        } else {
            Target::Name(valid_name(target).ok_or_else(invalid)?)
        };
        Ok(Self { verb, target })
    }

    /// Whether this scope lets `verb` act on `resource`.
    pub fn allows(&self, verb: Verb, resource: Resource<'_>) -> bool {
        if self.verb < verb {
            return false;
        }
        match (&self.target, resource) {
            (Target::Everything, _) => true,
            (_, Resource::AnySequence) => true,
            (_, Resource::Service) => false,
            (Target::Name(scoped), Resource::Sequence { name, .. }) => scoped == name,
            (Target::Prefix(prefix), Resource::Sequence { name, .. }) => name.starts_with(prefix),
            (Target::Namespace(scoped), Resource::Sequence { namespace, .. }) => {
                namespace == Some(scoped.as_str())
            }
            (Target::NamespacePrefix(prefix), Resource::Sequence { namespace, .. }) => {
                namespace.is_some_and(|namespace| namespace.starts_with(prefix.as_str()))
            }
            (Target::Namespace(scoped), Resource::Namespace(namespace)) => scoped == namespace,
            (Target::NamespacePrefix(prefix), Resource::Namespace(namespace)) => {
                namespace.starts_with(prefix.as_str())
            }
            // A sequence's namespace is by default its name, so a name or prefix target
            // covers the namespace spelt alike — but not a carrier's number space, which a
            // name scope such as `admin:u*` would otherwise claim (every UPS account).
            (Target::Name(scoped), Resource::Namespace(namespace)) => {
                scoped == namespace && !Format::is_number_space(namespace)
            }
            (Target::Prefix(prefix), Resource::Namespace(namespace)) => {
                namespace.starts_with(prefix.as_str()) && !Format::is_number_space(namespace)
            }
        }
    }
}

fn valid_name(raw: &str) -> Option<String> {
    SequenceName::parse(raw)
        .ok()
        .map(|name| name.as_str().to_owned())
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = self.verb.as_str();
        match &self.target {
            Target::Everything => write!(f, "{verb}:*"),
            Target::Name(name) => write!(f, "{verb}:{name}"),
            Target::Prefix(prefix) => write!(f, "{verb}:{prefix}*"),
            Target::Namespace(namespace) => write!(f, "{verb}:namespace:{namespace}"),
            Target::NamespacePrefix(prefix) => write!(f, "{verb}:namespace:{prefix}*"),
        }
    }
}

/// The scope a request needed, for the 403 that names it.
pub fn needed(verb: Verb, resource: Resource<'_>) -> String {
    match resource {
        Resource::Sequence { name, .. } => format!("{}:{name}", verb.as_str()),
        Resource::Namespace(namespace) => format!("{}:namespace:{namespace}", verb.as_str()),
        Resource::Service => format!("{}:*", verb.as_str()),
        Resource::AnySequence => format!("{}:<any sequence>", verb.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sequence<'a>(name: &'a str, namespace: &'a str) -> Resource<'a> {
        Resource::Sequence {
            name,
            namespace: Some(namespace),
        }
    }

    fn allows(scope: &str, verb: Verb, resource: Resource<'_>) -> bool {
        Scope::parse(scope).unwrap().allows(verb, resource)
    }

    #[test]
    fn scopes_read_back_as_written() {
        for raw in [
            "read:*",
            "vend:fedex-4471",
            "admin:fedex-*",
            "vend:namespace:ups.5R8939.03",
            "lease:orders-*",
            "admin:namespace:ups_1z.5R8939.*",
        ] {
            assert_eq!(Scope::parse(raw).unwrap().to_string(), raw);
        }
    }

    #[test]
    fn malformed_scopes_are_refused() {
        for raw in [
            "",
            "vend",
            "write:x",
            "vend:",
            "vend:-x",
            "vend:a/b",
            "vend:**",
            "vend:namespace:",
            "Vend:x",
            "vend:x*y",
            "vend: x",
            "vend:namespace:*",
            "vend:namespace:a**",
            "Lease:x",
        ] {
            assert!(Scope::parse(raw).is_err(), "{raw:?}");
        }
    }

    #[test]
    fn each_verb_includes_the_ones_before_it() {
        let fedex = sequence("fedex-1", "fedex-1");
        assert!(allows("admin:fedex-1", Verb::Vend, fedex));
        assert!(allows("admin:fedex-1", Verb::Read, fedex));
        assert!(allows("vend:fedex-1", Verb::Read, fedex));
        assert!(!allows("vend:fedex-1", Verb::Admin, fedex));
        assert!(!allows("read:fedex-1", Verb::Vend, fedex));
        assert!(allows("admin:fedex-1", Verb::Lease, fedex));
        assert!(allows("lease:fedex-1", Verb::Vend, fedex));
        assert!(!allows("lease:fedex-1", Verb::Admin, fedex));
    }

    #[test]
    fn vend_never_implies_lease() {
        let fedex = sequence("fedex-1", "fedex-1");
        assert!(!allows("vend:*", Verb::Lease, fedex));
        assert!(!allows("vend:fedex-1", Verb::Lease, Resource::AnySequence));
        assert!(allows("lease:fedex-*", Verb::Lease, Resource::AnySequence));
    }

    #[test]
    fn a_namespace_is_covered_by_a_namespace_target_or_a_name_target_spelt_alike_unless_a_carriers()
    {
        let space = Resource::Namespace("ups_1z.5R8939.03");
        assert!(allows("admin:*", Verb::Admin, space));
        assert!(allows(
            "admin:namespace:ups_1z.5R8939.03",
            Verb::Admin,
            space
        ));
        assert!(allows(
            "admin:namespace:ups_1z.5R8939.*",
            Verb::Admin,
            space
        ));
        assert!(!allows(
            "admin:namespace:ups_1z.5R8939.01",
            Verb::Admin,
            space
        ));
        assert!(!allows(
            "admin:namespace:ups_1z.5R89390*",
            Verb::Admin,
            space
        ));
        assert!(!allows("admin:tenanta-*", Verb::Admin, space));
        assert!(!allows(
            "vend:namespace:ups_1z.5R8939.03",
            Verb::Admin,
            space
        ));
        // A name or prefix scope spelt like a carrier's number space claims none of it.
        assert!(!allows("admin:u*", Verb::Admin, space));
        assert!(!allows("admin:ups_1z.5R8939.*", Verb::Admin, space));
        assert!(!allows("admin:ups_1z.5R8939.03", Verb::Admin, space));
        assert!(!allows(
            "admin:dhl*",
            Verb::Admin,
            Resource::Namespace("dhl_express")
        ));
        let own = Resource::Namespace("tenanta-ns");
        assert!(allows("admin:tenanta-*", Verb::Admin, own));
        assert!(allows("admin:tenanta-ns", Verb::Admin, own));
        assert!(!allows("admin:tenanta-n", Verb::Admin, own));
    }

    #[test]
    fn a_namespace_prefix_covers_the_sequences_of_every_namespace_it_starts() {
        let labels = sequence("labels", "ups_1z.5R8939.03");
        assert!(allows("vend:namespace:ups_1z.5R8939.*", Verb::Vend, labels));
        assert!(!allows(
            "vend:namespace:ups_1z.5R8940.*",
            Verb::Vend,
            labels
        ));
        let unknown = Resource::Sequence {
            name: "labels",
            namespace: None,
        };
        assert!(!allows("vend:namespace:ups_1z.*", Verb::Vend, unknown));
    }

    #[test]
    fn targets_match_a_name_a_prefix_or_a_namespace() {
        let fedex = sequence("fedex-1", "carrier-a");
        assert!(allows("vend:*", Verb::Vend, fedex));
        assert!(allows("vend:fedex-1", Verb::Vend, fedex));
        assert!(!allows("vend:fedex-10", Verb::Vend, fedex));
        assert!(allows("vend:fedex-*", Verb::Vend, fedex));
        assert!(!allows("vend:ups-*", Verb::Vend, fedex));
        assert!(allows("vend:namespace:carrier-a", Verb::Vend, fedex));
        assert!(!allows("vend:namespace:carrier-b", Verb::Vend, fedex));
        let unknown = Resource::Sequence {
            name: "fedex-2",
            namespace: None,
        };
        assert!(!allows("vend:namespace:carrier-a", Verb::Vend, unknown));
        assert!(allows("vend:fedex-*", Verb::Vend, unknown));
    }

    #[test]
    fn only_the_star_reaches_the_service_and_any_target_some_sequence() {
        assert!(allows("admin:*", Verb::Admin, Resource::Service));
        assert!(!allows("admin:fedex-*", Verb::Admin, Resource::Service));
        assert!(allows("read:fedex-*", Verb::Read, Resource::AnySequence));
        assert!(!allows("read:fedex-*", Verb::Vend, Resource::AnySequence));
    }
}
