//! The fault that needs its own choreography: the instances' lease renewals held up by row
//! locks across the moment their leases expire in the database, while the doomed sequence they
//! cache is retired, every instance has just lost its notifications, and a DBA takes the
//! registry's table for a second once the `DELETE` answered. The `DELETE` answers as soon as
//! the leases expire; what keeps a late renewal from reviving an instance's lapsed block (and
//! handing out a retired sequence's values to the clients that come back) is the renewal's
//! lock against the retirement and the instance cache's refusal to trust a lapsed block again.

use std::time::Duration;

use reqwest::StatusCode;

use super::{bounded, connect, describe_answer, Operator, APPLICATION};

/// Locks every live instance lease on `$1` (and so the renewals of every instance caching
/// it): answers how many, and when the last of the instances' newest leases expires (seconds
/// since the epoch). An instance renews only the leases it still hands out from, its newest;
/// an older one, handed out whole, expires unrenewed and would aim the fault at no renewal.
const LOCK_LEASES: &str = "
    WITH held AS (
        SELECT l.id, l.holder, l.expires_at
          FROM seqvend.leases l JOIN seqvend.sequences s ON s.id = l.sequence_id
         WHERE s.name = $1 AND l.kind = 'instance' AND l.released_at IS NULL
           AND l.expires_at > now()
           FOR UPDATE OF l),
    newest AS (SELECT DISTINCT ON (holder) expires_at FROM held ORDER BY holder, id DESC)
    SELECT (SELECT count(*) FROM held),
           (SELECT max(extract(epoch FROM expires_at))::float8 FROM newest)";

/// Whether a lease renewal begun in the last second before `$1` waits on a lock, and the
/// seconds left until `$1`. A renewal that waits but began earlier is cancelled: it would otherwise
/// queue for the lock ahead of the one that matters, and make renewals fail for longer.
const RENEWAL_WAITING: &str = "
    WITH waiting AS (
        SELECT pid, xact_start >= to_timestamp($1) - interval '1 second' AS in_last_second
          FROM pg_stat_activity
         WHERE wait_event_type = 'Lock'
           AND query LIKE '%SET expires_at = now() + make_interval%')
    SELECT EXISTS (SELECT 1 FROM waiting WHERE in_last_second),
           (SELECT count(pg_cancel_backend(pid)) FROM waiting WHERE NOT in_last_second) >= 0,
           extract(epoch FROM to_timestamp($1) - clock_timestamp())::float8";

/// Whether a session waits for, or holds, an exclusive lock on the registry's sequences.
const REGISTRY_LOCK_QUEUED: &str = "
    SELECT EXISTS (SELECT 1 FROM pg_locks
                    WHERE relation = 'seqvend.sequences'::regclass
                      AND mode = 'AccessExclusiveLock')";

/// Cuts every instance's notification session (its last statement was `LISTEN`).
const CUT_NOTIFICATIONS: &str = "
    SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
     WHERE datname = current_database() AND query LIKE 'LISTEN %'
       AND application_name <> $1";

impl Operator {
    /// Pauses the clients of doomed sequences (a take would drop a lapsed block and refill),
    /// locks every instance lease on the live doomed sequence, waits for a renewal begun within
    /// a second of the last one's expiry to block on it (cancelling earlier ones), cuts the
    /// instances' notifications, retires the sequence, queues a lock on the registry's table,
    /// lets the renewals through the moment the `DELETE` answers, and lets the clients back.
    /// A sequence the instances do not cache is retired the ordinary way.
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
        // Already let back when the renewals went through; this is for the ways that gave up.
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

    pub(super) async fn cached(&mut self, name: &str) -> bool {
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
        let held = bounded(tx.query_one(LOCK_LEASES, &[&name]))
            .await
            .and_then(Result::ok)
            .ok_or("could not lock the leases")?;
        let (leases, expires): (i64, Option<f64>) = (held.get(0), held.get(1));
        let expires = expires.ok_or("no live instance lease to hold")?;
        if !self.renewal_blocked_before(expires).await {
            return Err("no renewal blocked in the lease's last second");
        }
        // Opened now: opening a session later would take longer than the window it must hit.
        let registry_session = connect(&self.ctx.world.pg.url).await;
        let cut = self.cut_notifications().await;
        let invoked = self.ctx.history.now();
        let answer = self.delete(name).await;
        let answered = self.ctx.history.now();
        // A DBA's `VACUUM FULL` of the registry, queued behind the held renewal: it takes the
        // table the moment the renewal commits, and the instance re-reads its sequences'
        // status only once it is done.
        let registry_locked = self.lock_registry_for_a_second(registry_session).await;
        let _ = bounded(tx.rollback()).await;
        // The clients come back now, not after the new doomed sequence is made: that waits on
        // the registry lock, and the revived blocks are served only until it ends.
        self.ctx.world.pause_doomed(false);
        let retired = matches!(answer, Some((StatusCode::OK, _)));
        self.retirement_ended(name, invoked, answered, retired)
            .await;
        let detail = format!(
            "held {leases} leases, {cut:?} notification sessions cut, DELETE: {}, \
             registry locked after it: {registry_locked}",
            describe_answer(&answer)
        );
        Ok(Held { retired, detail })
    }

    /// Waits until a renewal that began in the second before `expires` (seconds since the
    /// epoch) waits on the held lease, then until just before `expires`: the notifications
    /// are cut then, so that the instances are deaf for most of the second after the `DELETE`
    /// answers (they reconnect a second after the cut). `false` once `expires` passed without
    /// such a renewal.
    async fn renewal_blocked_before(&mut self, expires: f64) -> bool {
        loop {
            let Some(db) = self.db().await else {
                return false;
            };
            let Some(Ok(row)) = bounded(db.query_one(RENEWAL_WAITING, &[&expires])).await else {
                return false;
            };
            let (waiting, seconds_left): (bool, f64) = (row.get(0), row.get(2));
            if waiting {
                let until_cut = Duration::from_secs_f64((seconds_left - 0.15).max(0.0));
                tokio::time::sleep(until_cut).await;
                return true;
            }
            if seconds_left < 0.0 {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Holds `seqvend.sequences` exclusively for a second on `db`, once it can; returns once the lock is queued (or held).
    async fn lock_registry_for_a_second(&mut self, db: Option<tokio_postgres::Client>) -> bool {
        let Some(db) = db else {
            return false;
        };
        self.background.spawn(async move {
            let sql = "BEGIN; LOCK TABLE seqvend.sequences IN ACCESS EXCLUSIVE MODE; \
                       SELECT pg_sleep(1); ROLLBACK";
            let _ = bounded(db.batch_execute(sql)).await;
        });
        for _ in 0..200 {
            let Some(db) = self.db().await else {
                return false;
            };
            let queued = bounded(db.query_one(REGISTRY_LOCK_QUEUED, &[])).await;
            if matches!(queued, Some(Ok(row)) if row.get::<_, bool>(0)) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        false
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
