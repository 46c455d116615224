//! What the test binaries share (`api`, `faults`, `history`): PostgreSQL clusters of a test's
//! own, `seqvend serve` processes, the one way to wait on a condition, and small helpers over
//! values, ids and process output. Each binary includes it with
//! `#[path = "../common/mod.rs"] mod common;`.

// Each binary uses a different part of this module: what one of them leaves unused, another
// uses, so the per-binary dead-code warnings would only be noise.
#![allow(dead_code)]

pub mod carrier_vectors;
pub mod cluster;
pub mod process;
pub mod scratch;
pub mod values;
pub mod wait;

/// The bootstrap tokens every seqvend a test starts is given.
pub const ADMIN_TOKEN: &str = "test-admin-token";
pub const VEND_TOKEN: &str = "test-vend-token";
