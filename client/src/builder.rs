//! `Client::builder(url, token)…build()`: every knob has a default that holds a 60 s outage
//! at 1,000 ids/s without a wait.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;

use crate::backoff::Backoff;
use crate::client::Client;
use crate::growth::Growth;
use crate::policy::{CachePolicy, Limits, MAX_LEASE};
use crate::service::{Service, Token};
use crate::Error;

/// Used for strict sequences (the service suggests a cache size of 0) and until the first
/// lease has told the service's suggestion.
pub const STRICT_DEFAULT: CachePolicy = CachePolicy {
    size: 10_000,
    buffer_seconds: 120,
    min: 0,
};

/// The default `max_cached`: at 10 M ids/s a refill starts 200 ms ahead of need, and no
/// more than this is discarded per sequence at `close` or when a lease expires unused. Only
/// use above ~16,700 ids/s holds this much (`2 × rate × 120 s`). Why: `docs/client.md`.
pub const DEFAULT_MAX_CACHED: u64 = 4_000_000;

/// What the background work and the callers of one client share.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub limits: Limits,
    pub wait_timeout: Duration,
    pub backoff: Backoff,
    /// Lease attempts in one refill round before its failure is final for that round.
    pub attempts: u32,
    pub tick: Duration,
    /// A block is closed this long before its deadline (at least two ticks).
    pub expiry_margin: Duration,
    /// Snowflake ids: a step of the clock back by at most this much is waited out.
    pub clock_step_tolerance: Duration,
}

pub struct ClientBuilder {
    url: String,
    token: Token,
    options: Options,
    request_timeout: Duration,
    connect_timeout: Duration,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("url", &self.url)
            .field("token", &self.token)
            .field("options", &self.options)
            .finish()
    }
}

impl ClientBuilder {
    pub(crate) fn new(url: String, token: String) -> Self {
        let tick = Duration::from_millis(100);
        Self {
            url,
            token: Token::new(token),
            options: Options {
                limits: Limits {
                    strict_default: STRICT_DEFAULT,
                    buffer: Duration::from_secs(120),
                    max_cached: DEFAULT_MAX_CACHED,
                    max_lease: MAX_LEASE,
                    growth: Growth::Adaptive,
                },
                wait_timeout: Duration::from_secs(2),
                backoff: Backoff {
                    base: Duration::from_millis(50),
                    cap: Duration::from_secs(5),
                },
                attempts: 5,
                tick,
                expiry_margin: 2 * tick,
                clock_step_tolerance: Duration::from_millis(5),
            },
            request_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(2),
        }
    }

    /// The defaults, for tests of the parts that take options.
    #[cfg(test)]
    pub(crate) fn default_options() -> Options {
        Self::new(String::new(), String::new()).options
    }

    /// Seconds of use to hold at the least (default 120 s); the service may ask for more.
    pub fn buffer(mut self, buffer: Duration) -> Self {
        self.options.limits.buffer = buffer;
        self
    }

    /// The most values held for one sequence, however fast it is used (default
    /// [`DEFAULT_MAX_CACHED`], 4,000,000): what bounds the values discarded per sequence when
    /// a lease expires unused or the client closes. Lower it for a range that cannot lose
    /// that many (a carrier's tracking numbers).
    pub fn max_cached(mut self, values: u64) -> Self {
        self.options.limits.max_cached = values.max(1);
        self
    }

    /// The most one lease asks for (default 10,000,000, the service's limit). A refusal of a
    /// larger count brings it down to 10,000,000, and a refusal of a count above 100,000 (a
    /// service from before leases were drawn in constant time) to 100,000, for the client's
    /// life.
    pub fn max_lease(mut self, values: u64) -> Self {
        self.options.limits.max_lease = values.max(1);
        self
    }

    /// How leases follow use (default [`Growth::Adaptive`]; [`Growth::Fixed`] is the rule of
    /// earlier versions, for comparison).
    pub fn growth(mut self, growth: Growth) -> Self {
        self.options.limits.growth = growth;
        self
    }

    /// The cache of a strict sequence (default: 10,000 values, 120 s, no minimum).
    pub fn strict_cache(mut self, policy: CachePolicy) -> Self {
        self.options.limits.strict_default = CachePolicy {
            size: policy.size.max(1),
            ..policy
        };
        self
    }

    /// How long `next` waits for a refill when nothing is cached (default 2 s).
    pub fn wait_timeout(mut self, timeout: Duration) -> Self {
        self.options.wait_timeout = timeout;
        self
    }

    /// The first retry's longest wait (default 50 ms); it doubles per failure.
    pub fn retry_base(mut self, base: Duration) -> Self {
        self.options.backoff.base = base;
        self
    }

    /// The longest wait between retries (default 5 s); also how long a definite answer
    /// (not found, exhausted, retired, unauthorized) is repeated before asking again.
    pub fn retry_cap(mut self, cap: Duration) -> Self {
        self.options.backoff.cap = cap;
        self
    }

    /// Lease attempts in one refill round (default 5).
    pub fn retry_attempts(mut self, attempts: u32) -> Self {
        self.options.attempts = attempts.max(1);
        self
    }

    /// The bound on one lease request, connection included (default 5 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The bound on opening a connection (default 2 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How often expiry and use are checked (default 100 ms). Blocks are closed at least two
    /// ticks before their deadline.
    pub fn tick(mut self, tick: Duration) -> Self {
        self.options.tick = tick.max(Duration::from_millis(1));
        self
    }

    /// How long before its deadline a block is closed (default and least: two ticks).
    pub fn expiry_margin(mut self, margin: Duration) -> Self {
        self.options.expiry_margin = margin;
        self
    }

    /// Snowflake ids: how far the wall clock may step back and be waited out, blocking the
    /// caller (default 5 ms); a larger step is refused until the clock catches up.
    pub fn clock_step_tolerance(mut self, tolerance: Duration) -> Self {
        self.options.clock_step_tolerance = tolerance;
        self
    }

    /// Starts the client's background work on the current tokio runtime.
    pub fn build(mut self) -> Result<Client, Error> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::Config("build the client inside a tokio runtime".into()))?;
        let base = Url::parse(&self.url)
            .map_err(|e| Error::Config(format!("seqvend URL {:?}: {e}", self.url)))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(Error::Config(format!(
                "seqvend URL {:?} is not http(s)",
                self.url
            )));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .timeout(self.request_timeout)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| Error::Config(format!("HTTP client: {e}")))?;
        let options = &mut self.options;
        options.expiry_margin = options.expiry_margin.max(2 * options.tick);
        let service = Service::new(http, base, self.token);
        Ok(Client::start(service, Arc::new(self.options), runtime))
    }
}
