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
use crate::domain::drift::{OverlayFlags, TemplateRead};
use crate::domain::egress::{PolicyIndex, PolicyRead};
use crate::domain::keys::SANDBOX_NAME_HASH;
use crate::domain::naming::{is_workspace, template_label};
use crate::domain::object::namespace;
use crate::domain::pod::{Index, pod_expected};
use crate::domain::workspace::{self, Inputs, Observed, Workspace};
use chrono::{DateTime, Utc};
use futures::future::join_all;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

pub use crate::domain::drift::TemplateFetch;

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
    pub fn entries(&self, flags: &OverlayFlags, now: DateTime<Utc>) -> Vec<Entry<'_>> {
        self.namespaces.iter().flat_map(|ns| ns.entries(flags, now)).collect()
    }
}

impl NamespaceData {
    /// This namespace's workspaces that `keep` accepts; its objects go with it.
    pub fn into_workspaces(
        self,
        flags: &OverlayFlags,
        now: DateTime<Utc>,
        keep: impl Fn(&Workspace) -> bool,
    ) -> Vec<Workspace> {
        self.entries(flags, now)
            .into_iter()
            .map(|e| e.workspace)
            .filter(|w| keep(w))
            .collect()
    }

    /// This namespace's workspaces with what each was derived from.
    fn entries(&self, flags: &OverlayFlags, now: DateTime<Utc>) -> Vec<Entry<'_>> {
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

/// The workspaces a selection picks in `scope`, as (namespace, id), in namespace then list
/// order: derived one namespace (and one Sandbox) at a time, never a whole pass at once. A
/// Sandbox named `namzu-ws-<not an id>` is listed, never written: it is skipped with a warning
/// after the read's own.
pub async fn select(
    conn: &Connection,
    scope: &Scope,
    query: &Query,
    flags: &OverlayFlags,
    now: DateTime<Utc>,
    keep: &(impl Fn(&Workspace) -> bool + Sync),
) -> Result<(Vec<String>, Vec<(String, crate::domain::naming::WorkspaceId)>), ClusterError> {
    let (mut targets, mut skipped) = (Vec::new(), Vec::new());
    let mut warnings = read_packed(conn, scope, query, &mut |packed| {
        packed.derive(flags, now, |w| {
            if keep(&w) {
                match crate::domain::naming::WorkspaceId::parse(&w.id) {
                    Ok(id) => targets.push((w.namespace, id)),
                    Err(e) => skipped.push(format!("skipped: {e}")),
                }
            }
        })
    })
    .await?;
    warnings.extend(skipped);
    Ok((warnings, targets))
}

/// A workspace Sandbox packed, with what the pass reads of it before it is derived.
#[derive(Debug)]
struct PackedSandbox {
    /// Its namespace's number in the list's table.
    namespace: u32,
    name: Box<str>,
    held: Held,
    /// `pod_expected`: its pod is read by name when the selector missed it.
    pod_expected: bool,
    /// It carries the per-sandbox egress label (the query's key) on its pod template.
    per_sandbox: bool,
    /// Its `volumeClaimTemplates` entries' names ([`joined`]): its PVCs are `<entry>-<name>`.
    claims: Box<str>,
    template: Option<Box<str>>,
}

impl PackedSandbox {
    /// `pod::pvc_names`.
    fn pvc_names(&self) -> impl Iterator<Item = String> + '_ {
        parts(&self.claims).map(move |entry| format!("{entry}-{}", self.name))
    }
}

/// Strings in one: each as its length in bytes, `:`, and itself (any text, split exactly).
fn joined<'a>(parts: impl Iterator<Item = &'a str>) -> Box<str> {
    let mut out = String::new();
    for p in parts {
        out.push_str(&p.len().to_string());
        out.push(':');
        out.push_str(p);
    }
    out.into_boxed_str()
}

/// The strings [`joined`] put in `s`.
fn parts(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = s;
    std::iter::from_fn(move || {
        let (len, tail) = rest.split_once(':')?;
        let len: usize = len.parse().ok()?;
        let part = tail.get(..len)?;
        rest = &tail[len..];
        Some(part)
    })
}

/// An object as a pass holds it: packed with its list's [`Pack`], or (read by name after the
/// list was split by namespace) whole.
#[derive(Debug)]
enum Held {
    Packed(Packed),
    Whole(Box<Value>),
}

impl Held {
    fn new(pack: &mut Arc<Pack>, item: &Value) -> Held {
        match Arc::get_mut(pack) {
            Some(pack) => Held::Packed(pack.pack(item)),
            None => Held::Whole(Box::new(item.clone())),
        }
    }

    fn unpack(&self, pack: &Pack) -> Option<Value> {
        match self {
            Held::Packed(p) => pack.unpack(p),
            Held::Whole(v) => Some((**v).clone()),
        }
    }
}

/// The namespaces of a list, each once, numbered as they first come.
#[derive(Debug, Default, Clone)]
struct Namespaces(Vec<Box<str>>);

impl Namespaces {
    fn number(&mut self, ns: &str) -> u32 {
        // a list comes namespace by namespace: the last one is nearly always the one
        let found = self.0.iter().rposition(|n| &**n == ns);
        let n = found.unwrap_or_else(|| {
            self.0.push(ns.into());
            self.0.len() - 1
        });
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    fn name(&self, n: u32) -> &str {
        self.0.get(n as usize).map_or("", |n| n)
    }
}

/// The workspace Sandboxes of a LIST, packed; the others are not kept.
#[derive(Debug, Default)]
struct Sandboxes {
    /// The per-sandbox egress label key, noted on each Sandbox for the egress warning.
    per_sandbox_key: Arc<str>,
    pack: Arc<Pack>,
    namespaces: Namespaces,
    items: Vec<PackedSandbox>,
}

impl Sandboxes {
    fn new(per_sandbox_key: &str) -> Sandboxes {
        Sandboxes {
            per_sandbox_key: per_sandbox_key.into(),
            ..Default::default()
        }
    }
}

impl ListItems for Sandboxes {
    fn push(&mut self, item: Value) {
        if !is_workspace(&item) {
            return;
        }
        let claims = crate::domain::pod::claims(&item);
        self.items.push(PackedSandbox {
            namespace: self.namespaces.number(namespace(&item)),
            name: crate::domain::object::name(&item).into(),
            pod_expected: pod_expected(&item),
            per_sandbox: crate::domain::egress::pod_label(&item, &self.per_sandbox_key).is_some(),
            claims: joined(claims.iter().map(|(entry, _)| entry.as_str())),
            template: template_label(&item).map(Into::into),
            held: Held::new(&mut self.pack, &item),
        });
    }

    fn emptied(&self) -> Self {
        Sandboxes::new(&self.per_sandbox_key)
    }
}

/// A pod or PVC packed, with what finding it by name or label needs.
#[derive(Debug)]
struct PackedObject {
    namespace: u32,
    name: Box<str>,
    /// Its labels ([`joined`]: key, value, key, value …) where they are looked up by.
    labels: Box<str>,
    /// A pod in phase Pending (capacity counts them).
    pending: bool,
    held: Held,
}

/// Listed pods or PVCs, packed, in list order.
#[derive(Debug, Default)]
struct Objects {
    /// Pods are found by label too; PVCs only by name.
    labels: bool,
    pack: Arc<Pack>,
    namespaces: Namespaces,
    items: Vec<PackedObject>,
}

impl ListItems for Objects {
    fn push(&mut self, item: Value) {
        let labels = match crate::domain::object::at(&item, &["metadata", "labels"]).and_then(Value::as_object) {
            Some(labels) if self.labels => joined(
                labels
                    .iter()
                    .filter_map(|(k, v)| Some([k.as_str(), v.as_str()?]))
                    .flatten(),
            ),
            _ => Box::default(),
        };
        self.items.push(PackedObject {
            namespace: self.namespaces.number(namespace(&item)),
            name: crate::domain::object::name(&item).into(),
            labels,
            pending: crate::domain::pod::phase(&item) == "Pending",
            held: Held::new(&mut self.pack, &item),
        });
    }

    fn emptied(&self) -> Self {
        Objects::of(self.labels)
    }
}

/// Split packed items by namespace, list order kept within each.
fn by_namespace<'n, T>(items: Vec<T>, ns: impl Fn(&T) -> &'n str) -> BTreeMap<String, Vec<T>> {
    let mut out: BTreeMap<String, Vec<T>> = BTreeMap::new();
    for item in items {
        match out.get_mut(ns(&item)) {
            Some(v) => v.push(item),
            None => {
                out.insert(ns(&item).to_string(), vec![item]);
            }
        }
    }
    out
}

impl Objects {
    /// Pods (found by label too) or PVCs.
    fn of(labels: bool) -> Objects {
        Objects {
            labels,
            ..Default::default()
        }
    }

    fn unpack(self) -> Vec<Value> {
        self.items.iter().filter_map(|o| o.held.unpack(&self.pack)).collect()
    }

    /// The pods in phase Pending.
    fn pending(&self) -> usize {
        self.items.iter().filter(|o| o.pending).count()
    }

    /// Each namespace's objects, the pack shared.
    fn by_namespace(self) -> BTreeMap<String, Objects> {
        let Objects {
            labels,
            pack,
            namespaces,
            items,
        } = self;
        by_namespace(items, |o| namespaces.name(o.namespace))
            .into_iter()
            .map(|(ns, items)| {
                let pack = pack.clone();
                let namespaces = Namespaces(vec![ns.as_str().into()]);
                let items = items.into_iter().map(|o| PackedObject { namespace: 0, ..o }).collect();
                (
                    ns,
                    Objects {
                        labels,
                        pack,
                        namespaces,
                        items,
                    },
                )
            })
            .collect()
    }
}

/// Where one namespace's objects are found by name and label, without unpacking them.
struct Lookup<'a> {
    pack: &'a Pack,
    objects: &'a [PackedObject],
    by_name: HashMap<&'a str, usize>,
    by_label: HashMap<(&'a str, &'a str), Vec<usize>>,
}

impl<'a> Lookup<'a> {
    fn new(objects: &'a Objects, labels: bool) -> Lookup<'a> {
        let mut by_label: HashMap<(&'a str, &'a str), Vec<usize>> = HashMap::new();
        if labels {
            for (i, o) in objects.items.iter().enumerate() {
                let mut kv = parts(&o.labels);
                while let (Some(k), Some(v)) = (kv.next(), kv.next()) {
                    by_label.entry((k, v)).or_default().push(i);
                }
            }
        }
        Lookup {
            pack: &objects.pack,
            objects: &objects.items,
            // as `pod::Index`: the last of a name wins
            by_name: objects.items.iter().enumerate().map(|(i, o)| (&*o.name, i)).collect(),
            by_label,
        }
    }

    /// The objects at `at` (list order, each once), unpacked.
    fn unpack(&self, mut at: Vec<usize>) -> Vec<Value> {
        at.sort_unstable();
        at.dedup();
        at.into_iter()
            .filter_map(|i| self.objects[i].held.unpack(self.pack))
            .collect()
    }
}

/// One namespace's objects as read, held packed until each Sandbox's turn.
#[derive(Debug)]
pub struct PackedNamespace {
    pub namespace: String,
    sandbox_pack: Arc<Pack>,
    sandboxes: Vec<PackedSandbox>,
    pods: Observed<Objects>,
    pvcs: Observed<Objects>,
    templates: BTreeMap<String, TemplateFetch>,
    policies: PolicyRead<Vec<Value>>,
}

impl PackedNamespace {
    /// Its pods in phase Pending; `None` when pods may not be listed.
    pub fn pending_pods(&self) -> Option<usize> {
        self.pods.known().map(Objects::pending)
    }

    /// Everything it read, parsed.
    pub fn unpack(self) -> NamespaceData {
        let unpack = |o: Observed<Objects>| match o {
            Observed::Known(o) => Observed::Known(o.unpack()),
            Observed::Forbidden => Observed::Forbidden,
        };
        NamespaceData {
            namespace: self.namespace,
            sandboxes: self
                .sandboxes
                .iter()
                .filter_map(|s| s.held.unpack(&self.sandbox_pack))
                .collect(),
            pods: unpack(self.pods),
            pvcs: unpack(self.pvcs),
            templates: self.templates,
            policies: self.policies,
        }
    }

    /// Derive its workspaces in list order, each handed to `each` and its Sandbox let go: one
    /// Sandbox and the pods and PVCs its derivation can read (its pod by name, the pods its
    /// `status.selector` matches, its disks by name) are unpacked at a time. The rows are the
    /// ones [`NamespaceData`]'s derivation gives: the same lookups find the same objects.
    pub fn derive(self, flags: &OverlayFlags, now: DateTime<Utc>, mut each: impl FnMut(Workspace)) {
        let PackedNamespace {
            sandbox_pack,
            sandboxes,
            pods,
            pvcs,
            templates,
            policies,
            ..
        } = self;
        let pods = pods.map(|p| Lookup::new(p, true));
        let pvcs = pvcs.map(|p| Lookup::new(p, false));
        let policies = policies.map(|v| PolicyIndex::new(v, flags.per_sandbox_key()));
        // each Sandbox's text let go once it is derived
        for packed in sandboxes {
            let Some(sbx) = packed.held.unpack(&sandbox_pack) else {
                continue;
            };
            let own_pods = pods.as_ref().map(|l| {
                let mut at: Vec<usize> = l.by_name.get(&*packed.name).copied().into_iter().collect();
                if let Some((k, v)) =
                    crate::domain::object::str_at(&sbx, &["status", "selector"]).and_then(|s| s.split_once('='))
                {
                    at.extend(l.by_label.get(&(k, v)).into_iter().flatten().copied());
                }
                l.unpack(at)
            });
            let own_pvcs = pvcs.as_ref().map(|l| {
                // every `<entry>-<sandbox>` name the derivation may look up
                let entries = crate::domain::object::at(&sbx, &["spec", "volumeClaimTemplates"])
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[]);
                let at = entries
                    .iter()
                    .filter_map(|e| crate::domain::object::str_at(e, &["metadata", "name"]))
                    .filter_map(|entry| l.by_name.get(format!("{entry}-{}", packed.name).as_str()).copied())
                    .collect();
                l.unpack(at)
            });
            let (pod_index, pvc_index) = (own_pods.map(|v| Index::new(v)), own_pvcs.map(|v| Index::new(v)));
            let template = packed
                .template
                .as_deref()
                .and_then(|t| templates.get(t))
                .map_or(TemplateRead::Unreadable, TemplateFetch::as_read);
            each(workspace::derive(&Inputs {
                sandbox: &sbx,
                pods: pod_index.as_ref(),
                pvcs: pvc_index.as_ref(),
                policies: policies.as_ref(),
                template,
                flags,
                now,
            }));
        }
    }
}

/// The per-sandbox egress label key the query names, else the library's.
fn per_sandbox_key(query: &Query) -> &str {
    query
        .per_sandbox_label_key
        .as_deref()
        .unwrap_or(crate::domain::keys::PER_SANDBOX_LABEL)
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
pub const BY_NAME_LIMIT: usize = 32;

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
                Ok(list) => list
                    .iter()
                    .map(|n| crate::domain::object::name(n).to_string())
                    .collect(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_strings_split_exactly_whatever_they_hold() {
        let strings = ["", "a", "12:3", "x:y:", "ünï:cødé", "9", "\n", ""];
        let all = joined(strings.iter().copied());
        assert_eq!(parts(&all).collect::<Vec<_>>(), strings);
        assert_eq!(parts(&joined(std::iter::empty())).count(), 0);
    }

    #[test]
    fn namespaces_are_numbered_once_in_the_order_they_come() {
        let mut ns = Namespaces::default();
        let numbers: Vec<u32> = ["b", "b", "a", "b", "c", "a"].iter().map(|n| ns.number(n)).collect();
        assert_eq!(numbers, [0, 0, 1, 0, 2, 1]);
        assert_eq!((ns.name(1), ns.name(2), ns.name(9)), ("a", "c", ""));
    }
}
