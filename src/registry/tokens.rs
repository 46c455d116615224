//! Tokens kept in PostgreSQL: created with their scopes, listed, revoked, and read by the
//! instances that check them. Every change is announced on `TOKENS_CHANNEL` (the token's id)
//! when it commits, and recorded in the event log with the token that made it.

use crate::db::{Registry, RegistryTx};
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::RegistryError;

/// The channel instances listen on for token changes.
pub const TOKENS_CHANNEL: &str = "seqvend_tokens";

/// A token as an instance checks it.
pub struct StoredToken {
    pub id: i64,
    pub name: String,
    pub secret_hash: Vec<u8>,
    pub scopes: Vec<String>,
    pub revoked: bool,
}

/// A token as the API shows it: never its secret.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TokenView {
    pub id: i64,
    pub name: String,
    pub scopes: Vec<String>,
    pub created_at: DateTime<Utc>,
    /// The name of the token that created it.
    pub created_by: String,
    pub revoked_at: Option<DateTime<Utc>>,
    pub revoked_by: Option<String>,
    /// Within a minute or so: each instance records a token's use at most once a minute.
    pub last_used_at: Option<DateTime<Utc>>,
}

pub async fn token_by_id(pool: &Registry, id: i64) -> Result<Option<StoredToken>, RegistryError> {
    sqlx::query_as!(
        StoredToken,
        r#"SELECT id, name, secret_hash, scopes, revoked_at IS NOT NULL AS "revoked!"
             FROM seqvend.tokens WHERE id = $1"#,
        id
    )
    .fetch_optional(pool)
    .await
    .map_err(RegistryError::from_db)
}

pub async fn touch_token(pool: &Registry, id: i64) -> Result<(), RegistryError> {
    sqlx::query!(
        "UPDATE seqvend.tokens SET last_used_at = now() WHERE id = $1",
        id
    )
    .execute(pool)
    .await
    .map_err(RegistryError::from_db)?;
    Ok(())
}

/// Creates a token; `scopes` were checked by the caller.
pub async fn create_token(
    pool: &Registry,
    name: &str,
    secret_hash: &[u8],
    scopes: &[String],
    by: &str,
) -> Result<TokenView, RegistryError> {
    let mut tx = pool.begin().await.map_err(RegistryError::from_db)?;
    let token = sqlx::query_as!(
        TokenView,
        "INSERT INTO seqvend.tokens (name, secret_hash, scopes, created_by)
         VALUES ($1, $2, $3, $4)
         RETURNING id, name, scopes, created_at, created_by, revoked_at, revoked_by, last_used_at",
        name,
        secret_hash,
        scopes,
        by
    )
    .fetch_one(&mut tx)
    .await
    .map_err(|err| {
        RegistryError::on_constraint(err, "tokens_name_key", || {
            RegistryError::TokenNameTaken(name.to_owned())
        })
    })?;
    let detail = format!("{} ({})", token.name, token.scopes.join(", "));
    audit(&mut tx, "token_created", by, &detail).await?;
    announce(&mut tx, token.id).await?;
    tx.commit().await.map_err(RegistryError::from_db)?;
    Ok(token)
}

pub async fn list_tokens(pool: &Registry) -> Result<Vec<TokenView>, RegistryError> {
    sqlx::query_as!(
        TokenView,
        "SELECT id, name, scopes, created_at, created_by, revoked_at, revoked_by, last_used_at
           FROM seqvend.tokens ORDER BY id"
    )
    .fetch_all(pool)
    .await
    .map_err(RegistryError::from_db)
}

/// Revokes a token (revoking it again answers the same, recording nothing more).
pub async fn revoke_token(pool: &Registry, id: i64, by: &str) -> Result<TokenView, RegistryError> {
    let mut tx = pool.begin().await.map_err(RegistryError::from_db)?;
    let revoked = sqlx::query_as!(
        TokenView,
        "UPDATE seqvend.tokens SET revoked_at = now(), revoked_by = $2
          WHERE id = $1 AND revoked_at IS NULL
         RETURNING id, name, scopes, created_at, created_by, revoked_at, revoked_by, last_used_at",
        id,
        by
    )
    .fetch_optional(&mut tx)
    .await
    .map_err(RegistryError::from_db)?;
    let Some(token) = revoked else {
        // Revoked already, or no such token: answer it as it stands.
        drop(tx);
        return sqlx::query_as!(
            TokenView,
            "SELECT id, name, scopes, created_at, created_by, revoked_at, revoked_by, last_used_at
               FROM seqvend.tokens WHERE id = $1",
            id
        )
        .fetch_optional(pool)
        .await
        .map_err(RegistryError::from_db)?
        .ok_or(RegistryError::TokenNotFound(id));
    };
    audit(&mut tx, "token_revoked", by, &token.name).await?;
    announce(&mut tx, token.id).await?;
    tx.commit().await.map_err(RegistryError::from_db)?;
    Ok(token)
}

async fn audit(
    tx: &mut RegistryTx,
    kind: &str,
    by: &str,
    detail: &str,
) -> Result<(), RegistryError> {
    sqlx::query!(
        "INSERT INTO seqvend.events (kind, actor, token, detail) VALUES ($1, 'admin', $2, $3)",
        kind,
        by,
        detail
    )
    .execute(&mut *tx)
    .await
    .map_err(RegistryError::from_db)?;
    Ok(())
}

async fn announce(tx: &mut RegistryTx, id: i64) -> Result<(), RegistryError> {
    sqlx::query!("SELECT pg_notify($1, $2)", TOKENS_CHANNEL, id.to_string())
        .execute(&mut *tx)
        .await
        .map_err(RegistryError::from_db)?;
    Ok(())
}
