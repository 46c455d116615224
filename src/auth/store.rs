//! The tokens kept in PostgreSQL, as this instance knows them. A token is read from the
//! database the first time it is seen and kept in memory. While the notification hub provably hears
//! the registry's token changes (it heard its own ping, sent less than `TRUST_HEARD` ago), a
//! kept token is trusted until a change names it: a revocation reaches every instance within
//! a round trip of its commit. Otherwise a kept token is trusted for `TRUST_UNHEARD` after it
//! was read, then read again. Either way a revocation is obeyed within 2 s. A token that
//! cannot be read (the database is down) keeps its caller out until it can.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::db::Registry;

use super::{secret, AuthError, Principal};
use crate::registry::{self, StoredToken};

/// How long a kept token is trusted after it was read, whatever the notification hub hears.
const TRUST_UNHEARD: Duration = Duration::from_secs(1);
/// How recent the last ping the notification hub heard must be (counted from when it was sent) for
/// kept tokens to be trusted until a change names them.
const TRUST_HEARD: Duration = Duration::from_millis(1500);
/// How often a token's `last_used_at` is written, at most, per instance.
const TOUCH_EVERY: Duration = Duration::from_secs(60);

pub struct TokenStore {
    pool: Registry,
    /// Longest a token read may take before the request is answered 503.
    deadline: Duration,
    kept: RwLock<HashMap<i64, Kept>>,
    /// When the last ping the notification hub heard was sent: every change committed before then
    /// has been heard (notifications arrive in commit order). None while not listening.
    heard: RwLock<Option<Instant>>,
    /// Counts forgettings, so that a read that raced with one is not kept.
    forgotten: AtomicU64,
}

#[derive(Clone)]
struct Kept {
    /// None: no such token.
    token: Option<Arc<KeptToken>>,
    read_at: Instant,
}

struct KeptToken {
    id: i64,
    hash: Vec<u8>,
    revoked: bool,
    principal: Arc<Principal>,
    touched_at: RwLock<Option<Instant>>,
}

impl TokenStore {
    pub fn new(pool: Registry, deadline: Duration) -> Self {
        Self {
            pool,
            deadline,
            kept: RwLock::new(HashMap::new()),
            heard: RwLock::new(None),
            forgotten: AtomicU64::new(0),
        }
    }

    /// The caller a presented `svt_…` token stands for; `Unauthenticated` if it is no live
    /// token.
    pub async fn authenticate(
        &self,
        id: i64,
        presented_secret: &str,
    ) -> Result<Arc<Principal>, AuthError> {
        let kept = match self.trusted(id) {
            Some(kept) => kept,
            None => self.read(id).await?,
        };
        let token = kept.token.ok_or(AuthError::Unauthenticated)?;
        if !secret::matches(presented_secret, &token.hash) || token.revoked {
            return Err(AuthError::Unauthenticated);
        }
        self.touch(&token);
        Ok(token.principal.clone())
    }

    fn trusted(&self, id: i64) -> Option<Kept> {
        let kept = self.kept.read().unwrap_or_else(|p| p.into_inner());
        let entry = kept.get(&id)?;
        let heard = *self.heard.read().unwrap_or_else(|p| p.into_inner());
        let trusted = heard.is_some_and(|sent| sent.elapsed() < TRUST_HEARD)
            || entry.read_at.elapsed() < TRUST_UNHEARD;
        trusted.then(|| entry.clone())
    }

    async fn read(&self, id: i64) -> Result<Kept, AuthError> {
        let before = self.forgotten.load(Ordering::Acquire);
        let read_at = Instant::now();
        let stored = tokio::time::timeout(self.deadline, registry::token_by_id(&self.pool, id))
            .await
            .map_err(|_| AuthError::NoAnswerInTime)??;
        let kept = Kept {
            token: stored.map(|stored| Arc::new(KeptToken::from(stored))),
            read_at,
        };
        // A change heard while this read was in flight may be newer than what it read: use
        // the answer for this request only.
        let mut map = self.kept.write().unwrap_or_else(|p| p.into_inner());
        if self.forgotten.load(Ordering::Acquire) == before {
            map.insert(id, kept.clone());
        }
        Ok(kept)
    }

    /// Writes `last_used_at` now and then, in the background.
    fn touch(&self, token: &Arc<KeptToken>) {
        let due = {
            let mut touched = token.touched_at.write().unwrap_or_else(|p| p.into_inner());
            let due = touched.is_none_or(|at| at.elapsed() >= TOUCH_EVERY);
            if due {
                *touched = Some(Instant::now());
            }
            due
        };
        if due {
            let (pool, id) = (self.pool.clone(), token.id);
            tokio::spawn(async move {
                if let Err(err) = registry::touch_token(&pool, id).await {
                    tracing::debug!(error = %err, token_id = id, "could not record a token's use");
                }
            });
        }
    }

    /// A change to token `id` committed: read it afresh next time.
    pub fn forget(&self, id: i64) {
        let mut map = self.kept.write().unwrap_or_else(|p| p.into_inner());
        self.forgotten.fetch_add(1, Ordering::AcqRel);
        map.remove(&id);
    }

    pub fn forget_all(&self) {
        let mut map = self.kept.write().unwrap_or_else(|p| p.into_inner());
        self.forgotten.fetch_add(1, Ordering::AcqRel);
        map.clear();
    }

    /// The notification hub heard its ping sent at `sent`, or (None) lost its connection.
    pub fn set_heard(&self, sent: Option<Instant>) {
        *self.heard.write().unwrap_or_else(|p| p.into_inner()) = sent;
    }
}

impl From<StoredToken> for KeptToken {
    fn from(stored: StoredToken) -> Self {
        Self {
            id: stored.id,
            hash: stored.secret_hash,
            revoked: stored.revoked,
            principal: Arc::new(Principal::scoped(stored.name, stored.scopes)),
            touched_at: RwLock::new(None),
        }
    }
}
