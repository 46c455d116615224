//! Logging, set up once: readable lines on a terminal, JSON when asked
//! (`SEQVEND_LOG_FORMAT=json`); `RUST_LOG` filters (default `info`).

use std::io::IsTerminal;

use tracing_subscriber::{fmt, EnvFilter};

pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only for a person at a terminal: a log file or collector gets plain text.
    let builder = fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    // A second init (tests start many applications) is harmless: the first one stays.
    let _ = if json {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.try_init()
    };
}
