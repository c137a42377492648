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
//! - a **warm pool** not progressing: its newest progress Event is `WarmPoolNotProgressing`, or
//!   fewer ready than desired for longer than [`STUCK_AFTER_MINUTES`];
//! - a warm pool whose members run a **stale template** (`domain::pools`): a finding, not a
//!   leak — nothing to delete; the pool replaces them as its strategy says.
//!
//! Nothing a Sandbox that exists owns, or is the disk of by name, is ever a leak: a Sandbox
//! deleted and re-created under the same name adopts its disk by name, and such a disk is not
//! listed. Only disks and policies are [`Leak::deletable`]: a stuck Sandbox is held by a
//! finalizer a DELETE cannot lift, an Expired workspace is deleted as a workspace (`delete`),
//! claims and pools are the extensions' to settle.

use super::age::human_duration;
use super::diagnosis::STUCK_AFTER_MINUTES;
use super::naming::{SANDBOX_PREFIX, id_of, is_workspace};
use super::object::{condition, condition_parts, name, owner_refs, uid};
use super::quantities::Milli;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeSet;

mod ties;
pub use ties::{
    Check, QUARANTINE_TIES, QUARANTINED_AT, Quarantine, judge_disk, judge_policy, quarantine_of, ties_fingerprint,
};
// the hash is agent-sandbox's naming rule; leak checks name it from here too
pub use crate::naming::name_hash;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LeakKind {
    Disk,
    /// An unowned disk the controller would take back if its workspace were created again.
    DetachedDisk,
    /// A disk that looks left behind but is tied to something that exists: never deleted.
    DiskInUse,
    Policy,
    /// A per-sandbox policy that looks left behind but is tied to something that exists.
    PolicyInUse,
    StuckSandbox,
    Expired,
    /// Expired under `shutdownPolicy: Retain` (agent-sandbox's default): kept on purpose.
    Retained,
    Claim,
    WarmPool,
    /// Unclaimed pool members made from an older template: shown with the evidence, never deleted.
    StalePool,
}

impl LeakKind {
    pub const ALL: [LeakKind; 11] = [
        LeakKind::Disk,
        LeakKind::DetachedDisk,
        LeakKind::DiskInUse,
        LeakKind::Policy,
        LeakKind::PolicyInUse,
        LeakKind::StuckSandbox,
        LeakKind::Expired,
        LeakKind::Retained,
        LeakKind::Claim,
        LeakKind::WarmPool,
        LeakKind::StalePool,
    ];

    /// The short name `-o json` gives as `leak`.
    pub fn as_str(self) -> &'static str {
        match self {
            LeakKind::Disk => "orphaned-disk",
            LeakKind::DetachedDisk => "detached-disk",
            LeakKind::DiskInUse | LeakKind::PolicyInUse => "in-use",
            LeakKind::Policy => "orphaned-policy",
            LeakKind::StuckSandbox => "stuck-deleting",
            LeakKind::Expired => "expired-not-reaped",
            LeakKind::Retained => "retained-by-policy",
            LeakKind::Claim => "claim-without-sandbox",
            LeakKind::WarmPool => "warm-pool-not-progressing",
            LeakKind::StalePool => "stale-pool-members",
        }
    }

    /// The Kubernetes kind of the object.
    pub fn object_kind(self) -> &'static str {
        match self {
            LeakKind::Disk | LeakKind::DetachedDisk | LeakKind::DiskInUse => "PersistentVolumeClaim",
            LeakKind::Policy | LeakKind::PolicyInUse => "CiliumNetworkPolicy",
            LeakKind::StuckSandbox | LeakKind::Expired | LeakKind::Retained => "Sandbox",
            LeakKind::Claim => "SandboxClaim",
            LeakKind::WarmPool | LeakKind::StalePool => "SandboxWarmPool",
        }
    }

    /// Something left behind (not a look-alike shown with the proof that it is in use).
    pub fn is_leak(self) -> bool {
        !matches!(self, LeakKind::DiskInUse | LeakKind::PolicyInUse | LeakKind::StalePool)
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
    /// `leaks --delete` deletes it (a detached disk only with `--include-detached`, past
    /// [`DETACHED_AFTER_DAYS`] or the rules' own threshold).
    pub deletable: bool,
    /// Every check made to tell whether it is still in use, and what each found: its proof.
    pub checks: Vec<Check>,
    /// Its quarantine (`leaks --quarantine`), if it carries one.
    pub quarantine: Option<Quarantine>,
}

/// How old a detached disk must be before `--include-detached` deletes it (a rules-file
/// setting, `detachedAfterDays`, overrides it per context).
pub const DETACHED_AFTER_DAYS: i64 = 7;

impl Leak {
    /// The next step with `--context` in every command of the tool's, for a row of `context`
    /// (a fleet's): pasted, it acts on that context, never on whichever is current.
    pub fn next_in(&self, context: Option<&str>) -> String {
        match context {
            Some(c) => self.next.replace(
                "kubectl namzu ",
                &format!("kubectl namzu --context {} ", crate::shell::word(c)),
            ),
            None => self.next.clone(),
        }
    }

    /// What its checks found that ties it, joined (empty when nothing does).
    pub fn proof(&self) -> String {
        self.checks
            .iter()
            .map(|c| format!("{}: {}", c.check, c.found))
            .collect::<Vec<_>>()
            .join("; ")
    }

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
    /// The namespace's warm-pool Events (`None`: not read): a pool's health is only there.
    pub pool_events: Option<&'a [Value]>,
    /// The disks the namespace's pods mount, `(pod, claimName)` (`None`: the pods were not
    /// read — then no disk can be shown unused).
    pub mounts: Option<&'a [(String, String)]>,
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
pub(crate) fn disk_sandboxes(disk: &str) -> Vec<&str> {
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
    let mut out = Vec::new();
    // what exists, gathered once: every disk and policy is judged against it
    let existing = ties::Existing::of(r);
    for pvc in r.pvcs {
        if let Some(found) = ties::judge_disk_in(pvc, r, &existing) {
            out.push(found);
        }
    }
    for policy in r.policies.unwrap_or(&[]) {
        if let Some(found) = ties::judge_policy_in(policy, r, &existing) {
            out.push(found);
        }
    }
    out.extend(r.sandboxes.iter().filter_map(|sbx| sandbox_leak(r, sbx)));
    out.extend(
        r.claims
            .unwrap_or(&[])
            .iter()
            .filter_map(|claim| claim_leak(r, &names, claim)),
    );
    for pool in r.pools.unwrap_or(&[]) {
        pool_leaks(r, pool, &mut out);
    }
    out.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    out
}

/// A leak `find` reports of `obj` (none of these is deleted by `leaks`: no size, not deletable).
fn leak(
    r: &Reads<'_>,
    kind: LeakKind,
    obj: &Value,
    reason: String,
    since: Option<DateTime<Utc>>,
    next: String,
) -> Leak {
    Leak {
        kind,
        namespace: r.namespace.to_string(),
        name: name(obj).to_string(),
        uid: uid(obj).map(str::to_string),
        resource_version: resource_version(obj),
        reason,
        since,
        size: None,
        next,
        deletable: false,
        checks: Vec::new(),
        quarantine: None,
    }
}

/// A Sandbox stuck in deletion, or expired (retained on purpose, or not reaped).
fn sandbox_leak(r: &Reads<'_>, sbx: &Value) -> Option<Leak> {
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
            return Some(leak(r, LeakKind::StuckSandbox, sbx, reason, deleting, next));
        }
        return None;
    }
    if !is_workspace(sbx) {
        return None;
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
        let ago = since.map_or(String::new(), |s| {
            format!(" {} ago", human_duration((r.now - s).num_seconds().max(0)))
        });
        // agent-sandbox deletes an expired Sandbox only under `shutdownPolicy: Delete`; under
        // Retain (its default) the Sandbox and its disks are kept on purpose
        let policy = sbx.pointer("/spec/shutdownPolicy").and_then(Value::as_str);
        if policy.is_none_or(|p| p == "Retain") {
            let reason = format!(
                "expired{ago}, retained by policy (shutdownPolicy {}): its pod is gone, its disks kept on purpose",
                policy.unwrap_or("Retain, the default")
            );
            let next = format!(
                "nothing to clean up: kept on purpose; kubectl namzu inspect -n {} {id} shows what it holds",
                r.namespace
            );
            return Some(leak(r, LeakKind::Retained, sbx, reason, since, next));
        }
        let reason =
            format!("expired{ago} under shutdownPolicy Delete and not reaped; its pod is gone, its disks stay");
        let next = format!(
            "find why the controller did not delete it (kubectl namzu history -n {} {id}); kubectl namzu delete -n {} {id} deletes the workspace and its disks",
            r.namespace, r.namespace
        );
        return Some(leak(r, LeakKind::Expired, sbx, reason, since, next));
    }
    None
}

/// A claim no Sandbox answers, older than [`STUCK_AFTER_MINUTES`].
fn claim_leak(r: &Reads<'_>, names: &BTreeSet<&str>, claim: &Value) -> Option<Leak> {
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
        return None;
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
    Some(leak(r, LeakKind::Claim, claim, reason, created(claim), next))
}

/// A warm pool short of ready (or not progressing), and one whose members run an older template.
fn pool_leaks(r: &Reads<'_>, pool: &Value, out: &mut Vec<Leak>) {
    let int = |p: &str| pool.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let (ready, desired) = (int("/status/readyReplicas"), int("/spec/replicas"));
    let health = super::pools::health(pool, r.sandboxes, r.pool_events, r.now);
    let describe = format!(
        "kubectl describe sandboxwarmpool {} -n {} (the pool's sandboxes and their events)",
        name(pool),
        r.namespace
    );
    let check = |check: &'static str, found: String| Check {
        check,
        found,
        in_use: false,
    };
    let not_progressing = health.progress.as_ref().filter(|p| p.not_progressing());
    let short = ready < desired && older_than(created(pool), r.now, STUCK_AFTER_MINUTES);
    if not_progressing.is_some() || short {
        let reason = match not_progressing {
            Some(p) => format!("{}; {ready}/{desired} ready", p.describe(r.now)),
            None => format!("{ready}/{desired} ready"),
        };
        let since = not_progressing.and_then(|p| p.at).or(created(pool));
        let mut found = leak(r, LeakKind::WarmPool, pool, reason, since, describe.clone());
        found.checks = vec![
            check("status", format!("readyReplicas {ready}, spec.replicas {desired}")),
            check("events", health.progress_shown(r.now)),
            check("strategy", health.strategy_shown()),
        ];
        out.push(found);
    }
    if !health.stale.is_empty() {
        let reason = format!(
            "{} of {} members run an older template ({}): {}",
            health.stale.len(),
            health.members,
            health.stale_evidence,
            health.stale.join(", ")
        );
        let next = if health.strategy == "Recreate" {
            format!("the controller replaces them (updateStrategy Recreate); if they stay, {describe}")
        } else {
            format!(
                "nothing to delete: under updateStrategy {} a claim can still adopt one; they go as the pool replenishes (Recreate replaces them at once)",
                health.strategy_shown()
            )
        };
        // stale at least since a member was made from the newer template
        let since = health.reference.as_ref().and_then(|(newest, _)| {
            r.sandboxes
                .iter()
                .find(|s| name(s) == newest.as_str())
                .and_then(created)
        });
        let mut found = leak(r, LeakKind::StalePool, pool, reason, since, next);
        found.checks = vec![
            check("members", health.stale.join(", ")),
            check("hash", health.stale_evidence.clone()),
            check("strategy", health.strategy_shown()),
        ];
        out.push(found);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::SANDBOX_NAME_HASH;
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
            claims: Some(&[]),
            pools: None,
            pool_events: None,
            mounts: Some(&[]),
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
        assert_eq!(found[0].size, crate::quantities::parse_quantity("20Gi"));
        assert_eq!(found[0].resource_version.as_deref(), Some("7"));
        assert!(found.iter().all(|l| l.deletable));
    }

    #[test]
    fn policies_whose_owner_is_gone() {
        let sbx = [sandbox("namzu-ws-a", "u-a")];
        let policies = [
            json!({"metadata": {"name": "namzu-sbx-u-a", "ownerReferences": [{"kind": "Sandbox", "name": "namzu-ws-a", "uid": "u-a"}]}}),
            // the library's shape, selecting the Sandbox it was made for, which is gone
            json!({"metadata": {"name": "namzu-sbx-u-old", "ownerReferences": [{"kind": "Sandbox", "name": "namzu-ws-old", "uid": "u-old"}]},
                "spec": {"endpointSelector": {"matchLabels": {"sandbox.namzu.ai/per-sandbox-egress": "namzu-ws-old"}}}}),
            // no selector this tool evaluates: it may select live pods
            json!({"metadata": {"name": "namzu-sbx-u-bare"}}),
            json!({"metadata": {"name": "allow-dns"}}),
        ];
        let found = find(&reads(&sbx, &[], &policies));
        let got: Vec<(&str, LeakKind)> = found.iter().map(|l| (l.name.as_str(), l.kind)).collect();
        assert_eq!(
            got,
            [
                ("namzu-sbx-u-old", LeakKind::Policy),
                ("namzu-sbx-u-bare", LeakKind::PolicyInUse)
            ]
        );
        assert!(found[0].reason.contains("u-old"), "{}", found[0].reason);
    }

    /// Look-alikes: each looks left behind by the old rule (no Sandbox of its name or owner
    /// uid), each is tied to something that exists, and each is listed in use with the tie.
    #[test]
    fn look_alikes_are_in_use_with_their_proof() {
        let claim = json!({"metadata": {"name": "namzu-ws-pending", "uid": "c-1", "creationTimestamp": "2026-12-01T11:59:00Z"}});
        let claims = [claim];
        let sbx = [sandbox("namzu-ws-live", "u-live")];
        let mut by_claim = pvc("disk-namzu-ws-task", None);
        by_claim["metadata"]["ownerReferences"] =
            json!([{"kind": "SandboxClaim", "name": "namzu-ws-pending", "uid": "c-1"}]);
        let mut by_other = pvc("disk-namzu-ws-set", None);
        by_other["metadata"]["ownerReferences"] = json!([{"kind": "StatefulSet", "name": "web", "uid": "s-1"}]);
        let mounted = pvc("disk-namzu-ws-rescue", None);
        let coming = pvc("disk-namzu-ws-pending", None);
        let mut hashed = pvc("disk-namzu-ws-renamed", None);
        hashed["metadata"]["labels"] = json!({SANDBOX_NAME_HASH: name_hash("namzu-ws-live")});
        let mut detached = pvc("disk-namzu-ws-keep", None);
        detached["metadata"]["labels"] = json!({SANDBOX_NAME_HASH: name_hash("namzu-ws-keep")});
        let pvcs = [by_claim, by_other, mounted, coming, hashed, detached];
        let mounts = [("rescue".to_string(), "disk-namzu-ws-rescue".to_string())];
        let policies = [
            json!({"metadata": {"name": "namzu-sbx-c-1", "ownerReferences": [{"kind": "SandboxClaim", "name": "namzu-ws-pending", "uid": "c-1"}]}}),
            json!({"metadata": {"name": "namzu-sbx-u-old"}, "spec": {"endpointSelector": {"matchLabels": {"sandbox.namzu.ai/per-sandbox-egress": "namzu-ws-live"}}}}),
        ];
        let r = Reads {
            claims: Some(&claims),
            mounts: Some(&mounts),
            ..reads(&sbx, &pvcs, &policies)
        };
        let found = find(&r);
        let got: Vec<(&str, LeakKind, bool)> = found
            .iter()
            .filter(|l| l.kind != LeakKind::Claim)
            .map(|l| (l.name.as_str(), l.kind, l.deletable))
            .collect();
        assert_eq!(
            got,
            [
                ("disk-namzu-ws-keep", LeakKind::DetachedDisk, true),
                ("disk-namzu-ws-pending", LeakKind::DiskInUse, false),
                ("disk-namzu-ws-renamed", LeakKind::DiskInUse, false),
                ("disk-namzu-ws-rescue", LeakKind::DiskInUse, false),
                ("disk-namzu-ws-set", LeakKind::DiskInUse, false),
                ("disk-namzu-ws-task", LeakKind::DiskInUse, false),
                ("namzu-sbx-c-1", LeakKind::PolicyInUse, false),
                ("namzu-sbx-u-old", LeakKind::PolicyInUse, false),
            ]
        );
        let proof = |n: &str| {
            let l = found.iter().find(|l| l.name == n).unwrap();
            l.checks
                .iter()
                .filter(|c| c.in_use)
                .map(|c| c.found.clone())
                .collect::<Vec<_>>()
                .join("; ")
        };
        assert!(proof("disk-namzu-ws-task").contains("SandboxClaim namzu-ws-pending (uid c-1) exists"));
        assert!(proof("disk-namzu-ws-set").contains("StatefulSet web"));
        assert!(proof("disk-namzu-ws-rescue").contains("mounted by pod rescue"));
        assert!(proof("disk-namzu-ws-pending").contains("SandboxClaim namzu-ws-pending exists"));
        assert!(proof("disk-namzu-ws-renamed").contains("existing Sandbox's name hash"));
        assert!(proof("namzu-sbx-c-1").contains("c-1"));
        assert!(proof("namzu-sbx-u-old").contains("selects namzu-ws-live"));
        // what cannot be read cannot clear a disk
        let r = Reads {
            mounts: None,
            claims: None,
            ..reads(&[], &pvcs[3..4], &[])
        };
        let unread = find(&r);
        assert_eq!(unread[0].kind, LeakKind::DiskInUse);
        assert!(
            unread[0].checks.iter().filter(|c| c.in_use).count() == 2,
            "{:?}",
            unread[0].checks
        );
    }

    #[test]
    fn the_name_hash_is_agent_sandboxs() {
        // FNV-1a 32 of "" and of "a" (the published test vectors)
        assert_eq!(name_hash(""), "811c9dc5");
        assert_eq!(name_hash("a"), "e40c292c");
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
        expired["spec"]["shutdownPolicy"] = json!("Delete");
        // Retain is agent-sandbox's default: kept on purpose, not "not reaped"
        let mut kept = sandbox("namzu-ws-k", "u-k");
        kept["spec"]["shutdownTime"] = json!("2026-11-10T12:00:00Z");
        let mut later = sandbox("namzu-ws-l", "u-l");
        later["spec"]["shutdownTime"] = json!("2026-12-02T12:00:00Z");
        let sbx = [stuck, fresh, expired, kept, later];
        let found = find(&reads(&sbx, &[], &[]));
        let got: Vec<(LeakKind, &str)> = found.iter().map(|l| (l.kind, l.name.as_str())).collect();
        assert_eq!(
            got,
            [
                (LeakKind::StuckSandbox, "namzu-ws-s"),
                (LeakKind::Expired, "namzu-ws-e"),
                (LeakKind::Retained, "namzu-ws-k")
            ]
        );
        assert!(found[2].reason.contains("retained by policy"), "{}", found[2].reason);
        assert!(!found[2].next.contains("delete"), "{}", found[2].next);
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
            pool_events: None,
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
