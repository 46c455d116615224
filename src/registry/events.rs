//! The event log as the API shows it: a sequence's history, or (for admins) everything,
//! tokens included; the rows of `seqvend.events`, paged by event id oldest first or newest
//! first; and the one place stored kinds are turned into the API's words.

use crate::db::Registry;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::views::cut_page;
use super::RegistryError;
use crate::domain::SequenceName;

/// One thing that happened to a sequence (or to a token).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EventView {
    /// Increases with every event, across sequences; pass as `after` (or `before`) to page.
    pub id: i64,
    pub at: DateTime<Utc>,
    /// created, range_added, rollover, exhausted, retired, rewind_detected,
    /// settings_changed, alert_raised, alert_cleared; in the whole log also token_created,
    /// token_revoked, family_created and family_retired. More kinds may come, so treat an
    /// unknown one as informational.
    pub kind: String,
    /// The sequence it concerns; null for an event about a token or a counter family.
    pub sequence: Option<String>,
    /// The counter family it concerns; absent unless it concerns one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// The range it concerns (the range added, the one rolled over to, the one that ran out,
    /// the one found rewound); null when it concerns the sequence as a whole.
    pub range: Option<EventRange>,
    /// What caused it: `admin` (an admin action), `vend` (a vend statement rolled over, ran
    /// out, or repaired a rewound PostgreSQL sequence) or `seqvend` (its own sampling).
    pub actor: String,
    /// The name of the token that made an admin action (`bootstrap-admin-<8 hex>`, a
    /// fingerprint of the secret, for a token of `SEQVEND_ADMIN_TOKENS`); null otherwise.
    pub token: Option<String>,
    /// What was found and done, where there is more to say (e.g. a rewind's repair).
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct EventRange {
    pub min: i64,
    pub max: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EventPage {
    pub events: Vec<EventView>,
    /// Pass as `after` for the next page (as `before` when reading newest first); null on
    /// the last page.
    pub next: Option<i64>,
}

/// Where a page of events starts, and which way it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventCursor {
    /// Oldest first, with ids above this one (0: from the first).
    After(i64),
    /// Newest first, with ids below this one (none: from the newest).
    Before(Option<i64>),
}

impl EventCursor {
    /// `(newest first, after, before)` as the queries take them: both bounds always set, the
    /// one that does not apply wide open. Each query has an index-ordered branch per
    /// direction, and PostgreSQL runs only the branch `newest first` selects.
    fn bounds(self) -> (bool, i64, i64) {
        match self {
            EventCursor::After(after) => (false, after, i64::MAX),
            EventCursor::Before(before) => (true, 0, before.unwrap_or(i64::MAX)),
        }
    }
}

/// The word the API uses for a stored kind. Some are stored under older or finer names (both
/// settings changes read as `settings_changed`); kinds stored under the API's own word pass
/// through unchanged, so a newer instance's events never break an older one's answer.
pub fn api_kind(stored: &str) -> &str {
    match stored {
        "rewind" => "rewind_detected",
        "cache_changed" | "alerts_changed" => "settings_changed",
        other => other,
    }
}

/// `name`'s events from `cursor` on, at most `limit` of them.
pub async fn list_events(
    pool: &Registry,
    name: &SequenceName,
    cursor: EventCursor,
    limit: u32,
) -> Result<EventPage, RegistryError> {
    let (newest_first, after, before) = cursor.bounds();
    // One statement, so that a sequence with no events past the cursor is told apart from no
    // sequence at all: the sequence's row comes back either way (with NULL events).
    let rows = sqlx::query!(
        r#"SELECT e.id AS "id?", e.at AS "at?", e.kind AS "kind?", e.actor AS "actor?",
                  e.token, e.detail, r.min_value AS "min_value?", r.max_value AS "max_value?"
             FROM seqvend.sequences s
             LEFT JOIN LATERAL ((SELECT * FROM seqvend.events
                                  WHERE NOT $4 AND sequence_id = s.id AND id > $2
                                  ORDER BY id LIMIT $3)
                                UNION ALL
                                (SELECT * FROM seqvend.events
                                  WHERE $4 AND sequence_id = s.id AND id < $5
                                  ORDER BY id DESC LIMIT $3)) e ON true
             LEFT JOIN seqvend.ranges r ON r.id = e.range_id
            WHERE s.name = $1
            ORDER BY CASE WHEN $4 THEN -e.id ELSE e.id END"#,
        name.as_str(),
        after,
        i64::from(limit) + 1,
        newest_first,
        before
    )
    .fetch_all(pool)
    .await
    .map_err(RegistryError::from_db)?;
    if rows.is_empty() {
        return Err(RegistryError::NotFound(name.clone()));
    }
    let events: Vec<EventView> = rows
        .into_iter()
        .filter_map(|row| {
            Some(EventView {
                id: row.id?,
                at: row.at?,
                kind: api_kind(&row.kind?).to_owned(),
                sequence: Some(name.as_str().to_owned()),
                family: None,
                range: row
                    .min_value
                    .zip(row.max_value)
                    .map(|(min, max)| EventRange { min, max }),
                actor: row.actor?,
                token: row.token,
                detail: row.detail,
            })
        })
        .collect();
    Ok(page(events, limit))
}

/// Every event from `cursor` on, at most `limit` of them: the audit trail of admin actions
/// and token changes, and each sequence's history.
pub async fn list_all_events(
    pool: &Registry,
    cursor: EventCursor,
    limit: u32,
) -> Result<EventPage, RegistryError> {
    let (newest_first, after, before) = cursor.bounds();
    let rows = sqlx::query!(
        r#"SELECT e.id AS "id!", e.at AS "at!", e.kind AS "kind!", e.actor AS "actor!", e.token,
                  e.detail, s.name AS "sequence?", f.name AS "family?",
                  r.min_value AS "min_value?", r.max_value AS "max_value?"
             FROM ((SELECT * FROM seqvend.events WHERE NOT $3 AND id > $1 ORDER BY id LIMIT $2)
                   UNION ALL
                   (SELECT * FROM seqvend.events WHERE $3 AND id < $4 ORDER BY id DESC LIMIT $2)) e
             LEFT JOIN seqvend.sequences s ON s.id = e.sequence_id
             LEFT JOIN seqvend.families f ON f.id = e.family_id
             LEFT JOIN seqvend.ranges r ON r.id = e.range_id
            ORDER BY CASE WHEN $3 THEN -e.id ELSE e.id END"#,
        after,
        i64::from(limit) + 1,
        newest_first,
        before
    )
    .fetch_all(pool)
    .await
    .map_err(RegistryError::from_db)?;
    let events = rows
        .into_iter()
        .map(|row| EventView {
            id: row.id,
            at: row.at,
            kind: api_kind(&row.kind).to_owned(),
            sequence: row.sequence,
            family: row.family,
            range: row
                .min_value
                .zip(row.max_value)
                .map(|(min, max)| EventRange { min, max }),
            actor: row.actor,
            token: row.token,
            detail: row.detail,
        })
        .collect();
    Ok(page(events, limit))
}

/// A page of at most `limit` events, from `limit + 1` read.
fn page(events: Vec<EventView>, limit: u32) -> EventPage {
    let (events, next) = cut_page(events, limit, |e| e.id);
    EventPage { events, next }
}

#[cfg(test)]
mod tests {
    use super::{api_kind, EventCursor};

    #[test]
    fn a_cursor_leaves_the_bound_it_does_not_use_wide_open() {
        assert_eq!(EventCursor::After(7).bounds(), (false, 7, i64::MAX));
        assert_eq!(EventCursor::Before(Some(7)).bounds(), (true, 0, 7));
        assert_eq!(EventCursor::Before(None).bounds(), (true, 0, i64::MAX));
    }

    #[test]
    fn stored_kinds_are_answered_in_the_api_s_words() {
        for (stored, answered) in [
            ("created", "created"),
            ("range_added", "range_added"),
            ("rollover", "rollover"),
            ("exhausted", "exhausted"),
            ("retired", "retired"),
            ("rewind", "rewind_detected"),
            ("cache_changed", "settings_changed"),
            ("alert_raised", "alert_raised"),
        ] {
            assert_eq!(api_kind(stored), answered, "{stored}");
        }
    }
}
