//! What a token may do: scopes of the form `<verb>:<target>`. Verbs are `read`, `vend` and
//! `admin`, each including the ones before it; a target is `*` (every sequence), a sequence
//! name, a name prefix ending in `*` (`fedex-*`), or `namespace:<namespace>`.

use std::fmt;

use crate::domain::SequenceName;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verb {
    Read,
    Vend,
    Admin,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Vend => "vend",
            Self::Admin => "admin",
        }
    }

    fn parse(raw: &str) -> Option<Self> {
        [Self::Read, Self::Vend, Self::Admin]
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
    /// Something no sequence scope names: the token list, the whole event log. Only `*`
    /// covers it.
    Service,
    /// Whatever sequence it may be: a token with the verb on any target is let in (the list
    /// of sequences, which is then filtered; time-ordered ids, which belong to no sequence).
    AnySequence,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "a scope is `<verb>:<target>`: verb read, vend or admin; target `*`, a sequence name, \
     a name prefix ending in `*`, or `namespace:<namespace>` (got {0:?})"
)]
pub struct ScopeError(pub String);

impl Scope {
    pub const ADMIN_ALL: Scope = Scope {
        verb: Verb::Admin,
        target: Target::Everything,
    };
    pub const VEND_ALL: Scope = Scope {
        verb: Verb::Vend,
        target: Target::Everything,
    };

    pub fn parse(raw: &str) -> Result<Self, ScopeError> {
        let invalid = || ScopeError(raw.to_owned());
        let (verb, target) = raw.split_once(':').ok_or_else(invalid)?;
        let verb = Verb::parse(verb).ok_or_else(invalid)?;
        let target = if target == "*" {
            Target::Everything
        } else if let Some(namespace) = target.strip_prefix("namespace:") {
            Target::Namespace(valid_name(namespace).ok_or_else(invalid)?)
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
        }
    }
}

/// The scope a request needed, for the 403 that names it.
pub fn needed(verb: Verb, resource: Resource<'_>) -> String {
    match resource {
        Resource::Sequence { name, .. } => format!("{}:{name}", verb.as_str()),
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
