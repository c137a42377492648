//! The inventory pass (docs/ARCHITECTURE.md, "One list"; docs/interop.md §1): per namespace LIST sandboxes + LIST pods + LIST PVCs + one
//! GET per distinct template name — constant in the number of workspaces. A 403 on pods, PVCs or
//! templates degrades those columns with one warning; `-A` lists cluster-wide when allowed and
//! falls back per namespace.

use super::connect::Connection;
use super::error::{ClusterError, observed};
use super::resources::{self, NAMESPACES, PODS, PVCS, SANDBOXES, TEMPLATES};
use crate::domain::drift::{OverlayFlags, TemplateRead};
use crate::domain::naming::{is_workspace, template_label};
use crate::domain::object::namespace;
use crate::domain::pod::Index;
use crate::domain::workspace::{self, Inputs, Observed, Workspace};
use chrono::{DateTime, Utc};
use futures::future::join_all;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What reading one template gave.
#[derive(Debug, Clone)]
pub enum TemplateFetch {
    Found(Value),
    NotFound,
    /// Forbidden, or the read failed.
    Unreadable,
}

impl TemplateFetch {
    pub fn as_read(&self) -> TemplateRead<'_> {
        match self {
            TemplateFetch::Found(t) => TemplateRead::Found(t),
            TemplateFetch::NotFound => TemplateRead::NotFound,
            TemplateFetch::Unreadable => TemplateRead::Unreadable,
        }
    }
}

/// Everything one namespace's inventory pass read.
#[derive(Debug, Clone)]
pub struct NamespaceData {
    pub namespace: String,
    /// Workspace Sandboxes only.
    pub sandboxes: Vec<Value>,
    pub pods: Observed<Vec<Value>>,
    pub pvcs: Observed<Vec<Value>>,
    pub templates: BTreeMap<String, TemplateFetch>,
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
}

impl Inventory {
    /// Derive every workspace, in namespace then name order.
    pub fn workspaces(&self, flags: &OverlayFlags, now: DateTime<Utc>) -> Vec<Workspace> {
        self.entries(flags, now).into_iter().map(|e| e.workspace).collect()
    }

    /// Every workspace with the Sandbox and template it was derived from.
    pub fn entries(&self, flags: &OverlayFlags, now: DateTime<Utc>) -> Vec<Entry<'_>> {
        let mut out = Vec::new();
        for ns in &self.namespaces {
            let (pods, pvcs) = (ns.pods.map(|v| Index::new(v)), ns.pvcs.map(|v| Index::new(v)));
            for sbx in &ns.sandboxes {
                let template = template_label(sbx)
                    .and_then(|t| ns.templates.get(t))
                    .map_or(TemplateRead::Unreadable, TemplateFetch::as_read);
                let workspace = workspace::derive(&Inputs {
                    sandbox: sbx,
                    pods: pods.as_ref(),
                    pvcs: pvcs.as_ref(),
                    template,
                    flags,
                    now,
                });
                out.push(Entry {
                    workspace,
                    sandbox: sbx,
                    template,
                });
            }
        }
        out
    }
}

/// A 404 on the Sandbox collection means agent-sandbox is missing or too old: say which.
async fn explain_missing(conn: &Connection, e: ClusterError) -> ClusterError {
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
    let mut inv = Inventory::default();
    match scope {
        Scope::Namespace(ns) => {
            let data = read_namespace(conn, ns, query, &mut inv.warnings).await?;
            inv.namespaces.push(data);
        }
        Scope::All => read_all(conn, query, &mut inv).await?,
    }
    Ok(inv)
}

async fn read_namespace(
    conn: &Connection,
    ns: &str,
    query: &Query,
    warnings: &mut Vec<String>,
) -> Result<NamespaceData, ClusterError> {
    let (sandboxes, pods, pvcs) = tokio::join!(
        resources::list(conn, &SANDBOXES, Some(ns), query.selector.as_deref()),
        resources::list(conn, &PODS, Some(ns), None),
        resources::list(conn, &PVCS, Some(ns), None),
    );
    let sandboxes = match sandboxes {
        Ok(s) => s.into_iter().filter(is_workspace).collect::<Vec<_>>(),
        Err(e) => return Err(explain_missing(conn, e).await),
    };
    let pods = degrade(pods, warnings, "pods", "POD, NODE and DIAGNOSIS show ?")?;
    let pvcs = degrade(pvcs, warnings, "persistentvolumeclaims", "disk diagnosis shows ?")?;
    let templates = read_templates(conn, ns, &sandboxes, warnings).await?;
    Ok(NamespaceData {
        namespace: ns.to_string(),
        sandboxes,
        pods,
        pvcs,
        templates,
    })
}

/// A forbidden read becomes `?` plus one warning naming the missing permission.
fn degrade(
    r: Result<Vec<Value>, ClusterError>,
    warnings: &mut Vec<String>,
    what: &str,
    effect: &str,
) -> Result<Observed<Vec<Value>>, ClusterError> {
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
    sandboxes: &[Value],
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, TemplateFetch>, ClusterError> {
    let names: BTreeSet<&str> = sandboxes.iter().filter_map(template_label).collect();
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

async fn read_all(conn: &Connection, query: &Query, inv: &mut Inventory) -> Result<(), ClusterError> {
    match resources::list(conn, &SANDBOXES, None, query.selector.as_deref()).await {
        Ok(all) => {
            let mut by_ns: BTreeMap<String, Vec<Value>> = BTreeMap::new();
            for s in all.into_iter().filter(is_workspace) {
                by_ns.entry(namespace(&s).to_string()).or_default().push(s);
            }
            let (pods, pvcs) = tokio::join!(
                resources::list(conn, &PODS, None, None),
                resources::list(conn, &PVCS, None, None),
            );
            let mut pods = split_or_fallback(conn, pods, &PODS, &by_ns, &mut inv.warnings).await?;
            let mut pvcs = split_or_fallback(conn, pvcs, &PVCS, &by_ns, &mut inv.warnings).await?;
            for (ns, sandboxes) in by_ns {
                let templates = read_templates(conn, &ns, &sandboxes, &mut inv.warnings).await?;
                inv.namespaces.push(NamespaceData {
                    pods: pods.remove(&ns).unwrap_or(Observed::Known(Vec::new())),
                    pvcs: pvcs.remove(&ns).unwrap_or(Observed::Known(Vec::new())),
                    namespace: ns,
                    sandboxes,
                    templates,
                });
            }
            Ok(())
        }
        Err(ClusterError::Forbidden { .. }) => {
            let namespaces = match resources::list(conn, &NAMESPACES, None, None).await {
                Ok(list) => list
                    .iter()
                    .map(|n| crate::domain::object::name(n).to_string())
                    .collect(),
                Err(ClusterError::Forbidden { .. }) => {
                    inv.warnings.push(format!(
                        "warning: you may not list sandboxes or namespaces cluster-wide; showing namespace {} only",
                        conn.namespace
                    ));
                    vec![conn.namespace.clone()]
                }
                Err(e) => return Err(e),
            };
            for ns in namespaces {
                match read_namespace(conn, &ns, query, &mut inv.warnings).await {
                    Ok(data) => inv.namespaces.push(data),
                    Err(ClusterError::Forbidden { op, .. }) => {
                        inv.warnings.push(format!("warning: you may not {op}; skipped"));
                    }
                    Err(e) => return Err(e),
                }
            }
            inv.namespaces.retain(|n| !n.sandboxes.is_empty());
            Ok(())
        }
        Err(e) => Err(explain_missing(conn, e).await),
    }
}

/// Split a cluster-wide list by namespace; if it was forbidden, list per namespace instead.
async fn split_or_fallback(
    conn: &Connection,
    r: Result<Vec<Value>, ClusterError>,
    kind: &resources::Kind,
    by_ns: &BTreeMap<String, Vec<Value>>,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, Observed<Vec<Value>>>, ClusterError> {
    let mut out: BTreeMap<String, Observed<Vec<Value>>> = BTreeMap::new();
    match r {
        Ok(items) => {
            for ns in by_ns.keys() {
                out.insert(ns.clone(), Observed::Known(Vec::new()));
            }
            for item in items {
                if let Some(Observed::Known(v)) = out.get_mut(namespace(&item)) {
                    v.push(item);
                }
            }
        }
        Err(ClusterError::Forbidden { .. }) => {
            for ns in by_ns.keys() {
                let r = resources::list(conn, kind, Some(ns), None).await;
                let effect = if kind.plural == "pods" {
                    "POD, NODE and DIAGNOSIS show ?"
                } else {
                    "disk diagnosis shows ?"
                };
                out.insert(ns.clone(), degrade(r, warnings, kind.plural, effect)?);
            }
        }
        Err(e) => return Err(e),
    }
    Ok(out)
}
