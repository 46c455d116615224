//! `seqvend healthcheck [URL]`: one GET for a container's health check, since the image has
//! no curl. Plain HTTP/1.1 over a blocking `TcpStream`, every step within one deadline;
//! healthy only on a 200.

use std::fmt;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// Under compose's health-check timeout (3 s), so that a slow answer reads as unhealthy
/// with our message rather than as a timeout.
const PATIENCE: Duration = Duration::from_secs(2);
/// Where seqvend listens when `SEQVEND_LISTEN` is unset (as in `Settings`).
const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// The longest status line we read; a real one is about 20 bytes.
const STATUS_LINE_MAX: usize = 1024;

/// Checks `url`, or `/readyz` where `SEQVEND_LISTEN` says seqvend listens.
pub fn run(url: Option<&str>) -> anyhow::Result<()> {
    let target = match url {
        Some(url) => Target::parse(url)?,
        None => Target::readyz_at(std::env::var("SEQVEND_LISTEN").ok().as_deref())?,
    };
    let status = target.get(PATIENCE)?;
    if status != 200 {
        bail!("{target} answered {status}");
    }
    Ok(())
}

/// An `http://` URL, taken apart.
#[derive(Debug, PartialEq)]
pub struct Target {
    host: String,
    port: u16,
    path: String,
}

impl Target {
    /// `http://HOST[:PORT][/PATH]`; HOST may be a name, an IPv4 address or `[IPv6]`.
    pub fn parse(url: &str) -> anyhow::Result<Self> {
        let invalid = || format!("not an http:// URL: {url:?}");
        let rest = url.strip_prefix("http://").with_context(invalid)?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => {
                (host, port.parse().with_context(invalid)?)
            }
            _ => (authority, 80),
        };
        if host.is_empty() {
            bail!(invalid());
        }
        Ok(Self {
            host: host.to_owned(),
            port,
            path: if path.is_empty() { "/" } else { path }.to_owned(),
        })
    }

    /// `/readyz` at a `SEQVEND_LISTEN` address; a wildcard address is reached on loopback.
    pub fn readyz_at(listen: Option<&str>) -> anyhow::Result<Self> {
        let listen = listen.filter(|l| !l.trim().is_empty());
        let listen = listen.unwrap_or(DEFAULT_LISTEN);
        let address: SocketAddr = listen
            .trim()
            .parse()
            .with_context(|| format!("SEQVEND_LISTEN is not an address: {listen:?}"))?;
        let ip = match address.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        Ok(Self {
            host: SocketAddr::new(ip, 0)
                .to_string()
                .trim_end_matches(":0")
                .to_owned(),
            port: address.port(),
            path: "/readyz".to_owned(),
        })
    }

    /// GETs the target and returns the response's status code.
    pub fn get(&self, patience: Duration) -> anyhow::Result<u16> {
        let deadline = Instant::now() + patience;
        let left = || {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("no answer from {self} within {patience:?}");
            }
            Ok(left)
        };
        let mut stream = self.connect(left()?)?;
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: seqvend-healthcheck\r\n\
             Connection: close\r\n\r\n",
            self.path, self.host, self.port
        );
        stream.set_write_timeout(Some(left()?))?;
        stream
            .write_all(request.as_bytes())
            .with_context(|| format!("sending to {self}"))?;
        let mut head = Vec::new();
        let mut buffer = [0; 256];
        while !head.windows(2).any(|w| w == b"\r\n") && head.len() < STATUS_LINE_MAX {
            stream.set_read_timeout(Some(left()?))?;
            let read = stream
                .read(&mut buffer)
                .with_context(|| format!("reading from {self}"))?;
            if read == 0 {
                break;
            }
            head.extend_from_slice(&buffer[..read]);
        }
        status_code(&head).with_context(|| format!("{self} did not answer in HTTP"))
    }

    fn connect(&self, timeout: Duration) -> anyhow::Result<TcpStream> {
        let addresses = (self.host.trim_matches(['[', ']']), self.port)
            .to_socket_addrs()
            .with_context(|| format!("resolving {}", self.host))?;
        let mut failure = None;
        for address in addresses {
            match TcpStream::connect_timeout(&address, timeout) {
                Ok(stream) => return Ok(stream),
                Err(err) => failure = Some(err),
            }
        }
        match failure {
            Some(err) => Err(err).with_context(|| format!("connecting to {self}")),
            None => bail!("{} has no address", self.host),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}:{}{}", self.host, self.port, self.path)
    }
}

/// The code of a status line such as `HTTP/1.1 200 OK`.
fn status_code(head: &[u8]) -> Option<u16> {
    let line = head.split(|&b| b == b'\r').next()?;
    let mut words = std::str::from_utf8(line).ok()?.split(' ');
    words.next()?.strip_prefix("HTTP/")?;
    words.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn target(host: &str, port: u16, path: &str) -> Target {
        Target {
            host: host.into(),
            port,
            path: path.into(),
        }
    }

    #[test]
    fn urls_are_taken_apart() {
        let parse = |url| Target::parse(url).unwrap();
        assert_eq!(
            parse("http://127.0.0.1:8080/readyz"),
            target("127.0.0.1", 8080, "/readyz")
        );
        assert_eq!(parse("http://example.com"), target("example.com", 80, "/"));
        assert_eq!(parse("http://[::1]:9/x?y"), target("[::1]", 9, "/x?y"));
        assert_eq!(parse("http://[::1]/"), target("[::1]", 80, "/"));
        for bad in ["https://a/", "http://", "http://a:port/", "127.0.0.1:8080"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_listen_address_is_probed_on_loopback_when_it_is_a_wildcard() {
        let at = |listen| Target::readyz_at(listen).unwrap().to_string();
        assert_eq!(at(Some("0.0.0.0:8080")), "http://127.0.0.1:8080/readyz");
        assert_eq!(at(Some("[::]:81")), "http://[::1]:81/readyz");
        assert_eq!(at(Some("10.1.2.3:82")), "http://10.1.2.3:82/readyz");
        assert_eq!(at(None), "http://127.0.0.1:8080/readyz");
        assert_eq!(at(Some("")), "http://127.0.0.1:8080/readyz");
        assert!(Target::readyz_at(Some("localhost")).is_err());
    }

    #[test]
    fn status_lines_are_read() {
        assert_eq!(status_code(b"HTTP/1.1 200 OK\r\nx: y\r\n"), Some(200));
        assert_eq!(
            status_code(b"HTTP/1.0 503 Service Unavailable\r\n"),
            Some(503)
        );
        assert_eq!(status_code(b"SSH-2.0-OpenSSH\r\n"), None);
        assert_eq!(status_code(b""), None);
    }

    /// A server that answers one request with `response`, on a thread.
    fn answer_once(response: &'static str) -> Target {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0; 1024];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(response.as_bytes());
        });
        target("127.0.0.1", port, "/readyz")
    }

    #[test]
    fn the_status_of_a_real_answer_is_returned() {
        let ok = answer_once("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
        assert_eq!(ok.get(PATIENCE).unwrap(), 200);
        let unready = answer_once("HTTP/1.1 503 Service Unavailable\r\n\r\n");
        assert_eq!(unready.get(PATIENCE).unwrap(), 503);
    }

    #[test]
    fn a_server_that_never_answers_fails_within_the_patience() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let silent = target("127.0.0.1", listener.local_addr().unwrap().port(), "/");
        let started = Instant::now();
        assert!(silent.get(Duration::from_millis(200)).is_err());
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
