//! `DATABASE_URL`, read once: the hosts to try, in order, who to be on each, and the TLS to use.
//! Never shown whole: it holds the password.

use std::str::FromStr;

use anyhow::Context;
use sqlx::postgres::PgConnectOptions;
use tokio_postgres::config::Host;

use super::tls::Tls;

pub struct Target {
    /// User, password, database name and the rest, as tokio-postgres reads them.
    config: tokio_postgres::Config,
    hosts: Vec<(Host, u16)>,
    pub tls: Tls,
}

impl Target {
    pub fn parse(url: &str) -> anyhow::Result<Self> {
        let (url, sslmode, sslrootcert) = take_tls_parameters(url);
        // tokio-postgres knows sslmode up to `require` only, and no sslrootcert: both are read
        // here, and the rest of the URL is left to it.
        let config = tokio_postgres::Config::from_str(&url)
            .context("DATABASE_URL is not a valid PostgreSQL URL")?;
        let tls = Tls::new(sslmode.as_deref(), sslrootcert.as_deref())
            .context("DATABASE_URL's TLS parameters")?;
        let ports = config.get_ports();
        let hosts: Vec<(Host, u16)> = config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(i, host)| {
                let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
                (host.clone(), port)
            })
            .collect();
        anyhow::ensure!(!hosts.is_empty(), "DATABASE_URL names no host");
        Ok(Self { config, hosts, tls })
    }

    pub fn host_count(&self) -> usize {
        self.hosts.len()
    }

    /// Host `i` as `name:port`, for logs and errors.
    pub fn describe(&self, i: usize) -> String {
        match &self.hosts[i] {
            (Host::Tcp(name), port) => format!("{name}:{port}"),
            (Host::Unix(path), port) => format!("{}:{port}", path.display()),
        }
    }

    /// A tokio-postgres config for host `i` alone, with the URL's user, password, database
    /// and TLS mode.
    pub fn host_config(&self, i: usize) -> tokio_postgres::Config {
        let (host, port) = &self.hosts[i];
        let mut config = tokio_postgres::Config::new();
        match host {
            Host::Tcp(name) => config.host(name),
            Host::Unix(path) => config.host_path(path),
        };
        config
            .port(*port)
            .ssl_mode(self.tls.tokio_postgres_mode())
            .channel_binding(self.config.get_channel_binding());
        if let Some(user) = self.config.get_user() {
            config.user(user);
        }
        if let Some(password) = self.config.get_password() {
            config.password(password);
        }
        if let Some(dbname) = self.config.get_dbname() {
            config.dbname(dbname);
        }
        config
    }

    /// sqlx connection options for host `i` alone, the same as `host_config`.
    pub fn sqlx_options(&self, i: usize) -> PgConnectOptions {
        let (host, port) = &self.hosts[i];
        let mut options = PgConnectOptions::new_without_pgpass().port(*port);
        options = match host {
            Host::Tcp(name) => options.host(name),
            Host::Unix(path) => options.socket(path),
        };
        if let Some(user) = self.config.get_user() {
            options = options.username(user);
        }
        if let Some(password) = self.config.get_password() {
            options = options.password(&String::from_utf8_lossy(password));
        }
        if let Some(dbname) = self.config.get_dbname() {
            options = options.database(dbname);
        }
        self.tls.sqlx_options(options)
    }
}

/// Splits `sslmode` and `sslrootcert` off a URL's query (percent-decoded); a `key=value`
/// connection string is left as it is.
fn take_tls_parameters(url: &str) -> (String, Option<String>, Option<String>) {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let Some((base, query)) = url.split_once('?').filter(|_| is_url) else {
        return (url.to_owned(), None, None);
    };
    let (mut sslmode, mut sslrootcert, mut kept) = (None, None, Vec::new());
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("sslmode", value)) => sslmode = Some(percent_decode(value)),
            Some(("sslrootcert", value)) => sslrootcert = Some(percent_decode(value)),
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (url, sslmode, sslrootcert)
}

fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::tls::SslMode;

    #[test]
    fn tls_parameters_are_taken_out_and_the_rest_is_left() {
        let (url, mode, root) = take_tls_parameters(
            "postgres://u:p@h1:1,h2:2/db?sslmode=verify-full&target_session_attrs=read-write&sslrootcert=%2Fetc%2Fca%20x.pem",
        );
        assert_eq!(
            url,
            "postgres://u:p@h1:1,h2:2/db?target_session_attrs=read-write"
        );
        assert_eq!(mode.as_deref(), Some("verify-full"));
        assert_eq!(root.as_deref(), Some("/etc/ca x.pem"));
        let (url, mode, _) = take_tls_parameters("postgres://u@h/db?sslmode=require");
        assert_eq!(
            (url.as_str(), mode.as_deref()),
            ("postgres://u@h/db", Some("require"))
        );
        let plain = "host=h sslmode=require";
        assert_eq!(take_tls_parameters(plain).0, plain);
    }

    #[test]
    fn every_host_gets_its_port_and_the_tls_mode() {
        let target =
            Target::parse("postgres://u:p@a:5001,b:5002/db?sslmode=verify-full&sslrootcert=ca.pem")
                .unwrap();
        assert_eq!(target.host_count(), 2);
        assert_eq!(target.describe(1), "b:5002");
        assert_eq!(target.tls.mode(), SslMode::VerifyFull);
        let config = target.host_config(1);
        assert_eq!(config.get_ports(), &[5002]);
        assert_eq!(config.get_dbname(), Some("db"));
        assert_eq!(
            config.get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
        assert!(Target::parse("postgres://u@h/db?sslmode=verify-all").is_err());
    }
}
