//! What a Python `Client` holds in one process: a `seqvend_client::Client` built on this
//! process's runtime, an HTTP client for strict vends, and (once asked for) a leased
//! Snowflake worker id. A forked child builds its own (see `per_process`).

use std::sync::Arc;
use std::time::Duration;

use seqvend_client::{Client, Snowflakes};
use tokio::runtime::Runtime;
use tokio::sync::OnceCell;

use crate::errors::Failure;
use crate::runtime::runtime;

/// The options a `Client` was made with, kept to build it again after a fork.
#[derive(Debug, Clone)]
pub struct Config {
    pub url: String,
    pub token: String,
    pub max_cached: u64,
    pub wait_timeout: Duration,
    pub request_timeout: Duration,
    pub retries: u32,
}

#[derive(Debug)]
pub struct Binding {
    pub runtime: Arc<Runtime>,
    pub client: Client,
    pub http: reqwest::Client,
    snowflakes: OnceCell<Snowflakes>,
}

impl Binding {
    pub fn build(config: &Config) -> Result<Self, Failure> {
        let runtime = runtime()?;
        let _entered = runtime.enter();
        let client = Client::builder(config.url.clone(), config.token.clone())
            .max_cached(config.max_cached)
            .wait_timeout(config.wait_timeout)
            .request_timeout(config.request_timeout)
            .build()?;
        let http = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .connect_timeout(config.request_timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|error| Failure::config(format!("could not build an HTTP client: {error}")))?;
        Ok(Self {
            runtime,
            client,
            http,
            snowflakes: OnceCell::new(),
        })
    }

    /// The Snowflake issuer, if a worker id was leased already.
    #[inline]
    pub fn snowflakes_ready(&self) -> Option<&Snowflakes> {
        self.snowflakes.get()
    }

    /// The Snowflake issuer, leasing a worker id the first time.
    pub async fn snowflakes(&self) -> Result<&Snowflakes, Failure> {
        Ok(self
            .snowflakes
            .get_or_try_init(|| self.client.snowflake())
            .await?)
    }
}
