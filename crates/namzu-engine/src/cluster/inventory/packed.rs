//! The `-A` pass's objects held packed (`cluster/pack.rs`) until their namespace is derived: one
//! Sandbox and the few pods and PVCs it reads unpacked at a time.

use super::*;

/// A workspace Sandbox packed, with what the pass reads of it before it is derived.
#[derive(Debug)]
pub(super) struct PackedSandbox {
    /// Its namespace's number in the list's table.
    pub(super) namespace: u32,
    pub(super) name: Box<str>,
    pub(super) held: Held,
    /// `pod_expected`: its pod is read by name when the selector missed it.
    pub(super) pod_expected: bool,
    /// It carries the per-sandbox egress label (the query's key) on its pod template.
    pub(super) per_sandbox: bool,
    /// Its `volumeClaimTemplates` entries' names ([`joined`]): its PVCs are `<entry>-<name>`.
    pub(super) claims: Box<str>,
    pub(super) template: Option<Box<str>>,
}

impl PackedSandbox {
    /// `pod::pvc_names`.
    pub(super) fn pvc_names(&self) -> impl Iterator<Item = String> + '_ {
        parts(&self.claims).map(move |entry| format!("{entry}-{}", self.name))
    }
}

/// Strings in one: each as its length in bytes, `:`, and itself (any text, split exactly).
pub(super) fn joined<'a>(parts: impl Iterator<Item = &'a str>) -> Box<str> {
    let mut out = String::new();
    for p in parts {
        out.push_str(&p.len().to_string());
        out.push(':');
        out.push_str(p);
    }
    out.into_boxed_str()
}

/// The strings [`joined`] put in `s`.
pub(super) fn parts(s: &str) -> impl Iterator<Item = &str> {
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
pub(super) enum Held {
    Packed(Packed),
    Whole(Box<Value>),
}

impl Held {
    pub(super) fn new(pack: &mut Arc<Pack>, item: &Value) -> Held {
        match Arc::get_mut(pack) {
            Some(pack) => Held::Packed(pack.pack(item)),
            None => Held::Whole(Box::new(item.clone())),
        }
    }

    pub(super) fn unpack(&self, pack: &Pack) -> Option<Value> {
        match self {
            Held::Packed(p) => pack.unpack(p),
            Held::Whole(v) => Some((**v).clone()),
        }
    }
}

/// The namespaces of a list, each once, numbered as they first come.
#[derive(Debug, Default, Clone)]
pub(super) struct Namespaces(Vec<Box<str>>);

impl Namespaces {
    pub(super) fn number(&mut self, ns: &str) -> u32 {
        // a list comes namespace by namespace: the last one is nearly always the one
        let found = self.0.iter().rposition(|n| &**n == ns);
        let n = found.unwrap_or_else(|| {
            self.0.push(ns.into());
            self.0.len() - 1
        });
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    pub(super) fn name(&self, n: u32) -> &str {
        self.0.get(n as usize).map_or("", |n| n)
    }
}

/// The workspace Sandboxes of a LIST, packed; the others are not kept.
#[derive(Debug, Default)]
pub(super) struct Sandboxes {
    /// The per-sandbox egress label key, noted on each Sandbox for the egress warning.
    pub(super) per_sandbox_key: Arc<str>,
    pub(super) pack: Arc<Pack>,
    pub(super) namespaces: Namespaces,
    pub(super) items: Vec<PackedSandbox>,
}

impl Sandboxes {
    pub(super) fn new(per_sandbox_key: &str) -> Sandboxes {
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
        let claims = namzu_domain::pod::claims(&item);
        self.items.push(PackedSandbox {
            namespace: self.namespaces.number(namespace(&item)),
            name: namzu_domain::object::name(&item).into(),
            pod_expected: pod_expected(&item),
            per_sandbox: namzu_domain::egress::pod_label(&item, &self.per_sandbox_key).is_some(),
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
pub(super) struct PackedObject {
    pub(super) namespace: u32,
    pub(super) name: Box<str>,
    /// Its labels ([`joined`]: key, value, key, value …) where they are looked up by.
    pub(super) labels: Box<str>,
    /// A pod in phase Pending (capacity counts them).
    pub(super) pending: bool,
    pub(super) held: Held,
}

/// Listed pods or PVCs, packed, in list order.
#[derive(Debug, Default)]
pub(super) struct Objects {
    /// Pods are found by label too; PVCs only by name.
    pub(super) labels: bool,
    pub(super) pack: Arc<Pack>,
    pub(super) namespaces: Namespaces,
    pub(super) items: Vec<PackedObject>,
}

impl ListItems for Objects {
    fn push(&mut self, item: Value) {
        let labels = match namzu_domain::object::at(&item, &["metadata", "labels"]).and_then(Value::as_object) {
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
            name: namzu_domain::object::name(&item).into(),
            labels,
            pending: namzu_domain::pod::phase(&item) == "Pending",
            held: Held::new(&mut self.pack, &item),
        });
    }

    fn emptied(&self) -> Self {
        Objects::of(self.labels)
    }
}

/// Split packed items by namespace, list order kept within each.
pub(super) fn by_namespace<'n, T>(items: Vec<T>, ns: impl Fn(&T) -> &'n str) -> BTreeMap<String, Vec<T>> {
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
    pub(super) fn of(labels: bool) -> Objects {
        Objects {
            labels,
            ..Default::default()
        }
    }

    pub(super) fn unpack(self) -> Vec<Value> {
        self.items.iter().filter_map(|o| o.held.unpack(&self.pack)).collect()
    }

    /// The pods in phase Pending.
    pub(super) fn pending(&self) -> usize {
        self.items.iter().filter(|o| o.pending).count()
    }

    /// Each namespace's objects, the pack shared.
    pub(super) fn by_namespace(self) -> BTreeMap<String, Objects> {
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
pub(super) struct Lookup<'a> {
    pub(super) pack: &'a Pack,
    pub(super) objects: &'a [PackedObject],
    pub(super) by_name: HashMap<&'a str, usize>,
    pub(super) by_label: HashMap<(&'a str, &'a str), Vec<usize>>,
}

impl<'a> Lookup<'a> {
    pub(super) fn new(objects: &'a Objects, labels: bool) -> Lookup<'a> {
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
    pub(super) fn unpack(&self, mut at: Vec<usize>) -> Vec<Value> {
        at.sort_unstable();
        at.dedup();
        at.into_iter()
            .filter_map(|i| self.objects[i].held.unpack(self.pack))
            .collect()
    }
}

/// One namespace's objects as a recording held them at an instant.
pub(crate) struct Recorded {
    pub(crate) sandboxes: Vec<Value>,
    pub(crate) pods: Observed<Vec<Value>>,
    pub(crate) pvcs: Observed<Vec<Value>>,
    pub(crate) templates: BTreeMap<String, TemplateFetch>,
    pub(crate) policies: PolicyRead<Vec<Value>>,
}

/// One namespace's objects as read, held packed until each Sandbox's turn.
#[derive(Debug)]
pub struct PackedNamespace {
    pub namespace: String,
    pub(super) sandbox_pack: Arc<Pack>,
    pub(super) sandboxes: Vec<PackedSandbox>,
    pub(super) pods: Observed<Objects>,
    pub(super) pvcs: Observed<Objects>,
    pub(super) templates: BTreeMap<String, TemplateFetch>,
    pub(super) policies: PolicyRead<Vec<Value>>,
}

impl PackedNamespace {
    /// A namespace's objects as a recording held them (issue 43): packed as a pass packs what it
    /// lists, so the replayed rows derive exactly as live ones.
    pub(crate) fn of_objects(namespace: &str, objects: Recorded, query: &Query) -> PackedNamespace {
        let mut sandboxes = sandboxes_for(query);
        for s in objects.sandboxes {
            sandboxes.push(s);
        }
        // each object moved into its pack, never copied
        let fill = |kind: &resources::ApiKind, list: Observed<Vec<Value>>| match list {
            Observed::Known(items) => {
                let mut out = objects_of(kind);
                for o in items {
                    out.push(o);
                }
                Observed::Known(out)
            }
            Observed::Forbidden => Observed::Forbidden,
        };
        PackedNamespace {
            namespace: namespace.to_string(),
            sandbox_pack: sandboxes.pack,
            sandboxes: sandboxes.items,
            pods: fill(&PODS, objects.pods),
            pvcs: fill(&PVCS, objects.pvcs),
            templates: objects.templates,
            policies: objects.policies,
        }
    }

    /// Its pods in phase Pending; `None` when pods may not be listed.
    pub fn pending_pods(&self) -> Option<usize> {
        self.pods.known().map(Objects::pending)
    }

    /// Everything it read, parsed.
    pub(crate) fn unpack(self) -> NamespaceData {
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
                    namzu_domain::object::str_at(&sbx, &["status", "selector"]).and_then(|s| s.split_once('='))
                {
                    at.extend(l.by_label.get(&(k, v)).into_iter().flatten().copied());
                }
                l.unpack(at)
            });
            let own_pvcs = pvcs.as_ref().map(|l| {
                // every `<entry>-<sandbox>` name the derivation may look up
                let entries = namzu_domain::object::at(&sbx, &["spec", "volumeClaimTemplates"])
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[]);
                let at = entries
                    .iter()
                    .filter_map(|e| namzu_domain::object::str_at(e, &["metadata", "name"]))
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
