//! What each remote command asks of the API, and what it prints: the server's JSON with
//! `--json`, a table otherwise; on an error, the server's message and code on stderr and
//! exit status 1.

use std::io::Write;

use reqwest::Method;
use serde_json::{json, Map, Value};

use super::client::{Answer, CliError, Client};
use super::render;
use super::{AlertArgs, Remote, Sequences, Server};

/// Exit status when seqvend refused or could not be reached (2 is left to usage errors).
const FAILED: i32 = 1;

/// Runs one remote command to the end; returns the process's exit status.
pub fn run(command: Remote) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("seqvend: cannot start: {err}");
            return FAILED;
        }
    };
    match runtime.block_on(execute(command)) {
        // Not print!: it panics when stdout is a pipe already closed (`| head`).
        Ok(output) => match std::io::stdout().lock().write_all(output.as_bytes()) {
            Ok(()) => 0,
            Err(_) => FAILED,
        },
        Err(err) => {
            eprintln!("seqvend: {err}");
            FAILED
        }
    }
}

/// One request, and its answer as text to print.
struct Request {
    method: Method,
    segments: Vec<String>,
    query: Vec<(&'static str, String)>,
    body: Option<Value>,
    render: Box<dyn FnOnce(&Value) -> String>,
}

impl Request {
    fn new(
        method: Method,
        segments: &[&str],
        render: impl FnOnce(&Value) -> String + 'static,
    ) -> Self {
        Self {
            method,
            segments: segments.iter().map(|s| (*s).to_owned()).collect(),
            query: Vec::new(),
            body: None,
            render: Box::new(render),
        }
    }

    /// Adds `key=value` to the query when there is a value.
    fn query(mut self, key: &'static str, value: Option<impl ToString>) -> Self {
        if let Some(value) = value {
            self.query.push((key, value.to_string()));
        }
        self
    }

    fn body(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }
}

async fn execute(command: Remote) -> Result<String, CliError> {
    let (server, request) = plan(command);
    let client = Client::new(&server.url, server.token.clone())?;
    let segments: Vec<&str> = request.segments.iter().map(String::as_str).collect();
    let url = client.url(&segments, &request.query);
    let Answer { text, body } = client
        .send(request.method, url, request.body.as_ref())
        .await?;
    Ok(if server.json {
        text + "\n"
    } else {
        (request.render)(&body)
    })
}

/// The request a command makes, and how its answer is printed.
fn plan(command: Remote) -> (Server, Request) {
    match command {
        Remote::Sequences { server, command } => (server, plan_sequences(command)),
        Remote::Next {
            name,
            count,
            server,
        } => {
            let request = Request::new(Method::POST, &["sequences", &name, "next"], render::vended)
                .query("count", count);
            (server, request)
        }
        Remote::Events {
            name,
            after,
            limit,
            server,
        } => {
            let page_of = name.clone();
            let request = Request::new(Method::GET, &["sequences", &name, "events"], move |page| {
                render::event_page(page, &page_of)
            })
            .query("after", after)
            .query("limit", limit);
            (server, request)
        }
        Remote::Check { number, server } => {
            let request = Request::new(
                Method::GET,
                &["tracking-numbers", &number],
                render::tracking_number,
            );
            (server, request)
        }
    }
}

fn plan_sequences(command: Sequences) -> Request {
    match command {
        Sequences::List { after, limit } => {
            Request::new(Method::GET, &["sequences"], render::sequence_page)
                .query("after", after)
                .query("limit", limit)
        }
        Sequences::Show { name } => {
            Request::new(Method::GET, &["sequences", &name], render::sequence)
        }
        Sequences::Create {
            name,
            min,
            max,
            start,
            increment,
            namespace,
            format,
            cache_size,
            buffer_seconds,
            cache_min,
            alerts,
        } => {
            let mut body = Map::new();
            body.insert("name".into(), json!(name));
            body.insert("min".into(), json!(min));
            body.insert("max".into(), json!(max));
            insert_some(&mut body, "start", start);
            insert_some(&mut body, "increment", increment);
            insert_some(&mut body, "namespace", namespace);
            insert_some(&mut body, "format", format);
            insert_policies(&mut body, cache_size, buffer_seconds, cache_min, &alerts);
            Request::new(Method::POST, &["sequences"], render::sequence).body(Value::Object(body))
        }
        Sequences::AddRange { name, min, max } => {
            Request::new(Method::POST, &["sequences", &name, "ranges"], |range| {
                render::ranges(&[range])
            })
            .body(json!({"min": min, "max": max}))
        }
        Sequences::Retire { name } => {
            Request::new(Method::DELETE, &["sequences", &name], render::sequence)
        }
        Sequences::Set {
            name,
            cache_size,
            buffer_seconds,
            min,
            alerts,
        } => {
            let mut body = Map::new();
            insert_policies(&mut body, cache_size, buffer_seconds, min, &alerts);
            Request::new(Method::PATCH, &["sequences", &name], render::sequence)
                .body(Value::Object(body))
        }
    }
}

/// A sequence's cache policy (when a size is given) and alert thresholds (when either is),
/// as creating or changing a sequence takes them.
fn insert_policies(
    body: &mut Map<String, Value>,
    cache_size: Option<u64>,
    buffer_seconds: Option<u64>,
    cache_min: Option<u64>,
    alerts: &AlertArgs,
) {
    if let Some(size) = cache_size {
        body.insert("cache".into(), cache(size, buffer_seconds, cache_min));
    }
    insert_some(body, "alerts", alert_thresholds(alerts));
}

/// Alert thresholds as the API takes them, when either is given.
fn alert_thresholds(alerts: &AlertArgs) -> Option<Value> {
    if alerts.alert_remaining_below.is_none() && alerts.alert_days_left_below.is_none() {
        return None;
    }
    let mut thresholds = Map::new();
    insert_some(
        &mut thresholds,
        "remaining_below",
        alerts.alert_remaining_below,
    );
    insert_some(
        &mut thresholds,
        "days_left_below",
        alerts.alert_days_left_below,
    );
    Some(Value::Object(thresholds))
}

/// A cache policy as the API takes it; what is not given is left to the server's defaults.
fn cache(size: u64, buffer_seconds: Option<u64>, min: Option<u64>) -> Value {
    let mut policy = Map::new();
    policy.insert("size".into(), json!(size));
    insert_some(&mut policy, "buffer_seconds", buffer_seconds);
    insert_some(&mut policy, "min", min);
    Value::Object(policy)
}

fn insert_some(object: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(value) = value {
        object.insert(key.to_owned(), value.into());
    }
}
