//! The system under test: one PostgreSQL cluster, three `seqvend serve` instances, and the
//! sequences and counter family the clients use — what they are called, their ranges, and
//! the free number space left for ranges added during the run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};

use rand::rngs::StdRng;
use rand::Rng;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::harness::{admin, Pg, Seqvend, VEND};

/// The strict sequence of the focused rewind phase: high-rate small batches.
pub const HOT: &str = "hot";
/// Strict, vending downwards, small ranges: rollovers and exhaustion.
pub const DOWN: &str = "down";
/// Strict, increment 7.
pub const STEP: &str = "step";
/// Cached by every instance.
pub const CACHED: &str = "cached";
/// Printed as UPS tracking numbers.
pub const UPS: &str = "ups";
/// Ranges added high, low, high (100–102, 10–11, 105–200, then again 1,000 higher): keyed
/// leases roll over from a range into a lower one and back up.
pub const ZIGZAG: &str = "zigzag";
/// The counter family.
pub const FAMILY: &str = "chat";
pub const COUNTER_KEYS: usize = 24;

/// How long a client lease may be used (the thick client's bound after a retirement).
pub const CLIENT_LEASE_MS: u64 = 5_000;

/// A vend token. `Old` and `New` are in rotation: instances disagree on which they accept, and
/// so on each token's place in their `SEQVEND_VEND_TOKENS`. Each token's idempotency keys
/// are its own, whichever instance it is sent to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Token {
    /// Accepted by every instance, first in every list: the clients outside the rotation.
    Vend,
    Old,
    New,
}

impl Token {
    pub fn secret(self) -> &'static str {
        match self {
            Token::Vend => VEND,
            Token::Old => "history-vend-old",
            Token::New => "history-vend-new",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Token::Vend => "vend",
            Token::Old => "old",
            Token::New => "new",
        }
    }
}

/// Each instance's vend tokens, mid-rotation: the first accepts old and new, the second only
/// new (rotated), the third only old (not yet). `old` is second in the first and third lists,
/// as `new` is in the second's; `new` is third in the first's.
const VEND_TOKENS: [&[Token]; 3] = [
    &[Token::Vend, Token::Old, Token::New],
    &[Token::Vend, Token::New],
    &[Token::Vend, Token::Old],
];

/// Short leases (cache 4 s, renewed each second; client 5 s; worker ids 3 s): retirements,
/// kills and takeovers play out within a phase.
const INSTANCE_ENV: [(&str, &str); 6] = [
    ("SEQVEND_CACHE_LEASE_MS", "4000"),
    ("SEQVEND_CACHE_RENEW_MS", "1000"),
    ("SEQVEND_CLIENT_LEASE_MS", "5000"),
    ("SEQVEND_WORKER_LEASE_MS", "3000"),
    ("SEQVEND_WORKER_RENEW_MS", "1000"),
    ("SEQVEND_WATCH_INTERVAL_S", "1"),
];

pub struct World {
    pub pg: Pg,
    /// The instances; the operator kills and restarts them, clients only know their addresses.
    pub instances: tokio::sync::Mutex<Vec<Seqvend>>,
    pub addresses: Vec<String>,
    /// Sequences made to be retired: the newest is the live one.
    pub doomed: RwLock<Vec<String>>,
    /// The sequence retired last: clients keep asking for it now and then, as one that was
    /// never told would, and nothing of it may come back.
    retired_last: RwLock<Option<String>>,
    /// While set, clients leave doomed sequences alone: a fault needs an instance's cached
    /// blocks of one untouched for a moment (a take would drop a lapsed block).
    doomed_paused: AtomicBool,
    /// The next free value above which ranges may be added, per sequence (ascending ones grow
    /// upwards, `down` downwards).
    free: Mutex<HashMap<String, i64>>,
    zigzag_rounds: Mutex<i64>,
}

impl World {
    pub async fn start(label: &str) -> World {
        let pg = Pg::start(label, &[]).await;
        let mut instances = Vec::new();
        for tokens in VEND_TOKENS {
            let tokens: Vec<&str> = tokens.iter().map(|t| t.secret()).collect();
            let tokens = tokens.join(",");
            let mut env = INSTANCE_ENV.to_vec();
            env.push(("SEQVEND_VEND_TOKENS", &tokens));
            instances.push(Seqvend::start(&pg.url, &env).await);
        }
        let addresses: Vec<String> = instances.iter().map(Seqvend::address).collect();
        let world = World {
            pg,
            instances: tokio::sync::Mutex::new(instances),
            addresses,
            doomed: RwLock::default(),
            retired_last: RwLock::default(),
            doomed_paused: AtomicBool::new(false),
            free: Mutex::default(),
            zigzag_rounds: Mutex::new(0),
        };
        world.create_everything().await;
        world
    }

    async fn create_everything(&self) {
        let a = &self.addresses[0];
        let created = |body: Value| async move {
            let (status, answer) = admin(a, Method::POST, "/sequences", Some(body)).await;
            assert_eq!(status, StatusCode::CREATED, "{answer}");
        };
        created(json!({"name": HOT, "min": 1_000_000, "max": 1_999_999})).await;
        self.add_ranges(HOT, &[(3_000_000, 3_999_999), (5_000_000, 5_999_999)])
            .await;
        self.free.lock().unwrap().insert(HOT.into(), 7_000_000);
        created(json!({"name": DOWN, "min": 10_000, "max": 12_999, "increment": -1})).await;
        self.add_ranges(DOWN, &[(5_000, 7_999)]).await;
        self.free.lock().unwrap().insert(DOWN.into(), 4_000);
        created(json!({"name": STEP, "min": 0, "max": 69_999, "increment": 7})).await;
        self.free.lock().unwrap().insert(STEP.into(), 100_000);
        created(json!({"name": CACHED, "min": 1, "max": 200_000, "cache": {"size": 500}})).await;
        self.free.lock().unwrap().insert(CACHED.into(), 300_000);
        created(json!({"name": UPS, "min": 1_000_000, "max": 1_019_999,
                       "format": {"kind": "ups_1z", "account": "5R8939", "service": "03"}}))
        .await;
        self.free.lock().unwrap().insert(UPS.into(), 1_100_000);
        created(json!({"name": ZIGZAG, "min": 100, "max": 102})).await;
        self.add_ranges(ZIGZAG, &[(10, 11), (105, 200)]).await;
        *self.zigzag_rounds.lock().unwrap() = 1;
        let (status, answer) =
            admin(a, Method::POST, "/families", Some(json!({"name": FAMILY}))).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }

    async fn add_ranges(&self, name: &str, ranges: &[(i64, i64)]) {
        for (min, max) in ranges {
            let (status, answer) = admin(
                &self.addresses[0],
                Method::POST,
                &format!("/sequences/{name}/ranges"),
                Some(json!({"min": min, "max": max})),
            )
            .await;
            assert_eq!(status, StatusCode::CREATED, "{answer}");
        }
    }

    /// The instances (by number) that accept `token`.
    pub fn accepting(&self, token: Token) -> Vec<usize> {
        (0..self.addresses.len())
            .filter(|&i| VEND_TOKENS[i].contains(&token))
            .collect()
    }

    /// The sequences clients draw from in a chaotic phase.
    pub fn sequences(&self) -> Vec<String> {
        let mut names: Vec<String> = [HOT, DOWN, STEP, CACHED, UPS, ZIGZAG]
            .iter()
            .map(|s| s.to_string())
            .collect();
        names.extend(self.doomed.read().unwrap().last().cloned());
        names
    }

    /// The next range to add to `name` (`size` values), clear of every range it has: above
    /// the last for an ascending sequence, below it for `down`.
    pub fn next_range(&self, name: &str, size: i64) -> (i64, i64) {
        let mut free = self.free.lock().unwrap();
        let at = free.get_mut(name).expect("a sequence ranges are added to");
        if name == DOWN {
            let range = (*at - size + 1, *at);
            *at -= size + 10;
            range
        } else {
            let range = (*at, *at + size - 1);
            *at += size + 10;
            range
        }
    }

    /// The next round of zigzag ranges: 100–102, 10–11, 105–200, each 1,000 above the last.
    pub fn next_zigzag_round(&self) -> [(i64, i64); 3] {
        let mut rounds = self.zigzag_rounds.lock().unwrap();
        let base = 1_000 * *rounds;
        *rounds += 1;
        [
            (base + 100, base + 102),
            (base + 10, base + 11),
            (base + 105, base + 200),
        ]
    }

    /// The doomed sequence a client draws from now: the live one, or a quarter of the time the
    /// one retired last; none while doomed sequences are paused.
    pub fn doomed_for_clients(&self, rng: &mut StdRng) -> Option<String> {
        if self.doomed_paused.load(Ordering::Relaxed) {
            return None;
        }
        let retired = self.retired_last.read().unwrap().clone();
        match retired {
            Some(name) if rng.gen_bool(0.25) => Some(name),
            _ => self.doomed.read().unwrap().last().cloned(),
        }
    }

    pub fn doomed_paused(&self) -> bool {
        self.doomed_paused.load(Ordering::Relaxed)
    }

    pub fn pause_doomed(&self, paused: bool) {
        self.doomed_paused.store(paused, Ordering::Relaxed);
    }

    /// Records that `name` was retired (its `DELETE` answered).
    pub fn retired(&self, name: &str) {
        *self.retired_last.write().unwrap() = Some(name.to_owned());
    }

    /// Allocates the number space of a new doomed sequence.
    pub fn doomed_range(&self) -> (i64, i64) {
        (1, 100_000)
    }
}
