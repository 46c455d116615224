//! Worker leases for clients that stamp their own Snowflake ids: a worker id held until a
//! deadline, taken and renewed by this instance's clock.

use super::Service;
use crate::ids::{worker_lease, Lease, LeaseError};

impl Service {
    /// A free worker id, leased for the configured length.
    pub async fn take_worker_lease(&self) -> Result<Lease, LeaseError> {
        let now_ms = self.parts.snowflake.clock().now_ms();
        worker_lease::take(&self.parts.registry, now_ms, self.parts.id_settings.lease).await
    }

    /// Extends the worker lease of `worker_id`, held by `holder`.
    pub async fn renew_worker_lease(
        &self,
        worker_id: i64,
        holder: &str,
    ) -> Result<Lease, LeaseError> {
        let now_ms = self.parts.snowflake.clock().now_ms();
        worker_lease::renew(
            &self.parts.registry,
            worker_id,
            holder,
            now_ms,
            self.parts.id_settings.lease,
        )
        .await
    }
}
