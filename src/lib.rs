//! seqvend: carrier number ranges kept as real PostgreSQL sequences, vended over HTTP.
//! Never twice, never outside the range, and only once the allocation is durable.

pub mod auth;
pub mod cache;
pub mod carriers;
pub mod cli;
pub mod db;
pub mod ddl;
pub mod domain;
pub mod healthcheck;
pub mod http;
pub mod idempotency;
pub mod ids;
pub mod local_pg;
pub mod metrics;
pub mod migrate;
pub mod registry;
pub mod service;
pub mod settings;
pub mod startup;
pub mod telemetry;
pub mod usage;
pub mod vend;
