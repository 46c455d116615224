//! The client handle: a map of sequences read without a lock, the service, and the
//! background work, which stops when the last handle (client or sequence) is dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arc_swap::{ArcSwap, Guard};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use crate::builder::{ClientBuilder, Options};
use crate::service::Service;
use crate::shared::Shared;
use crate::{refill, ticker, Error, Metrics, Sequence, Snowflakes};

type Sequences = HashMap<Arc<str>, Arc<Shared>>;

/// A seqvend client: values of any sequence, served from a local cache of leased blocks.
///
/// Cheap to clone (one `Arc`); every clone shares the cache. See the [crate] docs for what
/// it guarantees and how it fails.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub service: Service,
    pub options: Arc<Options>,
    pub runtime: Handle,
    sequences: ArcSwap<Sequences>,
    /// Serialises the rare insertions into `sequences`.
    adding: Mutex<()>,
    stop: CancellationToken,
    started: Instant,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Client {
    /// Starts building a client of the seqvend at `url` (e.g. `http://seqvend:8080`),
    /// authenticating with a vend `token`.
    pub fn builder(url: impl Into<String>, token: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(url.into(), token.into())
    }

    pub(crate) fn start(service: Service, options: Arc<Options>, runtime: Handle) -> Self {
        let inner = Arc::new(Inner {
            service,
            options,
            runtime,
            sequences: ArcSwap::default(),
            adding: Mutex::new(()),
            stop: CancellationToken::new(),
            started: Instant::now(),
        });
        let ticker = ticker::run(
            Arc::downgrade(&inner),
            inner.options.tick,
            inner.stop.clone(),
        );
        inner.runtime.spawn(ticker);
        Self { inner }
    }

    /// A handle on one sequence, for hot loops: no name lookup per value. Its cache starts
    /// filling now.
    pub fn sequence(&self, name: &str) -> Sequence {
        Sequence::new(self.inner.shared(name), self.inner.clone())
    }

    /// A value of `name` from the cache, never waiting; see [`Sequence::try_next`].
    pub fn try_next(&self, name: &str) -> Result<i64, Error> {
        match self.inner.sequences().get(name) {
            Some(shared) => shared.try_next(),
            None => self.inner.shared(name).try_next(),
        }
    }

    /// A value of `name`; see [`Sequence::next`].
    pub async fn next(&self, name: &str) -> Result<i64, Error> {
        self.sequence(name).next().await
    }

    /// `count` values of `name`, in vend order; see [`Sequence::next_n`].
    pub async fn next_n(&self, name: &str, count: usize) -> Result<Vec<i64>, Error> {
        self.sequence(name).next_n(count).await
    }

    /// Snowflake ids made in this process under a worker id of its own: leases one now (an
    /// error if none can be leased) and renews it in the background; see [`Snowflakes`].
    /// Each call leases another worker id.
    pub async fn snowflake(&self) -> Result<Snowflakes, Error> {
        Snowflakes::start(self.inner.clone()).await
    }

    /// Stops this client and every handle of it: its background work ends, no value is
    /// handed out any more (calls answer [`Error::Closed`]), and what its caches still held
    /// is counted as discarded. Returns the final counts, so an application can log the gap
    /// it leaves: at most `max_cached` per sequence (or what a prefetch asked for), plus a
    /// lease in flight at the moment, at most `max_lease`, which the service drew but the
    /// client never saw. Dropping the last handle does the same without counting.
    pub fn close(&self) -> Metrics {
        self.inner.stop.cancel();
        for shared in self.inner.sequences().values() {
            shared.close();
        }
        self.metrics()
    }

    /// Counts over every sequence this client has served.
    pub fn metrics(&self) -> Metrics {
        self.inner
            .sequences()
            .values()
            .map(|shared| shared.metrics())
            .sum()
    }
}

impl Inner {
    pub fn sequences(&self) -> Guard<Arc<Sequences>> {
        self.sequences.load()
    }

    /// The sequence's state, created (and its refill task started) on first use.
    fn shared(&self, name: &str) -> Arc<Shared> {
        if let Some(shared) = self.sequences().get(name) {
            return shared.clone();
        }
        let _adding = self
            .adding
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(shared) = self.sequences().get(name) {
            return shared.clone();
        }
        let shared = Arc::new(Shared::new(name, self.options.clone(), self.started));
        let mut sequences = Sequences::clone(&self.sequences());
        sequences.insert(shared.name.clone(), shared.clone());
        self.sequences.store(Arc::new(sequences));
        let url = self.service.leases_url(name);
        let task = refill::run(shared.clone(), self.service.clone(), url, self.stop.clone());
        self.runtime.spawn(task);
        shared.wake.notify_one();
        // Checked after the insertion: a `close` that missed it has cancelled already.
        if self.stop.is_cancelled() {
            shared.close();
        }
        shared
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A URL nothing listens on: connections are refused at once.
    fn nowhere() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    }

    #[tokio::test]
    async fn background_work_stops_when_the_last_handle_is_dropped() {
        let client = Client::builder(nowhere(), "token").build().unwrap();
        let orders = client.sequence("orders");
        let shared = Arc::downgrade(&client.inner.sequences()["orders"]);
        drop(client);
        tokio::task::yield_now().await;
        assert!(shared.upgrade().is_some(), "a sequence handle keeps it");
        drop(orders);
        let deadline = Instant::now() + Duration::from_secs(10);
        while shared.upgrade().is_some() {
            assert!(Instant::now() < deadline, "the refill task never stopped");
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn with_no_service_try_next_answers_at_once_and_next_gives_up_at_the_timeout() {
        let client = Client::builder(nowhere(), "token")
            .wait_timeout(Duration::from_secs(1))
            .build()
            .unwrap();
        let started = Instant::now();
        assert!(client.try_next("orders").is_err());
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "well within the timeout"
        );
        let error = client.next("orders").await.unwrap_err();
        assert!(started.elapsed() >= Duration::from_secs(1));
        assert!(matches!(error, Error::Transport(_)), "{error:?}");
        let metrics = client.metrics();
        assert_eq!((metrics.waits, metrics.hits), (1, 0));
        assert_eq!(metrics.refills, 0, "no lease succeeded: {metrics:?}");
        assert!(metrics.failed_calls >= 1);
        // Every call failed, but for the one the refill task may still have in flight (it
        // retries in the background) when the metrics are read.
        assert!(
            metrics.service_calls - metrics.failed_calls <= 1,
            "{metrics:?}"
        );
    }

    #[test]
    fn a_client_is_built_only_inside_a_runtime_and_for_an_http_url() {
        let outside = Client::builder("http://127.0.0.1:8080", "token").build();
        assert!(matches!(outside, Err(Error::Config(_))));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _inside = runtime.enter();
        let ftp = Client::builder("ftp://127.0.0.1", "token").build();
        assert!(matches!(ftp, Err(Error::Config(_))));
        assert!(Client::builder("http://127.0.0.1:8080", "t")
            .build()
            .is_ok());
    }
}
