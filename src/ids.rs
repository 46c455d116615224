//! Time-ordered ids, issued without a database round trip: Snowflake ids under a worker id
//! leased from PostgreSQL, and UUIDv7s. Each issuer never stamps an id below the last one it
//! issued, and never stamps a Snowflake id outside the lease that makes its worker id its own.

mod clock;
mod error;
mod layout;
mod renewer;
mod snowflake;
mod uuidv7;
pub mod worker_lease;

pub use clock::Clock;
pub use error::{IdError, LeaseError};
pub use layout::{epoch, Layout, LayoutError, SnowflakeParts};
pub use renewer::{keep as keep_lease, spawn as spawn_renewer};
pub use snowflake::Snowflake;
pub use uuidv7::UuidV7s;
pub use worker_lease::Lease;
