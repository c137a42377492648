//! Reading Cilium's network policies (docs/interop.md §13.5): one LIST of
//! `ciliumnetworkpolicies.cilium.io/v2` per namespace in scope, or one cluster-wide, pruned to
//! names, owners and endpoint selectors as parsed. A 404 means the group is not served (no such
//! policy can exist); a 403 degrades the POLICY column to `?` with one warning.

use super::connect::Connection;
use super::error::ClusterError;
use super::resources::{self, CILIUM_POLICIES};
use namzu_domain::egress::PolicyRead;
use serde_json::Value;

/// LIST the policies of `namespace` (`None`: every namespace).
pub(crate) async fn read(conn: &Connection, namespace: Option<&str>) -> Result<PolicyRead<Vec<Value>>, ClusterError> {
    match resources::list(conn, &CILIUM_POLICIES, namespace, None).await {
        Ok(items) => Ok(PolicyRead::Known(items)),
        Err(e) if e.is_forbidden() => Ok(PolicyRead::Forbidden),
        Err(e) if e.is_not_found() => Ok(PolicyRead::NotServed),
        Err(e) => Err(e),
    }
}

/// The one warning a pass says about its policy reads, if any: the namespaces where they may not
/// be listed; or, where the group is not served, the workspaces that ask for per-sandbox egress
/// (with none asking, nothing is missed: no such policy can exist).
pub(crate) fn warning(forbidden: &[&str], not_served_per_sandbox: usize) -> Option<String> {
    let what = CILIUM_POLICIES.qualified();
    if !forbidden.is_empty() {
        return Some(format!(
            "warning: you may not list {what} in {}; POLICY shows ? and a foreign per-sandbox egress policy is not diagnosed (needs RBAC list on ciliumnetworkpolicies)",
            match forbidden {
                [one] => format!("namespace {one}"),
                many => format!("namespaces {}", many.join(", ")),
            }
        ));
    }
    (not_served_per_sandbox > 0).then(|| {
        format!(
            "warning: {what} is not served (Cilium is not installed), yet {not_served_per_sandbox} workspace{} ask for per-sandbox egress; POLICY shows ?",
            if not_served_per_sandbox == 1 { "" } else { "s" }
        )
    })
}
