//! The bootstrap tokens as configured (`SEQVEND_ADMIN_TOKENS`, `SEQVEND_VEND_TOKENS`,
//! `SEQVEND_AUTH_DISABLED`): plain secrets. What each stands for is `auth::Tokens`'s business.

use std::fmt;

/// The configured secrets, in the order they were listed. `Debug` shows only how many.
#[derive(Clone, Default)]
pub struct BootstrapTokens {
    admin: Vec<Vec<u8>>,
    vend: Vec<Vec<u8>>,
    disabled: bool,
}

impl fmt::Debug for BootstrapTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("admin", &self.admin.len())
            .field("vend", &self.vend.len())
            .field("disabled", &self.disabled)
            .finish()
    }
}

impl BootstrapTokens {
    /// `admin` and `vend` are comma-separated lists.
    pub fn new(admin: &str, vend: &str, disabled: bool) -> Self {
        let split = |list: &str| {
            list.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(|t| t.as_bytes().to_vec())
                .collect()
        };
        Self {
            admin: split(admin),
            vend: split(vend),
            disabled,
        }
    }

    /// No authentication at all: every caller is an admin.
    pub fn disabled_auth() -> Self {
        Self {
            disabled: true,
            ..Self::default()
        }
    }

    pub fn admin(&self) -> &[Vec<u8>] {
        &self.admin
    }

    pub fn vend(&self) -> &[Vec<u8>] {
        &self.vend
    }

    pub fn is_empty(&self) -> bool {
        self.admin.is_empty() && self.vend.is_empty()
    }

    pub fn disabled(&self) -> bool {
        self.disabled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_a_token() {
        let shown = format!(
            "{:?}",
            BootstrapTokens::new("secret-admin", "secret-vend", false)
        );
        assert!(!shown.contains("secret"), "{shown}");
    }
}
