//! The bootstrap tokens, configured in the environment: admin tokens may do everything,
//! vend tokens may vend and read every sequence. They are compared in constant time and never
//! logged (`Debug` hides them); they are named `bootstrap-admin-<n>` and `bootstrap-vend-<n>`
//! (their place in the list) wherever a token name is shown.

use std::fmt;
use std::sync::Arc;

use subtle::ConstantTimeEq;

use super::Principal;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Admin,
    Vend,
}

#[derive(Clone, Default)]
pub struct Tokens {
    admin: Vec<Vec<u8>>,
    vend: Vec<Vec<u8>>,
    disabled: bool,
    /// What each token stands for, built once (the admin tokens', then the vend tokens'), so
    /// that a request allocates nothing to learn it.
    principals: Vec<Arc<Principal>>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("admin", &self.admin.len())
            .field("vend", &self.vend.len())
            .field("disabled", &self.disabled)
            .finish()
    }
}

impl Tokens {
    /// `admin` and `vend` are comma-separated lists.
    pub fn new(admin: &str, vend: &str, disabled: bool) -> Self {
        let split = |list: &str| {
            list.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(|t| t.as_bytes().to_vec())
                .collect()
        };
        let (admin, vend): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (split(admin), split(vend));
        let principals = (0..admin.len())
            .map(|i| (Role::Admin, i))
            .chain((0..vend.len()).map(|i| (Role::Vend, i)))
            .map(|(role, i)| Arc::new(Principal::bootstrap(role, name(role, i))))
            .collect();
        Self {
            admin,
            vend,
            disabled,
            principals,
        }
    }

    /// No authentication at all: every caller is an admin.
    pub fn disabled_auth() -> Self {
        Self {
            disabled: true,
            principals: vec![Arc::new(Principal::anonymous())],
            ..Self::default()
        }
    }

    /// The caller with auth disabled.
    pub fn anonymous(&self) -> Arc<Principal> {
        self.principals
            .first()
            .cloned()
            .unwrap_or_else(|| Arc::new(Principal::anonymous()))
    }

    pub fn is_empty(&self) -> bool {
        self.admin.is_empty() && self.vend.is_empty()
    }

    pub fn disabled(&self) -> bool {
        self.disabled
    }

    /// The caller a presented bootstrap token stands for.
    pub fn principal_of(&self, presented: &[u8]) -> Option<Arc<Principal>> {
        let (role, i) = self.matched(presented)?;
        let offset = match role {
            Role::Admin => 0,
            Role::Vend => self.admin.len(),
        };
        self.principals.get(offset + i).cloned()
    }

    /// The role a presented token grants and its name.
    pub fn role_of(&self, presented: &[u8]) -> Option<(Role, String)> {
        self.matched(presented)
            .map(|(role, i)| (role, name(role, i)))
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
        let (admin, vend) = (position(&self.admin), position(&self.vend));
        match (admin, vend) {
            (Some(i), _) => Some((Role::Admin, i)),
            (None, Some(i)) => Some((Role::Vend, i)),
            (None, None) => None,
        }
    }
}

/// A bootstrap token's name: its list and its place there, from 1.
fn name(role: Role, i: usize) -> String {
    match role {
        Role::Admin => format!("bootstrap-admin-{}", i + 1),
        Role::Vend => format!("bootstrap-vend-{}", i + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_list_grants_its_role() {
        let tokens = Tokens::new("a1, a2", "v1", false);
        assert_eq!(
            tokens.role_of(b"a2"),
            Some((Role::Admin, "bootstrap-admin-2".to_owned()))
        );
        assert_eq!(
            tokens.role_of(b"v1"),
            Some((Role::Vend, "bootstrap-vend-1".to_owned()))
        );
        assert_eq!(tokens.role_of(b"v"), None);
        assert_eq!(tokens.role_of(b""), None);
    }

    #[test]
    fn debug_output_never_shows_a_token() {
        let shown = format!("{:?}", Tokens::new("secret-admin", "secret-vend", false));
        assert!(!shown.contains("secret"), "{shown}");
    }
}
