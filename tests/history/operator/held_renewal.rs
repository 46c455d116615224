//! The fault that needs its own choreography: one instance's lease renewal held up by a row
//! lock across the moment its lease expires in the database, while the doomed sequence it
//! caches is retired and every instance has just lost its notifications. The `DELETE` then
//! answers as soon as the lease expires; what keeps the late renewal from reviving the
//! instance's lapsed block (and handing out a retired sequence's values to the clients that
//! come back) is only the renewal's lock against the retirement and the instance cache's
//! refusal to trust a lapsed block again.

use std::time::Duration;

use reqwest::StatusCode;

use super::{bounded, connect, describe_answer, Operator, APPLICATION};

/// Locks the instance lease on `$1` that expires last (and so one instance's renewals):
/// answers its holder and expiry (seconds since the epoch).
const LOCK_LAST_LEASE: &str = "
    SELECT l.holder, extract(epoch FROM l.expires_at)::float8
      FROM seqvend.leases l JOIN seqvend.sequences s ON s.id = l.sequence_id
     WHERE s.name = $1 AND l.kind = 'instance' AND l.released_at IS NULL
       AND l.expires_at > now()
     ORDER BY l.expires_at DESC LIMIT 1
       FOR UPDATE OF l";

/// Whether a lease renewal begun in the last second before `$1` waits on a lock, and whether
/// `$1` has passed.
const RENEWAL_WAITING: &str = "
    SELECT EXISTS (SELECT 1 FROM pg_stat_activity
                    WHERE wait_event_type = 'Lock'
                      AND query LIKE '%SET expires_at = now() + make_interval%'
                      AND xact_start BETWEEN to_timestamp($1) - interval '1 second'
                                         AND to_timestamp($1)),
           clock_timestamp() > to_timestamp($1)";

/// Cuts every instance's notification session (its last statement was `LISTEN`).
const CUT_NOTIFICATIONS: &str = "
    SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
     WHERE datname = current_database() AND query LIKE 'LISTEN %'
       AND application_name <> $1";

impl Operator {
    /// Pauses the clients of doomed sequences (a take would drop a lapsed block and refill),
    /// locks the lease on the live doomed sequence that expires last, waits for its holder's
    /// renewal to begin within a second of that expiry and block on the lock, cuts the
    /// instances' notifications, retires the sequence, lets the renewal through the moment
    /// the `DELETE` answers, and lets the clients back — a quarter of them to the sequence
    /// just retired. A sequence the instances do not cache is retired the ordinary way.
    pub(super) async fn renewal_held_across_retirement(&mut self) {
        let Some(name) = self.ctx.world.doomed.read().unwrap().last().cloned() else {
            return self.new_doomed().await;
        };
        if !self.cached(&name).await {
            return self.retire_doomed().await;
        }
        let started = self.ctx.history.now();
        self.ctx.world.pause_doomed(true);
        // Calls in flight end: each takes a few milliseconds.
        self.pause(300, 300).await;
        let held = self.hold_renewal_and_retire(&name).await;
        self.ctx.world.pause_doomed(false);
        let (applied, detail) = match held {
            Ok(held) => (held.retired, held.detail),
            Err(why) => (false, why.to_owned()),
        };
        self.record(
            "renewal held across a retirement",
            &name,
            started,
            applied,
            detail,
        );
        if !applied {
            self.retire_doomed().await;
        }
    }

    async fn cached(&mut self, name: &str) -> bool {
        let Some(db) = self.db().await else {
            return false;
        };
        let sql = "SELECT coalesce(cache_size, 0) > 0 FROM seqvend.sequences WHERE name = $1";
        let row = bounded(db.query_opt(sql, &[&name])).await;
        matches!(row, Some(Ok(Some(row))) if row.get::<_, bool>(0))
    }

    async fn hold_renewal_and_retire(&mut self, name: &str) -> Result<Held, &'static str> {
        let mut session = connect(&self.ctx.world.pg.url).await.ok_or("no session")?;
        let tx = bounded(session.transaction())
            .await
            .and_then(Result::ok)
            .ok_or("no transaction")?;
        let lease = bounded(tx.query_opt(LOCK_LAST_LEASE, &[&name]))
            .await
            .and_then(Result::ok)
            .flatten()
            .ok_or("no live instance lease to hold")?;
        let (holder, expires): (String, f64) = (lease.get(0), lease.get(1));
        if !self.renewal_blocked_before(expires).await {
            return Err("no renewal blocked in the lease's last second");
        }
        let cut = self.cut_notifications().await;
        let invoked = self.ctx.history.now();
        let answer = self.delete(name).await;
        let answered = self.ctx.history.now();
        let _ = bounded(tx.rollback()).await;
        self.ctx.world.pause_doomed(false);
        let retired = matches!(answer, Some((StatusCode::OK, _)));
        self.retirement_ended(name, invoked, answered, retired)
            .await;
        let detail = format!(
            "held {holder}'s lease, {cut:?} notification sessions cut, DELETE: {}",
            describe_answer(&answer)
        );
        Ok(Held { retired, detail })
    }

    /// Waits until a renewal that began in the second before `expires` (seconds since the
    /// epoch) waits on the held lease; `false` once `expires` passed without one.
    async fn renewal_blocked_before(&mut self, expires: f64) -> bool {
        loop {
            let Some(db) = self.db().await else {
                return false;
            };
            let Some(Ok(row)) = bounded(db.query_one(RENEWAL_WAITING, &[&expires])).await else {
                return false;
            };
            let (waiting, passed): (bool, bool) = (row.get(0), row.get(1));
            if waiting || passed {
                return waiting;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn cut_notifications(&mut self) -> Option<i64> {
        let db = self.db().await?;
        let row = bounded(db.query_one(CUT_NOTIFICATIONS, &[&APPLICATION])).await?;
        row.ok().map(|row| row.get(0))
    }
}

struct Held {
    retired: bool,
    detail: String,
}
