//! The inventory pass (docs/ARCHITECTURE.md, "One list"; docs/interop.md §1): LIST Sandboxes, LIST
//! the pods and PVCs that belong to Sandboxes, one GET per distinct template name; every LIST paged
//! and pruned as parsed. A 403 on pods, PVCs or templates degrades those columns with one warning;
//! `-A` lists cluster-wide when allowed and falls back per namespace. Cilium's network policies
//! are read the same way, one LIST per namespace or one cluster-wide (`cluster/policies.rs`).
//!
//! Why the pod and PVC selector is complete: agent-sandbox's controller labels every pod and PVC
//! it makes for a Sandbox `agents.x-k8s.io/sandbox-name-hash`, and a Sandbox's `status.selector`
//! is that label — so `-l agents.x-k8s.io/sandbox-name-hash` reads every object the controller made
//! for any Sandbox, and no unrelated app's. What it cannot see: a pod someone else made under a
//! workspace's name (the foreign pod) and a disk an older controller left unlabelled. Those are
//! read by name, and only where the workspace's own evidence says they exist — a pod when the mode
//! is Running or the status still reports one, each `volumeClaimTemplates` disk always — at most
//! [`BY_NAME_LIMIT`] per kind and namespace; past that one unfiltered LIST of that namespace is
//! cheaper and is read instead. `-v` says which.

use super::connect::Connection;
use super::error::{ClusterError, observed};
use super::pack::{Pack, Packed};
use super::resources::{self, ListItems, NAMESPACES, PODS, PVCS, SANDBOXES, TEMPLATES};
use chrono::{DateTime, Utc};
use futures::future::join_all;
use namzu_domain::annotations::SANDBOX_NAME_HASH;
use namzu_domain::drift::{OverlayFlags, TemplateRead};
use namzu_domain::egress::{PolicyIndex, PolicyRead};
use namzu_domain::naming::{is_workspace, template_label};
use namzu_domain::object::namespace;
use namzu_domain::pod::{Index, pod_expected};
use namzu_domain::workspace::{self, Inputs, Observed, Workspace};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

mod packed;
pub use packed::PackedNamespace;
pub(crate) use packed::Recorded;
use packed::{Objects, PackedSandbox, Sandboxes, by_namespace};

pub use namzu_domain::drift::TemplateFetch;

/// Everything one namespace's inventory pass read.
#[derive(Debug, Clone)]
pub struct NamespaceData {
    pub namespace: String,
    /// Workspace Sandboxes only.
    pub sandboxes: Vec<Value>,
    pub pods: Observed<Vec<Value>>,
    pub pvcs: Observed<Vec<Value>>,
    pub templates: BTreeMap<String, TemplateFetch>,
    /// The namespace's CiliumNetworkPolicies (per-sandbox egress grants among them).
    pub policies: PolicyRead<Vec<Value>>,
}

#[derive(Debug, Clone, Default)]
pub struct Inventory {
    pub namespaces: Vec<NamespaceData>,
    /// One line per degraded read, for stderr or the status line.
    pub warnings: Vec<String>,
}

/// One derived workspace and what it was derived from.
pub struct Entry<'a> {
    pub workspace: Workspace,
    pub sandbox: &'a Value,
    pub template: TemplateRead<'a>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Namespace(String),
    All,
}

/// What to read beyond the scope.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Server-side label selector on Sandboxes.
    pub selector: Option<String>,
    /// The per-sandbox egress label key (default `sandbox.namzu.ai/per-sandbox-egress`): where
    /// Cilium is not served, a workspace carrying it is worth a warning.
    pub per_sandbox_label_key: Option<String>,
}

impl Inventory {
    /// Derive every workspace, in namespace then name order.
    pub fn workspaces(&self, flags: &OverlayFlags, now: DateTime<Utc>) -> Vec<Workspace> {
        self.entries(flags, now).into_iter().map(|e| e.workspace).collect()
    }

    /// Every workspace with the Sandbox and template it was derived from.
    pub(crate) fn entries(&self, flags: &OverlayFlags, now: DateTime<Utc>) -> Vec<Entry<'_>> {
        self.namespaces.iter().flat_map(|ns| ns.entries(flags, now)).collect()
    }
}

impl NamespaceData {
    /// This namespace's workspaces with what each was derived from.
    pub fn entries(&self, flags: &OverlayFlags, now: DateTime<Utc>) -> Vec<Entry<'_>> {
        let (pods, pvcs) = (self.pods.map(|v| Index::new(v)), self.pvcs.map(|v| Index::new(v)));
        let policies = self.policies.map(|v| PolicyIndex::new(v, flags.per_sandbox_key()));
        self.sandboxes
            .iter()
            .map(|sbx| {
                let template = template_label(sbx)
                    .and_then(|t| self.templates.get(t))
                    .map_or(TemplateRead::Unreadable, TemplateFetch::as_read);
                let workspace = workspace::derive(&Inputs {
                    sandbox: sbx,
                    pods: pods.as_ref(),
                    pvcs: pvcs.as_ref(),
                    policies: policies.as_ref(),
                    template,
                    flags,
                    now,
                });
                Entry {
                    workspace,
                    sandbox: sbx,
                    template,
                }
            })
            .collect()
    }
}

/// A 404 on the Sandbox collection means agent-sandbox is missing or too old: say which.
pub(crate) async fn explain_missing(conn: &Connection, e: ClusterError) -> ClusterError {
    if e.is_not_found() {
        return match conn.check_agent_sandbox().await {
            Ok(()) => e,
            Err(why) => why,
        };
    }
    e
}

/// Run the inventory pass over `scope`.
pub async fn read(conn: &Connection, scope: &Scope, query: &Query) -> Result<Inventory, ClusterError> {
    let mut namespaces = Vec::new();
    let warnings = read_each(conn, scope, query, &mut |data| namespaces.push(data)).await?;
    Ok(Inventory { namespaces, warnings })
}

/// The inventory pass over `scope`, each namespace's data handed to `each` as soon as it is
/// complete (with `-A` the listed objects of the namespaces still to come wait packed): a caller
/// that derives and lets go never holds every namespace's objects at once. Returns the warnings.
pub async fn read_each(
    conn: &Connection,
    scope: &Scope,
    query: &Query,
    each: &mut (impl FnMut(NamespaceData) + Send),
) -> Result<Vec<String>, ClusterError> {
    read_packed(conn, scope, query, &mut |packed| each(packed.unpack())).await
}

/// The inventory pass over `scope`, each namespace handed to `each` still packed, as soon as it
/// is complete, in ascending namespace order: [`PackedNamespace::derive`] unpacks one Sandbox
/// and the few objects it reads at a time, so no namespace's objects are ever parsed at once.
/// Returns the warnings.
pub async fn read_packed(
    conn: &Connection,
    scope: &Scope,
    query: &Query,
    each: &mut (impl FnMut(PackedNamespace) + Send),
) -> Result<Vec<String>, ClusterError> {
    let mut warnings = Vec::new();
    // what the egress warning needs, noted as each namespace goes by
    let (mut forbidden, mut not_served) = (Vec::new(), 0);
    let mut take = |data: PackedNamespace| {
        match data.policies {
            PolicyRead::Forbidden => forbidden.push(data.namespace.clone()),
            PolicyRead::NotServed => not_served += data.sandboxes.iter().filter(|s| s.per_sandbox).count(),
            PolicyRead::Known(_) => {}
        }
        each(data);
    };
    match scope {
        Scope::Namespace(ns) => take(read_namespace(conn, ns, query, &mut warnings).await?),
        Scope::All => read_all(conn, query, &mut warnings, &mut take).await?,
    }
    let forbidden: Vec<&str> = forbidden.iter().map(String::as_str).collect();
    warnings.extend(super::policies::warning(&forbidden, not_served));
    Ok(warnings)
}

/// The per-sandbox egress label key the query names, else the library's.
fn per_sandbox_key(query: &Query) -> &str {
    query
        .per_sandbox_label_key
        .as_deref()
        .unwrap_or(namzu_domain::annotations::PER_SANDBOX_LABEL)
}

/// Where a Sandbox LIST's workspaces go.
fn sandboxes_for(query: &Query) -> Sandboxes {
    Sandboxes::new(per_sandbox_key(query))
}

/// Where a pod or PVC LIST's objects go (pods are found by label too).
fn objects_of(kind: &resources::ApiKind) -> Objects {
    Objects::of(kind.plural == PODS.plural)
}

/// The one selector for the pods and PVCs of Sandboxes (see the module doc).
const OWNED_BY_A_SANDBOX: &str = SANDBOX_NAME_HASH;

/// Reads by name per kind and namespace before one unfiltered LIST is cheaper.
pub(crate) const BY_NAME_LIMIT: usize = 32;

async fn read_namespace(
    conn: &Connection,
    ns: &str,
    query: &Query,
    warnings: &mut Vec<String>,
) -> Result<PackedNamespace, ClusterError> {
    let (sandboxes, pods, pvcs, policies) = tokio::join!(
        resources::list_into(
            conn,
            &SANDBOXES,
            Some(ns),
            query.selector.as_deref(),
            sandboxes_for(query)
        ),
        resources::list_into(conn, &PODS, Some(ns), Some(OWNED_BY_A_SANDBOX), objects_of(&PODS)),
        resources::list_into(conn, &PVCS, Some(ns), Some(OWNED_BY_A_SANDBOX), objects_of(&PVCS)),
        super::policies::read(conn, Some(ns)),
    );
    let sandboxes = match sandboxes {
        Ok(s) => (s.pack, s.items),
        Err(e) => return Err(explain_missing(conn, e).await),
    };
    let pods = degrade(pods, warnings, "pods", POD_EFFECT)?;
    let pvcs = degrade(pvcs, warnings, "persistentvolumeclaims", PVC_EFFECT)?;
    let mut data = complete(conn, ns, sandboxes, pods, pvcs, warnings).await?;
    data.policies = policies?;
    Ok(data)
}

const POD_EFFECT: &str = "POD, NODE and DIAGNOSIS show ?";
const PVC_EFFECT: &str = "disk diagnosis shows ?";

/// One namespace's data from its workspaces and labelled pods and PVCs: what the selector could
/// not see read by name, and the templates.
async fn complete(
    conn: &Connection,
    ns: &str,
    (sandbox_pack, sandboxes): (Arc<Pack>, Vec<PackedSandbox>),
    mut pods: Observed<Objects>,
    mut pvcs: Observed<Objects>,
    warnings: &mut Vec<String>,
) -> Result<PackedNamespace, ClusterError> {
    if let Observed::Known(list) = &mut pods {
        let wanted: Vec<String> = sandboxes
            .iter()
            .filter(|s| s.pod_expected)
            .map(|s| s.name.to_string())
            .collect();
        read_missing(conn, &PODS, ns, wanted, list).await?;
    }
    if let Observed::Known(list) = &mut pvcs {
        let wanted: Vec<String> = sandboxes.iter().flat_map(PackedSandbox::pvc_names).collect();
        read_missing(conn, &PVCS, ns, wanted, list).await?;
    }
    let names: BTreeSet<&str> = sandboxes.iter().filter_map(|s| s.template.as_deref()).collect();
    let templates = read_templates(conn, ns, names, warnings).await?;
    Ok(PackedNamespace {
        namespace: ns.to_string(),
        sandbox_pack,
        sandboxes,
        pods,
        pvcs,
        templates,
        policies: PolicyRead::NotServed,
    })
}

/// Add the objects named in `wanted` that `list` lacks: by GET, or past [`BY_NAME_LIMIT`] by one
/// unfiltered LIST of the namespace.
async fn read_missing(
    conn: &Connection,
    kind: &resources::ApiKind,
    ns: &str,
    wanted: Vec<String>,
    list: &mut Objects,
) -> Result<(), ClusterError> {
    let have: BTreeSet<&str> = list.items.iter().map(|o| &*o.name).collect();
    let missing: BTreeSet<String> = wanted.into_iter().filter(|n| !have.contains(n.as_str())).collect();
    if missing.is_empty() {
        return Ok(());
    }
    if missing.len() > BY_NAME_LIMIT {
        if conn.verbose {
            crate::errln!(
                "{} {} in {ns} lack the {OWNED_BY_A_SANDBOX} label: listing all {} of {ns} instead",
                missing.len(),
                kind.plural,
                kind.plural
            );
        }
        *list = resources::list_into(conn, kind, Some(ns), None, objects_of(kind)).await?;
        return Ok(());
    }
    if conn.verbose {
        crate::errln!(
            "reading {} {} in {ns} by name (not labelled {OWNED_BY_A_SANDBOX}): {}",
            missing.len(),
            kind.plural,
            missing.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let reads = join_all(missing.iter().map(|name| resources::get(conn, kind, ns, name))).await;
    for read in reads {
        match read {
            Ok(Some(object)) => list.push(object),
            Ok(None) => {}
            // the LIST was allowed, so this is rare: the column says what it knows
            Err(e) if e.is_forbidden() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A forbidden read becomes `?` plus one warning naming the missing permission.
fn degrade<T>(
    r: Result<T, ClusterError>,
    warnings: &mut Vec<String>,
    what: &str,
    effect: &str,
) -> Result<Observed<T>, ClusterError> {
    if let Err(ClusterError::Forbidden { op, .. }) = &r {
        warnings.push(format!(
            "warning: you may not {op}; {effect} (needs RBAC list on {what})"
        ));
    }
    observed(r)
}

async fn read_templates(
    conn: &Connection,
    ns: &str,
    names: BTreeSet<&str>,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, TemplateFetch>, ClusterError> {
    let reads = join_all(names.iter().map(|n| resources::get(conn, &TEMPLATES, ns, n))).await;
    let mut out = BTreeMap::new();
    let mut forbidden = false;
    for (name, r) in names.into_iter().zip(reads) {
        let fetch = match r {
            Ok(Some(t)) => TemplateFetch::Found(t),
            Ok(None) => TemplateFetch::NotFound,
            Err(ClusterError::Forbidden { .. }) => {
                forbidden = true;
                TemplateFetch::Unreadable
            }
            Err(e @ (ClusterError::Timeout { .. } | ClusterError::Unreachable { .. })) => {
                return Err(e);
            }
            Err(e) => {
                warnings.push(format!(
                    "warning: reading SandboxTemplate {ns}/{name} failed: {e}; DRIFT shows ?"
                ));
                TemplateFetch::Unreadable
            }
        };
        out.insert(name.to_string(), fetch);
    }
    if forbidden {
        warnings.push(format!(
            "warning: you may not get sandboxtemplates.extensions.agents.x-k8s.io in namespace {ns}; DRIFT shows ? (needs RBAC get on sandboxtemplates)"
        ));
    }
    Ok(out)
}

async fn read_all(
    conn: &Connection,
    query: &Query,
    warnings: &mut Vec<String>,
    each: &mut (impl FnMut(PackedNamespace) + Send),
) -> Result<(), ClusterError> {
    let listed = resources::list_into(conn, &SANDBOXES, None, query.selector.as_deref(), sandboxes_for(query)).await;
    match listed {
        Ok(Sandboxes {
            pack,
            namespaces,
            items,
            ..
        }) => {
            let mut by_ns = by_namespace(items, |s| namespaces.name(s.namespace));
            let namespaces: Vec<String> = by_ns.keys().cloned().collect();
            let (pods, pvcs, policies) = tokio::join!(
                resources::list_into(conn, &PODS, None, Some(OWNED_BY_A_SANDBOX), objects_of(&PODS)),
                resources::list_into(conn, &PVCS, None, Some(OWNED_BY_A_SANDBOX), objects_of(&PVCS)),
                super::policies::read(conn, None),
            );
            let mut pods = split_or_fallback(conn, pods, &PODS, &namespaces, warnings).await?;
            let mut pvcs = split_or_fallback(conn, pvcs, &PVCS, &namespaces, warnings).await?;
            let mut policies = split_policies(conn, policies?, &namespaces).await?;
            // one namespace at a time completed, handed on, let go
            for ns in namespaces {
                let sandboxes = (pack.clone(), by_ns.remove(&ns).unwrap_or_default());
                let take = |split: &mut BTreeMap<String, Observed<Objects>>, kind| {
                    split.remove(&ns).unwrap_or_else(|| Observed::Known(objects_of(kind)))
                };
                let (ns_pods, ns_pvcs) = (take(&mut pods, &PODS), take(&mut pvcs, &PVCS));
                let mut data = complete(conn, &ns, sandboxes, ns_pods, ns_pvcs, warnings).await?;
                data.policies = policies.remove(&ns).unwrap_or(PolicyRead::Known(Vec::new()));
                each(data);
            }
            Ok(())
        }
        Err(ClusterError::Forbidden { .. }) => {
            let mut namespaces: Vec<String> = match resources::list(conn, &NAMESPACES, None, None).await {
                Ok(list) => list.iter().map(|n| namzu_domain::object::name(n).to_string()).collect(),
                Err(ClusterError::Forbidden { .. }) => {
                    warnings.push(format!(
                        "warning: you may not list sandboxes or namespaces cluster-wide; showing namespace {} only",
                        conn.namespace
                    ));
                    vec![conn.namespace.clone()]
                }
                Err(e) => return Err(e),
            };
            // in name order, as the cluster-wide read hands them on (an API server lists them so)
            namespaces.sort();
            namespaces.dedup();
            // as kubectl: when nothing at all could be read, the refusal is the answer (exit 1),
            // not a warning over an empty list
            let (mut read_any, mut refused) = (false, Vec::new());
            for ns in namespaces {
                match read_namespace(conn, &ns, query, warnings).await {
                    Ok(data) if data.sandboxes.is_empty() => read_any = true,
                    Ok(data) => {
                        read_any = true;
                        each(data)
                    }
                    Err(e @ ClusterError::Forbidden { .. }) => refused.push(e),
                    Err(e) => return Err(e),
                }
            }
            if !read_any && !refused.is_empty() {
                warnings.clear();
                return Err(refused.swap_remove(0));
            }
            for e in refused {
                if let ClusterError::Forbidden { op, .. } = e {
                    warnings.push(format!("warning: you may not {op}; skipped"));
                }
            }
            Ok(())
        }
        Err(e) => Err(explain_missing(conn, e).await),
    }
}

/// Split a cluster-wide list by namespace; if it was forbidden, list per namespace instead.
async fn split_or_fallback(
    conn: &Connection,
    r: Result<Objects, ClusterError>,
    kind: &resources::ApiKind,
    namespaces: &[String],
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, Observed<Objects>>, ClusterError> {
    let mut out: BTreeMap<String, Observed<Objects>> = BTreeMap::new();
    match r {
        Ok(items) => {
            let mut by_ns = items.by_namespace();
            for ns in namespaces {
                out.insert(ns.clone(), Observed::Known(by_ns.remove(ns).unwrap_or_default()));
            }
        }
        Err(ClusterError::Forbidden { .. }) => {
            for ns in namespaces {
                let r = resources::list_into(conn, kind, Some(ns), Some(OWNED_BY_A_SANDBOX), objects_of(kind)).await;
                let effect = if kind.plural == "pods" { POD_EFFECT } else { PVC_EFFECT };
                out.insert(ns.clone(), degrade(r, warnings, kind.plural, effect)?);
            }
        }
        Err(e) => return Err(e),
    }
    Ok(out)
}

/// Split a cluster-wide policy list by namespace; if it was forbidden, list per namespace instead.
async fn split_policies(
    conn: &Connection,
    read: PolicyRead<Vec<Value>>,
    namespaces: &[String],
) -> Result<BTreeMap<String, PolicyRead<Vec<Value>>>, ClusterError> {
    let mut out: BTreeMap<String, PolicyRead<Vec<Value>>> = BTreeMap::new();
    match read {
        PolicyRead::Known(items) => {
            for ns in namespaces {
                out.insert(ns.clone(), PolicyRead::Known(Vec::new()));
            }
            for item in items {
                if let Some(PolicyRead::Known(v)) = out.get_mut(namespace(&item)) {
                    v.push(item);
                }
            }
        }
        PolicyRead::NotServed => {
            for ns in namespaces {
                out.insert(ns.clone(), PolicyRead::NotServed);
            }
        }
        PolicyRead::Forbidden => {
            for ns in namespaces {
                out.insert(ns.clone(), super::policies::read(conn, Some(ns)).await?);
            }
        }
    }
    Ok(out)
}
