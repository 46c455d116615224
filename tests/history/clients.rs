//! The clients: concurrent tasks calling seqvend over HTTP (and through the thick client),
//! recording every call and its answer in the history. They judge nothing: a refusal or a
//! timeout is recorded as such and the task carries on.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::Rng;
use reqwest::StatusCode;
use serde_json::Value;
use tokio::task::JoinSet;

use crate::harness::VEND;
use crate::history::{History, Kind, Op, Outcome};
use crate::schedule::{rng, Focus};
use crate::world::{Token, World, CACHED, COUNTER_KEYS, FAMILY, HOT, ZIGZAG};

/// Longest a client waits for one answer.
const PATIENCE: Duration = Duration::from_secs(10);

/// What every client task shares.
#[derive(Clone)]
pub struct Ctx {
    pub history: Arc<History>,
    pub world: Arc<World>,
    /// Set when the phase ends.
    pub stop: Arc<AtomicBool>,
    pub http: reqwest::Client,
    pub board: Arc<Board>,
}

/// The keyed requests the rotation's clients sent lately, for the other token's clients to
/// send again with the same key.
#[derive(Default)]
pub struct Board {
    sent: Mutex<VecDeque<Sent>>,
}

#[derive(Clone)]
struct Sent {
    token: Token,
    kind: Kind,
    target: String,
    key: String,
    path: String,
}

impl Board {
    const KEPT: usize = 64;

    fn post(&self, sent: Sent) {
        let mut board = self.sent.lock().unwrap();
        if board.len() == Self::KEPT {
            board.pop_front();
        }
        board.push_back(sent);
    }

    /// A request a client of another token sent lately, if any.
    fn of_another(&self, token: Token, rng: &mut StdRng) -> Option<Sent> {
        let board = self.sent.lock().unwrap();
        let theirs: Vec<&Sent> = board.iter().filter(|s| s.token != token).collect();
        (!theirs.is_empty()).then(|| theirs[rng.gen_range(0..theirs.len())].clone())
    }
}

impl Ctx {
    fn running(&self) -> bool {
        !self.stop.load(Ordering::Relaxed)
    }

    fn address(&self, rng: &mut StdRng, among: usize) -> (String, String) {
        let i = rng.gen_range(0..among.min(self.world.addresses.len()));
        (self.world.addresses[i].clone(), format!("instance {i}"))
    }
}

/// Starts the client tasks of one phase; they stop once `ctx.stop` is set.
pub fn start(focus: Focus, phase: u64, ctx: &Ctx) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let seed = ctx.history.seed;
    let mut n = 0;
    let mut rng_for = |who: &str| {
        n += 1;
        rng(seed, who, phase * 1_000 + n)
    };
    match focus {
        Focus::Rewind => {
            // Four clients per instance, mostly of 1–8 values: the statement that coalesces
            // them draws at most 64 values of `hot`, so it takes the inline fast path, where a
            // rewind can land between two nextvals.
            for n in 0..12 {
                let (ctx, rng) = (ctx.clone(), rng_for("strict"));
                let max = if n % 4 == 0 { 64 } else { 8 };
                tasks.spawn(strict(ctx, rng, Pick::Only(HOT), max, 2));
            }
        }
        Focus::KeyedRollover => {
            for _ in 0..4 {
                let (ctx, rng) = (ctx.clone(), rng_for("keyed"));
                tasks.spawn(keyed(ctx, rng, Pick::Only(ZIGZAG), Kind::KeyedNext, 15));
            }
            for _ in 0..3 {
                let (ctx, rng) = (ctx.clone(), rng_for("keyed-lease"));
                tasks.spawn(keyed(ctx, rng, Pick::Only(ZIGZAG), Kind::KeyedLease, 15));
            }
            for _ in 0..2 {
                let (ctx, rng) = (ctx.clone(), rng_for("strict"));
                tasks.spawn(strict(ctx, rng, Pick::Only(ZIGZAG), 10, 3));
            }
            let (ctx2, rng) = (ctx.clone(), rng_for("lease"));
            tasks.spawn(lease(ctx2, rng, Pick::Only(ZIGZAG), 15));
        }
        Focus::Rotation => {
            for token in [Token::Old, Token::New, Token::Old, Token::New] {
                let (c, r) = (ctx.clone(), rng_for("rotating"));
                tasks.spawn(rotating(c, r, token, Pick::Only(HOT)));
            }
            let (c, r) = (ctx.clone(), rng_for("keyed"));
            tasks.spawn(keyed(c, r, Pick::Only(HOT), Kind::KeyedNext, 20));
        }
        Focus::Retirement => {
            // Every way of holding values of the doomed sequence: strict and keyed vends,
            // client leases and the thick client's blocks (the instances' caches, when it is
            // cached) — and strict vends of `hot` beside them, coalesced into the same
            // statements, while the operator holds locks on `hot`.
            for _ in 0..3 {
                let (c, r) = (ctx.clone(), rng_for("strict"));
                tasks.spawn(strict(c, r, Pick::Doomed, 50, 3));
            }
            let (c, r) = (ctx.clone(), rng_for("keyed"));
            tasks.spawn(keyed(c, r, Pick::Doomed, Kind::KeyedNext, 50));
            let (c, r) = (ctx.clone(), rng_for("lease"));
            tasks.spawn(lease(c, r, Pick::Doomed, 50));
            let (c, r) = (ctx.clone(), rng_for("strict"));
            tasks.spawn(strict(c, r, Pick::Only(HOT), 20, 3));
            let (c, r) = (ctx.clone(), rng_for("thick"));
            tasks.spawn(thick_client(c, r));
        }
        Focus::Chaos => {
            for token in [Token::Old, Token::New] {
                let (c, r) = (ctx.clone(), rng_for("rotating"));
                tasks.spawn(rotating(c, r, token, Pick::Any));
            }
            for _ in 0..4 {
                let (ctx, rng) = (ctx.clone(), rng_for("strict"));
                tasks.spawn(strict(ctx, rng, Pick::Any, 200, 3));
            }
            for _ in 0..2 {
                let (ctx, rng) = (ctx.clone(), rng_for("keyed"));
                tasks.spawn(keyed(ctx, rng, Pick::Any, Kind::KeyedNext, 200));
            }
            let (c, r) = (ctx.clone(), rng_for("keyed-lease"));
            tasks.spawn(keyed(c, r, Pick::Any, Kind::KeyedLease, 200));
            let (c, r) = (ctx.clone(), rng_for("lease"));
            tasks.spawn(lease(c, r, Pick::Any, 200));
            for _ in 0..2 {
                let (c, r) = (ctx.clone(), rng_for("counter"));
                tasks.spawn(counter(c, r));
            }
            let (c, r) = (ctx.clone(), rng_for("snowflake"));
            tasks.spawn(snowflake(c, r));
            let (c, r) = (ctx.clone(), rng_for("thick"));
            tasks.spawn(thick_client(c, r));
            let (c, r) = (ctx.clone(), rng_for("thick-snowflake"));
            tasks.spawn(thick_snowflake(c, r));
        }
    }
    tasks
}

/// Which sequence a client draws from.
#[derive(Clone, Copy)]
enum Pick {
    Only(&'static str),
    /// Any sequence of the chaotic phase, the live doomed one included.
    Any,
    /// A doomed sequence: the live one, now and then the one retired last (`hot` while there
    /// is none, or while doomed sequences are paused).
    Doomed,
}

impl Pick {
    /// Waits while doomed sequences are paused, if this pick is one: a client that drew
    /// another sequence meanwhile could be stuck in a registry lock when they come back.
    async fn ready(self, ctx: &Ctx) {
        if let Pick::Doomed = self {
            while ctx.running() && ctx.world.doomed_paused() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }

    fn name(self, ctx: &Ctx, rng: &mut StdRng) -> String {
        match self {
            Pick::Only(name) => name.to_owned(),
            Pick::Any => {
                let names = ctx.world.sequences();
                names[rng.gen_range(0..names.len())].clone()
            }
            Pick::Doomed => ctx
                .world
                .doomed_for_clients(rng)
                .unwrap_or_else(|| HOT.to_owned()),
        }
    }
}

async fn strict(ctx: Ctx, mut rng: StdRng, pick: Pick, max: u32, instances: usize) {
    while ctx.running() {
        pick.ready(&ctx).await;
        let name = pick.name(&ctx, &mut rng);
        let count = rng.gen_range(1..=max);
        let (address, via) = ctx.address(&mut rng, instances);
        let path = format!("/sequences/{name}/next?count={count}");
        call(
            &ctx,
            &Request::plain(Kind::Next, &name, &path),
            &address,
            via,
        )
        .await;
    }
}

async fn lease(ctx: Ctx, mut rng: StdRng, pick: Pick, max: u32) {
    while ctx.running() {
        pick.ready(&ctx).await;
        let name = pick.name(&ctx, &mut rng);
        let count = rng.gen_range(1..=max);
        let (address, via) = ctx.address(&mut rng, 3);
        let path = format!("/sequences/{name}/leases?count={count}");
        call(
            &ctx,
            &Request::plain(Kind::Lease, &name, &path),
            &address,
            via,
        )
        .await;
    }
}

/// A keyed request sent 1–3 times with the same key, to any instance, the first two
/// sometimes at once: every answer with values must be the first one's.
async fn keyed(ctx: Ctx, mut rng: StdRng, pick: Pick, kind: Kind, max: u32) {
    let mut n = 0u64;
    let tag: u64 = rng.gen();
    while ctx.running() {
        n += 1;
        let key = format!("k-{tag:016x}-{n}");
        pick.ready(&ctx).await;
        let name = pick.name(&ctx, &mut rng);
        let count = rng.gen_range(1..=max);
        let route = if kind == Kind::KeyedLease {
            "leases"
        } else {
            "next"
        };
        let path = format!("/sequences/{name}/{route}?count={count}");
        let request = Request {
            kind,
            target: &name,
            key: Some(&key),
            token: Token::Vend,
            path: &path,
        };
        let attempts = rng.gen_range(1..=3);
        let mut sent = 0;
        if attempts >= 2 && rng.gen_bool(0.3) {
            let (a, via_a) = ctx.address(&mut rng, 3);
            let (b, via_b) = ctx.address(&mut rng, 3);
            tokio::join!(
                call(&ctx, &request, &a, via_a),
                call(&ctx, &request, &b, via_b),
            );
            sent = 2;
        }
        while sent < attempts {
            let (address, via) = ctx.address(&mut rng, 3);
            call(&ctx, &request, &address, via).await;
            sent += 1;
        }
    }
}

/// A client of the token rotation: keyed vends and leases with its own token, through the
/// instances that accept it, each sent once or twice (a retry must replay). Half the time it
/// takes a key another token's client sent — mostly with the same request, sometimes with
/// another count: a key is its token's own, so either way it must be answered as a new key
/// (values of its own), never with the other token's values nor 422.
async fn rotating(ctx: Ctx, mut rng: StdRng, token: Token, pick: Pick) {
    let instances = ctx.world.accepting(token);
    let tag: u64 = rng.gen();
    let mut n = 0u64;
    while ctx.running() {
        let fresh = |rng: &mut StdRng| {
            let kind = if rng.gen_bool(0.5) {
                Kind::KeyedNext
            } else {
                Kind::KeyedLease
            };
            let route = if kind == Kind::KeyedLease {
                "leases"
            } else {
                "next"
            };
            let target = pick.name(&ctx, rng);
            let path = format!(
                "/sequences/{target}/{route}?count={}",
                rng.gen_range(1..=20)
            );
            (kind, target, path)
        };
        let borrowed = match rng.gen_bool(0.5) {
            true => ctx.board.of_another(token, &mut rng),
            false => None,
        };
        let (kind, target, key, path) = match borrowed {
            Some(sent) if rng.gen_bool(0.8) => (sent.kind, sent.target, sent.key, sent.path),
            Some(sent) => {
                let (kind, target, path) = fresh(&mut rng);
                (kind, target, sent.key, path)
            }
            None => {
                n += 1;
                let (kind, target, path) = fresh(&mut rng);
                (kind, target, format!("r-{tag:016x}-{n}"), path)
            }
        };
        let request = Request {
            kind,
            target: &target,
            key: Some(&key),
            token,
            path: &path,
        };
        for _ in 0..rng.gen_range(1..=2) {
            let i = instances[rng.gen_range(0..instances.len())];
            let (address, via) = (ctx.world.addresses[i].clone(), format!("instance {i}"));
            call(&ctx, &request, &address, via).await;
        }
        ctx.board.post(Sent {
            token,
            kind,
            target,
            key,
            path,
        });
    }
}

async fn counter(ctx: Ctx, mut rng: StdRng) {
    while ctx.running() {
        let key = format!("k{}", rng.gen_range(0..COUNTER_KEYS));
        let count = rng.gen_range(1..=50);
        let (address, via) = ctx.address(&mut rng, 3);
        let path = format!("/families/{FAMILY}/counters/{key}/next?count={count}");
        let target = format!("{FAMILY}/{key}");
        call(
            &ctx,
            &Request::plain(Kind::Counter, &target, &path),
            &address,
            via,
        )
        .await;
    }
}

async fn snowflake(ctx: Ctx, mut rng: StdRng) {
    while ctx.running() {
        let count = rng.gen_range(1..=500);
        let (address, via) = ctx.address(&mut rng, 3);
        let path = format!("/ids/snowflake?count={count}");
        let request = Request::plain(Kind::Snowflake, "snowflake", &path);
        call(&ctx, &request, &address, via).await;
    }
}

/// One call a client makes: what it asks of which target, with which token and key.
struct Request<'a> {
    kind: Kind,
    target: &'a str,
    key: Option<&'a str>,
    token: Token,
    path: &'a str,
}

impl<'a> Request<'a> {
    /// A call with the token outside the rotation and no key.
    fn plain(kind: Kind, target: &'a str, path: &'a str) -> Self {
        Self {
            kind,
            target,
            key: None,
            token: Token::Vend,
            path,
        }
    }
}

/// Sends `POST path` and records the call and its answer.
async fn call(ctx: &Ctx, request: &Request<'_>, address: &str, via: String) {
    let invoked = ctx.history.now();
    let mut sent = ctx
        .http
        .post(format!("{address}{}", request.path))
        .bearer_auth(request.token.secret())
        .timeout(PATIENCE);
    if let Some(key) = request.key {
        sent = sent.header("Idempotency-Key", key);
    }
    let mut replayed = false;
    let outcome = match sent.send().await {
        Err(err) => Outcome::Unknown(short(&err)),
        Ok(response) => {
            let status = response.status();
            replayed = response.headers().contains_key("idempotent-replayed");
            match response.json::<Value>().await {
                Err(err) => Outcome::Unknown(short(&err)),
                Ok(body) if status == StatusCode::OK => match values(request.kind, &body) {
                    Some(values) => Outcome::Values(values),
                    None => Outcome::Refused(format!("200 unreadable: {body}")),
                },
                Ok(body) => Outcome::Refused(format!(
                    "{} {}",
                    status.as_u16(),
                    body["error"].as_str().unwrap_or("?")
                )),
            }
        }
    };
    let nothing = matches!(outcome, Outcome::Unknown(_));
    ctx.history.op(Op {
        kind: request.kind,
        target: request.target.to_owned(),
        key: request.key.map(str::to_owned),
        token: request.token,
        request: request.path.to_owned(),
        replayed,
        via,
        invoked,
        completed: ctx.history.now(),
        outcome,
    });
    if nothing {
        // The instance is down (killed, restarting): not a busy loop meanwhile.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn short(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        "timed out".into()
    } else if err.is_connect() {
        "connection refused".into()
    } else {
        "connection cut".into()
    }
}

/// The values (or ids) a 200 gave, in the order given.
fn values(kind: Kind, body: &Value) -> Option<Vec<i64>> {
    match kind {
        Kind::Lease | Kind::KeyedLease => {
            let mut values = Vec::new();
            for block in body["blocks"].as_array()? {
                let (first, last) = (block["first"].as_i64()?, block["last"].as_i64()?);
                let step = block["increment"].as_i64()?;
                let mut v = first;
                // A block is at most a lease's 200 values: a longer one is recorded as far as
                // that, and the range check reports it.
                while values.len() < 100_000 && (if step > 0 { v <= last } else { v >= last }) {
                    values.push(v);
                    v = v.checked_add(step)?;
                }
            }
            Some(values)
        }
        Kind::Snowflake => body["ids_str"]
            .as_array()?
            .iter()
            .map(|id| id.as_str()?.parse().ok())
            .collect(),
        _ => match body.get("value") {
            Some(value) => Some(vec![value.as_i64()?]),
            None => body["values"]
                .as_array()?
                .iter()
                .map(Value::as_i64)
                .collect(),
        },
    }
}

/// The thick client: values of the cached sequence and of a doomed one, taken from
/// blocks it leased, recorded with the time each batch was handed out.
async fn thick_client(ctx: Ctx, mut rng: StdRng) {
    let client = seqvend_client::Client::builder(ctx.world.addresses[2].clone(), VEND)
        .request_timeout(Duration::from_secs(2))
        .wait_timeout(Duration::from_secs(3))
        .build()
        .expect("a thick client");
    while ctx.running() {
        let name = match ctx.world.doomed_for_clients(&mut rng) {
            Some(doomed) if rng.gen_bool(0.5) => doomed,
            _ => CACHED.to_owned(),
        };
        let count = rng.gen_range(1..=50);
        let invoked = ctx.history.now();
        let outcome = match tokio::time::timeout(PATIENCE, client.next_n(&name, count)).await {
            Ok(Ok(values)) => Outcome::Values(values),
            Ok(Err(err)) => Outcome::Refused(format!("{err}")),
            Err(_) => Outcome::Unknown("timed out".into()),
        };
        let failed = !matches!(outcome, Outcome::Values(_));
        ctx.history.op(Op {
            kind: Kind::ThickClient,
            request: format!("next_n({count})"),
            target: name,
            key: None,
            token: Token::Vend,
            replayed: false,
            via: "thick client".into(),
            invoked,
            completed: ctx.history.now(),
            outcome,
        });
        // Pacing, so the thick client's rate is a client's, not a busy loop.
        let pause = if failed { 50 } else { 2 };
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
}

/// Snowflake ids made by the thick client under a worker id of its own.
async fn thick_snowflake(ctx: Ctx, mut rng: StdRng) {
    let client = seqvend_client::Client::builder(ctx.world.addresses[1].clone(), VEND)
        .request_timeout(Duration::from_secs(2))
        .build()
        .expect("a thick client");
    let mut snowflakes = None;
    while ctx.running() {
        let invoked = ctx.history.now();
        if snowflakes.is_none() {
            match tokio::time::timeout(PATIENCE, client.snowflake()).await {
                Ok(Ok(s)) => snowflakes = Some(s),
                _ => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            }
        }
        let count = rng.gen_range(1..=100);
        let outcome = match snowflakes.as_ref().unwrap().next_n(count) {
            Ok(ids) => Outcome::Values(ids),
            Err(err) => Outcome::Refused(format!("{err}")),
        };
        ctx.history.op(Op {
            kind: Kind::ThickSnowflake,
            target: "snowflake".into(),
            key: None,
            token: Token::Vend,
            request: format!("snowflakes.next_n({count})"),
            replayed: false,
            via: "thick client".into(),
            invoked,
            completed: ctx.history.now(),
            outcome,
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
