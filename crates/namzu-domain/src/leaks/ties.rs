//! Whether a disk or a per-sandbox policy that looks left behind is still tied to anything that
//! exists — the one rule `leaks` lists by and the delete's re-check judges by — with every check
//! as its proof, and the quarantine an object carries.

use super::{Leak, LeakKind, Reads, created, disk_sandboxes, resource_version};
// (the library's default per-sandbox key; a host that chose another gets its policies judged in
// use, never deleted)
use crate::annotations::{CLAIM_UID, PER_SANDBOX_LABEL, PER_SANDBOX_POLICY_PREFIX, SANDBOX_NAME_HASH};
use crate::naming::{id_of, name_hash};
use crate::object::{name, owner_refs, uid};
use crate::quantities::{capacity, requested_storage};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeSet;

/// One check made on a disk or a policy before calling it left behind, and what it found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was looked at: `owners`, `sandbox`, `claims`, `labels`, `pods`, `tracking`, `deleting`.
    pub check: &'static str,
    /// What was found, in words (`none`, `SandboxClaim task-1 (uid …) exists`).
    pub found: String,
    /// This finding ties the object to something that exists (or cannot be ruled out): in use.
    pub in_use: bool,
}

impl Check {
    fn new(check: &'static str, found: impl Into<String>, in_use: bool) -> Check {
        Check {
            check,
            found: found.into(),
            in_use,
        }
    }
}

/// The annotation `leaks --quarantine` sets: when the object was quarantined (RFC 3339).
pub const QUARANTINED_AT: &str = "kubectl-namzu.io/quarantined-at";
/// The annotation beside it: what tied the object to anything when it was quarantined (a hash
/// of its owners, labels and volume); any change since cancels the quarantine.
pub const QUARANTINE_TIES: &str = "kubectl-namzu.io/quarantine-ties";

/// A quarantine as an object carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantine {
    pub since: DateTime<Utc>,
    /// Nothing that ties it to anything has changed since: the quarantine holds.
    pub unchanged: bool,
}

/// What could tie `obj` to something, hashed: its owners, its labels, its volume. A quarantine
/// records it; a different value later means the object was touched (re-owned, relabelled,
/// re-bound) and the quarantine is cancelled.
pub fn ties_fingerprint(obj: &Value) -> String {
    let owners: Vec<Value> = owner_refs(obj)
        .iter()
        .map(|o| serde_json::json!([o.get("kind"), o.get("name"), o.get("uid")]))
        .collect();
    let labels = obj.pointer("/metadata/labels").cloned().unwrap_or(Value::Null);
    let volume = obj.pointer("/spec/volumeName").cloned().unwrap_or(Value::Null);
    let hash = crate::canonical::pod_template_hash(&serde_json::json!([owners, labels, volume]));
    hash.trim_start_matches("sha256:").chars().take(16).collect()
}

/// The quarantine `obj` carries, if any.
pub fn quarantine_of(obj: &Value) -> Option<Quarantine> {
    let annotation = |k: &str| {
        obj.pointer("/metadata/annotations")
            .and_then(|a| a.get(k))
            .and_then(Value::as_str)
    };
    let since = annotation(QUARANTINED_AT).and_then(|t| DateTime::parse_from_rfc3339(t).ok())?;
    Some(Quarantine {
        since: since.with_timezone(&Utc),
        unchanged: annotation(QUARANTINE_TIES) == Some(ties_fingerprint(obj).as_str()),
    })
}

/// What exists in a namespace that can tie an object to it: names and uids of its Sandboxes,
/// claims and pools, the name hashes of its Sandboxes.
pub(super) struct Existing<'a> {
    sandbox_names: BTreeSet<&'a str>,
    sandbox_hashes: BTreeSet<String>,
    sandbox_uids: BTreeSet<&'a str>,
    /// Of every Sandbox, claim and pool.
    uids: BTreeSet<&'a str>,
    claim_names: BTreeSet<&'a str>,
    claim_uids: BTreeSet<&'a str>,
}

impl<'a> Existing<'a> {
    pub(super) fn of(r: &Reads<'a>) -> Existing<'a> {
        let claims = r.claims.unwrap_or(&[]);
        let pools = r.pools.unwrap_or(&[]);
        Existing {
            sandbox_names: r.sandboxes.iter().map(name).collect(),
            sandbox_hashes: r.sandboxes.iter().map(|s| name_hash(name(s))).collect(),
            sandbox_uids: r.sandboxes.iter().filter_map(uid).collect(),
            uids: r.sandboxes.iter().chain(claims).chain(pools).filter_map(uid).collect(),
            claim_names: claims.iter().map(name).collect(),
            claim_uids: claims.iter().filter_map(uid).collect(),
        }
    }

    /// The object an ownerReference names, if it is one of the kinds read and exists.
    fn owner(&self, o: &Value) -> (String, bool) {
        let field = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("-");
        let (kind, owner_name, owner_uid) = (field("kind"), field("name"), field("uid"));
        let said = format!("{kind} {owner_name} (uid {owner_uid})");
        match kind {
            "Sandbox" | "SandboxClaim" | "SandboxWarmPool" if self.uids.contains(owner_uid) => {
                (format!("{said} exists"), true)
            }
            "Sandbox" | "SandboxClaim" | "SandboxWarmPool" => (format!("{said} is gone"), false),
            // an owner of a kind this tool does not read may well exist: never a leak
            _ => (
                format!("{said}: a kind this tool does not look up, so it may exist"),
                true,
            ),
        }
    }
}

fn label<'v>(obj: &'v Value, key: &str) -> Option<&'v str> {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

/// A disk of the labelled read: `None` when it is plainly a live workspace's (a Sandbox of its
/// name, or its Sandbox owner, exists) or is already being deleted; else a leak — orphaned,
/// detached, or shown in use — with every check made. The one rule of what a disk is, used by the
/// listing and again just before its DELETE.
pub fn judge_disk(pvc: &Value, r: &Reads<'_>) -> Option<Leak> {
    judge_disk_in(pvc, r, &Existing::of(r))
}

/// [`judge_disk`] against what exists, gathered once for a whole namespace (`find`).
pub(super) fn judge_disk_in(pvc: &Value, r: &Reads<'_>, e: &Existing<'_>) -> Option<Leak> {
    let candidates = disk_sandboxes(name(pvc));
    let sandbox = *candidates.last()?;
    if candidates.iter().any(|s| e.sandbox_names.contains(s)) || pvc.pointer("/metadata/deletionTimestamp").is_some() {
        return None;
    }
    let owners = owner_refs(pvc);
    let sandbox_owner_live = owners.iter().any(|o| {
        o.get("kind").and_then(Value::as_str) == Some("Sandbox")
            && o.get("uid")
                .and_then(Value::as_str)
                .is_some_and(|u| e.sandbox_uids.contains(u))
    });
    if sandbox_owner_live {
        return None;
    }
    let mut checks = Vec::new();
    if owners.is_empty() {
        checks.push(Check::new("owners", "none", false));
    }
    for o in owners {
        let (found, live) = e.owner(o);
        checks.push(Check::new("owners", found, live));
    }
    checks.push(Check::new(
        "sandbox",
        format!("no Sandbox {} exists", candidates.join(" or ")),
        false,
    ));
    let claim = candidates.iter().find(|c| e.claim_names.contains(*c));
    checks.push(match (r.claims, claim) {
        (None, _) => Check::new(
            "claims",
            "not readable: a claim that would re-create it cannot be ruled out",
            true,
        ),
        (Some(_), Some(c)) => Check::new(
            "claims",
            format!("SandboxClaim {c} exists: its Sandbox takes this disk"),
            true,
        ),
        (Some(_), None) => Check::new("claims", format!("no SandboxClaim {sandbox}"), false),
    });
    let hash = label(pvc, SANDBOX_NAME_HASH);
    let claim_uid = label(pvc, CLAIM_UID);
    checks.push(match (hash, claim_uid) {
        (Some(h), _) if e.sandbox_hashes.contains(h) && h != name_hash(sandbox) => Check::new(
            "labels",
            format!("{SANDBOX_NAME_HASH}={h} is an existing Sandbox's name hash"),
            true,
        ),
        (_, Some(u)) if e.claim_uids.contains(u) => {
            Check::new("labels", format!("{CLAIM_UID}={u} is an existing claim's uid"), true)
        }
        _ => Check::new("labels", "tie it to nothing that exists", false),
    });
    let mounted_by: Vec<&str> = r
        .mounts
        .unwrap_or(&[])
        .iter()
        .filter(|(_, claim)| claim == name(pvc))
        .map(|(pod, _)| pod.as_str())
        .collect();
    checks.push(match (r.mounts, mounted_by.is_empty()) {
        (None, _) => Check::new("pods", "not readable: a pod that mounts it cannot be ruled out", true),
        (Some(_), true) => Check::new("pods", "no pod mounts it", false),
        (Some(_), false) => Check::new("pods", format!("mounted by pod {}", mounted_by.join(", ")), true),
    });
    let detached = owners.is_empty() && hash == Some(name_hash(sandbox).as_str());
    checks.push(Check::new(
        "tracking",
        match hash {
            Some(h) if detached => {
                format!(
                    "unowned with {SANDBOX_NAME_HASH}={h}: agent-sandbox re-adopts it if {sandbox} is created again"
                )
            }
            Some(h) => format!("{SANDBOX_NAME_HASH}={h}: the controller would not re-adopt it"),
            None => format!("no {SANDBOX_NAME_HASH} label"),
        },
        false,
    ));
    let size = capacity(pvc).or_else(|| requested_storage(pvc));
    let ns = r.namespace;
    let verdict = disk_verdict(pvc, ns, sandbox, owners, &checks, detached);
    Some(Leak {
        size,
        ..judged(pvc, ns, verdict, checks)
    })
}

/// What a disk is, from its checks: in use (a tie found), detached (re-adopted if its Sandbox
/// comes back), or left behind.
fn disk_verdict(
    pvc: &Value,
    ns: &str,
    sandbox: &str,
    owners: &[Value],
    checks: &[Check],
    detached: bool,
) -> (LeakKind, String, String, bool) {
    if let Some(tie) = checks.iter().find(|c| c.in_use) {
        (
            LeakKind::DiskInUse,
            format!("looks left behind, but in use: {}", tie.found),
            format!("nothing to delete; kubectl namzu leaks -n {ns} -o wide shows every check"),
            false,
        )
    } else if detached {
        (
            LeakKind::DetachedDisk,
            format!("detached: re-adopted if {sandbox} is created again"),
            format!(
                "keep it for {sandbox}; else quarantine it first: kubectl namzu leaks -n {ns} --quarantine --include-detached {}",
                name(pvc)
            ),
            true,
        )
    } else {
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
        let next = format!(
            "check nothing on it is needed, then kubectl namzu leaks -n {ns} --delete {}",
            name(pvc)
        );
        (LeakKind::Disk, reason, next, true)
    }
}

/// A disk or policy judged: the object's identity and age, the verdict, the checks made.
fn judged(obj: &Value, namespace: &str, verdict: (LeakKind, String, String, bool), mut checks: Vec<Check>) -> Leak {
    let (kind, reason, next, deletable) = verdict;
    let quarantine = quarantine_of(obj);
    if let Some(q) = &quarantine {
        checks.push(Check::new(
            "quarantine",
            if q.unchanged {
                format!("quarantined since {}, untouched since", crate::timefmt::js_iso(q.since))
            } else {
                format!(
                    "quarantined since {}, but its owners, labels or volume changed since: cancelled",
                    crate::timefmt::js_iso(q.since)
                )
            },
            false,
        ));
    }
    Leak {
        kind,
        namespace: namespace.to_string(),
        name: name(obj).to_string(),
        uid: uid(obj).map(str::to_string),
        resource_version: resource_version(obj),
        reason,
        since: created(obj),
        size: None,
        next,
        deletable,
        checks,
        quarantine,
    }
}

/// A per-sandbox policy (`namzu-sbx-<uid>`): `None` when the uid in its name or an owner is a
/// Sandbox, claim or pool that exists; else orphaned, or shown in use with what ties it (an
/// owner of any kind, the Sandbox its selector names). The one rule, listing and re-check alike.
pub fn judge_policy(policy: &Value, r: &Reads<'_>) -> Option<Leak> {
    judge_policy_in(policy, r, &Existing::of(r))
}

/// [`judge_policy`] against what exists, gathered once for a whole namespace (`find`).
pub(super) fn judge_policy_in(policy: &Value, r: &Reads<'_>, e: &Existing<'_>) -> Option<Leak> {
    let owner_uid = name(policy).strip_prefix(PER_SANDBOX_POLICY_PREFIX)?;
    // a live Sandbox's own policy is no look-alike: not listed
    if e.sandbox_uids.contains(owner_uid)
        || owner_refs(policy)
            .iter()
            .filter(|o| o.get("kind").and_then(Value::as_str) == Some("Sandbox"))
            .filter_map(|o| o.get("uid").and_then(Value::as_str))
            .any(|u| e.sandbox_uids.contains(u))
    {
        return None;
    }
    let mut checks = vec![match (r.claims, e.uids.contains(owner_uid)) {
        (_, true) => Check::new(
            "uid",
            format!("{owner_uid}, in its name, is an existing SandboxClaim's or pool's uid"),
            true,
        ),
        (Some(_), false) => Check::new(
            "uid",
            format!("no Sandbox, SandboxClaim or pool has uid {owner_uid}"),
            false,
        ),
        (None, false) => Check::new(
            "uid",
            format!("no Sandbox has uid {owner_uid}; claims are not readable, so one cannot be ruled out"),
            true,
        ),
    }];
    let owners = owner_refs(policy);
    if owners.is_empty() {
        checks.push(Check::new("owners", "none", false));
    }
    for o in owners {
        let (found, live) = e.owner(o);
        checks.push(Check::new("owners", found, live));
    }
    // the library's own shape only — `matchLabels` of exactly the per-sandbox key, naming one
    // Sandbox — is judged by name; any other selector (another key, `matchExpressions`, none at
    // all: every pod of the namespace) may select live pods this tool does not evaluate
    let selector = policy.pointer("/spec/endpointSelector");
    let labels = selector.and_then(|s| s.get("matchLabels")).and_then(Value::as_object);
    let expressions = selector
        .and_then(|s| s.get("matchExpressions"))
        .and_then(Value::as_array)
        .is_some_and(|e| !e.is_empty());
    let named = match labels {
        Some(m) if m.len() == 1 && !expressions => m.get(PER_SANDBOX_LABEL).and_then(Value::as_str),
        _ => None,
    };
    checks.push(match named {
        Some(v) if e.sandbox_names.contains(v) || e.claim_names.contains(v) => Check::new(
            "selector",
            format!("selects {v}, which exists (its egress still applies)"),
            true,
        ),
        Some(v) => Check::new("selector", format!("selects {v}, which no Sandbox or claim is"), false),
        None => Check::new(
            "selector",
            format!(
                "a selector other than {PER_SANDBOX_LABEL}=<name> alone: it may select live pods, which this tool does not evaluate"
            ),
            true,
        ),
    });
    let live: Vec<&str> = named
        .into_iter()
        .filter(|v| e.sandbox_names.contains(v) || e.claim_names.contains(v))
        .collect();
    let ns = r.namespace;
    let owner_name = owners
        .iter()
        .find(|o| o.get("kind").and_then(Value::as_str) == Some("Sandbox"))
        .and_then(|o| o.get("name"))
        .and_then(Value::as_str);
    let (kind, reason, next, deletable) = if let Some(tie) = checks.iter().find(|c| c.in_use) {
        let next = match live.first() {
            Some(s) => format!(
                "a policy {s} does not own: resuming {s} with @namzu/sandbox removes it (kubectl namzu inspect -n {ns} {})",
                id_of(s).unwrap_or(s)
            ),
            None => format!("nothing to delete; kubectl namzu leaks -n {ns} -o wide shows every check"),
        };
        (
            LeakKind::PolicyInUse,
            format!("looks left behind, but in use: {}", tie.found),
            next,
            false,
        )
    } else {
        let reason = match owner_name {
            Some(n) => format!("its Sandbox {n} (uid {owner_uid}) is gone"),
            None => format!("no Sandbox or claim with uid {owner_uid} exists"),
        };
        let next = format!("kubectl namzu leaks -n {ns} --delete {}", name(policy));
        (LeakKind::Policy, reason, next, true)
    };
    Some(judged(policy, ns, (kind, reason, next, deletable), checks))
}
