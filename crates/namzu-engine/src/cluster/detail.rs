//! Everything known about one workspace: its Sandbox, pod, disks, template, the per-sandbox
//! egress policies of its namespace and recent events — a handful of requests, however many
//! workspaces the namespace holds.

use super::connect::Connection;
use super::error::{ClusterError, observed};
use super::inventory::TemplateFetch;
use super::resources::{self, CLAIMS, EVENTS, PODS, PVCS, SANDBOXES, TEMPLATES};
use chrono::{DateTime, Utc};
use namzu_domain::drift::OverlayFlags;
use namzu_domain::egress::{PolicyIndex, PolicyRead};
use namzu_domain::naming::{WorkspaceId, template_label};
use namzu_domain::object::str_at;
use namzu_domain::pod::{Index, pvc_names};
use namzu_domain::workspace::{self, Inputs, Observed, Workspace};
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Detail {
    pub sandbox: Value,
    pub pods: Observed<Vec<Value>>,
    pub pvcs: Observed<Vec<Value>>,
    pub template: TemplateFetch,
    /// Events of the Sandbox and of its pod (they share the name), oldest first.
    pub events: Observed<Vec<Value>>,
    /// The namespace's CiliumNetworkPolicies.
    pub policies: PolicyRead<Vec<Value>>,
    /// The SandboxClaim that owns the Sandbox (`None`: no claim owns it, or it is gone): its
    /// lifecycle is the claim's, not the Sandbox's.
    pub claim: Option<Observed<Value>>,
}

/// Read one workspace by id; `Ok(None)` when no such Sandbox exists.
pub async fn read(conn: &Connection, namespace: &str, id: &WorkspaceId) -> Result<Option<Detail>, ClusterError> {
    read_parts(conn, namespace, id, true).await
}

/// [`read`] without the namespace's network policies (left as not read: `NotServed`), for a
/// wait's polls, which judge the pod and the conditions and should not fail on a policy LIST.
pub(crate) async fn read_for_wait(
    conn: &Connection,
    namespace: &str,
    id: &WorkspaceId,
) -> Result<Option<Detail>, ClusterError> {
    read_parts(conn, namespace, id, false).await
}

/// The SandboxTemplate a workspace's label names, in its namespace: found, not there (or no label),
/// or not allowed to be read. Any other failure is an error.
pub(crate) async fn template_of(
    conn: &Connection,
    namespace: &str,
    sandbox: &Value,
) -> Result<TemplateFetch, ClusterError> {
    let Some(t) = template_label(sandbox) else {
        return Ok(TemplateFetch::NotFound);
    };
    match resources::get(conn, &TEMPLATES, namespace, t).await {
        Ok(Some(v)) => Ok(TemplateFetch::Found(v)),
        Ok(None) => Ok(TemplateFetch::NotFound),
        Err(e) if e.is_forbidden() => Ok(TemplateFetch::Unreadable),
        Err(e) => Err(e),
    }
}

async fn read_parts(
    conn: &Connection,
    namespace: &str,
    id: &WorkspaceId,
    with_policies: bool,
) -> Result<Option<Detail>, ClusterError> {
    let name = id.sandbox_name();
    let Some(sandbox) = resources::get(conn, &SANDBOXES, namespace, &name).await? else {
        return Ok(None);
    };
    // the pod is named after the Sandbox; a pod under another name carries its selector
    let selector = str_at(&sandbox, &["status", "selector"]).map(str::to_string);
    let by_name = format!("metadata.name={name}");
    let pods_call = async {
        match &selector {
            Some(s) => resources::list(conn, &PODS, Some(namespace), Some(s)).await,
            None => resources::list_fields(conn, &PODS, namespace, &by_name).await,
        }
    };
    let events_field = format!("involvedObject.name={name}");
    let pvc_reads = async {
        let mut found = Vec::new();
        for pvc in pvc_names(&sandbox) {
            if let Some(p) = resources::get(conn, &PVCS, namespace, &pvc).await? {
                found.push(p);
            }
        }
        Ok(found)
    };
    let template_read = template_of(conn, namespace, &sandbox);
    let (pods, pvcs, template, events, policies) = tokio::join!(
        pods_call,
        pvc_reads,
        template_read,
        resources::list_fields(conn, &EVENTS, namespace, &events_field),
        async {
            match with_policies {
                true => super::policies::read(conn, Some(namespace)).await,
                false => Ok(PolicyRead::NotServed),
            }
        },
    );
    let claim = match namzu_domain::object::claim_owner(&sandbox) {
        None => None,
        Some(c) => match resources::get(conn, &CLAIMS, namespace, c).await {
            Ok(found) => found.map(Observed::Known),
            Err(e) if e.is_forbidden() => Some(Observed::Forbidden),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        },
    };
    let mut events = observed(events)?;
    if let Observed::Known(list) = &mut events {
        list.sort_by_key(|e| event_time(e).map(str::to_string));
    }
    Ok(Some(Detail {
        pods: observed(pods)?,
        pvcs: observed(pvcs)?,
        template: template?,
        events,
        policies: policies?,
        claim,
        sandbox,
    }))
}

/// When an event last happened, in whichever field its writer used.
pub fn event_time(e: &Value) -> Option<&str> {
    ["lastTimestamp", "eventTime", "firstTimestamp"]
        .iter()
        .find_map(|k| e.get(*k).and_then(Value::as_str))
        .or_else(|| str_at(e, &["metadata", "creationTimestamp"]))
}

impl Detail {
    pub fn workspace(&self, flags: &OverlayFlags, now: DateTime<Utc>) -> Workspace {
        let (pods, pvcs) = (self.pods.map(|v| Index::new(v)), self.pvcs.map(|v| Index::new(v)));
        let policies = self.policies.map(|v| PolicyIndex::new(v, flags.per_sandbox_key()));
        workspace::derive(&Inputs {
            sandbox: &self.sandbox,
            pods: pods.as_ref(),
            pvcs: pvcs.as_ref(),
            policies: policies.as_ref(),
            template: self.template.as_read(),
            flags,
            now,
        })
    }
}
