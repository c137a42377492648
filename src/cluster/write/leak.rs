//! The one delete of a leaked object (`domain/leaks.rs`): an orphaned disk or per-sandbox policy,
//! through the same gate as every Sandbox write (rules, read-only, namespace, audit readiness),
//! fenced on the uid and resourceVersion the user saw, recorded in the audit log.

use super::*;

/// The audit log's verb for a leak delete (its intents, outcomes and a stop).
pub const DELETE_LEAK_VERB: &str = "delete-leak";

/// What kind of leaked object a [`LeakPlan`] deletes (`domain/leaks.rs`): a disk or a
/// per-sandbox policy. Nothing else is deleted through [`delete_leak`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeakTarget {
    Disk,
    Policy,
}

impl LeakTarget {
    fn kind(self) -> &'static resources::ApiKind {
        match self {
            LeakTarget::Disk => &crate::cluster::leaks::LEAK_PVCS,
            LeakTarget::Policy => &crate::cluster::leaks::LEAK_POLICIES,
        }
    }
}

/// One DELETE of a leaked object, as the report read it: the uid and resourceVersion it was
/// judged at are the DELETE's preconditions.
#[derive(Debug, Clone)]
pub struct LeakPlan {
    pub target: LeakTarget,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    /// Read and check, say the request, send nothing.
    pub dry_run: bool,
    /// Send it with `dryRun=All`: the API server checks it and deletes nothing.
    pub server_dry_run: bool,
}

impl LeakPlan {
    /// `persistentvolumeclaim` or `ciliumnetworkpolicy`, as kubectl names the resource.
    pub fn target_kind(&self) -> &'static str {
        match self.target {
            LeakTarget::Disk => "persistentvolumeclaim",
            LeakTarget::Policy => "ciliumnetworkpolicy",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum LeakOutcome {
    Deleted {
        request: Request,
    },
    DryRun {
        request: Request,
    },
    /// Already gone: nothing to do.
    AlreadyGone,
    /// Refused before anything was sent (or by the API server's preconditions).
    Refused {
        message: String,
    },
    ReadOnly,
    Failed(ClusterError),
}

/// The DELETE of a leaked object: its path and its DeleteOptions with both preconditions.
pub fn leak_request(plan: &LeakPlan) -> Request {
    let kind = plan.target.kind();
    let base = if kind.group.is_empty() {
        format!("/api/{}", kind.version)
    } else {
        format!("/apis/{}/{}", kind.group, kind.version)
    };
    let mut body = json!({
        "kind": "DeleteOptions", "apiVersion": "v1",
        "preconditions": {"uid": plan.uid, "resourceVersion": plan.resource_version},
        "propagationPolicy": "Background",
    });
    if plan.server_dry_run {
        body["dryRun"] = json!(["All"]);
    }
    Request {
        method: "DELETE",
        path: format!("{base}/namespaces/{}/{}/{}", plan.namespace, kind.plural, plan.name),
        content_type: "application/json",
        body,
    }
}

/// Delete one leaked object through the same checks as every write: the connection's rules
/// (read-only included), the pinned-clock guard, an audit log that records the intent before
/// the send. A fresh GET first: a disk whose uid or resourceVersion moved, or that a Sandbox of
/// its name (re-created) or a Sandbox that exists (by owner uid) now claims, is refused; the
/// DELETE carries uid and resourceVersion preconditions, so a change after that GET is refused by
/// the API server (409) and nothing is deleted.
pub async fn delete_leak(conn: &Connection, policy: &WritePolicy, plan: &LeakPlan) -> LeakOutcome {
    if let Err(stop) = gate(conn, policy, &plan.namespace, plan.dry_run).await {
        return match stop {
            Gate::Refused(message) => LeakOutcome::Refused { message },
            Gate::ReadOnly => LeakOutcome::ReadOnly,
            Gate::Failed(e) => LeakOutcome::Failed(e),
        };
    }
    let kind = plan.target.kind();
    let request = leak_request(plan);
    let id = write_id(conn);
    let entry = |status: Option<u16>, outcome: &str| {
        let mut entry = json!({
            "write": id, "context": conn.context, "server": conn.server, "namespace": plan.namespace,
            "workspace": plan.name, "verb": DELETE_LEAK_VERB, "kind": kind.kind,
            "request": request.to_json(), "status": status, "outcome": outcome,
        });
        if let Some(rules) = &conn.rules.file {
            entry["rules"] = json!(rules);
        }
        entry
    };
    let refuse = |message: String| {
        policy.audit.record(entry(None, "refused"), conn.clock.now());
        LeakOutcome::Refused { message }
    };
    let current = match resources::get(conn, kind, &plan.namespace, &plan.name).await {
        Ok(Some(o)) => o,
        Ok(None) => return LeakOutcome::AlreadyGone,
        Err(e) => return LeakOutcome::Failed(e),
    };
    if uid(&current) != Some(plan.uid.as_str()) {
        return refuse(format!(
            "{} {} was replaced (uid {} is now {}): not the object reported; nothing sent",
            kind.kind,
            plan.name,
            plan.uid,
            uid(&current).unwrap_or("-")
        ));
    }
    let rv = current.pointer("/metadata/resourceVersion").and_then(Value::as_str);
    if rv != Some(plan.resource_version.as_str()) {
        return refuse(format!(
            "{} {} changed since it was reported (resourceVersion {} is now {}): run leaks again; nothing sent",
            kind.kind,
            plan.name,
            plan.resource_version,
            rv.unwrap_or("-")
        ));
    }
    // what a Sandbox that exists now claims is never deleted: by name (a disk re-adopted by a
    // re-created Sandbox), by owner uid (a disk or a policy), by the uid a policy is named for
    let mut claimants: Vec<String> = match plan.target {
        LeakTarget::Disk => crate::domain::leaks::disk_sandboxes(&plan.name)
            .into_iter()
            .map(str::to_string)
            .collect(),
        LeakTarget::Policy => Vec::new(),
    };
    let owners: Vec<(String, String)> = crate::domain::object::owner_refs(&current)
        .iter()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some("Sandbox"))
        .filter_map(|o| {
            Some((
                o.get("name")?.as_str()?.to_string(),
                o.get("uid")?.as_str()?.to_string(),
            ))
        })
        .collect();
    claimants.extend(owners.iter().map(|(n, _)| n.clone()));
    claimants.sort();
    claimants.dedup();
    let owner_uids: Vec<&str> = owners
        .iter()
        .map(|(_, u)| u.as_str())
        .chain(
            plan.name
                .strip_prefix(crate::domain::keys::PER_SANDBOX_POLICY_PREFIX)
                .filter(|_| plan.target == LeakTarget::Policy),
        )
        .collect();
    for sandbox in &claimants {
        let read = match resources::get(conn, &SANDBOXES, &plan.namespace, sandbox).await {
            Ok(r) => r,
            Err(e) => return LeakOutcome::Failed(e),
        };
        let Some(live) = read else { continue };
        let by_name = plan.target == LeakTarget::Disk
            && crate::domain::leaks::disk_sandboxes(&plan.name).contains(&sandbox.as_str());
        let by_uid = uid(&live).is_some_and(|u| owner_uids.contains(&u));
        if by_name || by_uid {
            return refuse(format!(
                "{} {} is claimed again by Sandbox {sandbox} (uid {}): re-adopted, never deleted; nothing sent",
                kind.kind,
                plan.name,
                uid(&live).unwrap_or("-")
            ));
        }
    }
    if plan.dry_run {
        return LeakOutcome::DryRun { request };
    }
    // a 429 holds the batch and the DELETE is resent, as every write's is (`throttle.rs`)
    let mut throttled = 0;
    let answer = loop {
        if !policy.throttle.wait().await {
            return LeakOutcome::Failed(ClusterError::Other(
                "interrupted while the API server held writes back (429): not sent".into(),
            ));
        }
        // write-ahead: the intent is in the log before the request leaves
        if let Err(why) = policy
            .audit
            .intend(entry(None, crate::cluster::audit::INTENT), conn.clock.now())
        {
            return LeakOutcome::Failed(ClusterError::Other(format!("{why}; nothing sent")));
        }
        match send_leak_delete(conn, plan, &request).await {
            Err(e) => {
                if let Err(e) = throttle::resend_after(e, &mut throttled, &policy.throttle) {
                    break Err(e);
                }
            }
            answer => break answer,
        }
    };
    match answer {
        Ok(_) => {
            // a server dry run deleted nothing: the audit says so, as the Sandbox path's does
            let recorded = if plan.server_dry_run { "dry-run" } else { "applied" };
            policy.audit.record(entry(Some(200), recorded), conn.clock.now());
            LeakOutcome::Deleted { request }
        }
        Err(e) => {
            let status = status_of(&e);
            match status {
                Some(404) => {
                    policy.audit.record(entry(status, "already-gone"), conn.clock.now());
                    LeakOutcome::AlreadyGone
                }
                Some(409) => {
                    policy.audit.record(entry(status, "refused"), conn.clock.now());
                    LeakOutcome::Refused {
                        message: format!(
                            "{} {} changed between the check and the DELETE: its preconditions refused it; nothing deleted",
                            kind.kind, plan.name
                        ),
                    }
                }
                _ => {
                    policy.audit.record(entry(status, "failed"), conn.clock.now());
                    LeakOutcome::Failed(e)
                }
            }
        }
    }
}

/// Send the DELETE of a leaked object once.
async fn send_leak_delete(conn: &Connection, plan: &LeakPlan, request: &Request) -> Result<Value, ClusterError> {
    let kind = plan.target.kind();
    let op = ApiCall::new("delete", kind, Some(&plan.namespace), &plan.name);
    let url = <DynamicObject as kube::Resource>::url_path(&kind.api_resource(), Some(&plan.namespace));
    let mut http_request = kube::core::Request::new(url)
        .delete(
            &plan.name,
            &DeleteParams {
                dry_run: plan.server_dry_run,
                ..Default::default()
            },
        )
        .map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    *http_request.body_mut() = serde_json::to_vec(&request.body).unwrap_or_default();
    conn.bounded(&op, conn.client.request::<Value>(http_request)).await
}
