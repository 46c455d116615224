//! Token secrets. A token reads `svt_<id>_<64 hex digits>`: the id finds its row without a
//! search, and the 256 random bits are the secret. Only the secret's SHA-256 is stored: with
//! that much entropy no stored hash can be turned back into a secret, so a slow password hash
//! would add only latency to every cache miss (and a way to make seqvend burn CPU with
//! made-up tokens).

use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

const PREFIX: &str = "svt_";
const SECRET_BYTES: usize = 32;

/// A new token: the string shown once, and the hash stored.
pub struct NewSecret {
    pub secret: String,
    pub hash: [u8; 32],
}

/// 256 bits from the operating system's generator, as hex.
pub fn new_secret() -> NewSecret {
    let mut bytes = [0u8; SECRET_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let secret = hex::encode(bytes);
    let hash = hash(&secret);
    NewSecret { secret, hash }
}

/// The token a caller presents, for the token with `id` and `secret`.
pub fn token(id: i64, secret: &str) -> String {
    format!("{PREFIX}{id}_{secret}")
}

/// The id and secret of something shaped like a token; None for anything else.
pub fn parse(presented: &str) -> Option<(i64, &str)> {
    let (id, secret) = presented.strip_prefix(PREFIX)?.split_once('_')?;
    let id: i64 = id.parse().ok().filter(|id| *id > 0)?;
    let well_formed = secret.len() == SECRET_BYTES * 2
        && secret
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    well_formed.then_some((id, secret))
}

pub fn hash(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// Whether `secret` hashes to `stored`, compared in constant time.
pub fn matches(secret: &str, stored: &[u8]) -> bool {
    bool::from(hash(secret).as_slice().ct_eq(stored))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_token_parses_back_and_matches_its_hash_only() {
        let new = new_secret();
        let presented = token(42, &new.secret);
        assert!(presented.starts_with("svt_42_"));
        let (id, secret) = parse(&presented).unwrap();
        assert_eq!(id, 42);
        assert!(matches(secret, &new.hash));
        let other = new_secret();
        assert!(!matches(&other.secret, &new.hash));
        assert_ne!(new.secret, other.secret);
    }

    #[test]
    fn anything_else_is_not_a_token() {
        let secret = "a".repeat(64);
        for presented in [
            String::new(),
            "svt_".into(),
            format!("svt__{secret}"),
            format!("svt_0_{secret}"),
            format!("svt_-1_{secret}"),
            format!("svt_x_{secret}"),
            format!("svt_1_{}", "a".repeat(63)),
            format!("svt_1_{}", "A".repeat(64)),
            format!("svt_1_{}", "g".repeat(64)),
            format!("tok_1_{secret}"),
            format!("svt_99999999999999999999_{secret}"),
        ] {
            assert_eq!(parse(&presented), None, "{presented:?}");
        }
        assert_eq!(
            parse(&format!("svt_7_{secret}")),
            Some((7, secret.as_str()))
        );
    }
}
