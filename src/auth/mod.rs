//! Who is calling and what they may do. A caller presents a bearer token: a bootstrap token
//! from the environment (`bootstrap`), or a token managed at run time and kept in PostgreSQL
//! (`store`, kept current through the registry's notifications by `token_changes`; secrets in
//! `secret`). Either way it stands for a
//! `Principal`: a name (for logs, metrics and the audit trail; never the secret) and scopes
//! (`scope`). The HTTP edge turns a request into a `Principal` (`authenticate`) and asks it
//! for the scope each action needs (`Principal::require`).

mod bootstrap;
mod error;
mod scope;
pub mod secret;
mod store;
mod token_changes;

use std::sync::Arc;

pub use bootstrap::{Role, Tokens};
pub use error::AuthError;
pub use scope::{Resource, Scope, ScopeError, Verb};
pub use store::TokenStore;
pub use token_changes::TokenChanges;

/// A caller, as its token describes it.
#[derive(Debug)]
pub struct Principal {
    name: String,
    /// Who owns the caller's idempotency keys: one identity per secret, the same on every
    /// instance, and never another caller's (see `owner`).
    owner: String,
    scopes: Vec<Scope>,
}

impl Principal {
    fn bootstrap(role: Role, name: String, owner: String) -> Self {
        let scope = match role {
            Role::Admin => Scope::ADMIN_ALL,
            Role::Vend => Scope::LEASE_ALL,
        };
        Self {
            name,
            owner,
            scopes: vec![scope],
        }
    }

    /// A token from the database; scopes that no longer parse (stored by a newer seqvend)
    /// grant nothing. Its name is its identity: unique, never reused (even once revoked),
    /// and never holding the `:` that bootstrap and anonymous owners hold.
    pub fn scoped(name: String, scopes: Vec<String>) -> Self {
        Self {
            owner: name.clone(),
            name,
            scopes: scopes.iter().filter_map(|s| Scope::parse(s).ok()).collect(),
        }
    }

    fn anonymous() -> Self {
        Self::bootstrap(Role::Admin, "anonymous".to_owned(), "anonymous:".to_owned())
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The identity that owns the caller's idempotency keys. Not a name to show: a
    /// bootstrap token's is a longer fingerprint of its secret than its name holds.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The scopes, as written when the token was made.
    pub fn scopes(&self) -> Vec<String> {
        self.scopes.iter().map(ToString::to_string).collect()
    }

    pub fn allows(&self, verb: Verb, resource: Resource<'_>) -> bool {
        self.scopes.iter().any(|scope| scope.allows(verb, resource))
    }

    /// `Forbidden`, naming the scope needed, unless the caller may `verb` on `resource`.
    pub fn require(&self, verb: Verb, resource: Resource<'_>) -> Result<(), AuthError> {
        if self.allows(verb, resource) {
            Ok(())
        } else {
            Err(AuthError::Forbidden {
                needed: scope::needed(verb, resource),
            })
        }
    }
}

/// The caller `bearer` (an `Authorization: Bearer` token, if one was sent) stands for: the
/// anonymous admin with auth disabled, a bootstrap token, or a run-time token from `store`.
pub async fn authenticate(
    tokens: &Tokens,
    store: &TokenStore,
    bearer: Option<&str>,
) -> Result<Arc<Principal>, AuthError> {
    if tokens.disabled() {
        return Ok(tokens.anonymous());
    }
    let presented = bearer.ok_or(AuthError::Unauthenticated)?;
    if let Some(principal) = tokens.principal_of(presented.as_bytes()) {
        return Ok(principal);
    }
    let (id, secret) = secret::parse(presented).ok_or(AuthError::Unauthenticated)?;
    store.authenticate(id, secret).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_run_time_token_shares_an_owner_with_a_bootstrap_token_or_the_anonymous_caller() {
        // Run-time names never hold a `:` (nor start with `bootstrap-`); the others' owners do.
        let tokens = Tokens::new("admin-secret", "vend-secret", false);
        let bootstrap = tokens.principal_of(b"admin-secret").unwrap();
        let anonymous = Tokens::disabled_auth().anonymous();
        for taken in [bootstrap.name(), "anonymous"] {
            let run_time = Principal::scoped(taken.to_owned(), vec!["vend:*".to_owned()]);
            assert_ne!(run_time.owner(), bootstrap.owner());
            assert_ne!(run_time.owner(), anonymous.owner());
        }
        assert!(bootstrap.owner().contains(':') && anonymous.owner().contains(':'));
    }
}
