//! Bearer-token authentication. Admin tokens may do everything; vend tokens may vend and
//! read. Tokens are compared in constant time and never logged (`Debug` hides them).

use std::fmt;
use std::future::{ready, Ready};

use actix_web::{dev::Payload, http::header, web, FromRequest, HttpRequest};
use subtle::ConstantTimeEq;

use crate::handlers::error::ApiError;

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

    pub fn is_empty(&self) -> bool {
        self.admin.is_empty() && self.vend.is_empty()
    }

    pub fn disabled(&self) -> bool {
        self.disabled
    }

    /// The role a presented token grants. Every configured token is compared, so the time
    /// taken does not tell which one (or whether any) matched.
    fn role_of(&self, presented: &[u8]) -> Option<Role> {
        let matches = |list: &[Vec<u8>]| {
            list.iter().fold(subtle::Choice::from(0), |any, t| {
                any | t.as_slice().ct_eq(presented)
            })
        };
        let (admin, vend) = (matches(&self.admin), matches(&self.vend));
        if bool::from(admin) {
            Some(Role::Admin)
        } else if bool::from(vend) {
            Some(Role::Vend)
        } else {
            None
        }
    }

    fn authenticate(&self, req: &HttpRequest) -> Result<Role, ApiError> {
        if self.disabled {
            return Ok(Role::Admin);
        }
        let presented = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or(ApiError::Unauthorized)?;
        self.role_of(presented.trim().as_bytes())
            .ok_or(ApiError::Unauthorized)
    }
}

fn tokens(req: &HttpRequest) -> &Tokens {
    req.app_data::<web::Data<Tokens>>()
        .expect("Tokens are registered as app data")
}

/// A caller allowed to administer sequences.
pub struct Admin;

/// A caller allowed to vend and read (admins are too).
pub struct Reader;

impl FromRequest for Admin {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(tokens(req).authenticate(req).and_then(|role| match role {
            Role::Admin => Ok(Admin),
            Role::Vend => Err(ApiError::Forbidden),
        }))
    }
}

impl FromRequest for Reader {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(tokens(req).authenticate(req).map(|_| Reader))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_list_grants_its_role() {
        let tokens = Tokens::new("a1, a2", "v1", false);
        assert_eq!(tokens.role_of(b"a2"), Some(Role::Admin));
        assert_eq!(tokens.role_of(b"v1"), Some(Role::Vend));
        assert_eq!(tokens.role_of(b"v"), None);
        assert_eq!(tokens.role_of(b""), None);
    }

    #[test]
    fn debug_output_never_shows_a_token() {
        let shown = format!("{:?}", Tokens::new("secret-admin", "secret-vend", false));
        assert!(!shown.contains("secret"), "{shown}");
    }
}
