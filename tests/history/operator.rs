//! The hostile operator: a DBA (PostgreSQL superuser) and an admin who, concurrently with the
//! clients and at random, move ranges' sequences back and forth, change their increments and
//! bounds, hold locks, draw values as another application would, cut seqvend's sessions,
//! crash PostgreSQL, kill instances, add ranges and retire sequences. Every fault is recorded
//! with when it started and ended; the values it drew and the retirements' answers too.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::Rng;
use reqwest::{Method, StatusCode};
use seqvend::local_pg::Shutdown;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::clients::Ctx;
use crate::harness::ADMIN;
use crate::history::{Drawn, Fault, Retirement};
use crate::schedule::{rng, Focus};
use crate::world::{CACHED, DOWN, HOT, STEP, UPS, ZIGZAG};

mod dba_read;
mod held_renewal;

pub use dba_read::ROW_MISSING;

/// How its sessions are told apart from seqvend's (which it terminates).
const APPLICATION: &str = "history-operator";

/// How often a retirement answered 503 (or not at all) is sent again before it counts as
/// failed: each waits at most an instance lease plus the registry deadline.
const RETIRE_ATTEMPTS: usize = 5;

/// Sessions rewinding at once in the focused rewind phase.
const REWINDERS: u64 = 1;

/// A range as the registry has it.
struct Range {
    id: i32,
    pg_sequence: String,
    min: i64,
    max: i64,
    start: i64,
    increment: i64,
}

pub struct Operator {
    ctx: Ctx,
    rng: StdRng,
    db: Option<tokio_postgres::Client>,
    /// Lock holders and restorations running beside the operator.
    background: JoinSet<()>,
}

impl Operator {
    pub fn new(ctx: Ctx, phase: u64) -> Self {
        let rng = rng(ctx.history.seed, "operator", phase);
        Self {
            ctx,
            rng,
            db: None,
            background: JoinSet::new(),
        }
    }

    /// Injects the phase's faults until it ends, then waits for its lock holders.
    pub async fn run(mut self, focus: Focus) {
        match focus {
            Focus::Rewind => {
                // As tight a loop as DBA sessions allow, from several at once: a rewind must
                // land inside a statement's batch, and another before the sequence moves on.
                for n in 0..REWINDERS {
                    let rewinder = Operator::new(self.ctx.clone(), 1_000 + n);
                    self.background.spawn(rewinder.rewind_in_a_loop(HOT));
                }
                self.spawn_reader();
            }
            Focus::KeyedRollover => {
                while self.running() {
                    self.refill_zigzag().await;
                    if self.rng.gen_bool(0.2) {
                        self.rewind_to_start(ZIGZAG).await;
                    }
                    self.pause(20, 100).await;
                }
            }
            // The clients are the test: keys reused across tokens need no fault to collide.
            Focus::Rotation => {}
            Focus::Retirement => {
                while self.running() {
                    if self.ctx.world.doomed.read().unwrap().is_empty() {
                        self.new_doomed().await;
                    }
                    // Long enough for instances to cache it and clients to lease it.
                    self.pause(500, 2_500).await;
                    if self.rng.gen_bool(0.5) {
                        self.hold_lock_beside().await;
                    }
                    if !self.running() {
                        break;
                    }
                    match self.rng.gen_range(0..10) {
                        0..=3 => self.renewal_held_across_retirement().await,
                        4..=5 => self.flip_doomed_policy(true).await,
                        _ => self.retire_doomed().await,
                    }
                }
            }
            Focus::Chaos => {
                self.spawn_reader();
                if self.ctx.world.doomed.read().unwrap().is_empty() {
                    self.new_doomed().await;
                }
                while self.running() {
                    self.pause(100, 600).await;
                    if self.running() {
                        self.one_fault().await;
                    }
                }
            }
        }
        while self.background.join_next().await.is_some() {}
    }

    /// Rewinds `name`'s active range to its start until the phase ends, re-reading which
    /// range is active every 50 rewinds (it rolls over).
    async fn rewind_in_a_loop(mut self, name: &'static str) {
        while self.running() {
            let Some(range) = self.active_range(name).await else {
                self.pause(10, 50).await;
                continue;
            };
            let sql = format!(
                "SELECT setval('{}', {}, false)",
                range.pg_sequence, range.start
            );
            for _ in 0..50 {
                self.alter("rewind", &range, sql.clone()).await;
                self.pause(2, 15).await;
            }
        }
    }

    /// A DBA reading sequences beside the phase's faults (`dba_read`).
    fn spawn_reader(&mut self) {
        let reader = Operator::new(self.ctx.clone(), 2_000);
        self.background.spawn(reader.read_sequences_in_a_loop());
    }

    fn running(&self) -> bool {
        !self.ctx.stop.load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn pause(&mut self, min_ms: u64, max_ms: u64) {
        let ms = self.rng.gen_range(min_ms..=max_ms);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }

    async fn one_fault(&mut self) {
        let sequences = [HOT, DOWN, STEP, CACHED, UPS, ZIGZAG];
        let name = sequences[self.rng.gen_range(0..sequences.len())];
        match self.rng.gen_range(0..100) {
            0..=9 => self.rewind_somewhere(name).await,
            10..=14 => self.restart(name).await,
            15..=19 => self.skip(name).await,
            20..=24 => self.change_increment(name).await,
            25..=29 => self.change_bound(name).await,
            30..=37 => self.hold_sequence_lock(name).await,
            38..=45 => self.hold_registry_row(name).await,
            46..=57 => self.draw_by_hand(name).await,
            58..=63 => self.terminate_backends().await,
            64..=67 => self.crash_postgres().await,
            68..=73 => self.kill_instance().await,
            74..=81 => self.add_range(name).await,
            82..=84 => {
                let then_retire = self.rng.gen_bool(0.5);
                self.flip_doomed_policy(then_retire).await
            }
            _ => self.retire_doomed().await,
        }
    }

    // ---- the database --------------------------------------------------------------------

    async fn db(&mut self) -> Option<&tokio_postgres::Client> {
        if self.db.as_ref().is_none_or(|db| db.is_closed()) {
            self.db = connect(&self.ctx.world.pg.url).await;
        }
        self.db.as_ref()
    }

    async fn active_range(&mut self, name: &str) -> Option<Range> {
        let db = self.db().await?;
        let row = bounded(db.query_opt(
            "SELECT r.id, r.pg_sequence::text, r.min_value, r.max_value, r.start_value, s.increment
               FROM seqvend.ranges r JOIN seqvend.sequences s ON s.id = r.sequence_id
              WHERE s.name = $1 AND r.status = 'active'",
            &[&name],
        ))
        .await?
        .ok()??;
        Some(Range {
            id: row.get(0),
            pg_sequence: row.get(1),
            min: row.get(2),
            max: row.get(3),
            start: row.get(4),
            increment: row.get(5),
        })
    }

    /// Runs `sql` (about `range`'s sequence, spliced: these are names the registry gave)
    /// and records it as a fault.
    async fn alter(&mut self, kind: &'static str, range: &Range, sql: String) {
        let started = self.ctx.history.now();
        let applied = match self.db().await {
            Some(db) => matches!(bounded(db.batch_execute(&sql)).await, Some(Ok(()))),
            None => false,
        };
        self.record(kind, &range.pg_sequence, started, applied, sql);
    }

    fn record(
        &self,
        kind: &'static str,
        target: &str,
        started: Duration,
        applied: bool,
        detail: String,
    ) {
        self.ctx.history.fault(Fault {
            kind,
            target: target.to_owned(),
            started,
            ended: self.ctx.history.now(),
            applied,
            detail,
        });
    }

    // ---- moving sequences ----------------------------------------------------------------

    /// `setval` to the range's start: the next `nextval` answers the range's first value.
    async fn rewind_to_start(&mut self, name: &str) {
        let Some(range) = self.active_range(name).await else {
            return;
        };
        let sql = format!(
            "SELECT setval('{}', {}, false)",
            range.pg_sequence, range.start
        );
        self.alter("rewind", &range, sql).await;
    }

    /// `setval` back to a random point between the range's start and where it stands.
    async fn rewind_somewhere(&mut self, name: &str) {
        let Some(range) = self.active_range(name).await else {
            return;
        };
        let Some(last) = self.last_value(&range).await else {
            return;
        };
        let (lo, hi) = (range.start.min(last), range.start.max(last));
        let to = self.rng.gen_range(lo..=hi);
        let sql = format!("SELECT setval('{}', {to}, false)", range.pg_sequence);
        self.alter("rewind", &range, sql).await;
    }

    async fn restart(&mut self, name: &str) {
        let Some(range) = self.active_range(name).await else {
            return;
        };
        if self.rng.gen_bool(0.5) {
            let sql = format!("ALTER SEQUENCE {} RESTART", range.pg_sequence);
            self.alter("restart", &range, sql).await;
        } else {
            let to = range.start + range.increment * self.rng.gen_range(1..=20);
            let sql = format!("ALTER SEQUENCE {} RESTART WITH {to}", range.pg_sequence);
            self.alter("restart with lower", &range, sql).await;
        }
    }

    /// `setval` forward: values a legacy system used, skipped.
    async fn skip(&mut self, name: &str) {
        let Some(range) = self.active_range(name).await else {
            return;
        };
        let Some(last) = self.last_value(&range).await else {
            return;
        };
        let to = last + range.increment * self.rng.gen_range(1..=500);
        if !(range.min..=range.max).contains(&to) {
            return;
        }
        let sql = format!("SELECT setval('{}', {to})", range.pg_sequence);
        self.alter("skip ahead", &range, sql).await;
    }

    /// `INCREMENT BY` a multiple of the registered one for a while, then back.
    async fn change_increment(&mut self, name: &str) {
        let Some(range) = self.active_range(name).await else {
            return;
        };
        let by = range.increment * self.rng.gen_range(2..=5);
        let sql = format!("ALTER SEQUENCE {} INCREMENT BY {by}", range.pg_sequence);
        self.alter("increment changed", &range, sql).await;
        let hold = Duration::from_millis(self.rng.gen_range(200..=2_000));
        let back = format!(
            "ALTER SEQUENCE {} INCREMENT BY {}",
            range.pg_sequence, range.increment
        );
        self.later(hold, "increment restored", range, back);
    }

    /// Narrows the sequence's far bound (`MAXVALUE`, or `MINVALUE` going down) to a little past
    /// where it stands, or widens it past the range's end; widened back later.
    async fn change_bound(&mut self, name: &str) {
        let Some(range) = self.active_range(name).await else {
            return;
        };
        let Some(last) = self.last_value(&range).await else {
            return;
        };
        let up = range.increment > 0;
        let (word, end) = if up {
            ("MAXVALUE", range.max)
        } else {
            ("MINVALUE", range.min)
        };
        let (kind, to) = if self.rng.gen_bool(0.5) {
            let ahead = range.increment * self.rng.gen_range(1..=200);
            ("bound narrowed", last.saturating_add(ahead))
        } else {
            let beyond = range.increment.signum() * self.rng.gen_range(1..=10_000);
            ("bound widened", end.saturating_add(beyond))
        };
        let sql = format!("ALTER SEQUENCE {} {word} {to}", range.pg_sequence);
        self.alter(kind, &range, sql).await;
        let hold = Duration::from_millis(self.rng.gen_range(200..=3_000));
        let back = format!("ALTER SEQUENCE {} {word} {end}", range.pg_sequence);
        self.later(hold, "bound restored", range, back);
    }

    async fn last_value(&mut self, range: &Range) -> Option<i64> {
        let db = self.db().await?;
        let row = bounded(db.query_one(
            "SELECT coalesce(pg_sequence_last_value($1::text::regclass), $2)",
            &[&range.pg_sequence, &range.start],
        ))
        .await?
        .ok()?;
        Some(row.get(0))
    }

    /// Runs `sql` after `delay` on a session of its own, recorded as a fault.
    fn later(&mut self, delay: Duration, kind: &'static str, range: Range, sql: String) {
        let (url, history) = (self.ctx.world.pg.url.clone(), self.ctx.history.clone());
        self.background.spawn(async move {
            tokio::time::sleep(delay).await;
            let started = history.now();
            let applied = match connect(&url).await {
                Some(db) => matches!(bounded(db.batch_execute(&sql)).await, Some(Ok(()))),
                None => false,
            };
            history.fault(Fault {
                kind,
                target: range.pg_sequence,
                started,
                ended: history.now(),
                applied,
                detail: sql,
            });
        });
    }

    // ---- locks -----------------------------------------------------------------------------

    /// `BEGIN; ALTER SEQUENCE …` held open 0.2–3 s.
    async fn hold_sequence_lock(&mut self, name: &str) {
        let Some(range) = self.active_range(name).await else {
            return;
        };
        let sql = format!("ALTER SEQUENCE {} CACHE 1", range.pg_sequence);
        self.hold("sequence locked", range.pg_sequence.clone(), sql);
    }

    /// `SELECT … FOR UPDATE` of a range's or a sequence's registry row, or of a range's mark,
    /// held open 0.2–3 s.
    async fn hold_registry_row(&mut self, name: &str) {
        let Some(range) = self.active_range(name).await else {
            return;
        };
        let (kind, sql) = match self.rng.gen_range(0..3) {
            0 => (
                "range row locked",
                format!(
                    "SELECT 1 FROM seqvend.ranges WHERE id = {} FOR UPDATE",
                    range.id
                ),
            ),
            1 => (
                "range mark locked",
                format!(
                    "SELECT 1 FROM seqvend.range_marks WHERE range_id = {} FOR UPDATE",
                    range.id
                ),
            ),
            _ => (
                "sequence row locked",
                format!("SELECT 1 FROM seqvend.sequences WHERE name = '{name}' FOR UPDATE"),
            ),
        };
        self.hold(kind, format!("{name} (range {})", range.id), sql);
    }

    /// A lock on `hot` (its range's sequence or registry row), which vends of the doomed
    /// sequence share statements with: a retirement must not wait on it.
    async fn hold_lock_beside(&mut self) {
        if self.rng.gen_bool(0.5) {
            self.hold_sequence_lock(HOT).await;
        } else {
            self.hold_registry_row(HOT).await;
        }
    }

    fn hold(&mut self, kind: &'static str, target: String, sql: String) {
        let hold = Duration::from_millis(self.rng.gen_range(200..=3_000));
        let (url, history) = (self.ctx.world.pg.url.clone(), self.ctx.history.clone());
        self.background.spawn(async move {
            let started = history.now();
            let Some(mut db) = connect(&url).await else {
                return;
            };
            let applied = match bounded(db.transaction()).await {
                Some(Ok(tx)) => {
                    let locked = matches!(bounded(tx.batch_execute(&sql)).await, Some(Ok(())));
                    if locked {
                        tokio::time::sleep(hold).await;
                    }
                    let _ = bounded(tx.rollback()).await;
                    locked
                }
                _ => false,
            };
            history.fault(Fault {
                kind,
                target,
                started,
                ended: history.now(),
                applied,
                detail: format!("{sql}, held {hold:?}"),
            });
        });
    }

    // ---- another application ---------------------------------------------------------------

    /// Draws 1–5 values with `nextval`, as another application would, in a transaction that
    /// writes (so its commit flushes the draw: a crash cannot hand them back).
    async fn draw_by_hand(&mut self, name: &str) {
        let Some(range) = self.active_range(name).await else {
            return;
        };
        let count: i32 = self.rng.gen_range(1..=5);
        let started = self.ctx.history.now();
        let Some(db) = self.db.as_mut() else {
            return;
        };
        let drawn = async {
            let tx = db.transaction().await?;
            let rows = tx
                .query(
                    "SELECT nextval($1::text::regclass) FROM generate_series(1, $2)",
                    &[&range.pg_sequence, &count],
                )
                .await?;
            tx.batch_execute("SELECT txid_current()").await?;
            tx.commit().await?;
            Ok::<Vec<i64>, tokio_postgres::Error>(rows.iter().map(|r| r.get(0)).collect())
        };
        let values = bounded(drawn).await.and_then(Result::ok);
        let applied = values.is_some();
        if let Some(values) = values {
            let at = self.ctx.history.now();
            self.ctx.history.drawn(Drawn {
                pg_sequence: range.pg_sequence.clone(),
                values,
                at,
            });
        }
        let detail = format!("{count} × nextval");
        self.record(
            "nextval by hand",
            &range.pg_sequence,
            started,
            applied,
            detail,
        );
    }

    // ---- processes -------------------------------------------------------------------------

    async fn terminate_backends(&mut self) {
        let started = self.ctx.history.now();
        let Some(db) = self.db().await else {
            return;
        };
        let terminated = bounded(db.query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid()
                AND backend_type = 'client backend' AND application_name <> $1",
            &[&APPLICATION],
        ))
        .await
        .and_then(Result::ok)
        .map(|row| row.get::<_, i64>(0));
        let detail = format!("{terminated:?} sessions");
        self.record(
            "backends terminated",
            "seqvend's sessions",
            started,
            terminated.is_some(),
            detail,
        );
    }

    async fn crash_postgres(&mut self) {
        let started = self.ctx.history.now();
        let down = Duration::from_millis(self.rng.gen_range(100..=1_000));
        self.db = None;
        self.ctx.world.pg.stop(Shutdown::Immediate).await;
        tokio::time::sleep(down).await;
        self.ctx.world.pg.start_again().await;
        let detail = format!("immediate shutdown, down {down:?}");
        self.record("PostgreSQL crashed", "the cluster", started, true, detail);
    }

    async fn kill_instance(&mut self) {
        let started = self.ctx.history.now();
        let i = self.rng.gen_range(0..self.ctx.world.addresses.len());
        let down = Duration::from_millis(self.rng.gen_range(100..=2_000));
        let mut instances = self.ctx.world.instances.lock().await;
        instances[i].kill();
        tokio::time::sleep(down).await;
        let ready = instances[i].restart().await;
        let detail = format!("SIGKILL, down {down:?}, ready {ready:?} after restart");
        self.record(
            "instance killed",
            &format!("instance {i}"),
            started,
            true,
            detail,
        );
    }

    // ---- admin -----------------------------------------------------------------------------

    async fn admin(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Option<StatusCode> {
        Some(self.admin_answer(method, path, body).await?.0)
    }

    /// An admin call's status and its error's message (empty on success), `None` without an
    /// answer.
    async fn admin_answer(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Option<(StatusCode, String)> {
        let i = self.rng.gen_range(0..self.ctx.world.addresses.len());
        let mut request = self
            .ctx
            .http
            .request(method, format!("{}{path}", self.ctx.world.addresses[i]))
            .bearer_auth(ADMIN)
            .timeout(Duration::from_secs(30));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.ok()?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        let why = match body["error"].as_str() {
            Some(code) => format!("{code}: {}", body["message"].as_str().unwrap_or("")),
            None => String::new(),
        };
        Some((status, why))
    }

    async fn add_range(&mut self, name: &str) {
        if name == ZIGZAG {
            return self.add_zigzag_round().await;
        }
        let size = if name == DOWN { 3_000 } else { 50_000 };
        let (min, max) = self.ctx.world.next_range(name, size);
        let started = self.ctx.history.now();
        let status = self
            .admin(
                Method::POST,
                &format!("/sequences/{name}/ranges"),
                Some(json!({"min": min, "max": max})),
            )
            .await;
        let applied = status == Some(StatusCode::CREATED);
        self.record(
            "range added",
            name,
            started,
            applied,
            format!("{min}–{max}: {status:?}"),
        );
    }

    async fn add_zigzag_round(&mut self) {
        for (min, max) in self.ctx.world.next_zigzag_round() {
            let started = self.ctx.history.now();
            let status = self
                .admin(
                    Method::POST,
                    &format!("/sequences/{ZIGZAG}/ranges"),
                    Some(json!({"min": min, "max": max})),
                )
                .await;
            let applied = status == Some(StatusCode::CREATED);
            let detail = format!("{min}–{max}: {status:?}");
            self.record("range added", ZIGZAG, started, applied, detail);
        }
    }

    /// Adds a round of zigzag ranges when fewer than 150 values are left.
    async fn refill_zigzag(&mut self) {
        let remaining = self
            .ctx
            .http
            .get(format!(
                "{}/sequences/{ZIGZAG}",
                self.ctx.world.addresses[0]
            ))
            .bearer_auth(ADMIN)
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .ok();
        let remaining = match remaining {
            Some(response) => response.json::<Value>().await.ok(),
            None => None,
        };
        let low = remaining
            .and_then(|body| body["remaining"].as_u64())
            .is_some_and(|left| left < 150);
        if low {
            self.add_zigzag_round().await;
        }
    }

    /// Retires the live doomed sequence and makes the next one. A 503 (or no answer) is
    /// retried, as docs/api.md tells an operator to (`DELETE` again waits for the instances'
    /// leases): only a retirement that answered 200 is one the checker can hold seqvend to.
    /// Every attempt's answer goes into the fault's detail, so a 503 shows its reason.
    async fn retire_doomed(&mut self) {
        let Some(name) = self.ctx.world.doomed.read().unwrap().last().cloned() else {
            return self.new_doomed().await;
        };
        let invoked = self.ctx.history.now();
        let mut attempts = Vec::new();
        let mut applied = false;
        while attempts.len() < RETIRE_ATTEMPTS {
            let answer = self.delete(&name).await;
            applied = matches!(answer, Some((StatusCode::OK, _)));
            attempts.push(describe_answer(&answer));
            let again = match &answer {
                None => true,
                Some((status, _)) => *status == StatusCode::SERVICE_UNAVAILABLE,
            };
            if applied || !again {
                break;
            }
        }
        let answered = self.ctx.history.now();
        self.retirement_ended(&name, invoked, answered, applied)
            .await;
        self.record(
            "sequence retired",
            &name,
            invoked,
            applied,
            attempts.join("; "),
        );
    }

    /// The newest doomed sequence, if cached, made strict and cached again soon after, then
    /// perhaps retired: each instance drops its cache and releases that cache's leases while
    /// clients already fill a new one, whose leases a retirement must still wait for.
    async fn flip_doomed_policy(&mut self, then_retire: bool) {
        let Some(name) = self.ctx.world.doomed.read().unwrap().last().cloned() else {
            return self.new_doomed().await;
        };
        if !self.cached(&name).await {
            if then_retire {
                self.retire_doomed().await;
            }
            return;
        }
        let started = self.ctx.history.now();
        let path = format!("/sequences/{name}");
        let strict = self
            .admin(Method::PATCH, &path, Some(json!({"cache": {"size": 0}})))
            .await;
        // Time for the instances to hear of it and drop their caches (a round trip): were the
        // policy cached again first, they would read it cached and keep them.
        self.pause(20, 300).await;
        let cached = self
            .admin(Method::PATCH, &path, Some(json!({"cache": {"size": 200}})))
            .await;
        let applied = strict == Some(StatusCode::OK) && cached == Some(StatusCode::OK);
        self.record(
            "cache policy flipped",
            &name,
            started,
            applied,
            format!("strict: {strict:?}, cached: {cached:?}"),
        );
        if then_retire {
            self.retire_doomed().await;
        }
    }

    async fn delete(&mut self, name: &str) -> Option<(StatusCode, String)> {
        let path = format!("/sequences/{name}");
        self.admin_answer(Method::DELETE, &path, None).await
    }

    /// After a retirement: one that answered 200 is recorded for the checker, its name kept
    /// for clients to ask for again, and a new doomed sequence made.
    async fn retirement_ended(
        &mut self,
        name: &str,
        invoked: Duration,
        answered: Duration,
        applied: bool,
    ) {
        if !applied {
            return;
        }
        self.ctx.history.retired(Retirement {
            sequence: name.to_owned(),
            invoked,
            answered,
        });
        self.ctx.world.retired(name);
        self.new_doomed().await;
    }

    async fn new_doomed(&mut self) {
        // Named by the time: a creation that timed out may have happened, and a name is
        // never reused.
        let name = format!("doomed-{}", self.ctx.history.now().as_millis());
        let (min, max) = self.ctx.world.doomed_range();
        let mut body = json!({"name": name, "min": min, "max": max});
        if self.rng.gen_bool(0.5) {
            body["cache"] = json!({"size": 200});
        }
        if self.admin(Method::POST, "/sequences", Some(body)).await == Some(StatusCode::CREATED) {
            self.ctx.world.doomed.write().unwrap().push(name);
        }
    }
}

fn describe_answer(answer: &Option<(StatusCode, String)>) -> String {
    match answer {
        Some((status, why)) => format!("{} {why}", status.as_u16()),
        None => "no answer".to_owned(),
    }
}

/// A superuser session of the operator's own, with every wait bounded.
async fn connect(url: &str) -> Option<tokio_postgres::Client> {
    let (db, connection) = bounded(tokio_postgres::connect(url, tokio_postgres::NoTls))
        .await?
        .ok()?;
    tokio::spawn(connection);
    let setup = format!(
        "SET application_name = '{APPLICATION}'; SET lock_timeout = '2s'; \
         SET statement_timeout = '5s'"
    );
    bounded(db.batch_execute(&setup)).await?.ok()?;
    Some(db)
}

/// `future`, or `None` after 10 s.
async fn bounded<T>(future: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::time::timeout(Duration::from_secs(10), future)
        .await
        .ok()
}
