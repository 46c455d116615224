//! The `seqvend` command line: `serve` and `healthcheck` run here, every other command talks
//! to a running seqvend over its HTTP API (`client`) and prints what it answered (`render`).
//! It never reaches the database itself: what the API refuses, the CLI cannot do.

mod client;
mod commands;
mod render;

use clap::{Args, Parser, Subcommand};

pub use client::{CliError, Client};
pub use commands::run;

#[derive(Parser)]
#[command(
    name = "seqvend",
    version,
    about = "Carrier number ranges as PostgreSQL sequences, vended over HTTP",
    long_about = "Carrier number ranges as PostgreSQL sequences, vended over HTTP.\n\n\
                  `serve` runs the service; its configuration comes from the environment (see \
                  docs/operating.md). The other commands talk to a running seqvend.",
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Start the service (and, with no DATABASE_URL, a private PostgreSQL).
    Serve,
    /// Ask a running seqvend whether it is ready: exit 0 only on a 200 (for containers).
    Healthcheck {
        /// The URL to GET [default: /readyz where SEQVEND_LISTEN says seqvend listens].
        url: Option<String>,
    },
    #[command(flatten)]
    Remote(Box<Remote>),
}

/// The commands that talk to a running seqvend.
#[derive(Subcommand)]
pub enum Remote {
    /// Create, list, show, extend, change and retire sequences.
    Sequences {
        #[command(flatten)]
        server: Server,
        #[command(subcommand)]
        command: Sequences,
    },
    /// Vend the next value of a sequence (or `--count` of them).
    Next {
        name: String,
        /// How many values, 1-10000; one per line.
        #[arg(long)]
        count: Option<u64>,
        #[command(flatten)]
        server: Server,
    },
    /// A sequence's history, oldest first: creation, ranges, rollovers, exhaustion,
    /// changes, retirement.
    Events {
        name: String,
        /// Only events after this id (the `next` a previous page printed).
        #[arg(long)]
        after: Option<i64>,
        /// At most this many events, 1-1000 [server default: 100].
        #[arg(long)]
        limit: Option<u32>,
        #[command(flatten)]
        server: Server,
    },
    /// Recognise a carrier number, verify its check digit, and say whether seqvend vended it.
    Check {
        number: String,
        #[command(flatten)]
        server: Server,
    },
}

#[derive(Subcommand)]
pub enum Sequences {
    /// List sequences in name order, a page at a time.
    List {
        /// Only sequences named after this (the `next` a previous page printed).
        #[arg(long)]
        after: Option<String>,
        /// At most this many sequences, 1-1000 [server default: 100].
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Show a sequence and its ranges.
    Show { name: String },
    /// Create a sequence over its first range [MIN, MAX] (admin token).
    Create {
        name: String,
        #[arg(long, allow_negative_numbers = true)]
        min: i64,
        #[arg(long, allow_negative_numbers = true)]
        max: i64,
        /// The first value [default: MIN, or MAX when descending].
        #[arg(long, allow_negative_numbers = true)]
        start: Option<i64>,
        /// Not 0; negative for a descending sequence [default: 1].
        #[arg(long, allow_negative_numbers = true)]
        increment: Option<i64>,
        /// Ranges never overlap within a namespace [default: the name].
        #[arg(long)]
        namespace: Option<String>,
        /// Print values as carrier numbers, as JSON, e.g.
        /// '{"kind": "ups_1z", "account": "5R8939", "service": "03"}'.
        #[arg(long, value_parser = json_object)]
        format: Option<serde_json::Value>,
        /// Cache up to this many values per instance (0: strict) [default: strict].
        #[arg(long)]
        cache_size: Option<u64>,
        /// Seconds of use each instance keeps in hand [server default: 30].
        #[arg(long, requires = "cache_size")]
        buffer_seconds: Option<u64>,
        /// Refill below this many values whatever the rate [server default: size/5].
        #[arg(long, requires = "cache_size")]
        cache_min: Option<u64>,
        #[command(flatten)]
        alerts: AlertArgs,
    },
    /// Add a range [MIN, MAX]: used once the ranges before it run out (admin token).
    AddRange {
        name: String,
        #[arg(long, allow_negative_numbers = true)]
        min: i64,
        #[arg(long, allow_negative_numbers = true)]
        max: i64,
    },
    /// Retire a sequence for good: it vends nothing more, and its name is never reused
    /// (admin token).
    Retire { name: String },
    /// Change a sequence's cache policy, its alert thresholds, or both (admin token).
    #[command(group(clap::ArgGroup::new("setting").required(true).multiple(true)
        .args(["cache_size", "alert_remaining_below", "alert_days_left_below"])))]
    Set {
        name: String,
        /// Cache up to this many values per instance; 0 makes it strict.
        #[arg(long)]
        cache_size: Option<u64>,
        /// Seconds of use each instance keeps in hand [server default: 30].
        #[arg(long, requires = "cache_size")]
        buffer_seconds: Option<u64>,
        /// Refill below this many values whatever the rate [server default: size/5].
        #[arg(long, requires = "cache_size")]
        min: Option<u64>,
        #[command(flatten)]
        alerts: AlertArgs,
    },
}

/// Alert thresholds; giving either sets both, the other to its default.
#[derive(Debug, clap::Args)]
pub struct AlertArgs {
    /// Alert while fewer values than this remain; 0: off [server default: 10% of capacity].
    #[arg(long)]
    alert_remaining_below: Option<u64>,
    /// Alert while the sequence runs out within this many days at the last day's rate;
    /// 0: off [server default: 14].
    #[arg(long)]
    alert_days_left_below: Option<f64>,
}

/// Where the running seqvend is and how to speak to it.
#[derive(Args)]
pub struct Server {
    /// seqvend's base URL.
    #[arg(
        long,
        env = "SEQVEND_URL",
        default_value = "http://127.0.0.1:8080",
        global = true,
        display_order = 100
    )]
    pub url: String,
    /// A bearer token: an admin token to change sequences, a vend or admin token to read and
    /// vend.
    #[arg(
        long,
        env = "SEQVEND_TOKEN",
        hide_env_values = true,
        global = true,
        display_order = 100
    )]
    pub token: Option<String>,
    /// Print the server's JSON as it answered, for scripts.
    #[arg(long, global = true, display_order = 100)]
    pub json: bool,
}

/// A JSON argument: a usage error, said at once, when it is not JSON.
fn json_object(raw: &str) -> Result<serde_json::Value, String> {
    match serde_json::from_str(raw) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(value),
        Ok(_) => Err("expected a JSON object, e.g. '{\"kind\": \"sscc18\", ...}'".into()),
        Err(err) => Err(format!("not JSON: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
