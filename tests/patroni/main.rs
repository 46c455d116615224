//! seqvend on a Patroni cluster (etcd + three PostgreSQL nodes in synchronous mode, started by
//! `scripts/patroni.sh` from `deploy/patroni/`), under load from several `seqvend serve`
//! processes on the multi-host URL, through the faults Patroni exists for: a switchover, a
//! dead leader, a leader whose Patroni alone died, a frozen leader, a dead synchronous standby,
//! a lost etcd, a former leader whose rewind fails. Every scenario ends with no number twice,
//! none outside its range, none acknowledged then lost; `scripts/reliability.sh` writes their
//! figures to docs/reliability.md.

#[path = "../common/mod.rs"]
mod common;

mod cluster;
mod figures;
mod lateness;
mod load;
mod scenarios;

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;

use cluster::Patroni;
use common::process::{admin, create, Seqvend};
use load::*;

/// seqvend's own deadline for a vend (its default), reported beside the longest request.
const VEND_DEADLINE: Duration = Duration::from_millis(2000);

/// The sequences and the family the load draws from, made through the first instance.
async fn create_numbers(address: &str) {
    create(address, STRICT, &[RANGE]).await;
    create(address, KEYED, &[RANGE]).await;
    let cached = json!({"name": CACHED, "min": RANGE.0, "max": RANGE.1, "cache": {"size": 500}});
    let (status, body) = admin(address, Method::POST, "/sequences", Some(cached)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let family = json!({"name": FAMILY});
    let (status, body) = admin(address, Method::POST, "/families", Some(family)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn through_every_patroni_fault_no_value_is_vended_twice_or_lost() {
    let patroni = tokio::task::spawn_blocking(Patroni::start).await.unwrap();
    let url = patroni.database_url().to_owned();
    let mut instances = Vec::new();
    for _ in 0..2 {
        instances.push(Seqvend::start(&url, &[]).await);
    }
    let addresses: Vec<String> = instances.iter().map(Seqvend::address).collect();
    create_numbers(&addresses[0]).await;
    let load = Load::start(&addresses);
    let run = scenarios::Run {
        patroni: &patroni,
        journal: load.journal.clone(),
        address: addresses[0].clone(),
        addresses: addresses.clone(),
    };
    for (order, scenario) in scenarios::ALL.iter().enumerate() {
        run.scenario(order + 1, *scenario).await;
    }
    load.stop().await;
}
