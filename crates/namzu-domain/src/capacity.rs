//! Warm-pool capacity as the library's `readKubernetesTaskCapacity` reads it (docs/interop.md §11).

use super::object::{at, name};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolCapacity {
    pub name: String,
    pub template: Option<String>,
    /// `status.readyReplicas`, or 0.
    pub ready: i64,
    /// `spec.replicas`, or 0.
    pub desired: i64,
    /// Claims whose `spec.warmPoolRef.name` is this pool, in any state.
    pub claims: usize,
}

pub fn pools(pools: &[Value], claims: &[Value]) -> Vec<PoolCapacity> {
    pools
        .iter()
        .map(|p| {
            let pool = name(p).to_string();
            PoolCapacity {
                template: at(p, &["spec", "sandboxTemplateRef", "name"])
                    .and_then(Value::as_str)
                    .map(str::to_string),
                ready: at(p, &["status", "readyReplicas"]).and_then(Value::as_i64).unwrap_or(0),
                desired: at(p, &["spec", "replicas"]).and_then(Value::as_i64).unwrap_or(0),
                claims: claims
                    .iter()
                    .filter(|c| at(c, &["spec", "warmPoolRef", "name"]).and_then(Value::as_str) == Some(pool.as_str()))
                    .count(),
                name: pool,
            }
        })
        .collect()
}

/// What the workspaces of one state hold: the requests and limits of their pods on a node,
/// terminating ones included (a Suspended workspace's template asks for nothing while it
/// sleeps; an unscheduled pod holds nothing yet) and every disk's size.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Held {
    pub workspaces: usize,
    pub requests: super::quantities::List,
    pub limits: super::quantities::List,
    pub disks: super::quantities::Milli,
}

/// Whether the workspace's pod holds its requests on a node: bound to one (an unscheduled
/// Pending pod holds nothing) and not finished. A terminating pod still holds its node until
/// it is gone, as the scheduler counts it.
pub(crate) fn pod_holds(w: &super::workspace::Workspace) -> bool {
    matches!(w.pod.known(), Some(Some(p)) if p.node.is_some() && p.phase != "Succeeded" && p.phase != "Failed")
}

/// Add one workspace to what its state holds.
pub fn hold(held: &mut Held, w: &super::workspace::Workspace) {
    held.workspaces += 1;
    if pod_holds(w) {
        super::quantities::add(&mut held.requests, &w.resources.requests);
        super::quantities::add(&mut held.limits, &w.resources.limits);
    }
    held.disks += w.resources.disk_total();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every pod in phase Pending, workspace pods included, as the library counts them.
    fn pending_pods(pods: &[Value]) -> usize {
        pods.iter().filter(|p| super::super::pod::phase(p) == "Pending").count()
    }

    #[test]
    fn counts_like_the_library() {
        let pools_in = [
            json!({"metadata":{"name":"p"},"spec":{"replicas":3,"sandboxTemplateRef":{"name":"t"}},"status":{"readyReplicas":2}}),
            json!({"metadata":{"name":"empty"},"spec":{}}),
        ];
        let claims = [
            json!({"spec":{"warmPoolRef":{"name":"p"}}}),
            json!({"spec":{"warmPoolRef":{"name":"other"}}}),
        ];
        let out = pools(&pools_in, &claims);
        assert_eq!((out[0].ready, out[0].desired, out[0].claims), (2, 3, 1));
        assert_eq!((out[1].ready, out[1].desired, out[1].claims), (0, 0, 0));
        let pods = [
            json!({"status":{"phase":"Pending"}}),
            json!({"status":{"phase":"Running"}}),
        ];
        assert_eq!(pending_pods(&pods), 1);
    }
}
