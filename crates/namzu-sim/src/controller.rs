//! A model of the agent-sandbox controller (docs/interop.md §8) plus the kubelet and scheduler
//! as far as a workspace sees them: pods, PVCs, conditions and events, with per-workspace knobs
//! that reproduce the field's trouble. Driven by the sim's clock, so tests never sleep.

mod claim_binding;
pub use claim_binding::{TRUTH_CAUSE, TRUTH_READY_AT};
mod claims;
mod container_logs;
mod disks;
mod events;
mod pods;
mod pools;

use pods::*;

use super::clock::k8s_time;
use super::events::{CLAIM_CONTROLLER, KUBELET, Reporter, SANDBOX_CONTROLLER, SCHEDULER, core_event};
use super::logs::{self, Logs};
use super::resources::{CASCADE, CLAIMS, EVENTS, PODS, PVCS, SANDBOXES};
use super::store::Store;
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Per-workspace trouble.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Knobs {
    /// The scheduler's message; the pod stays Pending, PodScheduled False/Unschedulable.
    pub unschedulable: Option<String>,
    /// A waiting reason such as `ImagePullBackOff` or `ErrImagePull`.
    pub image_pull: Option<String>,
    pub crash_loop: bool,
    /// The workspace's PVCs stay Pending.
    pub pvc_pending: bool,
    /// A deleted pod never goes away.
    pub stuck_terminating: bool,
    /// The pod fails (phase Failed) and is not recreated.
    pub pod_failed: bool,
    /// The controller reports `ReconcilerError` with this message.
    pub reconciler_error: Option<String>,
    /// A pod of the Sandbox's name exists that the Sandbox does not own.
    pub foreign_pod: bool,
    /// Conditions lag one generation behind (a Ready=True written for an older generation).
    pub stale_status: bool,
    /// The pod's node stopped reporting: agent-sandbox v1.0.3 writes `Suspended=Unknown`
    /// (`PodStateUnknown`).
    pub pod_state_unknown: bool,
    /// The pod was deleted under a Ready=True the controller has not updated yet: no pod, and
    /// Ready stays True.
    pub pod_lost: bool,
    /// The PVC under the workspace's claim name belongs to an earlier Sandbox of the same name.
    pub foreign_disk: bool,
    /// The workspace's PVCs are never made (the pod waits for them).
    pub disk_missing: bool,
    /// The reclaim policy of the volumes provisioned for the workspace's PVCs: `Delete` (the
    /// default, a StorageClass's) or `Retain`.
    pub reclaim_policy: Option<String>,
    /// The controller reports Ready=False with this reason (agent-sandbox v1.0's
    /// `InvalidConfiguration`, `PodTerminating`, or one the tool does not know): no pod is made,
    /// except for `PodTerminating`, whose pod is being deleted and stays so.
    pub ready_reason: Option<String>,
    /// The message with `ready_reason`.
    pub ready_message: Option<String>,
    pub ready_delay_ms: Option<u64>,
    pub grace_ms: Option<u64>,
    /// The pod waits this long for a node (PodScheduled False/Unschedulable, a FailedScheduling
    /// Event), then is scheduled.
    pub schedule_delay_ms: Option<u64>,
    /// The image pull takes this long (the `Pulled` Event says so); default 3/5 of the ready delay.
    pub pull_delay_ms: Option<u64>,
    /// The readiness probe passes this much later than the default, after the container started.
    pub readiness_delay_ms: Option<u64>,
    /// For this long after the Sandbox is made the controller reports `ReconcilerError` and makes
    /// no pod; then it does.
    pub error_for_ms: Option<u64>,
}

/// Default timings of the model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub ready_delay: Duration,
    pub grace: Duration,
    /// How long after a write to a Sandbox the controller's pass over it runs, as a real
    /// controller's watch and queue lag: until then every read shows the object as written with
    /// the status of before (an earlier generation's Ready=True included). Zero reconciles
    /// inside the write.
    pub reconcile_delay: Duration,
}

/// The controller's lag after a write by default (`demo --serve`; tests default to none).
pub(crate) const RECONCILE_DELAY_MS: i64 = 300;

impl Default for Timing {
    fn default() -> Self {
        Timing {
            ready_delay: Duration::milliseconds(1500),
            grace: Duration::seconds(2),
            reconcile_delay: Duration::milliseconds(RECONCILE_DELAY_MS),
        }
    }
}

/// What the model remembers beyond the objects.
/// A Sandbox by `(namespace, name)`.
pub(crate) type SandboxKey = (String, String);

#[derive(Debug, Default)]
pub struct Controller {
    pub knobs: HashMap<String, Knobs>,
    pub timing: Timing,
    /// pod uid → when it was created (readiness counts from here).
    started: HashMap<String, DateTime<Utc>>,
    /// pod uid → when it will be gone.
    gone_at: HashMap<String, DateTime<Utc>>,
    /// (object uid, reason) already announced by an Event.
    announced: HashSet<(String, String)>,
    event_seq: u64,
    /// When each Sandbox's next scheduled transition falls due (readiness, pod gone, expiry),
    /// by `(namespace, name)`; `None` for one scheduled outside a Sandbox's pass.
    due_at: BTreeSet<(DateTime<Utc>, Option<SandboxKey>)>,
    /// The same schedule by Sandbox, so one Sandbox's pass drops its own entries in O(log n).
    due_of: HashMap<Option<SandboxKey>, Vec<DateTime<Utc>>>,
    /// The Sandbox being reconciled: what `due` schedules belongs to it.
    current: Option<(String, String)>,
    /// Every container's log (the kubelet's side of the model).
    pub logs: Logs,
    /// (pod uid, container) → its restarts so far.
    restarts: HashMap<(String, String), Restarts>,
    /// Warm pools (`namespace/name`) whose status the scenario gave: left as given.
    pub frozen_pools: HashSet<String>,
    /// Pool uid → the last progress Event reason it recorded (one Event per transition).
    pool_progress: HashMap<String, String>,
    /// Pools (`namespace`, `name`) whose pass falls due (a claim took a member: the pool
    /// controller replenishes on its own watch, [`claim_binding::POOL_LAG_MS`] later).
    pool_due: BTreeSet<(DateTime<Utc>, String, String)>,
}

/// A container's restarts: how many, the last run's end, when the running one started.
#[derive(Debug, Clone)]
struct Restarts {
    count: u32,
    last: Value,
    started_at: String,
}

/// What a write touched, for the controller's pass after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// A Sandbox, by namespace and name.
    Sandbox((String, String)),
    /// A SandboxClaim or a SandboxWarmPool (or a template, which only pools and claims read).
    ClaimOrPool,
    /// Another object of a namespace (a pod, a disk): the Sandboxes it can concern.
    Near(Value),
    Other,
    /// Nothing (the write was refused).
    Nothing,
}

impl Written {
    /// What a write of `object` (as written, or as deleted) of kind `r` through the sim's own
    /// API (`Sim::create`, `modify`, `delete`) touched; a Sandbox is every pass there (it may
    /// be a pool's member).
    pub fn of(r: &super::resources::Resource, object: &Value) -> Written {
        use super::resources::{CLAIMS, PODS, PVCS, TEMPLATES, WARM_POOLS};
        let same = |k: &super::resources::Resource| k.group == r.group && k.plural == r.plural;
        if [CLAIMS, WARM_POOLS, TEMPLATES].iter().any(same) {
            Written::ClaimOrPool
        } else if [PODS, PVCS].iter().any(same) {
            Written::Near(object.clone())
        } else {
            Written::Other
        }
    }
}

impl Controller {
    pub fn new(timing: Timing) -> Controller {
        Controller {
            timing,
            ..Controller::default()
        }
    }
}

pub(crate) fn knob_key(ns: &str, name: &str) -> String {
    format!("{ns}/{name}")
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The uid an earlier Sandbox of this name had (deleted and created again since): what a foreign
/// disk or a foreign per-sandbox policy left behind is owned by.
pub fn earlier_uid(name: &str) -> String {
    format!("0e0e0e0e-0000-4000-8000-0000{}", name_hash(name))
}

/// FNV-1a-32 of the Sandbox name, 8 lowercase hex (`NameHash`).
pub fn name_hash(name: &str) -> String {
    let mut h: u32 = 0x811c9dc5;
    for b in name.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x01000193);
    }
    format!("{h:08x}")
}

/// The Sandbox's conditions as the controller writes them now: at the generation it observed
/// (one behind under the `stale_status` knob).
fn conditions_at(sbx: &Value, knobs: &Knobs, now: DateTime<Utc>) -> impl Fn(&str, &str, &str, &str) -> Value {
    let generation = sbx.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
    let observed = if knobs.stale_status { generation - 1 } else { generation };
    let now_s = k8s_time(now);
    move |t: &str, st: &str, r: &str, m: &str| condition(t, st, r, m, observed, &now_s)
}

fn condition(type_: &str, status: &str, reason: &str, message: &str, generation: i64, now: &str) -> Value {
    json!({"type":type_,"status":status,"reason":reason,"message":message,
        "observedGeneration":generation,"lastTransitionTime":now})
}

/// Keep a condition's lastTransitionTime when its status did not change.
fn keep_transition_times(old: &Value, new: &mut [Value]) {
    let old = old.pointer("/status/conditions").and_then(Value::as_array);
    for c in new.iter_mut() {
        let prev = old.and_then(|o| o.iter().find(|p| p["type"] == c["type"]));
        if let Some(p) = prev.filter(|p| p["status"] == c["status"]) {
            c["lastTransitionTime"] = p["lastTransitionTime"].clone();
        }
    }
}

impl Controller {
    fn knobs_for(&self, sbx: &Value) -> Knobs {
        let key = knob_key(s(sbx, "/metadata/namespace"), s(sbx, "/metadata/name"));
        self.knobs.get(&key).cloned().unwrap_or_default()
    }

    /// A terminating pod whose grace is over (never a stuck one); a draining one falls due later.
    fn drained(&mut self, pod_uid: &str, now: DateTime<Utc>, knobs: &Knobs) -> bool {
        match self.gone_at.get(pod_uid).copied() {
            Some(_) if knobs.stuck_terminating => false,
            Some(t) if t <= now => true,
            Some(t) => {
                self.due(t);
                false
            }
            None => false,
        }
    }

    fn due(&mut self, at: DateTime<Utc>) {
        let key = self.current.clone();
        if self.due_at.insert((at, key.clone())) {
            self.due_of.entry(key).or_default().push(at);
        }
    }

    /// Schedule `key`'s pass for `at` (a write's reconcile, after the controller's lag).
    pub fn later(&mut self, key: (String, String), at: DateTime<Utc>) {
        let key = Some(key);
        if self.due_at.insert((at, key.clone())) {
            self.due_of.entry(key).or_default().push(at);
        }
    }

    /// Forget what was scheduled for `key`.
    fn undue(&mut self, key: &Option<(String, String)>) {
        for at in self.due_of.remove(key).unwrap_or_default() {
            self.due_at.remove(&(at, key.clone()));
        }
    }

    /// The earliest time a scheduled transition falls due.
    pub fn next_due(&self) -> Option<DateTime<Utc>> {
        let pool = self.pool_due.first().map(|(t, _, _)| *t);
        self.due_at.first().map(|(t, _)| *t).into_iter().chain(pool).min()
    }

    /// One pass over every Sandbox. `settle` treats every delay as elapsed (scenario load).
    pub fn reconcile(&mut self, store: &mut Store, now: DateTime<Utc>, settle: bool) {
        self.due_at.clear();
        self.due_of.clear();
        self.reconcile_pools(store, now);
        self.reconcile_claims(store, now);
        self.bind_claims(store, now);
        let keys: Vec<(String, String)> = store
            .list(&SANDBOXES, None)
            .map(|s| {
                (
                    super::store::meta(s, "namespace").to_string(),
                    super::store::meta(s, "name").to_string(),
                )
            })
            .collect();
        for key in keys {
            self.reconcile_key(store, &key, now, settle);
        }
    }

    /// After a write of a claim or a warm pool: the pools' and the claims' passes (a few objects
    /// each), then the pass of each Sandbox they changed — not every Sandbox's (a claim at
    /// 10,000 workspaces held the lock for seconds). Where the store no longer has the changes
    /// since (compacted), every pass.
    pub fn reconcile_claims_and_pools(&mut self, store: &mut Store, now: DateTime<Utc>) {
        let before = store.resource_version();
        self.reconcile_pools(store, now);
        self.reconcile_claims(store, now);
        self.bind_claims(store, now);
        let Some(changes) = store.events_since(before, &super::store::rkey(&SANDBOXES)) else {
            return self.reconcile(store, now, false);
        };
        let mut keys: Vec<(String, String)> = changes
            .iter()
            .map(|e| (e.namespace.clone(), super::store::meta(&e.object, "name").to_string()))
            .collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            self.reconcile_key(store, &key, now, false);
        }
    }

    /// After a write of a pod or a disk (`object`, as written or as deleted): the passes of the
    /// Sandboxes of its namespace that can read it — its owner, the one it is named after
    /// (a Sandbox's pod), the one it is a disk of (`<entry>-<sandbox>`) — not every Sandbox's;
    /// then the pools' and claims' passes (a pool counts its members' pods).
    pub fn reconcile_near(&mut self, store: &mut Store, object: &Value, now: DateTime<Utc>) {
        let (ns, name) = (
            super::store::meta(object, "namespace"),
            super::store::meta(object, "name"),
        );
        let owners: Vec<&str> = object
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|o| o["kind"] == "Sandbox")
            .filter_map(|o| o["name"].as_str())
            .collect();
        let reads = |sandbox: &str| {
            owners.contains(&sandbox)
                || sandbox == name
                || name.strip_suffix(sandbox).is_some_and(|entry| entry.ends_with('-'))
        };
        let keys: Vec<(String, String)> = store
            .list(&SANDBOXES, Some(ns))
            .map(|s| super::store::meta(s, "name"))
            .filter(|n| reads(n))
            .map(|n| (ns.to_string(), n.to_string()))
            .collect();
        for key in keys {
            self.reconcile_key(store, &key, now, false);
        }
        self.reconcile_claims_and_pools(store, now);
    }

    /// The passes of what has fallen due by `now`, and only those: the cost of time passing is
    /// the Sandboxes it moves, not the store's size.
    pub fn reconcile_due(&mut self, store: &mut Store, now: DateTime<Utc>) {
        // the pools' passes first, each at its own time (their members' passes follow)
        while let Some((at, ns, pool)) = self.pool_due.first().cloned().filter(|(t, _, _)| *t <= now) {
            self.pool_due.remove(&(at, ns.clone(), pool.clone()));
            self.reconcile_due(store, at - Duration::milliseconds(1));
            self.replenish(store, &ns, &pool, at);
        }
        let mut keys = Vec::new();
        while let Some((_, key)) = self.due_at.first().cloned().filter(|(t, _)| *t <= now) {
            self.undue(&key);
            keys.push(key);
        }
        if keys.iter().any(Option::is_none) {
            return self.reconcile(store, now, false);
        }
        keys.sort();
        keys.dedup();
        for key in keys.into_iter().flatten() {
            self.reconcile_key(store, &key, now, false);
        }
    }

    /// One Sandbox's pass (a write to it, or its scheduled transition).
    pub fn reconcile_key(&mut self, store: &mut Store, key: &(String, String), now: DateTime<Utc>, settle: bool) {
        // what was scheduled for it is redone by its pass
        self.undue(&Some(key.clone()));
        let Some(sbx) = store.get(&SANDBOXES, &key.0, &key.1).cloned() else {
            return;
        };
        if sbx.pointer("/metadata/deletionTimestamp").is_some() {
            // the controller is idle once deletion starts; a settled scenario still had disks
            if settle {
                let knobs = self.knobs_for(&sbx);
                self.ensure_pvcs(store, &sbx, &knobs, &k8s_time(now));
            }
            return;
        }
        self.current = Some(key.clone());
        self.reconcile_one(store, sbx, now, settle);
        self.current = None;
    }

    /// A suspended Sandbox: its pod terminated, then gone; its conditions say how far.
    fn suspending(
        &mut self,
        store: &mut Store,
        sbx: &Value,
        pod: Option<Value>,
        knobs: &Knobs,
        now: DateTime<Utc>,
        settle: bool,
    ) -> Vec<Value> {
        let (ns, name) = (s(sbx, "/metadata/namespace"), s(sbx, "/metadata/name"));
        let now_s = k8s_time(now);
        let cond = conditions_at(sbx, knobs, now);
        match pod {
            Some(p) if !owns(sbx, &p) => {
                vec![
                    cond("Ready", "False", "SandboxSuspended", "Sandbox is suspending"),
                    cond(
                        "Suspended",
                        "False",
                        "PodNotOwned",
                        &format!("Pod {name} exists but is not owned by this Sandbox"),
                    ),
                ]
            }
            Some(p) => {
                let uid = s(&p, "/metadata/uid").to_string();
                if p.pointer("/metadata/deletionTimestamp").is_none() {
                    self.start_termination(store, sbx, p, knobs, now, settle);
                } else if self.drained(&uid, now, knobs) {
                    self.delete_pod(store, ns, name, &now_s);
                }
                let still_there = store.get(&PODS, ns, name).is_some();
                if still_there {
                    vec![
                        cond("Ready", "False", "SandboxSuspended", "Sandbox is suspending"),
                        cond("Suspended", "False", "PodTerminating", "Pod is terminating"),
                    ]
                } else {
                    suspended_conditions(&cond)
                }
            }
            // a settled scenario's draining pod: it ran, and the suspend has begun
            None if settle && (knobs.stuck_terminating || knobs.grace_ms.is_some()) => {
                let p = self.create_pod(store, sbx, knobs, now, true);
                let p = self.progress_pod(store, sbx, p, knobs, now);
                self.start_termination(store, sbx, p, knobs, now, true);
                vec![
                    cond("Ready", "False", "SandboxSuspended", "Sandbox is suspending"),
                    cond("Suspended", "False", "PodTerminating", "Pod is terminating"),
                ]
            }
            None => suspended_conditions(&cond),
        }
    }

    /// A running Sandbox: its pod made (again when it ended or drained) and moved along; the
    /// conditions and the status fields that follow from it.
    fn running(
        &mut self,
        store: &mut Store,
        sbx: &Value,
        pod: Option<Value>,
        knobs: &Knobs,
        now: DateTime<Utc>,
        settle: bool,
    ) -> (Vec<Value>, Value) {
        let (ns, name) = (s(sbx, "/metadata/namespace"), s(sbx, "/metadata/name"));
        let now_s = k8s_time(now);
        let cond = conditions_at(sbx, knobs, now);
        let pod = match pod {
            Some(p) if knobs.ready_reason.as_deref() == Some("PodTerminating") => {
                Some(self.keep_terminating(store, p, knobs, now))
            }
            None if knobs.ready_reason.as_deref() == Some("PodTerminating") => {
                let p = self.create_pod(store, sbx, knobs, now, settle);
                let p = self.progress_pod(store, sbx, p, knobs, now);
                Some(self.keep_terminating(store, p, knobs, now))
            }
            Some(p) if s(&p, "/status/phase") == "Failed" || s(&p, "/status/phase") == "Succeeded" => Some(p),
            Some(p) if p.pointer("/metadata/deletionTimestamp").is_some() => {
                let uid = s(&p, "/metadata/uid");
                if self.drained(uid, now, knobs) {
                    self.delete_pod(store, ns, name, &now_s);
                    Some(self.create_pod(store, sbx, knobs, now, settle))
                } else {
                    Some(p)
                }
            }
            Some(p) => Some(p),
            None => Some(self.create_pod(store, sbx, knobs, now, settle)),
        }
        .expect("a pod exists or was created");
        let pod = self.progress_pod(store, sbx, pod, knobs, now);
        let mut conds = running_conditions(&pod, &cond);
        let mut extra = json!({});
        if s(&pod, "/status/phase") == "Running" {
            // the CRD's podIPs are strings (a pod's are `{ip}` objects)
            let ips: Vec<Value> = pod
                .pointer("/status/podIPs")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|p| p.get("ip").cloned()).collect())
                .unwrap_or_default();
            extra = json!({"podIPs": ips,
                "nodeName": s(&pod, "/spec/nodeName")});
        }
        if let Some(ps) = pod.pointer("/status/conditions").and_then(Value::as_array)
            && let Some(c) = ps.iter().find(|c| c["type"] == "PodScheduled")
        {
            // the CRD's reason has minLength 1 (a scheduled pod's condition has none)
            let reason = Some(s(c, "/reason"))
                .filter(|r| !r.is_empty())
                .unwrap_or("PodScheduled");
            conds.push(cond("PodScheduled", s(c, "/status"), reason, s(c, "/message")));
        }
        (conds, extra)
    }

    fn reconcile_one(&mut self, store: &mut Store, sbx: Value, now: DateTime<Utc>, settle: bool) {
        let knobs = self.knobs_for(&sbx);
        let (ns, name) = (
            s(&sbx, "/metadata/namespace").to_string(),
            s(&sbx, "/metadata/name").to_string(),
        );
        let now_s = k8s_time(now);
        let cond = conditions_at(&sbx, &knobs, now);
        self.ensure_pvcs(store, &sbx, &knobs, &now_s);

        let shutdown = sbx
            .pointer("/spec/shutdownTime")
            .and_then(Value::as_str)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
        if let Some(t) = shutdown.filter(|t| *t > now) {
            self.due(t.with_timezone(&Utc));
        }
        if shutdown.is_some_and(|t| t <= now) {
            self.delete_pod(store, &ns, &name, &now_s);
            if s(&sbx, "/spec/shutdownPolicy") == "Delete" {
                store.delete(&SANDBOXES, &ns, &name, &now_s, &CASCADE);
                return;
            }
            let conds = vec![cond("Ready", "False", "SandboxExpired", "Sandbox has expired")];
            self.write_status(store, &sbx, conds, json!({}));
            return;
        }

        if knobs.foreign_pod && store.get(&PODS, &ns, &name).is_none() {
            let p = self.create_pod(store, &sbx, &knobs, now, settle);
            self.progress_pod(store, &sbx, p, &knobs, now);
        }
        if self.erring(store, &sbx, &knobs, now) {
            return;
        }
        let pod = store.get(&PODS, &ns, &name).cloned();
        let suspended = s(&sbx, "/spec/operatingMode") == "Suspended";
        let mut extra = json!({});
        let mut conds;
        if suspended {
            conds = self.suspending(store, &sbx, pod, &knobs, now, settle);
        } else if knobs.pod_lost || knobs.ready_reason.as_deref().is_some_and(|r| r != "PodTerminating") {
            // no pod: deleted under a Ready=True not yet updated, or the controller is blocked
            if pod.is_some() {
                self.delete_pod(store, &ns, &name, &now_s);
            }
            conds = vec![
                cond("Ready", "True", "DependenciesReady", "Pod is Ready; Service Exists"),
                cond("Suspended", "False", "NotSuspended", "Sandbox is not suspended"),
            ];
        } else {
            (conds, extra) = self.running(store, &sbx, pod, &knobs, now, settle);
        }
        if let Some(reason) = &knobs.ready_reason {
            let message = knobs.ready_message.clone().unwrap_or_default();
            conds.retain(|c| c["type"] != "Ready");
            conds.insert(0, cond("Ready", "False", reason, &message));
        }
        if knobs.pod_state_unknown {
            conds.retain(|c| c["type"] != "Suspended");
            conds.push(cond(
                "Suspended",
                "Unknown",
                "PodStateUnknown",
                "the pod's node worker-3 stopped reporting: its state is unknown",
            ));
        }
        if let Some(msg) = &knobs.reconciler_error {
            conds.retain(|c| c["type"] != "Ready");
            conds.insert(
                0,
                cond("Ready", "False", "ReconcilerError", &format!("Error seen: {msg}")),
            );
            self.announce(
                store,
                &sbx,
                "ReconcilerError",
                &format!("Error seen: {msg}"),
                "Warning",
                &now_s,
            );
            // a pod quota stops the pod itself (a Service's quota, say, does not)
            if msg.contains("exceeded quota") && msg.contains("pods \"") {
                self.announce(
                    store,
                    &sbx,
                    "SandboxPodCreateFailed",
                    &format!("Failed to create pod for Sandbox {name}: {msg}"),
                    "Warning",
                    &now_s,
                );
            }
        }
        if let Some(reason) = knobs.ready_reason.as_deref().filter(|r| *r != "PodTerminating") {
            let message = knobs.ready_message.clone().unwrap_or_default();
            self.announce(
                store,
                &sbx,
                "SandboxPodCreateFailed",
                &format!("Pod {name} not created: {reason}: {message}"),
                "Warning",
                &now_s,
            );
        }
        self.finish(store, &sbx, conds, extra, now);
    }

    /// The pass's end: the claim's Events, the Sandbox's status, the claim's Ready.
    fn finish(&mut self, store: &mut Store, sbx: &Value, conds: Vec<Value>, extra: Value, now: DateTime<Utc>) {
        self.claim_events(store, sbx, now);
        self.write_status(store, sbx, conds, extra);
        self.sync_claim(store, s(sbx, "/metadata/namespace"), s(sbx, "/metadata/name"), now);
    }

    /// The claim that owns the Sandbox follows its Ready condition.
    fn sync_claim(&mut self, store: &mut Store, ns: &str, name: &str, now: DateTime<Utc>) {
        let Some(sbx) = store.get(&SANDBOXES, ns, name).cloned() else {
            return;
        };
        let owner = sbx
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .and_then(|refs| refs.iter().find(|r| r["kind"] == "SandboxClaim"))
            .map(|r| s(r, "/name").to_string());
        if let Some(claim) = owner.and_then(|c| store.get(&CLAIMS, ns, &c).cloned())
            && claim["metadata"]["uid"] == sbx["metadata"]["ownerReferences"][0]["uid"]
        {
            self.claim_ready(store, &sbx, &claim, now);
        }
    }

    /// The `error_for_ms` knob: while it lasts, the controller reports `ReconcilerError` and
    /// makes no pod (`true`).
    fn erring(&mut self, store: &mut Store, sbx: &Value, knobs: &Knobs, now: DateTime<Utc>) -> bool {
        let Some(ms) = knobs.error_for_ms else {
            return false;
        };
        let Some(until) = parse_time(s(sbx, "/metadata/creationTimestamp"))
            .map(|t| t + Duration::milliseconds(ms as i64))
            .filter(|t| *t > now)
        else {
            return false;
        };
        self.due(until);
        let msg = "Error seen: failed to create pod: Internal error occurred: resource quota evaluation timed out";
        self.announce(store, sbx, "ReconcilerError", msg, "Warning", &k8s_time(now));
        let cond = conditions_at(sbx, knobs, now);
        let conds = vec![
            cond("Ready", "False", "ReconcilerError", msg),
            cond("Suspended", "False", "NotSuspended", "Sandbox is not suspended"),
        ];
        self.write_status(store, sbx, conds, json!({}));
        true
    }

    fn write_status(&mut self, store: &mut Store, sbx: &Value, mut conds: Vec<Value>, extra: Value) {
        let (ns, name) = (s(sbx, "/metadata/namespace"), s(sbx, "/metadata/name"));
        let Some(current) = store.get(&SANDBOXES, ns, name).cloned() else {
            return;
        };
        keep_transition_times(&current, &mut conds);
        let mut status = Map::new();
        status.insert("conditions".into(), Value::Array(conds));
        if let Some(e) = extra.as_object() {
            for (k, v) in e {
                if !(v.is_null() || v == "" || v == &json!([])) {
                    status.insert(k.clone(), v.clone());
                }
            }
        }
        // kept while suspended once a pod has existed
        let selector = format!("agents.x-k8s.io/sandbox-name-hash={}", name_hash(name));
        status.insert("selector".into(), json!(selector));
        if current.pointer("/spec/service").and_then(Value::as_bool) == Some(true) {
            status.insert("service".into(), json!(name));
            status.insert("serviceFQDN".into(), json!(format!("{name}.{ns}.svc.cluster.local")));
        }
        let ready = |o: &Value| {
            o.pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
                .map(|c| {
                    (
                        s(c, "/status").to_string(),
                        s(c, "/reason").to_string(),
                        s(c, "/message").to_string(),
                        s(c, "/lastTransitionTime").to_string(),
                    )
                })
        };
        let before = ready(&current);
        let mut next = current.clone();
        next["status"] = Value::Object(status);
        // a Ready transition is announced
        if let Some((now_ready, reason, message, at)) = ready(&next)
            && before.as_ref().map(|b| &b.0) != Some(&now_ready)
        {
            match (now_ready.as_str(), before.as_ref().map(|b| b.0.as_str())) {
                ("True", _) => self.announce(store, &current, "SandboxReady", "Sandbox is Ready", "Normal", &at),
                ("False", Some("True")) => self.announce(
                    store,
                    &current,
                    "SandboxNotReady",
                    &format!("Sandbox is no longer Ready: {reason}: {message}"),
                    "Warning",
                    &at,
                ),
                _ => {}
            }
        }
        // agent-sandbox v1.0 no longer writes the agents.x-k8s.io/pod-name annotation (the pod
        // is named after the Sandbox); one left by an older controller stays as it is
        if next != current {
            store.update(&SANDBOXES, next);
        }
    }
}

/// A Kubernetes timestamp.
fn parse_time(t: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(t).ok().map(|t| t.with_timezone(&Utc))
}

/// Go's `time.Duration` text for a pull time: `900ms`, `1.5s`.
fn go_duration(d: Duration) -> String {
    let ms = d.num_milliseconds();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let text = format!("{}.{:03}", ms / 1000, ms % 1000);
    format!("{}s", text.trim_end_matches('0').trim_end_matches('.'))
}

fn suspended_conditions(cond: &dyn Fn(&str, &str, &str, &str) -> Value) -> Vec<Value> {
    vec![
        cond("Ready", "False", "SandboxSuspended", "Sandbox is suspended"),
        cond("Suspended", "True", "PodTerminated", "Pod is terminated"),
    ]
}
