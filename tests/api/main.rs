//! seqvend's integration tests: real HTTP against real PostgreSQL clusters.
// The tests look at the database with sqlx directly, beside seqvend's registry handle.
#![allow(clippy::disallowed_types)]

mod api_reference;
mod blocks;
mod by_hand;
mod caching;
mod cli;
mod client;
mod client_ids;
mod coalescing;
#[path = "../common/mod.rs"]
mod common;
mod concurrency;
mod counters;
mod deadline;
mod deploy;
mod durability;
mod errors;
mod events;
mod formats;
mod helpers;
mod idempotency;
mod idempotency_batches;
mod ids;
mod leases;
mod leases_never_twice;
mod names;
mod never_twice;
mod observability;
mod outage;
mod planning;
mod restore;
mod running_out;
mod sequences;
mod serve;
mod sessions;
mod startup;
mod tenancy;
mod tls;
mod tokens;
mod tracking;
mod vending;
