//! A stand-in for seqvend's lease route, to measure the client apart from the service: it
//! answers `POST /sequences/{name}/leases?count=N` with the next N values of a counter per
//! name, after a fixed delay (LEASE_MS, default 2: a lease drawn in constant time), and
//! refuses a count above MAX_COUNT (default 10,000,000) as seqvend does (100,000: as services
//! did before leases were drawn in constant time). It keeps nothing
//! durable and checks no token: for benchmarks only, never for tests of the guarantees.
//!
//! Environment: LISTEN (default 127.0.0.1:0); the address it listens on is printed first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

type Counters = Arc<Mutex<HashMap<String, i64>>>;

struct Stub {
    delay: Duration,
    max_count: u64,
    counters: Counters,
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |v| v.parse().expect(name))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let listen = std::env::var("LISTEN").unwrap_or_else(|_| "127.0.0.1:0".into());
    let listener = TcpListener::bind(listen).await?;
    println!("{}", listener.local_addr()?);
    let stub = Arc::new(Stub {
        delay: Duration::from_millis(env_or("LEASE_MS", 2)),
        max_count: env_or("MAX_COUNT", 10_000_000),
        counters: Counters::default(),
    });
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        tokio::spawn(serve(stream, stub.clone()));
    }
}

/// Answers the requests of one keep-alive connection until it closes.
async fn serve(stream: TcpStream, stub: Arc<Stub>) -> std::io::Result<()> {
    let mut stream = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if stream.read_line(&mut request_line).await? == 0 {
            return Ok(());
        }
        let mut body_length = 0;
        loop {
            let mut header = String::new();
            stream.read_line(&mut header).await?;
            if header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    body_length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; body_length];
        tokio::io::AsyncReadExt::read_exact(&mut stream, &mut body).await?;
        let (status, reply) = stub.answer(&request_line).await;
        let response = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{reply}",
            reply.len()
        );
        stream.get_mut().write_all(response.as_bytes()).await?;
    }
}

impl Stub {
    /// `(status line, JSON body)` for `POST /sequences/{name}/leases?count=N`.
    async fn answer(&self, request_line: &str) -> (&'static str, String) {
        let target = request_line.split_whitespace().nth(1).unwrap_or("");
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let name = path
            .strip_prefix("/sequences/")
            .and_then(|p| p.strip_suffix("/leases"));
        let count = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("count="))
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|n| (1..=self.max_count).contains(n));
        let (Some(name), Some(count)) = (name, count) else {
            let refusal = r#"{"error":"invalid_request","message":"count out of range"}"#;
            return ("400 Bad Request", refusal.into());
        };
        tokio::time::sleep(self.delay).await;
        let first = {
            let mut counters = self.counters.lock().unwrap();
            let next = counters.entry(name.to_owned()).or_insert(1);
            let first = *next;
            *next += count as i64;
            first
        };
        let last = first + count as i64 - 1;
        let reply = format!(
            r#"{{"blocks":[{{"first":{first},"last":{last},"increment":1}}],"count":{count},"exhausted":false,"ttl_seconds":600,"cache":{{"size":0,"buffer_seconds":0,"min":0}}}}"#
        );
        ("200 OK", reply)
    }
}
