//! What a fleet leaks, and why (pure). From one namespace's reads — every Sandbox, the disks the
//! controller labelled, the per-sandbox policies, claims and warm pools — the objects left behind:
//!
//! - a **disk** (`<entry>-namzu-ws-<id>`) whose Sandbox is gone: no Sandbox of the name it is
//!   the disk of exists, and none of its owners is a Sandbox that exists (by uid);
//! - a per-sandbox **policy** (`namzu-sbx-<uid>`) whose owner is gone (neither its owner uids nor
//!   the uid in its name is a Sandbox that exists);
//! - a **Sandbox stuck in deletion** longer than [`STUCK_AFTER_MINUTES`], with the finalizers
//!   that hold it;
//! - a workspace **Expired** (past its `shutdownTime`, or Ready=False `SandboxExpired`) and not
//!   reaped;
//! - a **claim** that no Sandbox answers, older than [`STUCK_AFTER_MINUTES`];
//! - a **warm pool** not progressing (fewer ready than desired, older than
//!   [`STUCK_AFTER_MINUTES`]).
//!
//! Nothing a Sandbox that exists owns, or is the disk of by name, is ever a leak: a Sandbox
//! deleted and re-created under the same name adopts its disk by name, and such a disk is not
//! listed. Only disks and policies are [`Leak::deletable`]: a stuck Sandbox is held by a
//! finalizer a DELETE cannot lift, an Expired workspace is deleted as a workspace (`delete`),
//! claims and pools are the extensions' to settle.

use super::age::human_duration;
use super::keys::PER_SANDBOX_POLICY_PREFIX;
use super::naming::{SANDBOX_PREFIX, id_of, is_workspace};
use super::object::{condition, condition_parts, name, owner_refs, uid};
use super::resources::{Milli, capacity, requested_storage};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeSet;

/// How long a deletion, an unanswered claim or a short warm pool may last before it is a leak.
pub const STUCK_AFTER_MINUTES: i64 = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LeakKind {
    Disk,
    Policy,
    StuckSandbox,
    Expired,
    Claim,
    WarmPool,
}

impl LeakKind {
    /// The short name `-o json` gives as `leak`.
    pub fn as_str(self) -> &'static str {
        match self {
            LeakKind::Disk => "orphaned-disk",
            LeakKind::Policy => "orphaned-policy",
            LeakKind::StuckSandbox => "stuck-deleting",
            LeakKind::Expired => "expired-not-reaped",
            LeakKind::Claim => "claim-without-sandbox",
            LeakKind::WarmPool => "warm-pool-not-progressing",
        }
    }

    /// The Kubernetes kind of the object.
    pub fn object_kind(self) -> &'static str {
        match self {
            LeakKind::Disk => "PersistentVolumeClaim",
            LeakKind::Policy => "CiliumNetworkPolicy",
            LeakKind::StuckSandbox | LeakKind::Expired => "Sandbox",
            LeakKind::Claim => "SandboxClaim",
            LeakKind::WarmPool => "SandboxWarmPool",
        }
    }
}

/// One object left behind.
#[derive(Debug, Clone, PartialEq)]
pub struct Leak {
    pub kind: LeakKind,
    pub namespace: String,
    pub name: String,
    /// The uid and resourceVersion it was read at: a DELETE carries both as preconditions.
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub reason: String,
    /// Since when it is a leak as far as the object says (creation, deletion, expiry).
    pub since: Option<DateTime<Utc>>,
    /// A disk's size.
    pub size: Option<Milli>,
    pub next: String,
    /// `leaks --delete` deletes it.
    pub deletable: bool,
}

impl Leak {
    pub fn age(&self, now: DateTime<Utc>) -> Option<String> {
        self.since.map(|s| human_duration((now - s).num_seconds().max(0)))
    }
}

/// One namespace's reads.
pub struct Reads<'a> {
    pub namespace: &'a str,
    /// Every Sandbox of the namespace (workspaces or not).
    pub sandboxes: &'a [Value],
    /// The disks agent-sandbox's controller labelled.
    pub pvcs: &'a [Value],
    /// The namespace's CiliumNetworkPolicies (`None`: not readable or not served).
    pub policies: Option<&'a [Value]>,
    pub claims: Option<&'a [Value]>,
    pub pools: Option<&'a [Value]>,
    pub now: DateTime<Utc>,
}

fn time(obj: &Value, pointer: &str) -> Option<DateTime<Utc>> {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

fn created(obj: &Value) -> Option<DateTime<Utc>> {
    time(obj, "/metadata/creationTimestamp")
}

fn resource_version(obj: &Value) -> Option<String> {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The Sandbox names a disk name can be the disk of: `<entry>-<sandbox>` with the sandbox under
/// the workspace prefix (an entry may itself hold the prefix: every split is a candidate).
pub fn disk_sandboxes(disk: &str) -> Vec<&str> {
    let marker = format!("-{SANDBOX_PREFIX}");
    // (occurrences may overlap: `d-namzu-ws-namzu-ws-x`)
    (1..disk.len())
        .filter(|i| disk.is_char_boundary(*i) && disk[*i..].starts_with(&marker))
        .map(|i| &disk[i + 1..])
        .filter(|s| s.len() > SANDBOX_PREFIX.len())
        .collect()
}

fn older_than(since: Option<DateTime<Utc>>, now: DateTime<Utc>, minutes: i64) -> bool {
    since.is_some_and(|s| now - s >= chrono::Duration::minutes(minutes))
}

/// Every leak of one namespace, disks first, each kind in name order.
pub fn find(r: &Reads<'_>) -> Vec<Leak> {
    let names: BTreeSet<&str> = r.sandboxes.iter().map(name).collect();
    let uids: BTreeSet<&str> = r.sandboxes.iter().filter_map(uid).collect();
    let mut out = Vec::new();
    let leak = |kind, obj: &Value, reason: String, since, size, next: String, deletable| Leak {
        kind,
        namespace: r.namespace.to_string(),
        name: name(obj).to_string(),
        uid: uid(obj).map(str::to_string),
        resource_version: resource_version(obj),
        reason,
        since,
        size,
        next,
        deletable,
    };
    for pvc in r.pvcs {
        let candidates = disk_sandboxes(name(pvc));
        let Some(sandbox) = candidates.last() else { continue };
        if candidates.iter().any(|s| names.contains(s)) || pvc.pointer("/metadata/deletionTimestamp").is_some() {
            continue;
        }
        let owners: Vec<&Value> = owner_refs(pvc).iter().collect();
        if owners
            .iter()
            .any(|o| o.get("uid").and_then(Value::as_str).is_some_and(|u| uids.contains(u)))
        {
            continue;
        }
        let reason = match owners
            .iter()
            .find(|o| o.get("kind").and_then(Value::as_str) == Some("Sandbox"))
        {
            Some(o) => format!(
                "its Sandbox {} (uid {}) is gone; the disk was not collected",
                o.get("name").and_then(Value::as_str).unwrap_or(sandbox),
                o.get("uid").and_then(Value::as_str).unwrap_or("-")
            ),
            None => format!("the disk of {sandbox}, and no Sandbox {sandbox} exists (orphaned by a delete)"),
        };
        let size = capacity(pvc).or_else(|| requested_storage(pvc));
        let next = format!(
            "check nothing on it is needed, then kubectl namzu leaks -n {} --delete (or kubectl delete pvc {} -n {})",
            r.namespace,
            name(pvc),
            r.namespace
        );
        out.push(leak(LeakKind::Disk, pvc, reason, created(pvc), size, next, true));
    }
    for policy in r.policies.unwrap_or(&[]) {
        let Some(owner_uid) = name(policy).strip_prefix(PER_SANDBOX_POLICY_PREFIX) else {
            continue;
        };
        let owned_by_live = owner_refs(policy)
            .iter()
            .filter_map(|o| o.get("uid").and_then(Value::as_str))
            .chain([owner_uid])
            .any(|u| uids.contains(u));
        if owned_by_live {
            continue;
        }
        let owner = owner_refs(policy)
            .iter()
            .find(|o| o.get("kind").and_then(Value::as_str) == Some("Sandbox"));
        let owner_name = owner.and_then(|o| o.get("name")).and_then(Value::as_str);
        let reason = match owner_name {
            Some(n) if names.contains(n) => format!(
                "its Sandbox {n} (uid {owner_uid}) is gone; {n} was re-created and this policy still selects it"
            ),
            Some(n) => format!("its Sandbox {n} (uid {owner_uid}) is gone"),
            None => format!("no Sandbox with uid {owner_uid} exists"),
        };
        let next = format!(
            "kubectl namzu leaks -n {} --delete (or kubectl delete ciliumnetworkpolicy {} -n {})",
            r.namespace,
            name(policy),
            r.namespace
        );
        out.push(leak(
            LeakKind::Policy,
            policy,
            reason,
            created(policy),
            None,
            next,
            true,
        ));
    }
    for sbx in r.sandboxes {
        let deleting = time(sbx, "/metadata/deletionTimestamp");
        let finalizers: Vec<&str> = sbx
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|f| f.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if deleting.is_some() {
            if !finalizers.is_empty() && older_than(deleting, r.now, STUCK_AFTER_MINUTES) {
                let reason = format!(
                    "deleting for {}, held by finalizer{} {}",
                    human_duration((r.now - deleting.unwrap_or(r.now)).num_seconds().max(0)),
                    if finalizers.len() == 1 { "" } else { "s" },
                    finalizers.join(", ")
                );
                let next = format!(
                    "find the controller that owns {} and why it does not finish; remove the finalizer only once its clean-up is known done (kubectl edit sandbox {} -n {})",
                    finalizers.join(", "),
                    name(sbx),
                    r.namespace
                );
                out.push(leak(LeakKind::StuckSandbox, sbx, reason, deleting, None, next, false));
            }
            continue;
        }
        if !is_workspace(sbx) {
            continue;
        }
        let expired_reason = condition(sbx, "Ready")
            .map(condition_parts)
            .is_some_and(|(_, reason, _)| reason == "SandboxExpired");
        let shutdown = time(sbx, "/spec/shutdownTime").filter(|t| *t <= r.now);
        if expired_reason || shutdown.is_some() {
            let since = shutdown.or_else(|| {
                condition(sbx, "Ready").and_then(|c| {
                    c.get("lastTransitionTime")
                        .and_then(Value::as_str)
                        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
                        .map(|t| t.with_timezone(&Utc))
                })
            });
            let id = id_of(name(sbx)).unwrap_or(name(sbx));
            let reason = match since {
                Some(s) => format!(
                    "expired {} ago and not reaped; its pod is gone, its disks stay",
                    human_duration((r.now - s).num_seconds().max(0))
                ),
                None => "expired and not reaped; its pod is gone, its disks stay".into(),
            };
            let next = format!(
                "kubectl namzu delete -n {} {id} (the workspace and its disks)",
                r.namespace
            );
            out.push(leak(LeakKind::Expired, sbx, reason, since, None, next, false));
        }
    }
    for claim in r.claims.unwrap_or(&[]) {
        let answered = r.sandboxes.iter().any(|s| {
            owner_refs(s).iter().any(|o| {
                o.get("kind").and_then(Value::as_str) == Some("SandboxClaim")
                    && o.get("name").and_then(Value::as_str) == Some(name(claim))
            })
        }) || claim
            .pointer("/status/sandbox/name")
            .or_else(|| claim.pointer("/status/sandbox/Name"))
            .and_then(Value::as_str)
            .is_some_and(|n| names.contains(n));
        if answered || !older_than(created(claim), r.now, STUCK_AFTER_MINUTES) {
            continue;
        }
        let pool = claim.pointer("/spec/warmPoolRef/name").and_then(Value::as_str);
        let reason = match pool {
            Some(p) => format!("no Sandbox answers it (warm pool {p})"),
            None => "no Sandbox answers it".into(),
        };
        let next = format!(
            "kubectl describe sandboxclaim {} -n {}; delete it if its Sandbox is not coming",
            name(claim),
            r.namespace
        );
        out.push(leak(LeakKind::Claim, claim, reason, created(claim), None, next, false));
    }
    for pool in r.pools.unwrap_or(&[]) {
        let int = |p: &str| pool.pointer(p).and_then(Value::as_i64).unwrap_or(0);
        let (ready, desired) = (int("/status/readyReplicas"), int("/spec/replicas"));
        if ready >= desired || !older_than(created(pool), r.now, STUCK_AFTER_MINUTES) {
            continue;
        }
        let reason = format!("{ready}/{desired} ready");
        let next = format!(
            "kubectl describe sandboxwarmpool {} -n {} (the pool's sandboxes and their events)",
            name(pool),
            r.namespace
        );
        out.push(leak(LeakKind::WarmPool, pool, reason, created(pool), None, next, false));
    }
    out.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0).unwrap()
    }

    fn sandbox(name: &str, uid: &str) -> Value {
        json!({"metadata": {"name": name, "uid": uid},
            "spec": {"podTemplate": {"metadata": {"labels": {"sandbox.namzu.ai/template": "coder"}}}}})
    }

    fn pvc(name: &str, owner: Option<(&str, &str)>) -> Value {
        let owners: Vec<Value> = owner
            .map(|(n, u)| json!({"kind": "Sandbox", "name": n, "uid": u}))
            .into_iter()
            .collect();
        json!({"metadata": {"name": name, "uid": format!("pvc-{name}"), "resourceVersion": "7",
            "creationTimestamp": "2026-11-01T12:00:00Z", "ownerReferences": owners},
            "spec": {"resources": {"requests": {"storage": "10Gi"}}}, "status": {"capacity": {"storage": "20Gi"}}})
    }

    fn reads<'a>(sandboxes: &'a [Value], pvcs: &'a [Value], policies: &'a [Value]) -> Reads<'a> {
        Reads {
            namespace: "agents",
            sandboxes,
            pvcs,
            policies: Some(policies),
            claims: None,
            pools: None,
            now: now(),
        }
    }

    #[test]
    fn disk_names_split_every_way() {
        assert_eq!(disk_sandboxes("workspace-disk-namzu-ws-a"), ["namzu-ws-a"]);
        assert_eq!(
            disk_sandboxes("d-namzu-ws-namzu-ws-x"),
            ["namzu-ws-namzu-ws-x", "namzu-ws-x"]
        );
        assert!(disk_sandboxes("namzu-ws-a").is_empty());
        assert!(disk_sandboxes("data-postgres-0").is_empty());
    }

    #[test]
    fn orphaned_disks_and_only_those() {
        let sbx = [sandbox("namzu-ws-live", "u-live")];
        let pvcs = [
            pvc("disk-namzu-ws-live", Some(("namzu-ws-live", "u-live"))),
            // re-created under the same name: the old uid owns it, the name adopts it
            pvc("disk2-namzu-ws-live", Some(("namzu-ws-live", "u-old"))),
            pvc("disk-namzu-ws-gone", Some(("namzu-ws-gone", "u-gone"))),
            pvc("disk-namzu-ws-orphan", None),
            pvc("data-postgres-0", None),
        ];
        let found = find(&reads(&sbx, &pvcs, &[]));
        let names: Vec<&str> = found.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["disk-namzu-ws-gone", "disk-namzu-ws-orphan"]);
        assert!(found[0].reason.contains("u-gone"), "{}", found[0].reason);
        assert_eq!(found[0].size, crate::domain::resources::parse_quantity("20Gi"));
        assert_eq!(found[0].resource_version.as_deref(), Some("7"));
        assert!(found.iter().all(|l| l.deletable));
    }

    #[test]
    fn policies_whose_owner_is_gone() {
        let sbx = [sandbox("namzu-ws-a", "u-a")];
        let policies = [
            json!({"metadata": {"name": "namzu-sbx-u-a", "ownerReferences": [{"kind": "Sandbox", "name": "namzu-ws-a", "uid": "u-a"}]}}),
            json!({"metadata": {"name": "namzu-sbx-u-old", "ownerReferences": [{"kind": "Sandbox", "name": "namzu-ws-a", "uid": "u-old"}]}}),
            json!({"metadata": {"name": "allow-dns"}}),
        ];
        let found = find(&reads(&sbx, &[], &policies));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name, "namzu-sbx-u-old");
        assert!(found[0].reason.contains("re-created"), "{}", found[0].reason);
    }

    #[test]
    fn stuck_and_expired_sandboxes() {
        let mut stuck = sandbox("namzu-ws-s", "u-s");
        stuck["metadata"]["deletionTimestamp"] = json!("2026-11-11T12:00:00Z");
        stuck["metadata"]["finalizers"] = json!(["example.com/hold"]);
        let mut fresh = sandbox("namzu-ws-f", "u-f");
        fresh["metadata"]["deletionTimestamp"] = json!("2026-12-01T11:59:00Z");
        fresh["metadata"]["finalizers"] = json!(["example.com/hold"]);
        let mut expired = sandbox("namzu-ws-e", "u-e");
        expired["spec"]["shutdownTime"] = json!("2026-11-10T12:00:00Z");
        let mut later = sandbox("namzu-ws-l", "u-l");
        later["spec"]["shutdownTime"] = json!("2026-12-02T12:00:00Z");
        let sbx = [stuck, fresh, expired, later];
        let found = find(&reads(&sbx, &[], &[]));
        let got: Vec<(LeakKind, &str)> = found.iter().map(|l| (l.kind, l.name.as_str())).collect();
        assert_eq!(
            got,
            [
                (LeakKind::StuckSandbox, "namzu-ws-s"),
                (LeakKind::Expired, "namzu-ws-e")
            ]
        );
        assert!(found[0].reason.contains("20d"), "{}", found[0].reason);
        assert!(found[0].reason.contains("example.com/hold"));
        assert_eq!(found[1].age(now()).as_deref(), Some("21d"));
        assert!(!found[0].deletable && !found[1].deletable);
    }

    #[test]
    fn claims_and_pools() {
        let mut owned = sandbox("namzu-ws-r", "u-r");
        owned["metadata"]["ownerReferences"] = json!([{"kind": "SandboxClaim", "name": "c-live", "uid": "c1"}]);
        let sbx = [owned];
        let claims = [
            json!({"metadata": {"name": "c-live", "creationTimestamp": "2026-11-01T00:00:00Z"}}),
            json!({"metadata": {"name": "c-lost", "creationTimestamp": "2026-11-01T00:00:00Z"}, "spec": {"warmPoolRef": {"name": "p"}}}),
            json!({"metadata": {"name": "c-new", "creationTimestamp": "2026-12-01T11:59:00Z"}}),
        ];
        let pools = [
            json!({"metadata": {"name": "p", "creationTimestamp": "2026-11-01T00:00:00Z"}, "spec": {"replicas": 3}, "status": {"readyReplicas": 2}}),
            json!({"metadata": {"name": "q", "creationTimestamp": "2026-11-01T00:00:00Z"}, "spec": {"replicas": 1}, "status": {"readyReplicas": 1}}),
        ];
        let r = Reads {
            claims: Some(&claims),
            pools: Some(&pools),
            ..reads(&sbx, &[], &[])
        };
        let got: Vec<(LeakKind, String)> = find(&r).into_iter().map(|l| (l.kind, l.name)).collect();
        assert_eq!(
            got,
            [
                (LeakKind::Claim, "c-lost".to_string()),
                (LeakKind::WarmPool, "p".to_string())
            ]
        );
    }
}
