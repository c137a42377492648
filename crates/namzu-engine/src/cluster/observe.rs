//! The library's observation pass (docs/interop.md §13.2, @namzu/sandbox 28.0.0 `observe`):
//! GET the Sandbox, then each claim's PVC, then the pod named after the Sandbox — GET requests
//! only, in that order. A 404 is "not there"; every other failure is an error, never "absent".

use super::connect::Connection;
use super::error::ClusterError;
use super::resources::{self, PODS, PVCS, SANDBOXES};
use namzu_domain::identity::{self, Claim};
use namzu_domain::naming::WorkspaceId;
use namzu_domain::pod;
use serde_json::Value;

/// What one pass found under a workspace id.
#[derive(Debug, Clone)]
pub struct Observation {
    pub sandbox: Value,
    pub claims: Vec<Claim>,
    /// The pod named after the Sandbox, live or not.
    pub pod: Option<Value>,
}

/// One GET-only pass; `Ok(None)` when no Sandbox stands under the name.
pub async fn observe(
    conn: &Connection,
    namespace: &str,
    id: &WorkspaceId,
) -> Result<Option<Observation>, ClusterError> {
    let name = id.sandbox_name();
    let Some(sandbox) = resources::get(conn, &SANDBOXES, namespace, &name).await? else {
        return Ok(None);
    };
    let mut found: Vec<(String, Value)> = Vec::new();
    for (_, pvc) in pod::claims(&sandbox) {
        if let Some(p) = resources::get(conn, &PVCS, namespace, &pvc).await? {
            found.push((pvc, p));
        }
    }
    let claims = identity::claims(&sandbox, |n| found.iter().find(|(p, _)| p == n).map(|(_, v)| v));
    let pod = resources::get(conn, &PODS, namespace, &name).await?;
    Ok(Some(Observation { sandbox, claims, pod }))
}
