//! The reads a warm pool's health needs beyond the pool: its Events (one LIST per namespace,
//! narrowed by field selector to warm pools' own) — pools have no conditions, so these Events
//! are all a pool says of its progress (`domain::pools`).

use super::connect::Connection;
use super::error::ClusterError;
use super::kinds::EVENTS;
use super::resources;
use serde_json::Value;

/// Every Event about a SandboxWarmPool in `namespace`; `None` (with a warning) when events may
/// not be listed — then a pool's progress is unknown, never taken as fine.
pub async fn events(
    conn: &Connection,
    namespace: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<Value>>, ClusterError> {
    match resources::list_fields(conn, &EVENTS, namespace, "involvedObject.kind=SandboxWarmPool").await {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) if e.is_forbidden() => {
            warnings.push(format!(
                "warning: {e}; warm pools' progress Events are not told (needs RBAC list on events)"
            ));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
