//! The inventory as watch events keep it: the Sandboxes, pods, PVCs and templates of a scope by
//! namespace and name, and which workspaces each change touches, so that a change re-derives
//! only those rows. Pure: objects come in as the API served them, rows go out.
//!
//! Which rows an object touches follows the rules the derivation reads by (`pod::find`,
//! `pod::pvc_names`, the template label): a pod touches the Sandbox it is named after (or that
//! names it in the legacy pod-name annotation) and the Sandboxes whose `status.selector` it
//! matches; a PVC the Sandboxes whose claim names it; a template the Sandboxes labelled with it.

use super::annotations::SANDBOX_NAME_HASH;
use super::drift::{OverlayFlags, TemplateFetch};
use super::egress::{PolicyIndex, PolicyRead, selected_sandboxes};
use super::naming::{WorkspaceKey, id_of, is_workspace, template_label};
use super::object::{name, namespace, str_at};
use super::pod::{Index, pod_expected, pod_name, pvc_names};
use super::workspace::{Inputs, Observed, Workspace, derive};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// The kinds a mirror holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Sandboxes,
    Pods,
    Pvcs,
    Templates,
    /// CiliumNetworkPolicies (per-sandbox egress).
    Policies,
}

impl Kind {
    /// As a watch's status and `-v` name it.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Sandboxes => "sandboxes",
            Kind::Pods => "pods",
            Kind::Pvcs => "pvcs",
            Kind::Templates => "templates",
            Kind::Policies => "policies",
        }
    }
}

/// An object of any kind by namespace and name (what a list held, a template to read).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: &str, name: &str) -> ObjectKey {
        ObjectKey {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The key of a listed object, by its metadata.
    pub fn of(object: &Value) -> ObjectKey {
        ObjectKey::new(crate::object::namespace(object), crate::object::name(object))
    }
}

/// A listed object held as its compact JSON text until the mirror takes it: a LIST's items, all
/// of them at once, cost their text and not their parsed trees (at 50,000 workspaces the trees
/// of the first lists were ~0.5 GB at once). Parsed one at a time as they are applied.
/// The text is shared: the recording's tap keeps the same one as its last state of the object
/// (`cluster/live/tap.rs`), not a copy.
#[derive(Debug, Clone)]
pub struct Listed {
    pub key: ObjectKey,
    text: Arc<str>,
}

impl Listed {
    pub fn of(object: &Value) -> Listed {
        Listed {
            key: ObjectKey::of(object),
            text: object.to_string().into(),
        }
    }

    /// The object's compact JSON text.
    pub fn text(&self) -> &Arc<str> {
        &self.text
    }

    /// The object again (its text is this type's own serialisation: it parses).
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_default()
    }
}

impl From<Value> for Listed {
    fn from(object: Value) -> Listed {
        Listed::of(&object)
    }
}

/// A Sandbox by namespace and name: how the mirror indexes the objects a row reads. The row
/// itself, once derived or removed, is named by its [`WorkspaceKey`] (the id, not the name).
pub type SandboxKey = ObjectKey;

/// What the rows on screen must do after a change.
#[derive(Debug, Clone, PartialEq)]
pub enum RowChange {
    Upsert(Box<Workspace>),
    /// The workspace is gone (its key names no context: the follow that reports it does).
    Remove(WorkspaceKey),
}

/// Name → sandbox names that read it (almost always one).
type Refs = HashMap<String, Vec<String>>;

/// An object kept as its compact JSON text: a fraction of the memory of a parsed `Value` (a
/// watched cluster holds thousands); parsed again only when a row that reads it is derived.
#[derive(Debug, Clone)]
struct Compact(Arc<str>);

impl Compact {
    fn of(v: &Value) -> Compact {
        Compact(v.to_string().into())
    }

    /// The object again. The text is this type's own serialisation, so it parses; `Null` would
    /// only mean a bug, and derives an empty row rather than ending the UI.
    fn value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or_default()
    }
}

/// One namespace's objects and the reverse references from pods, PVCs and templates to the
/// Sandboxes that read them.
#[derive(Debug, Default)]
struct Space {
    sandboxes: BTreeMap<String, Compact>,
    /// Sandboxes that are not workspaces (warm pool members, claimed Sandboxes), pruned to what
    /// the pulse reads of them (`projection::PULSE_SANDBOX`): no row reads them.
    others: BTreeMap<String, Compact>,
    pods: HashMap<String, Compact>,
    pvcs: HashMap<String, Compact>,
    /// Few, and read by every row derived: kept parsed.
    templates: HashMap<String, Value>,
    policies: HashMap<String, Compact>,
    /// Objects the selectors cannot see, read by name (a foreign pod, an unlabelled disk).
    pods_by_name: HashMap<String, Compact>,
    pvcs_by_name: HashMap<String, Compact>,
    /// Templates read one by one where they cannot be listed.
    template_reads: HashMap<String, TemplateFetch>,
    by_pod_name: Refs,
    by_selector: Refs,
    by_pvc: Refs,
    by_template: Refs,
    /// Pods by their `agents.x-k8s.io/sandbox-name-hash` value, for `status.selector`.
    pods_by_hash: Refs,
    /// Per-sandbox policies by the Sandbox name their selector names.
    policies_by_sandbox: Refs,
    /// Kinds read in this namespace alone, and how (where they cannot be read cluster-wide).
    sources: HashMap<Kind, Readable>,
}

fn link(refs: &mut Refs, target: String, sandbox: &str) {
    let readers = refs.entry(target).or_default();
    if !readers.iter().any(|r| r == sandbox) {
        readers.push(sandbox.to_string());
    }
}

fn unlink(refs: &mut Refs, target: &str, sandbox: &str) {
    if let Some(readers) = refs.get_mut(target) {
        readers.retain(|r| r != sandbox);
        if readers.is_empty() {
            refs.remove(target);
        }
    }
}

fn readers(refs: &Refs, target: &str) -> BTreeSet<String> {
    refs.get(target).into_iter().flatten().cloned().collect()
}

/// What a Sandbox reads by: its pod's name, its selector, its disks, its template.
fn reads_of(sbx: &Value) -> (String, Option<String>, Vec<String>, Option<String>) {
    (
        pod_name(sbx).to_string(),
        str_at(sbx, &["status", "selector"]).map(str::to_string),
        pvc_names(sbx),
        template_label(sbx).map(str::to_string),
    )
}

impl Space {
    fn index_sandbox(&mut self, sbx: &Value, add: bool) {
        let n = name(sbx).to_string();
        let (pod, selector, pvcs, template) = reads_of(sbx);
        let edit = |refs: &mut Refs, target: String| {
            if add {
                link(refs, target, &n)
            } else {
                unlink(refs, &target, &n)
            }
        };
        edit(&mut self.by_pod_name, pod);
        if let Some(s) = selector {
            edit(&mut self.by_selector, s);
        }
        for p in pvcs {
            edit(&mut self.by_pvc, p);
        }
        if let Some(t) = template {
            edit(&mut self.by_template, t);
        }
    }

    /// The Sandboxes a pod touches.
    fn readers_of_pod(&self, pod: &Value) -> BTreeSet<String> {
        let mut out = readers(&self.by_pod_name, name(pod));
        if let Some(labels) = pod.pointer("/metadata/labels").and_then(Value::as_object) {
            for (k, v) in labels {
                if let Some(v) = v.as_str() {
                    out.extend(readers(&self.by_selector, &format!("{k}={v}")));
                }
            }
        }
        out
    }

    fn hash_of(pod: &Value) -> Option<String> {
        str_at(pod, &["metadata", "labels", SANDBOX_NAME_HASH]).map(str::to_string)
    }

    /// The few pods and PVCs one Sandbox's derivation can read, in the order a list gives.
    fn inputs_of(&self, sbx: &Value) -> (Vec<Value>, Vec<Value>) {
        let mut pods: BTreeMap<String, Value> = BTreeMap::new();
        let own = pod_name(sbx);
        if let Some(p) = self.pods.get(own).or_else(|| self.pods_by_name.get(own)) {
            pods.insert(own.to_string(), p.value());
        }
        if let Some((key, value)) = str_at(sbx, &["status", "selector"]).and_then(|s| s.split_once('=')) {
            if key == SANDBOX_NAME_HASH {
                for n in self.pods_by_hash.get(value).into_iter().flatten() {
                    if let Some(p) = self.pods.get(n) {
                        pods.insert(n.clone(), p.value());
                    }
                }
            } else {
                for (n, p) in &self.pods {
                    let p = p.value();
                    if str_at(&p, &["metadata", "labels", key]) == Some(value) {
                        pods.insert(n.clone(), p);
                    }
                }
            }
        }
        let pvcs = pvc_names(sbx)
            .iter()
            .filter_map(|n| self.pvcs.get(n).or_else(|| self.pvcs_by_name.get(n)))
            .map(Compact::value)
            .collect();
        (pods.into_values().collect(), pvcs)
    }

    fn sandbox(&self, n: &str) -> Option<Value> {
        self.sandboxes.get(n).map(Compact::value)
    }
}

/// What a mirror knows of each kind: the watched set, "not allowed to read" (`?`), or (policies)
/// the group is not served, so none can exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readable {
    Yes,
    Forbidden,
    NotServed,
}

/// The mirror of one scope.
#[derive(Debug)]
pub struct Mirror {
    spaces: BTreeMap<String, Space>,
    /// How each kind is read cluster-wide; `Forbidden` means namespace by namespace instead
    /// (each space's `sources`). A complete template set means a name not in it does not exist;
    /// templates nobody may list are read one by one.
    everywhere: HashMap<Kind, Readable>,
    flags: OverlayFlags,
    /// Rows whose derivation reads the clock (a terminating pod's deadline, a Sandbox deleting
    /// or with a shutdown time): derived again as
    /// time passes.
    timed: BTreeSet<SandboxKey>,
}

impl Mirror {
    #[cfg(test)]
    fn len(&self) -> usize {
        self.spaces.values().map(|s| s.sandboxes.len()).sum()
    }

    /// Every row, derived afresh.
    #[cfg(test)]
    fn all_rows(&mut self, now: DateTime<Utc>) -> Vec<Workspace> {
        let keys = self.all_keys();
        self.rows(&keys, now)
            .into_iter()
            .filter_map(|c| match c {
                RowChange::Upsert(w) => Some(*w),
                RowChange::Remove(..) => None,
            })
            .collect()
    }

    pub fn new(flags: OverlayFlags) -> Mirror {
        Mirror {
            spaces: BTreeMap::new(),
            everywhere: HashMap::new(),
            flags,
            timed: BTreeSet::new(),
        }
    }

    /// Namespaces holding workspaces.
    pub fn namespaces(&self) -> Vec<String> {
        self.spaces
            .iter()
            .filter(|(_, s)| !s.sandboxes.is_empty())
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// How a kind can be read, cluster-wide (`namespace` `None`) or in one namespace. Returns
    /// the rows that now derive differently.
    pub fn set_readable(&mut self, kind: Kind, namespace: Option<&str>, readable: Readable) -> BTreeSet<SandboxKey> {
        match namespace {
            None => {
                self.everywhere.insert(kind, readable);
                self.all_keys()
            }
            Some(ns) => {
                self.spaces
                    .entry(ns.to_string())
                    .or_default()
                    .sources
                    .insert(kind, readable);
                self.keys_in(ns)
            }
        }
    }

    /// How `kind` reads in namespace `ns`: cluster-wide, else that namespace's own reading;
    /// not read yet counts as readable (the rows wait for the first state), unless `loading`
    /// says it is still arriving (a provisional row: unknown).
    fn readable(&self, kind: Kind, space: &Space, loading: &BTreeSet<Kind>) -> Readable {
        if loading.contains(&kind) {
            return Readable::Forbidden;
        }
        match self.everywhere.get(&kind) {
            Some(Readable::Forbidden) => space.sources.get(&kind).copied().unwrap_or(Readable::Yes),
            Some(Readable::NotServed) => Readable::NotServed,
            _ => space.sources.get(&kind).copied().unwrap_or(Readable::Yes),
        }
    }

    /// Namespaces with workspaces where `kind` is not read cluster-wide and has no reading of its
    /// own yet.
    pub fn unread(&self, kind: Kind, started: &BTreeSet<String>) -> Vec<String> {
        if self.everywhere.get(&kind) != Some(&Readable::Forbidden) {
            return Vec::new();
        }
        self.namespaces()
            .into_iter()
            .filter(|ns| !started.contains(ns))
            .collect()
    }

    fn keys_in(&self, ns: &str) -> BTreeSet<SandboxKey> {
        self.spaces
            .get(ns)
            .map(|s| s.sandboxes.keys().map(|n| ObjectKey::new(ns, n)).collect())
            .unwrap_or_default()
    }

    fn all_keys(&self) -> BTreeSet<SandboxKey> {
        self.spaces
            .iter()
            .flat_map(|(ns, s)| s.sandboxes.keys().map(move |n| ObjectKey::new(ns, n)))
            .collect()
    }

    /// A (re)list: `objects` are every object of `kind` in `scope` (a namespace, or everywhere).
    /// What the mirror held there and the list lacks is gone. Returns the rows touched.
    pub fn reset<L: Into<Listed>>(&mut self, kind: Kind, scope: Option<&str>, objects: Vec<L>) -> BTreeSet<SandboxKey> {
        let objects: Vec<Listed> = objects.into_iter().map(Into::into).collect();
        let listed: BTreeSet<ObjectKey> = objects.iter().map(|o| o.key.clone()).collect();
        let mut touched = self.retain(kind, scope, &listed);
        for o in objects {
            touched.extend(self.apply_listed(kind, o));
        }
        touched
    }

    /// The end of a streaming list: objects of `kind` in `scope` not in `listed` are gone.
    pub fn retain(&mut self, kind: Kind, scope: Option<&str>, listed: &BTreeSet<ObjectKey>) -> BTreeSet<SandboxKey> {
        let held: Vec<ObjectKey> = self
            .spaces
            .iter()
            .filter(|(ns, _)| scope.is_none_or(|n| n == ns.as_str()))
            .flat_map(|(ns, s)| {
                let names: Vec<&String> = match kind {
                    Kind::Sandboxes => s.sandboxes.keys().chain(s.others.keys()).collect(),
                    Kind::Pods => s.pods.keys().collect(),
                    Kind::Pvcs => s.pvcs.keys().collect(),
                    Kind::Templates => s.templates.keys().collect(),
                    Kind::Policies => s.policies.keys().collect(),
                };
                names.into_iter().map(move |n| ObjectKey::new(ns, n))
            })
            .collect();
        let mut touched = BTreeSet::new();
        for gone in held.into_iter().filter(|k| !listed.contains(k)) {
            touched.extend(self.remove(kind, &gone.namespace, &gone.name));
        }
        touched
    }

    /// An object was added or changed.
    pub fn apply(&mut self, kind: Kind, object: Value) -> BTreeSet<SandboxKey> {
        self.take(kind, object, None)
    }

    /// An object was added or changed, as a watch reported it (its text kept as it is).
    pub fn apply_listed(&mut self, kind: Kind, listed: Listed) -> BTreeSet<SandboxKey> {
        self.take(kind, listed.value(), Some(listed.text))
    }

    /// [`Mirror::apply`], with the object's compact text when it is at hand already.
    fn take(&mut self, kind: Kind, object: Value, text: Option<Arc<str>>) -> BTreeSet<SandboxKey> {
        let compact = |o: &Value| text.map_or_else(|| Compact::of(o), Compact);
        let (ns, n) = (namespace(&object).to_string(), name(&object).to_string());
        if kind == Kind::Sandboxes && !is_workspace(&object) {
            // a Sandbox relabelled away from the library is no longer a workspace
            let touched = self.remove(kind, &ns, &n);
            let mut lean = object;
            super::projection::project(&mut lean, super::projection::PULSE_SANDBOX);
            self.spaces.entry(ns).or_default().others.insert(n, Compact::of(&lean));
            return touched;
        }
        let mut touched = self.remove(kind, &ns, &n);
        let space = self.spaces.entry(ns.clone()).or_default();
        let readers: BTreeSet<String> = match kind {
            Kind::Sandboxes => {
                space.index_sandbox(&object, true);
                space.sandboxes.insert(n.clone(), compact(&object));
                BTreeSet::from([n])
            }
            Kind::Pods => {
                // the watch has it now: a copy read by name would only go stale
                space.pods_by_name.remove(&n);
                if let Some(h) = Space::hash_of(&object) {
                    link(&mut space.pods_by_hash, h, &n);
                }
                let readers = space.readers_of_pod(&object);
                space.pods.insert(n, compact(&object));
                readers
            }
            Kind::Pvcs => {
                space.pvcs_by_name.remove(&n);
                space.pvcs.insert(n.clone(), compact(&object));
                readers(&space.by_pvc, &n)
            }
            Kind::Templates => {
                space.templates.insert(n.clone(), object);
                readers(&space.by_template, &n)
            }
            Kind::Policies => {
                let selected: BTreeSet<String> = selected_sandboxes(&object, self.flags.per_sandbox_key())
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                for s in &selected {
                    link(&mut space.policies_by_sandbox, s.clone(), &n);
                }
                space.policies.insert(n, compact(&object));
                selected
            }
        };
        touched.extend(readers.into_iter().map(|s| ObjectKey {
            namespace: ns.clone(),
            name: s,
        }));
        touched
    }

    /// An object was deleted (or left the selection).
    pub fn remove(&mut self, kind: Kind, ns: &str, n: &str) -> BTreeSet<SandboxKey> {
        let Some(space) = self.spaces.get_mut(ns) else {
            return BTreeSet::new();
        };
        let readers: BTreeSet<String> = match kind {
            Kind::Sandboxes => {
                space.others.remove(n);
                match space.sandboxes.remove(n) {
                    Some(old) => {
                        space.index_sandbox(&old.value(), false);
                        BTreeSet::from([n.to_string()])
                    }
                    None => BTreeSet::new(),
                }
            }
            Kind::Pods => match space.pods.remove(n) {
                Some(old) => {
                    let old = old.value();
                    if let Some(h) = Space::hash_of(&old) {
                        unlink(&mut space.pods_by_hash, &h, n);
                    }
                    space.readers_of_pod(&old)
                }
                None => BTreeSet::new(),
            },
            Kind::Pvcs => match space.pvcs.remove(n) {
                Some(_) => readers(&space.by_pvc, n),
                None => BTreeSet::new(),
            },
            Kind::Templates => match space.templates.remove(n) {
                Some(_) => readers(&space.by_template, n),
                None => BTreeSet::new(),
            },
            Kind::Policies => match space.policies.remove(n) {
                Some(old) => {
                    let old = old.value();
                    let selected: BTreeSet<String> = selected_sandboxes(&old, self.flags.per_sandbox_key())
                        .into_iter()
                        .map(str::to_string)
                        .collect();
                    for s in &selected {
                        unlink(&mut space.policies_by_sandbox, s, n);
                    }
                    selected
                }
                None => BTreeSet::new(),
            },
        };
        readers.into_iter().map(|s| ObjectKey::new(ns, &s)).collect()
    }

    /// What the selectors cannot see, read by name: for the rows touched, the pod each should
    /// have and each disk, when the watched set lacks them.
    pub fn wanted_by_name(&self, keys: &BTreeSet<SandboxKey>) -> Vec<(Kind, ObjectKey)> {
        let mut out = Vec::new();
        for ObjectKey { namespace: ns, name: n } in keys {
            let Some(space) = self.spaces.get(ns) else { continue };
            let Some(sbx) = space.sandbox(n) else { continue };
            if self.readable(Kind::Pods, space, &BTreeSet::new()) == Readable::Yes
                && pod_expected(&sbx)
                && !space.pods.contains_key(pod_name(&sbx))
            {
                out.push((Kind::Pods, ObjectKey::new(ns, pod_name(&sbx))));
            }
            if self.readable(Kind::Pvcs, space, &BTreeSet::new()) == Readable::Yes {
                for p in pvc_names(&sbx).into_iter().filter(|p| !space.pvcs.contains_key(p)) {
                    out.push((Kind::Pvcs, ObjectKey::new(ns, &p)));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Templates the rows touched name that the mirror has no answer for (when templates are
    /// read one by one).
    pub fn wanted_templates(&self, keys: &BTreeSet<SandboxKey>) -> Vec<ObjectKey> {
        let mut out: Vec<ObjectKey> = keys
            .iter()
            .filter_map(|ObjectKey { namespace: ns, name: n }| {
                let space = self.spaces.get(ns)?;
                if self.readable(Kind::Templates, space, &BTreeSet::new()) != Readable::Forbidden {
                    return None;
                }
                let sbx = space.sandbox(n)?;
                let t = template_label(&sbx)?;
                (!space.template_reads.contains_key(t)).then(|| ObjectKey::new(ns, t))
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The answer of a read by name: `None` when it does not exist.
    pub fn read_by_name(&mut self, kind: Kind, ns: &str, n: &str, found: Option<Value>) -> BTreeSet<SandboxKey> {
        let space = self.spaces.entry(ns.to_string()).or_default();
        // the watch's own copy wins over an answer that may have crossed it
        let watched = match kind {
            Kind::Pods => space.pods.contains_key(n),
            _ => space.pvcs.contains_key(n),
        };
        let map = match kind {
            Kind::Pods => &mut space.pods_by_name,
            Kind::Pvcs => &mut space.pvcs_by_name,
            _ => return BTreeSet::new(),
        };
        let found = found.filter(|_| !watched);
        match found {
            Some(o) => map.insert(n.to_string(), Compact::of(&o)),
            None => map.remove(n),
        };
        let refs = match kind {
            Kind::Pods => &space.by_pod_name,
            _ => &space.by_pvc,
        };
        readers(refs, n).into_iter().map(|s| ObjectKey::new(ns, &s)).collect()
    }

    /// The answer of reading one template by name.
    pub fn template_read(&mut self, ns: &str, n: &str, fetch: TemplateFetch) -> BTreeSet<SandboxKey> {
        let space = self.spaces.entry(ns.to_string()).or_default();
        space.template_reads.insert(n.to_string(), fetch);
        readers(&space.by_template, n)
            .into_iter()
            .map(|s| ObjectKey::new(ns, &s))
            .collect()
    }

    /// Every Sandbox and pod held, as the pulse reads them (`projection::PULSE_SANDBOX`,
    /// `PULSE_POD`): the live pulse's inputs, parsed from what the watches keep, at no request.
    pub fn pulse_objects(&self) -> (Vec<Value>, Vec<Value>) {
        use super::projection::{PULSE_POD, PULSE_SANDBOX, Projected};
        use serde::de::DeserializeSeed;
        let parse = |c: &Compact, keep| {
            Projected(keep)
                .deserialize(&mut serde_json::Deserializer::from_str(&c.0))
                .unwrap_or_default()
        };
        let mut sandboxes = Vec::new();
        let mut pods = Vec::new();
        for space in self.spaces.values() {
            sandboxes.extend(
                space
                    .sandboxes
                    .values()
                    .chain(space.others.values())
                    .map(|c| parse(c, PULSE_SANDBOX)),
            );
            pods.extend(
                space
                    .pods
                    .values()
                    .chain(space.pods_by_name.values())
                    .map(|c| parse(c, PULSE_POD)),
            );
        }
        (sandboxes, pods)
    }

    /// The rows whose derivation reads the clock.
    pub fn timed(&self) -> BTreeSet<SandboxKey> {
        self.timed.clone()
    }

    /// The row changes for `keys`, derived as of `now`.
    pub fn rows(&mut self, keys: &BTreeSet<SandboxKey>, now: DateTime<Utc>) -> Vec<RowChange> {
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            match self.derive_one(key, now, &BTreeSet::new()) {
                Some(w) => {
                    // a terminating pod's deadline, a deletion held for long, a shutdown time
                    let timed = matches!(&w.pod, Observed::Known(Some(p)) if p.terminating)
                        || w.deletion.is_some()
                        || w.shutdown_time.is_some();
                    if timed {
                        self.timed.insert(key.clone());
                    } else {
                        self.timed.remove(key);
                    }
                    out.push(RowChange::Upsert(Box::new(w)));
                }
                None => {
                    self.timed.remove(key);
                    out.push(RowChange::Remove(WorkspaceKey::new(
                        None,
                        &key.namespace,
                        id_of(&key.name).unwrap_or(&key.name),
                    )));
                }
            }
        }
        out
    }

    /// Rows for `keys` before the first full state: the workspaces whose Sandbox is in, derived
    /// with the kinds still `loading` as unknown (their columns show `?`, never a guess). Each
    /// is derived again, in full, with the first full state.
    pub fn rows_while_loading(
        &self,
        keys: &BTreeSet<SandboxKey>,
        loading: &BTreeSet<Kind>,
        now: DateTime<Utc>,
    ) -> Vec<RowChange> {
        keys.iter()
            .filter_map(|key| self.derive_one(key, now, loading))
            .map(|w| RowChange::Upsert(Box::new(w)))
            .collect()
    }

    fn derive_one(&self, key: &SandboxKey, now: DateTime<Utc>, loading: &BTreeSet<Kind>) -> Option<Workspace> {
        let (ns, n) = (&key.namespace, &key.name);
        let space = self.spaces.get(ns)?;
        let sbx = &space.sandbox(n)?;
        let (pods, pvcs) = space.inputs_of(sbx);
        let (pod_index, pvc_index) = (Index::new(&pods), Index::new(&pvcs));
        let observed = |readable: Readable, index| match readable {
            Readable::Yes | Readable::NotServed => Observed::Known(index),
            Readable::Forbidden => Observed::Forbidden,
        };
        let selecting: Vec<Value> = space
            .policies_by_sandbox
            .get(n)
            .into_iter()
            .flatten()
            .filter_map(|p| space.policies.get(p).map(Compact::value))
            .collect();
        let policy_index = PolicyIndex::new(&selecting, self.flags.per_sandbox_key());
        let policies = match self.readable(Kind::Policies, space, loading) {
            Readable::Yes => PolicyRead::Known(&policy_index),
            Readable::Forbidden => PolicyRead::Forbidden,
            Readable::NotServed => PolicyRead::NotServed,
        };
        let template = match template_label(sbx) {
            None => TemplateFetch::Unreadable,
            Some(t) => match (self.readable(Kind::Templates, space, loading), space.templates.get(t)) {
                (Readable::Yes, Some(found)) => TemplateFetch::Found(found.clone()),
                (Readable::Yes, None) => TemplateFetch::NotFound,
                // no SandboxTemplate kind served: no template can exist
                (Readable::NotServed, _) => TemplateFetch::NotFound,
                (Readable::Forbidden, _) => space
                    .template_reads
                    .get(t)
                    .cloned()
                    .unwrap_or(TemplateFetch::Unreadable),
            },
        };
        Some(derive(&Inputs {
            sandbox: sbx,
            pods: observed(self.readable(Kind::Pods, space, loading), &pod_index),
            pvcs: observed(self.readable(Kind::Pvcs, space, loading), &pvc_index),
            template: template.as_read(),
            policies,
            flags: &self.flags,
            now,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sandbox(n: &str, template: &str, selector: Option<&str>) -> Value {
        let mut s = json!({"kind":"Sandbox","apiVersion":"agents.x-k8s.io/v1alpha1",
            "metadata":{"name":format!("namzu-ws-{n}"),"namespace":"a","uid":format!("u-{n}")},
            "spec":{"operatingMode":"Running","podTemplate":{"metadata":{"labels":{"sandbox.namzu.ai/template":template}}},
                "volumeClaimTemplates":[{"metadata":{"name":"home"}}]}});
        if let Some(sel) = selector {
            s["status"] = json!({"selector": sel});
        }
        s
    }

    fn pod(n: &str, hash: &str) -> Value {
        json!({"kind":"Pod","apiVersion":"v1","metadata":{"name":n,"namespace":"a","labels":{SANDBOX_NAME_HASH:hash}},
            "status":{"phase":"Running"}})
    }

    fn keys(v: &[&str]) -> BTreeSet<SandboxKey> {
        v.iter()
            .map(|n| ObjectKey::new("a", &format!("namzu-ws-{n}")))
            .collect()
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-29T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn each_change_touches_only_the_rows_that_read_it() {
        let mut m = Mirror::new(OverlayFlags::default());
        m.reset(
            Kind::Sandboxes,
            None,
            vec![
                sandbox("x", "coder", Some("agents.x-k8s.io/sandbox-name-hash=hx")),
                sandbox("y", "other", None),
            ],
        );
        assert_eq!(m.apply(Kind::Pods, pod("namzu-ws-x", "hx")), keys(&["x"]));
        assert_eq!(m.apply(Kind::Pods, pod("somebody", "hx")), keys(&["x"]), "by selector");
        assert_eq!(m.apply(Kind::Pods, pod("unrelated", "zz")), keys(&[]));
        let pvc = json!({"metadata":{"name":"home-namzu-ws-y","namespace":"a"}});
        assert_eq!(m.apply(Kind::Pvcs, pvc), keys(&["y"]));
        let template = json!({"metadata":{"name":"coder","namespace":"a"}});
        assert_eq!(m.apply(Kind::Templates, template), keys(&["x"]));
        assert_eq!(m.remove(Kind::Pods, "a", "namzu-ws-x"), keys(&["x"]));
    }

    #[test]
    fn a_relist_drops_what_it_no_longer_holds() {
        let mut m = Mirror::new(OverlayFlags::default());
        m.reset(
            Kind::Sandboxes,
            None,
            vec![sandbox("x", "t", None), sandbox("y", "t", None)],
        );
        let touched = m.reset(Kind::Sandboxes, None, vec![sandbox("y", "t", None)]);
        let changes = m.rows(&touched, now());
        assert!(
            changes.contains(&RowChange::Remove(WorkspaceKey::new(None, "a", "x"))),
            "{changes:?}"
        );
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn rows_derive_as_the_full_pass_does() {
        let mut m = Mirror::new(OverlayFlags::default());
        let sbx = sandbox("x", "coder", Some("agents.x-k8s.io/sandbox-name-hash=hx"));
        let p = pod("namzu-ws-x", "hx");
        m.reset(Kind::Sandboxes, None, vec![sbx.clone()]);
        m.reset(Kind::Pods, None, vec![p.clone(), pod("noise", "zz")]);
        let (pods, pvcs) = (vec![p, pod("noise", "zz")], Vec::new());
        let (pi, vi) = (Index::new(&pods), Index::new(&pvcs));
        let full = derive(&Inputs {
            sandbox: &sbx,
            pods: Observed::Known(&pi),
            pvcs: Observed::Known(&vi),
            template: super::super::drift::TemplateRead::NotFound,
            policies: PolicyRead::Known(&PolicyIndex::default()),
            flags: &OverlayFlags::default(),
            now: now(),
        });
        assert_eq!(m.all_rows(now()), vec![full]);
    }

    /// Before the first full state a row says what it cannot know yet as unknown, never as
    /// "no pod"; a workspace without its Sandbox is no row at all.
    #[test]
    fn rows_while_loading_leave_what_is_loading_unknown() {
        let mut m = Mirror::new(OverlayFlags::default());
        m.reset(
            Kind::Sandboxes,
            None,
            vec![sandbox("x", "coder", Some("agents.x-k8s.io/sandbox-name-hash=hx"))],
        );
        m.apply(Kind::Pods, pod("namzu-ws-x", "hx"));
        m.apply(Kind::Pods, pod("namzu-ws-gone", "hg"));
        let loading = BTreeSet::from([Kind::Pods, Kind::Pvcs]);
        let early = m.rows_while_loading(&keys(&["x", "gone"]), &loading, now());
        let [RowChange::Upsert(w)] = early.as_slice() else {
            panic!("one row, the workspace whose Sandbox is in: {early:?}");
        };
        assert_eq!(
            (w.pod.clone(), w.pvcs.clone()),
            (Observed::Forbidden, Observed::Forbidden)
        );
        let full = m.rows(&keys(&["x"]), now());
        let [RowChange::Upsert(w)] = full.as_slice() else {
            panic!("{full:?}");
        };
        assert!(matches!(w.pod, Observed::Known(Some(_))), "{:?}", w.pod);
    }

    #[test]
    fn a_missing_pod_or_disk_is_wanted_by_name() {
        let mut m = Mirror::new(OverlayFlags::default());
        m.reset(Kind::Sandboxes, None, vec![sandbox("x", "t", None)]);
        let wanted = m.wanted_by_name(&keys(&["x"]));
        assert_eq!(
            wanted,
            vec![
                (Kind::Pods, ObjectKey::new("a", "namzu-ws-x")),
                (Kind::Pvcs, ObjectKey::new("a", "home-namzu-ws-x"))
            ]
        );
        let foreign = json!({"metadata":{"name":"namzu-ws-x","namespace":"a"},"status":{"phase":"Running"}});
        assert_eq!(
            m.read_by_name(Kind::Pods, "a", "namzu-ws-x", Some(foreign)),
            keys(&["x"])
        );
        let rows = m.all_rows(now());
        assert!(matches!(&rows[0].pod, Observed::Known(Some(_))));
    }
}
