//! The fault-injection suite: real seqvend processes against real PostgreSQL clusters, with
//! clients that record every value they were given. Every scenario ends with zero duplicates
//! and zero values outside their ranges, and reports its gaps. `scripts/reliability.sh` runs
//! it and writes docs/reliability.md.

mod caching;
#[path = "../common/mod.rs"]
mod common;
mod counters;
mod harness;
mod ids;
mod scenarios;
