//! Logging, set up once: readable lines on a terminal, JSON when asked
//! (`SEQVEND_LOG_FORMAT=json`); `RUST_LOG` filters (default `info`).

use tracing_subscriber::{fmt, EnvFilter};

pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // A second init (tests start many applications) is harmless: the first one stays.
    let _ = if json {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.try_init()
    };
}
