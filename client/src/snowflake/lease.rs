//! `POST /workers/lease` and `POST /workers/{id}/renew`: a worker id of this client's own,
//! and the answers checked before anything is stamped under them.

use std::sync::Arc;
use std::time::Duration;

use seqvend_blocks::snowflake::Layout;
use serde::Deserialize;

use crate::service::Service;
use crate::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkerLease {
    pub layout: Layout,
    pub worker_id: u32,
    pub holder: Arc<str>,
    /// The lease's length, counted from before the request left.
    pub ttl: Duration,
    pub not_before_ms: i64,
    pub not_after_ms: i64,
}

#[derive(Deserialize)]
struct LeaseReply {
    worker_id: u32,
    holder: String,
    not_before_ms: i64,
    not_after_ms: i64,
    ttl_seconds: f64,
    layout: LayoutReply,
}

#[derive(Deserialize)]
struct LayoutReply {
    timestamp_bits: u8,
    worker_bits: u8,
    sequence_bits: u8,
    epoch_ms: i64,
}

/// What 404s and 409s of these calls are about, in errors.
fn about() -> Arc<str> {
    "worker ids".into()
}

pub(crate) async fn take(service: &Service) -> Result<WorkerLease, Error> {
    let url = service.url(&["workers", "lease"]);
    parse(&service.post(url, None, &about()).await?)
}

/// The lease renewed; `Ok(None)` when it was lost (409 `lease_lost`): taken over after it
/// expired, so this client must stop using the worker id.
pub(crate) async fn renew(
    service: &Service,
    worker_id: u32,
    holder: &str,
) -> Result<Option<WorkerLease>, Error> {
    let url = service.url(&["workers", &worker_id.to_string(), "renew"]);
    let body = serde_json::json!({ "holder": holder });
    match service.post(url, Some(&body), &about()).await {
        Ok(body) => parse(&body).map(Some),
        Err(Error::Service {
            status: 409, code, ..
        }) if code == "lease_lost" => Ok(None),
        Err(error) => Err(error),
    }
}

pub(crate) fn parse(body: &[u8]) -> Result<WorkerLease, Error> {
    let reply: LeaseReply =
        serde_json::from_slice(body).map_err(|e| Error::Protocol(e.to_string()))?;
    let LayoutReply {
        timestamp_bits,
        worker_bits,
        sequence_bits,
        epoch_ms,
    } = reply.layout;
    let layout = Layout::new(timestamp_bits, worker_bits, sequence_bits, epoch_ms)
        .map_err(|e| Error::Protocol(e.to_string()))?;
    if reply.worker_id >= layout.worker_ids() {
        return Err(Error::Protocol(format!(
            "worker id {} outside the layout's {}",
            reply.worker_id,
            layout.worker_ids()
        )));
    }
    let ttl = Duration::try_from_secs_f64(reply.ttl_seconds)
        .ok()
        .filter(|ttl| !ttl.is_zero())
        .ok_or_else(|| Error::Protocol(format!("ttl_seconds {}", reply.ttl_seconds)))?;
    if reply.not_before_ms > reply.not_after_ms {
        return Err(Error::Protocol(format!(
            "a lease from {} ms to {} ms",
            reply.not_before_ms, reply.not_after_ms
        )));
    }
    Ok(WorkerLease {
        layout,
        worker_id: reply.worker_id,
        holder: reply.holder.into(),
        ttl,
        not_before_ms: reply.not_before_ms,
        not_after_ms: reply.not_after_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPLY: &str = r#"{"worker_id":3,"holder":"h-1","expires_at":"2026-11-23T16:30:00Z",
        "not_before_ms":1,"not_after_ms":1790000000000,"ttl_seconds":30.0,
        "layout":{"timestamp_bits":41,"worker_bits":10,"sequence_bits":12,
                  "epoch":"2020-01-01T00:00:00Z","epoch_ms":1577836800000}}"#;

    #[test]
    fn a_worker_lease_reply_becomes_a_lease_under_its_layout() {
        let lease = parse(REPLY.as_bytes()).unwrap();
        assert_eq!(lease.layout, Layout::DEFAULT);
        assert_eq!((lease.worker_id, &*lease.holder), (3, "h-1"));
        assert_eq!(lease.ttl, Duration::from_secs(30));
        assert_eq!(
            (lease.not_before_ms, lease.not_after_ms),
            (1, 1_790_000_000_000)
        );
    }

    #[test]
    fn a_lease_that_cannot_be_used_safely_is_refused() {
        for (good, bad) in [
            (r#""worker_id":3"#, r#""worker_id":1024"#),
            (r#""ttl_seconds":30.0"#, r#""ttl_seconds":0"#),
            (r#""not_before_ms":1"#, r#""not_before_ms":1790000000001"#),
            (r#""worker_bits":10"#, r#""worker_bits":30"#),
            (r#","epoch_ms":1577836800000"#, ""),
        ] {
            let body = REPLY.replace(good, bad);
            assert!(
                matches!(parse(body.as_bytes()), Err(Error::Protocol(_))),
                "{bad}"
            );
        }
    }
}
