//! The object store: objects by (resource, namespace, name) in etcd key order, one global
//! resourceVersion counter, uids, the watch history and garbage collection by ownerReferences.

use super::clock::Clock;
use super::pod_admission::{self, RuntimeClasses};
use super::resources::{EVENTS, RUNTIME_CLASSES, Resource};
use super::status::{self, ApiError};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use tokio::sync::broadcast;

/// `group/plural`: one store per resource whatever version serves it.
pub(crate) fn rkey(r: &Resource) -> String {
    format!("{}/{}", r.group, r.plural)
}

type Key = (String, String, String);

/// A `metadata` string field of an object, "" when absent.
pub(crate) fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub rkey: String,
    pub namespace: String,
    pub kind: EventType,
    pub object: Value,
}

/// How many events a watch can resume from before it gets 410 Gone.
const HISTORY: usize = 50_000;

pub struct Store {
    /// Shared, so a LIST takes its page under the server's lock and encodes it after.
    objects: BTreeMap<Key, Arc<Value>>,
    rv: u64,
    uid_seq: u64,
    history: VecDeque<Arc<Event>>,
    /// The newest resourceVersion whose event is no longer kept: a watch from below it gets 410.
    dropped_up_to: u64,
    pub events: broadcast::Sender<Arc<Event>>,
    /// Bumped to end every open watch (a restart, a load balancer's idle cut).
    pub watch_generation: tokio::sync::watch::Sender<u64>,
    /// Bytes sent on watch streams (the request record cannot size a streamed answer).
    pub watch_bytes: Arc<std::sync::atomic::AtomicU64>,
    /// What changed in claims and volumes since the volume controller last looked
    /// (`sim::volumes::sync`).
    volume_events: Vec<Arc<Event>>,
    /// The clock an Event's lease counts from (`None`: Events never expire).
    clock: Option<Clock>,
    /// Each Event write's lease, oldest first: when it runs out, and the object's namespace, name
    /// and resourceVersion as that write left it (a later write renews it).
    leases: VecDeque<(DateTime<Utc>, String, String, u64)>,
}

/// How long an Event is kept after it was last written: kube-apiserver's `--event-ttl` default.
/// Events are stored in etcd under a lease of this TTL, renewed by each write.
pub(crate) const EVENT_TTL: chrono::Duration = chrono::Duration::hours(1);

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

impl Store {
    pub fn new() -> Store {
        Store {
            objects: BTreeMap::new(),
            rv: 1000,
            uid_seq: 0,
            history: VecDeque::new(),
            dropped_up_to: 0,
            events: broadcast::channel(4096).0,
            watch_generation: tokio::sync::watch::channel(0).0,
            watch_bytes: Default::default(),
            volume_events: Vec::new(),
            clock: None,
            leases: VecDeque::new(),
        }
    }

    /// Events written from now on expire [`EVENT_TTL`] after their last write on this clock.
    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = Some(clock);
    }

    /// An Event written: its lease runs from now (the write's time, not the Event's own
    /// timestamps, as etcd's lease does).
    fn lease(&mut self, r: &Resource, obj: &Value) {
        let Some(clock) = &self.clock else { return };
        if rkey(r) != rkey(&EVENTS) {
            return;
        }
        let rv = meta(obj, "resourceVersion").parse().unwrap_or(0);
        self.leases.push_back((
            clock.now() + EVENT_TTL,
            meta(obj, "namespace").to_string(),
            meta(obj, "name").to_string(),
            rv,
        ));
    }

    /// Remove the Events whose lease ran out by `now`. etcd deletes a key whose lease expires,
    /// and that delete is a revision like any other: kube-apiserver's watch cache sees it in its
    /// etcd watch and every watcher of Events gets `DELETED` (with a new resourceVersion), as
    /// here — the sim does not drop them silently.
    pub fn expire_events(&mut self, now: DateTime<Utc>) {
        while self.leases.front().is_some_and(|(at, ..)| *at <= now) {
            let Some((_, ns, name, rv)) = self.leases.pop_front() else {
                break;
            };
            // renewed by a later write (a later lease is queued) or deleted already: not this one's
            let current = self
                .get(&EVENTS, &ns, &name)
                .is_some_and(|e| meta(e, "resourceVersion").parse::<u64>().ok() == Some(rv));
            if current {
                self.remove_now(&EVENTS, &ns, &name);
            }
        }
    }

    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    pub fn next_uid(&mut self) -> String {
        self.uid_seq += 1;
        format!(
            "{:08x}-5a4d-4000-8000-{:012x}",
            self.uid_seq * 2654435761 % 0xffff_ffff,
            self.uid_seq
        )
    }

    /// The changes to claims and volumes since the last call.
    pub fn take_volume_events(&mut self) -> Vec<Arc<Event>> {
        std::mem::take(&mut self.volume_events)
    }

    /// Forget history so watches from before now get 410 Gone.
    pub fn compact(&mut self) {
        self.history.clear();
        self.dropped_up_to = self.rv;
    }

    /// End every open watch: each client sees its stream close and must watch again.
    pub fn close_watches(&self) {
        self.watch_generation.send_modify(|g| *g += 1);
    }

    /// Events after `rv` for a resource, or `None` when `rv` is too old (410).
    pub fn events_since(&self, rv: u64, rk: &str) -> Option<Vec<Arc<Event>>> {
        if rv < self.dropped_up_to {
            return None;
        }
        Some(
            self.history
                .iter()
                .filter(|e| e.rv > rv && e.rkey == rk)
                .cloned()
                .collect(),
        )
    }

    fn emit(&mut self, rk: &str, namespace: &str, kind: EventType, object: &Value) {
        let ev = Arc::new(Event {
            rv: self.rv,
            rkey: rk.to_string(),
            namespace: namespace.to_string(),
            kind,
            object: object.clone(),
        });
        if self.history.len() >= HISTORY
            && let Some(dropped) = self.history.pop_front()
        {
            self.dropped_up_to = dropped.rv;
        }
        self.history.push_back(ev.clone());
        if rk == "/persistentvolumeclaims" || rk == "/persistentvolumes" {
            self.volume_events.push(ev.clone());
        }
        let _ = self.events.send(ev);
    }

    /// The API server omits empty label and annotation maps (omitempty), so a client never sees `{}`.
    fn normalize(obj: &mut Value) {
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            for key in ["annotations", "labels"] {
                if meta
                    .get(key)
                    .is_some_and(|m| m.as_object().is_some_and(|m| m.is_empty()) || m.is_null())
                {
                    meta.remove(key);
                }
            }
        }
    }

    fn bump(&mut self, obj: &mut Value) {
        Store::normalize(obj);
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        // the write path records who wrote what (`http/write.rs`); an object made here gets them
        if obj
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .is_none_or(|m| m.is_empty())
        {
            let managed = managed_fields(obj);
            obj["metadata"]["managedFields"] = managed;
        }
        if is_custom(obj) {
            sort_keys(obj);
        }
    }

    /// An API server restart over the kept store (etcd kept): the restarted server writes (its
    /// leases, its events), and its watch cache starts at the resourceVersion it finds, so a
    /// watch from any resourceVersion before it gets 410.
    pub fn restarted(&mut self) {
        self.rv += 1;
        self.compact();
    }

    /// Delete the dependents of an owner that is gone (the garbage collector's pass).
    pub fn collect_garbage(&mut self, owner_uid: &str, ns: &str, now: &str, all: &[Resource]) {
        self.collect_dependents(owner_uid, ns, now, all);
    }

    /// Remove an object now, finalizers or not (a kubelet confirming a pod is gone).
    pub fn remove_now(&mut self, r: &Resource, ns: &str, name: &str) -> Option<Value> {
        let key = (rkey(r), ns.to_string(), name.to_string());
        let mut obj = Arc::unwrap_or_clone(self.objects.remove(&key)?);
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        self.emit(&rkey(r), ns, EventType::Deleted, &obj);
        Some(obj)
    }

    pub fn get(&self, r: &Resource, ns: &str, name: &str) -> Option<&Value> {
        self.objects
            .get(&(rkey(r), ns.to_string(), name.to_string()))
            .map(|o| &**o)
    }

    /// All objects of a resource, in one namespace or all, in key order.
    pub fn list<'a>(&'a self, r: &Resource, ns: Option<&'a str>) -> impl Iterator<Item = &'a Value> + 'a {
        self.list_after(r, ns, None)
    }

    /// [`Store::list`] from just after `(namespace, name)`: a paged LIST's next page starts where
    /// the last ended instead of scanning from the first object.
    pub fn list_after<'a>(
        &'a self,
        r: &Resource,
        ns: Option<&'a str>,
        after: Option<(&str, &str)>,
    ) -> impl Iterator<Item = &'a Value> + 'a {
        self.shared_after(r, ns, after).map(|o| &**o)
    }

    /// [`Store::list_after`] as shared objects: a page kept past the server's lock (to encode
    /// it after) holds them without copying one.
    pub fn shared_after<'a>(
        &'a self,
        r: &Resource,
        ns: Option<&'a str>,
        after: Option<(&str, &str)>,
    ) -> impl Iterator<Item = &'a Arc<Value>> + 'a {
        use std::ops::Bound;
        let rk = rkey(r);
        let start = match after {
            Some((n, name)) => Bound::Excluded((rk.clone(), n.to_string(), name.to_string())),
            None => Bound::Included((rk.clone(), ns.unwrap_or("").to_string(), String::new())),
        };
        self.objects
            .range((start, Bound::Unbounded))
            .take_while(move |((k, n, _), _)| *k == rk && ns.is_none_or(|ns| n == ns))
            .map(|(_, v)| v)
    }

    /// Insert a new object: sets uid, creationTimestamp, resourceVersion, generation.
    pub fn create(&mut self, r: &Resource, obj: Value, now: &str) -> Result<Value, ApiError> {
        let (key, mut obj) = self.admit(r, obj, now)?;
        let ns = key.1.clone();
        self.bump(&mut obj);
        self.objects.insert(key, Arc::new(obj.clone()));
        self.emit(&rkey(r), &ns, EventType::Added, &obj);
        self.lease(r, &obj);
        Ok(obj)
    }

    /// What a create would store, stored nowhere (`dryRun=All`): no resourceVersion.
    pub fn create_dry(&mut self, r: &Resource, obj: Value, now: &str) -> Result<Value, ApiError> {
        let (_, mut obj) = self.admit(r, obj, now)?;
        Store::normalize(&mut obj);
        if let Some(m) = obj["metadata"].as_object_mut() {
            m.remove("resourceVersion");
        }
        if is_custom(&obj) {
            sort_keys(&mut obj);
        }
        Ok(obj)
    }

    fn admit(&mut self, r: &Resource, mut obj: Value, now: &str) -> Result<(Key, Value), ApiError> {
        let name = meta(&obj, "name").to_string();
        if name.is_empty() {
            return Err(status::status(
                422,
                "Invalid",
                &format!(
                    "{} \"\" is invalid: metadata.name: Required value: name or generateName is required",
                    r.kind
                ),
                json!({}),
            ));
        }
        let ns = if r.namespaced {
            obj.pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_string()
        } else {
            String::new()
        };
        let key = (rkey(r), ns.clone(), name.clone());
        if self.objects.contains_key(&key) {
            return Err(status::already_exists(r, &name));
        }
        obj["apiVersion"] = json!(r.api_version());
        obj["kind"] = json!(r.kind);
        let meta = &mut obj["metadata"];
        if r.namespaced {
            meta["namespace"] = json!(ns);
        }
        let uid = self.next_uid();
        let meta = &mut obj["metadata"];
        meta["uid"] = json!(uid);
        if meta.get("creationTimestamp").is_none_or(Value::is_null) {
            meta["creationTimestamp"] = json!(now);
        }
        if !r.group.is_empty() || r.plural == "pods" {
            meta["generation"] = json!(1);
        }
        if r.group.is_empty() && r.plural == "pods" {
            pod_admission::admit(self, &mut obj);
        }
        Ok((key, obj))
    }

    /// Store `obj` over the existing one if it differs: bumps resourceVersion, and generation
    /// when `spec` changed. Returns the stored object.
    pub fn update(&mut self, r: &Resource, mut obj: Value) -> Value {
        let (ns, name) = (meta(&obj, "namespace").to_string(), meta(&obj, "name").to_string());
        let key = (rkey(r), ns.clone(), name);
        let Some(old) = self.objects.get(&key) else {
            return obj;
        };
        let mut unchanged = obj.clone();
        unchanged["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
        if unchanged == **old {
            return (**old).clone();
        }
        if old.get("spec") != obj.get("spec")
            && let Some(g) = old.pointer("/metadata/generation").and_then(Value::as_i64)
        {
            obj["metadata"]["generation"] = json!(g + 1);
        }
        self.bump(&mut obj);
        self.objects.insert(key, Arc::new(obj.clone()));
        self.emit(&rkey(r), &ns, EventType::Modified, &obj);
        self.lease(r, &obj);
        obj
    }

    /// Delete, or mark deleting when finalizers remain; dependents go by garbage collection.
    pub fn delete(&mut self, r: &Resource, ns: &str, name: &str, now: &str, all: &[Resource]) -> Option<Value> {
        let key = (rkey(r), ns.to_string(), name.to_string());
        let mut obj = (**self.objects.get(&key)?).clone();
        let has_finalizers = obj
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if has_finalizers {
            if obj.pointer("/metadata/deletionTimestamp").is_none() {
                obj["metadata"]["deletionTimestamp"] = json!(now);
                return Some(self.update(r, obj));
            }
            return Some(obj);
        }
        self.objects.remove(&key);
        self.bump(&mut obj);
        self.emit(&rkey(r), ns, EventType::Deleted, &obj);
        if let Some(uid) = obj.pointer("/metadata/uid").and_then(Value::as_str) {
            self.collect_dependents(uid, ns, now, all);
        }
        Some(obj)
    }

    /// The garbage collector's orphan finalizer: every dependent of the owner `owner_uid` loses
    /// its ownerReference to it (and stays).
    pub fn orphan_dependents(&mut self, owner_uid: &str, ns: &str, all: &[Resource]) {
        for r in all {
            let dependents: Vec<Value> = self
                .list(r, Some(ns))
                .filter(|o| {
                    o.pointer("/metadata/ownerReferences")
                        .and_then(Value::as_array)
                        .is_some_and(|refs| refs.iter().any(|x| x["uid"] == owner_uid))
                })
                .cloned()
                .collect();
            for mut o in dependents {
                let meta = o["metadata"].as_object_mut().expect("an object has metadata");
                if let Some(refs) = meta.get_mut("ownerReferences").and_then(Value::as_array_mut) {
                    refs.retain(|x| x["uid"] != owner_uid);
                    if refs.is_empty() {
                        meta.remove("ownerReferences");
                    }
                }
                self.update(r, o);
            }
        }
    }

    fn collect_dependents(&mut self, owner_uid: &str, ns: &str, now: &str, all: &[Resource]) {
        for r in all {
            let dependents: Vec<String> = self
                .list(r, Some(ns))
                .filter(|o| {
                    o.pointer("/metadata/ownerReferences")
                        .and_then(Value::as_array)
                        .is_some_and(|refs| refs.iter().any(|x| x["uid"] == owner_uid))
                })
                .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str).map(str::to_string))
                .collect();
            for name in dependents {
                self.delete(r, ns, &name, now, all);
            }
        }
    }
}

/// `metadata.managedFields` as a real API server keeps it: one entry for the writer of metadata
/// and spec, one for the status subresource, each with the set of fields it owns (FieldsV1).
/// It makes a stored object as large as a real one (a pod gains 1–3 KB), so benchmarks of the
/// tool's reads measure what a real cluster would cost.
fn managed_fields(obj: &Value) -> Value {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = obj.get("apiVersion").cloned().unwrap_or(json!("v1"));
    let time = obj
        .pointer("/metadata/creationTimestamp")
        .cloned()
        .unwrap_or(Value::Null);
    // a Sandbox's writer last wrote when it stamped the mode it set
    let written = obj
        .pointer("/metadata/annotations/sandbox.namzu.ai~1operating-mode-changed-at")
        .and_then(Value::as_str)
        .filter(|_| kind == "Sandbox")
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or_else(
            || time.clone(),
            |t| json!(super::clock::k8s_time(t.with_timezone(&chrono::Utc))),
        );
    let mut owned = serde_json::Map::new();
    if let Some(meta) = obj.get("metadata").and_then(Value::as_object) {
        let mut m = serde_json::Map::new();
        for k in ["labels", "annotations", "ownerReferences", "finalizers"] {
            if let Some(v) = meta.get(k) {
                m.insert(format!("f:{k}"), fields_v1(v));
            }
        }
        owned.insert("f:metadata".into(), Value::Object(m));
    }
    if let Some(spec) = obj.get("spec") {
        owned.insert("f:spec".into(), fields_v1(spec));
    }
    let (writer, status_writer) = match kind {
        "Pod" => ("kube-controller-manager", "kubelet"),
        "PersistentVolumeClaim" => ("kube-controller-manager", "kube-controller-manager"),
        "Sandbox" => ("namzu-sandbox", "agent-sandbox-controller"),
        _ => ("kubectl-client-side-apply", "kube-controller-manager"),
    };
    let mut entries = vec![
        json!({"manager": writer, "operation": "Update", "apiVersion": api_version,
        "time": written, "fieldsType": "FieldsV1", "fieldsV1": Value::Object(owned)}),
    ];
    if let Some(status) = obj.get("status") {
        entries.push(
            json!({"manager": status_writer, "operation": "Update", "apiVersion": api_version,
            "time": time, "fieldsType": "FieldsV1", "fieldsV1": {"f:status": fields_v1(status)},
            "subresource": "status"}),
        );
    }
    Value::Array(entries)
}

/// The FieldsV1 set of a value: every object key as `f:<key>`, list items as `.`.
fn fields_v1(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (format!("f:{k}"), fields_v1(v))).collect()),
        Value::Array(items) if !items.is_empty() => {
            let mut m = serde_json::Map::new();
            m.insert(".".into(), json!({}));
            for (i, item) in items.iter().enumerate() {
                let key = item
                    .get("name")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("i:{i}"), |n| format!("k:{{\"name\":\"{n}\"}}"));
                m.insert(key, fields_v1(item));
            }
            Value::Object(m)
        }
        _ => json!({}),
    }
}

/// A custom resource (served from a CRD): its group is not a Kubernetes one.
fn is_custom(obj: &Value) -> bool {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    api_version
        .split_once('/')
        .is_some_and(|(group, _)| group.contains('.') && !group.ends_with(".k8s.io"))
}

/// Every object's keys in sorted order, at every depth: a real API server keeps a custom
/// resource as a Go map, and Go's encoder writes map keys sorted.
pub(crate) fn sort_keys(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            for (k, mut v) in entries {
                sort_keys(&mut v);
                map.insert(k, v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}
impl RuntimeClasses for Store {
    fn runtime_class(&self, name: &str) -> Option<&Value> {
        self.get(&RUNTIME_CLASSES, "", name)
    }
}
