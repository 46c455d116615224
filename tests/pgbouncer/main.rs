//! seqvend through a real PgBouncer 1.18 in transaction mode (started by
//! scripts/pgbouncer.sh in front of the API tests' cluster, with two server connections): the
//! API's core paths and the registry's, both pools through it; the direct URL that must bypass
//! it; and a PgBouncer restart and PAUSE/RESUME under load.

#[path = "../common/mod.rs"]
mod common;
// The API tests' harness, shared whole: this binary uses only part of it.
#[allow(dead_code, unused_imports)]
#[path = "../api/helpers.rs"]
mod helpers;

mod bouncer;
mod core;
mod direct_url;
mod durability;
mod faults;
mod registry;
