//! The bootstrap tokens, configured in the environment: admin tokens may do everything,
//! vend tokens may vend, lease and read every sequence. They are compared in constant time and
//! never logged (`Debug` hides them).
//!
//! A token is known by a fingerprint of its secret, never by its place in the list: in a
//! rotation (`old,new` on one instance, `new` on another) each secret must be the same caller
//! on every instance, and two secrets never one. It is named `bootstrap-admin-<8 hex>` or
//! `bootstrap-vend-<8 hex>` wherever a token name is shown (logs, the audit trail), and owns
//! its idempotency keys as `bootstrap:<32 hex>` — a `:` no run-time token name holds.

use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::Principal;
use crate::settings::BootstrapTokens;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Admin,
    Vend,
}

/// The bootstrap tokens as callers: the configured secrets and what each stands for.
#[derive(Clone, Default)]
pub struct Tokens {
    secrets: BootstrapTokens,
    /// What each token stands for, built once (the admin tokens', then the vend tokens'), so
    /// that a request allocates nothing to learn it.
    principals: Vec<Arc<Principal>>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.secrets.fmt(f)
    }
}

impl From<&BootstrapTokens> for Tokens {
    fn from(secrets: &BootstrapTokens) -> Self {
        let mut principals: Vec<Arc<Principal>> = secrets
            .admin()
            .iter()
            .map(|secret| (Role::Admin, secret))
            .chain(secrets.vend().iter().map(|secret| (Role::Vend, secret)))
            .map(|(role, secret)| {
                let fingerprint = Fingerprint::of(secret);
                Arc::new(Principal::bootstrap(
                    role,
                    fingerprint.name(role),
                    fingerprint.owner(),
                ))
            })
            .collect();
        // With auth disabled the caller is the first token's, or else anonymous (`anonymous`).
        if principals.is_empty() && secrets.disabled() {
            principals.push(Arc::new(Principal::anonymous()));
        }
        Self {
            secrets: secrets.clone(),
            principals,
        }
    }
}

impl Tokens {
    /// `admin` and `vend` are comma-separated lists.
    pub fn new(admin: &str, vend: &str, disabled: bool) -> Self {
        Self::from(&BootstrapTokens::new(admin, vend, disabled))
    }

    /// No authentication at all: every caller is an admin.
    pub fn disabled_auth() -> Self {
        Self::from(&BootstrapTokens::disabled_auth())
    }

    /// The caller with auth disabled.
    pub fn anonymous(&self) -> Arc<Principal> {
        self.principals
            .first()
            .cloned()
            .unwrap_or_else(|| Arc::new(Principal::anonymous()))
    }

    pub fn disabled(&self) -> bool {
        self.secrets.disabled()
    }

    /// The caller a presented bootstrap token stands for.
    pub fn principal_of(&self, presented: &[u8]) -> Option<Arc<Principal>> {
        let (role, i) = self.matched(presented)?;
        let offset = match role {
            Role::Admin => 0,
            Role::Vend => self.secrets.admin().len(),
        };
        self.principals.get(offset + i).cloned()
    }

    /// The role a presented token grants and its name.
    pub fn role_of(&self, presented: &[u8]) -> Option<(Role, String)> {
        let principal = self.principal_of(presented)?;
        let (role, _) = self.matched(presented)?;
        Some((role, principal.name().to_owned()))
    }

    /// The role a presented token grants and its place in its list. Every configured token
    /// is compared, so the time taken does not tell which one (or whether any) matched.
    fn matched(&self, presented: &[u8]) -> Option<(Role, usize)> {
        let position = |list: &[Vec<u8>]| {
            let mut found = None;
            for (i, token) in list.iter().enumerate() {
                if bool::from(token.as_slice().ct_eq(presented)) {
                    found.get_or_insert(i);
                }
            }
            found
        };
        let (admin, vend) = (
            position(self.secrets.admin()),
            position(self.secrets.vend()),
        );
        match (admin, vend) {
            (Some(i), _) => Some((Role::Admin, i)),
            (None, Some(i)) => Some((Role::Vend, i)),
            (None, None) => None,
        }
    }
}

/// What tells one bootstrap secret from another without showing it: SHA-256 of the secret
/// under a label of its own (so it matches no other hash of the same string). With a secret of
/// 128 random bits or more nothing can be learnt from it; a guessable secret could be confirmed
/// from it as from any hash, which is why docs/api.md asks for long random tokens.
struct Fingerprint([u8; 32]);

impl Fingerprint {
    const LABEL: &'static [u8] = b"seqvend bootstrap token\0";

    fn of(secret: &[u8]) -> Self {
        let mut hash = Sha256::new();
        hash.update(Self::LABEL);
        hash.update(secret);
        Self(hash.finalize().into())
    }

    /// Shown in logs and the audit trail: short, and the same on every instance.
    fn name(&self, role: Role) -> String {
        let short = hex::encode(&self.0[..4]);
        match role {
            Role::Admin => format!("bootstrap-admin-{short}"),
            Role::Vend => format!("bootstrap-vend-{short}"),
        }
    }

    /// Owns the token's idempotency keys: 128 bits, so no two secrets ever share one.
    fn owner(&self) -> String {
        format!("bootstrap:{}", hex::encode(&self.0[..16]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_list_grants_its_role() {
        let tokens = Tokens::new("a1, a2", "v1", false);
        let (role, name) = tokens.role_of(b"a2").unwrap();
        assert_eq!(role, Role::Admin);
        assert!(name.starts_with("bootstrap-admin-"), "{name}");
        let (role, name) = tokens.role_of(b"v1").unwrap();
        assert_eq!(role, Role::Vend);
        assert!(name.starts_with("bootstrap-vend-"), "{name}");
        assert_eq!(tokens.role_of(b"v"), None);
        assert_eq!(tokens.role_of(b""), None);
    }

    #[test]
    fn a_secret_is_the_same_caller_wherever_it_stands_in_the_list() {
        let rotating = Tokens::new("", "old-secret,new-secret", false);
        let rotated = Tokens::new("", "new-secret", false);
        let on_rotating = rotating.principal_of(b"new-secret").unwrap();
        let on_rotated = rotated.principal_of(b"new-secret").unwrap();
        assert_eq!(on_rotating.name(), on_rotated.name());
        assert_eq!(on_rotating.owner(), on_rotated.owner());
        let old = rotating.principal_of(b"old-secret").unwrap();
        assert_ne!(old.name(), on_rotated.name());
        assert_ne!(old.owner(), on_rotated.owner());
    }

    #[test]
    fn names_and_owners_never_show_the_secret() {
        let tokens = Tokens::new("secret-admin", "secret-vend", false);
        for presented in [&b"secret-admin"[..], b"secret-vend"] {
            let principal = tokens.principal_of(presented).unwrap();
            for shown in [principal.name(), principal.owner()] {
                assert!(!shown.contains("secret"), "{shown}");
            }
            assert!(principal.owner().starts_with("bootstrap:"));
        }
    }

    #[test]
    fn debug_output_never_shows_a_token() {
        let shown = format!("{:?}", Tokens::new("secret-admin", "secret-vend", false));
        assert!(!shown.contains("secret"), "{shown}");
    }
}
