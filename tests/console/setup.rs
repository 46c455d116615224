//! What every console test starts from: a PostgreSQL cluster of its own and a `seqvend
//! serve` on it, and the admin calls that lay out a registry to look at.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::cluster::Pg;
use crate::common::process::{admin, Seqvend};

/// A seqvend on a database of its own; both stop when dropped.
pub struct Served {
    pub seqvend: Seqvend,
    pub pg: Pg,
}

impl Served {
    /// Usage is sampled every second, so that charts and rates have something to show; the
    /// vend deadline is one no loaded machine reaches, and statements wait out locks rather
    /// than answer 503 (these tests are about the pages).
    pub async fn start(label: &str, passed: &[(&str, &str)]) -> Self {
        let pg = Pg::start(label, &[]).await;
        let mut env = vec![
            ("SEQVEND_WATCH_INTERVAL_S", "1"),
            ("SEQVEND_VEND_DEADLINE_MS", "30000"),
            ("SEQVEND_LOCK_TIMEOUT_MS", "0"),
        ];
        env.extend_from_slice(passed);
        let seqvend = Seqvend::start(&pg.url, &env).await;
        Self { seqvend, pg }
    }

    pub fn address(&self) -> String {
        self.seqvend.address()
    }

    /// An admin call that must succeed with `expected`; returns the body.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        expected: StatusCode,
    ) -> Value {
        let (status, answer) = admin(&self.address(), method, path, body).await;
        assert_eq!(status, expected, "{path}: {answer}");
        answer
    }

    pub async fn create(&self, body: Value) -> Value {
        self.call(Method::POST, "/sequences", Some(body), StatusCode::CREATED)
            .await
    }

    /// Vends `count` values of `name`; returns what came back.
    pub async fn vend(&self, name: &str, count: u32) -> Value {
        let path = format!("/sequences/{name}/next?count={count}");
        self.call(Method::POST, &path, None, StatusCode::OK).await
    }

    /// A plain sequence over `min..=max`.
    pub async fn plain(&self, name: &str, min: i64, max: i64) {
        self.create(json!({"name": name, "min": min, "max": max}))
            .await;
    }

    pub async fn sequence(&self, name: &str) -> Value {
        let path = format!("/sequences/{name}");
        self.call(Method::GET, &path, None, StatusCode::OK).await
    }
}
