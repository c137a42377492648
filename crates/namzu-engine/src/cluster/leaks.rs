//! The reads of `leaks` (domain rules in `domain/leaks.rs`), narrowed: per namespace in scope (or
//! once cluster-wide with `-A`) one LIST each of
//!
//! - Sandboxes (all of them, workspaces or not: what exists decides what is left behind);
//! - PVCs **labelled `agents.x-k8s.io/sandbox-name-hash`** — never every PVC of the cluster;
//! - CiliumNetworkPolicies (as the inventory reads them; 404/403: no policy leaks are told);
//! - SandboxClaims and SandboxWarmPools (404: the extensions are not installed, none told),
//!   and where there are pools, their Events (`cluster/pools.rs`: a pool's only health signal);
//! - and, only in a namespace where a disk looks left behind, its pods (projected to the claims
//!   their volumes name: a mounted disk is in use; unreadable pods clear no disk);
//!
//! each pruned to what the rules read as it is parsed. Cost ∝ the workspaces' own objects: the
//! 50,000 pods and 10,000 disks of other apps are never transferred.
//!
//! Why the disk read is complete: agent-sandbox's controller labels every PVC it makes from a
//! `volumeClaimTemplates` entry with `agents.x-k8s.io/sandbox-name-hash`, and nothing removes the
//! label when the Sandbox goes (its garbage collector deletes the disk, or — with orphaning, a
//! lagging collector, a finalizer — leaves it labelled). So every disk a workspace ever had is in
//! the labelled LIST, and only those are judged (and only those named `<entry>-namzu-ws-<id>`).
//! What it cannot see: a disk an older controller made without the label, with its Sandbox gone
//! — nothing names it any more. The inventory reads such disks of *existing* workspaces by name;
//! an unlabelled orphan is out of reach of any narrowed read, and `-v` says the rule.

use super::connect::Connection;
use super::error::ClusterError;
use super::kinds::{ApiKind, CILIUM_POLICIES, CLAIMS, NAMESPACES, PVCS, SANDBOXES, WARM_POOLS};
use super::resources;
use chrono::{DateTime, Utc};
use namzu_domain::annotations::SANDBOX_NAME_HASH;
use namzu_domain::leaks::{self, Leak, LeakKind, Reads};
use namzu_domain::object::namespace;
use namzu_domain::projection::Keep::{self, All, Each, Fields};
use serde_json::Value;
use std::collections::BTreeMap;

const META: Keep = Fields(&[
    ("name", All),
    ("labels", All),
    // only the quarantine's own annotations (others can be large)
    (
        "annotations",
        Fields(&[
            (namzu_domain::leaks::QUARANTINED_AT, All),
            (namzu_domain::leaks::QUARANTINE_TIES, All),
        ]),
    ),
    ("namespace", All),
    ("uid", All),
    ("resourceVersion", All),
    ("creationTimestamp", All),
    ("deletionTimestamp", All),
    ("finalizers", All),
    (
        "ownerReferences",
        Each(&Fields(&[("kind", All), ("name", All), ("uid", All)])),
    ),
]);

/// A Sandbox as the leak rules read it: identity, owners, deletion, expiry and whether it is a
/// workspace (the template label).
const SANDBOX: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    ("metadata", META),
    (
        "spec",
        Fields(&[
            ("shutdownTime", All),
            ("shutdownPolicy", All),
            ("podTemplate", Fields(&[("metadata", Fields(&[("labels", All)]))])),
        ]),
    ),
    (
        "status",
        Fields(&[(
            "conditions",
            Each(&Fields(&[
                ("type", All),
                ("status", All),
                ("reason", All),
                ("lastTransitionTime", All),
            ])),
        )]),
    ),
]);

/// A disk: identity, owners, size.
const PVC: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    ("metadata", META),
    ("spec", Fields(&[("resources", All), ("volumeName", All)])),
    ("status", Fields(&[("phase", All), ("capacity", All)])),
]);

const EXTENSION: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    ("metadata", META),
    ("spec", All),
    ("status", All),
]);

pub(crate) const LEAK_SANDBOXES: ApiKind = ApiKind {
    keep: SANDBOX,
    ..SANDBOXES
};
pub(crate) const LEAK_PVCS: ApiKind = ApiKind { keep: PVC, ..PVCS };
/// A per-sandbox policy: identity and owners (a DELETE carries its uid and resourceVersion).
const POLICY: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    ("metadata", META),
    ("spec", Fields(&[("endpointSelector", All)])),
]);

/// A pod as the disk checks read it: its name and the claims its volumes name.
const POD_MOUNTS: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    ("metadata", Fields(&[("name", All), ("namespace", All)])),
    (
        "spec",
        Fields(&[(
            "volumes",
            Each(&Fields(&[("persistentVolumeClaim", Fields(&[("claimName", All)]))])),
        )]),
    ),
]);
const MOUNT_PODS: ApiKind = ApiKind {
    keep: POD_MOUNTS,
    ..super::kinds::PODS
};

pub(crate) const LEAK_POLICIES: ApiKind = ApiKind {
    keep: POLICY,
    ..CILIUM_POLICIES
};
const LEAK_CLAIMS: ApiKind = ApiKind {
    keep: EXTENSION,
    ..CLAIMS
};
const LEAK_POOLS: ApiKind = ApiKind {
    keep: EXTENSION,
    ..WARM_POOLS
};

/// What the pass found, and what it could not read.
#[derive(Debug, Default)]
pub struct Report {
    pub leaks: Vec<Leak>,
    pub warnings: Vec<String>,
}

/// An optional read: 404 (not served) and 403 (with a warning) are "none read".
async fn optional(
    conn: &Connection,
    kind: &ApiKind,
    ns: Option<&str>,
    selector: Option<&str>,
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<Value>>, ClusterError> {
    match resources::list(conn, kind, ns, selector).await {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) if e.is_forbidden() => {
            warnings.push(forbidden(&e, kind));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Claims or pools, read for the ties they make: not served (404, the extensions are not
/// installed) none can exist, so none — where 403 leaves them unknown (`None`: nothing cleared).
async fn extension(
    conn: &Connection,
    kind: &ApiKind,
    ns: Option<&str>,
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<Value>>, ClusterError> {
    match resources::list(conn, kind, ns, None).await {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_not_found() => Ok(Some(Vec::new())),
        Err(e) if e.is_forbidden() => {
            warnings.push(forbidden(&e, kind));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The warning for a kind that may not be listed.
fn forbidden(e: &ClusterError, kind: &ApiKind) -> String {
    format!(
        "warning: {e}; its leaks are not told (needs RBAC list on {})",
        kind.plural
    )
}

fn by_namespace(items: Vec<Value>) -> BTreeMap<String, Vec<Value>> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for v in items {
        out.entry(namespace(&v).to_string()).or_default().push(v);
    }
    out
}

/// Read `namespace` (`None`: every namespace, at once where the cluster-wide LIST is allowed, else
/// per namespace as the inventory falls back) and judge it at `now`.
pub async fn read(conn: &Connection, namespace: Option<&str>, now: DateTime<Utc>) -> Result<Report, ClusterError> {
    if namespace.is_some() {
        return read_once(conn, namespace, now).await;
    }
    match read_once(conn, None, now).await {
        Err(ClusterError::Forbidden { .. }) => {}
        other => return other,
    }
    let mut report = Report::default();
    let namespaces: Vec<String> = match resources::list(conn, &NAMESPACES, None, None).await {
        Ok(list) => list.iter().map(|n| namzu_domain::object::name(n).to_string()).collect(),
        Err(ClusterError::Forbidden { .. }) => {
            report.warnings.push(format!(
                "warning: you may not list sandboxes or namespaces cluster-wide; showing namespace {} only",
                conn.namespace
            ));
            vec![conn.namespace.clone()]
        }
        Err(e) => return Err(e),
    };
    // as the inventory: when nothing at all could be read, the refusal is the answer
    let (mut read_any, mut refused) = (false, Vec::new());
    for ns in namespaces {
        match read_once(conn, Some(&ns), now).await {
            Ok(r) => {
                read_any = true;
                report.leaks.extend(r.leaks);
                for w in r.warnings {
                    if !report.warnings.contains(&w) {
                        report.warnings.push(w);
                    }
                }
            }
            Err(e @ ClusterError::Forbidden { .. }) => refused.push(e),
            Err(e) => return Err(e),
        }
    }
    if !read_any && !refused.is_empty() {
        return Err(refused.swap_remove(0));
    }
    for e in refused {
        if let ClusterError::Forbidden { op, .. } = e {
            report.warnings.push(format!("warning: you may not {op}; skipped"));
        }
    }
    Ok(report)
}

/// One pass over `namespace` (`None`: one cluster-wide LIST per kind).
async fn read_once(conn: &Connection, namespace: Option<&str>, now: DateTime<Utc>) -> Result<Report, ClusterError> {
    let mut warnings = Vec::new();
    let (mut w1, mut w2, mut w3, mut w4) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (sandboxes, pvcs, policies, claims, pools) = tokio::join!(
        resources::list(conn, &LEAK_SANDBOXES, namespace, None),
        optional(conn, &LEAK_PVCS, namespace, Some(SANDBOX_NAME_HASH), &mut w1),
        optional(conn, &LEAK_POLICIES, namespace, None, &mut w2),
        extension(conn, &LEAK_CLAIMS, namespace, &mut w3),
        extension(conn, &LEAK_POOLS, namespace, &mut w4),
    );
    let sandboxes = match sandboxes {
        Ok(s) => s,
        Err(e) => return Err(super::inventory::explain_missing(conn, e).await),
    };
    let (pvcs, policies, claims, pools) = (pvcs?, policies?, claims?, pools?);
    warnings.extend(w1.into_iter().chain(w2).chain(w3).chain(w4));
    if pvcs.is_none() {
        warnings.push("warning: persistentvolumeclaims are not readable: orphaned disks are not told".into());
    }
    let mut sandboxes = by_namespace(sandboxes);
    let mut pvcs = by_namespace(pvcs.unwrap_or_default());
    let policies_read = policies.is_some();
    let mut policies = by_namespace(policies.unwrap_or_default());
    let (claims_read, pools_read) = (claims.is_some(), pools.is_some());
    let mut claims = by_namespace(claims.unwrap_or_default());
    let mut pools = by_namespace(pools.unwrap_or_default());
    let mut namespaces: Vec<String> = sandboxes
        .keys()
        .chain(pvcs.keys())
        .chain(policies.keys())
        .chain(claims.keys())
        .chain(pools.keys())
        .cloned()
        .collect();
    namespaces.sort();
    namespaces.dedup();
    let mut out = Vec::new();
    for ns in namespaces {
        let (s, p) = (
            sandboxes.remove(&ns).unwrap_or_default(),
            pvcs.remove(&ns).unwrap_or_default(),
        );
        let pol = policies.remove(&ns).unwrap_or_default();
        let (c, w) = (
            claims.remove(&ns).unwrap_or_default(),
            pools.remove(&ns).unwrap_or_default(),
        );
        // a pool's health is only in its Events: read where there are pools
        let pool_events = match w.is_empty() {
            true => None,
            false => super::pools::events(conn, &ns, &mut warnings).await?,
        };
        let mut reads = Reads {
            namespace: &ns,
            sandboxes: &s,
            pvcs: &p,
            policies: policies_read.then_some(pol.as_slice()),
            claims: claims_read.then_some(c.as_slice()),
            pools: pools_read.then_some(w.as_slice()),
            pool_events: pool_events.as_deref(),
            mounts: Some(&[]),
            now,
        };
        let found = leaks::find(&reads);
        // the pods are read only where a disk looks left behind: no pod mounting it is proof
        let disk_kinds = [LeakKind::Disk, LeakKind::DetachedDisk, LeakKind::DiskInUse];
        if !found.iter().any(|l| disk_kinds.contains(&l.kind)) {
            out.extend(found);
            continue;
        }
        let mounts = mounts(conn, &ns, &mut warnings).await?;
        reads.mounts = mounts.as_deref();
        out.extend(leaks::find(&reads));
    }
    Ok(Report { leaks: out, warnings })
}

/// The disks `namespace`'s pods mount, `(pod, claimName)`; `None` (with a warning) when the
/// pods may not be listed.
pub(crate) async fn mounts(
    conn: &Connection,
    namespace: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<(String, String)>>, ClusterError> {
    let Some(pods) = optional(conn, &MOUNT_PODS, Some(namespace), None, warnings).await? else {
        return Ok(None);
    };
    Ok(Some(
        pods.iter()
            .flat_map(|pod| {
                let name = namzu_domain::object::name(pod).to_string();
                pod.pointer("/spec/volumes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.pointer("/persistentVolumeClaim/claimName").and_then(Value::as_str))
                    .map(move |claim| (name.clone(), claim.to_string()))
                    .collect::<Vec<_>>()
            })
            .collect(),
    ))
}

/// Everything that can tie an object of `namespace` to what exists, read now: its Sandboxes,
/// claims, pools and (for a disk) the pods' mounts. What a delete's re-check judges against.
pub(crate) struct Ties {
    pub sandboxes: Vec<Value>,
    pub claims: Option<Vec<Value>>,
    pub pools: Option<Vec<Value>>,
    pub mounts: Option<Vec<(String, String)>>,
}

/// Read [`Ties`] of `namespace` (the pods only for a disk: `with_pods`).
pub(crate) async fn ties(conn: &Connection, namespace: &str, with_pods: bool) -> Result<Ties, ClusterError> {
    let mut warnings = Vec::new();
    let sandboxes = resources::list(conn, &LEAK_SANDBOXES, Some(namespace), None).await?;
    let claims = extension(conn, &LEAK_CLAIMS, Some(namespace), &mut warnings).await?;
    let pools = extension(conn, &LEAK_POOLS, Some(namespace), &mut warnings).await?;
    let mounts = if with_pods {
        mounts(conn, namespace, &mut warnings).await?
    } else {
        Some(Vec::new())
    };
    Ok(Ties {
        sandboxes,
        claims,
        pools,
        mounts,
    })
}

impl Ties {
    /// These ties as the domain's reads of `namespace`, judging `pvcs` or `policies`.
    pub(crate) fn reads<'a>(
        &'a self,
        namespace: &'a str,
        pvcs: &'a [Value],
        policies: &'a [Value],
        now: DateTime<Utc>,
    ) -> Reads<'a> {
        Reads {
            namespace,
            sandboxes: &self.sandboxes,
            pvcs,
            policies: Some(policies),
            claims: self.claims.as_deref(),
            pools: self.pools.as_deref(),
            pool_events: None,
            mounts: self.mounts.as_deref(),
            now,
        }
    }
}
