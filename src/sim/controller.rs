//! A model of the agent-sandbox controller (docs/interop.md §8) plus the kubelet and scheduler
//! as far as a workspace sees them: pods, PVCs, conditions and events, with per-workspace knobs
//! that reproduce the field's trouble. Driven by the sim's clock, so tests never sleep.

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
    /// The pod was deleted under a Ready=True the controller has not updated yet: no pod, and
    /// Ready stays True.
    pub pod_lost: bool,
    /// The PVC under the workspace's claim name belongs to an earlier Sandbox of the same name.
    pub foreign_disk: bool,
    /// The workspace's PVCs are never made (the pod waits for them).
    pub disk_missing: bool,
    /// The controller reports Ready=False with this reason (agent-sandbox v1.0's
    /// `InvalidConfiguration`, `PodTerminating`, or one the tool does not know): no pod is made,
    /// except for `PodTerminating`, whose pod is being deleted and stays so.
    pub ready_reason: Option<String>,
    /// The message with `ready_reason`.
    pub ready_message: Option<String>,
    pub ready_delay_ms: Option<u64>,
    pub grace_ms: Option<u64>,
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
pub const RECONCILE_DELAY_MS: i64 = 300;

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
pub type SandboxKey = (String, String);

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
}

/// A container's restarts: how many, the last run's end, when the running one started.
#[derive(Debug, Clone)]
struct Restarts {
    count: u32,
    last: Value,
    started_at: String,
}

impl Controller {
    pub fn new(timing: Timing) -> Controller {
        Controller {
            timing,
            ..Controller::default()
        }
    }
}

pub fn knob_key(ns: &str, name: &str) -> String {
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
        self.due_at.first().map(|(t, _)| *t)
    }

    /// One pass over every Sandbox. `settle` treats every delay as elapsed (scenario load).
    pub fn reconcile(&mut self, store: &mut Store, now: DateTime<Utc>, settle: bool) {
        self.due_at.clear();
        self.due_of.clear();
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

    /// The passes of what has fallen due by `now`, and only those: the cost of time passing is
    /// the Sandboxes it moves, not the store's size.
    pub fn reconcile_due(&mut self, store: &mut Store, now: DateTime<Utc>) {
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

    fn reconcile_one(&mut self, store: &mut Store, sbx: Value, now: DateTime<Utc>, settle: bool) {
        let knobs = self.knobs_for(&sbx);
        let (ns, name) = (
            s(&sbx, "/metadata/namespace").to_string(),
            s(&sbx, "/metadata/name").to_string(),
        );
        let now_s = k8s_time(now);
        let generation = sbx.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
        let observed = if knobs.stale_status { generation - 1 } else { generation };
        let cond = |t: &str, st: &str, r: &str, m: &str| condition(t, st, r, m, observed, &now_s);
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
        let pod = store.get(&PODS, &ns, &name).cloned();
        let suspended = s(&sbx, "/spec/operatingMode") == "Suspended";
        let mut extra = json!({});
        let mut conds;
        if suspended {
            match pod {
                Some(p) if !owns(&sbx, &p) => {
                    conds = vec![
                        cond("Ready", "False", "SandboxSuspended", "Sandbox is suspending"),
                        cond(
                            "Suspended",
                            "False",
                            "PodNotOwned",
                            &format!("Pod {name} exists but is not owned by this Sandbox"),
                        ),
                    ];
                }
                Some(p) => {
                    let uid = s(&p, "/metadata/uid").to_string();
                    if p.pointer("/metadata/deletionTimestamp").is_none() {
                        self.start_termination(store, &sbx, p, &knobs, now, settle);
                    } else if self.drained(&uid, now, &knobs) {
                        self.delete_pod(store, &ns, &name, &now_s);
                    }
                    let still_there = store.get(&PODS, &ns, &name).is_some();
                    conds = if still_there {
                        vec![
                            cond("Ready", "False", "SandboxSuspended", "Sandbox is suspending"),
                            cond("Suspended", "False", "PodTerminating", "Pod is terminating"),
                        ]
                    } else {
                        suspended_conditions(&cond)
                    };
                }
                // a settled scenario's draining pod: it ran, and the suspend has begun
                None if settle && (knobs.stuck_terminating || knobs.grace_ms.is_some()) => {
                    let p = self.create_pod(store, &sbx, &knobs, now, true);
                    let p = self.progress_pod(store, &sbx, p, &knobs, now);
                    self.start_termination(store, &sbx, p, &knobs, now, true);
                    conds = vec![
                        cond("Ready", "False", "SandboxSuspended", "Sandbox is suspending"),
                        cond("Suspended", "False", "PodTerminating", "Pod is terminating"),
                    ];
                }
                None => conds = suspended_conditions(&cond),
            }
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
            let pod = match pod {
                Some(p) if knobs.ready_reason.as_deref() == Some("PodTerminating") => {
                    Some(self.keep_terminating(store, p, &knobs, now))
                }
                None if knobs.ready_reason.as_deref() == Some("PodTerminating") => {
                    let p = self.create_pod(store, &sbx, &knobs, now, settle);
                    let p = self.progress_pod(store, &sbx, p, &knobs, now);
                    Some(self.keep_terminating(store, p, &knobs, now))
                }
                Some(p) if s(&p, "/status/phase") == "Failed" || s(&p, "/status/phase") == "Succeeded" => Some(p),
                Some(p) if p.pointer("/metadata/deletionTimestamp").is_some() => {
                    let uid = s(&p, "/metadata/uid");
                    if self.drained(uid, now, &knobs) {
                        self.delete_pod(store, &ns, &name, &now_s);
                        Some(self.create_pod(store, &sbx, &knobs, now, settle))
                    } else {
                        Some(p)
                    }
                }
                Some(p) => Some(p),
                None => Some(self.create_pod(store, &sbx, &knobs, now, settle)),
            }
            .expect("a pod exists or was created");
            let pod = self.progress_pod(store, &sbx, pod, &knobs, now);
            conds = running_conditions(&pod, &cond);
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
        }
        if let Some(reason) = &knobs.ready_reason {
            let message = knobs.ready_message.clone().unwrap_or_default();
            conds.retain(|c| c["type"] != "Ready");
            conds.insert(0, cond("Ready", "False", reason, &message));
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
        self.claim_events(store, &sbx, now);
        self.write_status(store, &sbx, conds, extra);
    }
}

fn running_conditions(pod: &Value, cond: &dyn Fn(&str, &str, &str, &str) -> Value) -> Vec<Value> {
    let not_suspended = cond("Suspended", "False", "NotSuspended", "Sandbox is not suspended");
    let phase = s(pod, "/status/phase");
    let ready = match phase {
        "Failed" => cond(
            "Ready",
            "False",
            "PodFailed",
            &format!("Pod {} failed", s(pod, "/metadata/name")),
        ),
        "Succeeded" => cond("Ready", "False", "PodSucceeded", "Pod succeeded"),
        _ if pod.pointer("/metadata/deletionTimestamp").is_some() => {
            cond("Ready", "False", "DependenciesNotReady", "Pod is terminating")
        }
        "Running" if pod_ready(pod) => cond("Ready", "True", "DependenciesReady", "Pod is Ready; Service Exists"),
        "Running" => cond("Ready", "False", "DependenciesNotReady", "Pod is Running but not Ready"),
        _ => cond(
            "Ready",
            "False",
            "DependenciesNotReady",
            &format!("Pod is {}", if phase.is_empty() { "Pending" } else { phase }),
        ),
    };
    let mut conds = vec![ready, not_suspended];
    if matches!(phase, "Failed" | "Succeeded") {
        conds.push(cond(
            "Finished",
            "True",
            &format!("Pod{phase}"),
            "Pod reached a terminal phase",
        ));
    }
    conds
}

impl Controller {
    /// What the claim controller says about the claim that owns this Sandbox: provisioned (a
    /// cold start, the Sandbox named after the claim) or adopted (from its warm pool), and
    /// expired once its shutdown time has passed.
    fn claim_events(&mut self, store: &mut Store, sbx: &Value, now: DateTime<Utc>) {
        let owner = sbx
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .and_then(|refs| refs.iter().find(|r| r["kind"] == "SandboxClaim"))
            .cloned();
        let Some(owner) = owner else {
            return;
        };
        let (ns, name) = (s(sbx, "/metadata/namespace"), s(sbx, "/metadata/name"));
        let Some(claim) = store.get(&CLAIMS, ns, s(&owner, "/name")).cloned() else {
            return;
        };
        let at = s(sbx, "/metadata/creationTimestamp").to_string();
        let pool = s(&claim, "/spec/warmPoolRef/name");
        let (reason, message) = if !pool.is_empty() && name != s(&claim, "/metadata/name") {
            (
                "SandboxAdopted",
                format!("Adopted Sandbox {name} from warm pool {pool}"),
            )
        } else {
            ("SandboxProvisioned", format!("Provisioned Sandbox {name}"))
        };
        self.record(store, &claim, reason, &message, "Normal", CLAIM_CONTROLLER, &at);
        let expiry = s(&claim, "/spec/lifecycle/shutdownTime");
        if parse_time(expiry).is_some_and(|t| t <= now) {
            self.record(
                store,
                &claim,
                "ClaimExpired",
                &format!("Claim expired at {expiry}"),
                "Normal",
                CLAIM_CONTROLLER,
                &k8s_time(now),
            );
        }
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

    fn ensure_pvcs(&mut self, store: &mut Store, sbx: &Value, knobs: &Knobs, now: &str) {
        let ns = s(sbx, "/metadata/namespace");
        let name = s(sbx, "/metadata/name");
        let vcts = sbx
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for vct in vcts {
            let pvc_name = format!("{}-{name}", s(&vct, "/metadata/name"));
            let phase = if knobs.pvc_pending { "Pending" } else { "Bound" };
            match store.get(&PVCS, ns, &pvc_name).cloned() {
                None if knobs.disk_missing => {}
                None => {
                    let mut labels = vct.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
                    labels["agents.x-k8s.io/sandbox-name-hash"] = json!(name_hash(name));
                    // a foreign disk: an earlier Sandbox of this name made it, and it was never
                    // collected (a real cluster's garbage collector lags, or an orphaning delete)
                    let owner = if knobs.foreign_disk {
                        let mut o = owner_ref(sbx);
                        o["uid"] = json!(earlier_uid(name));
                        o
                    } else {
                        owner_ref(sbx)
                    };
                    let pvc = json!({"metadata":{"name":pvc_name,"namespace":ns,"labels":labels,
                        "ownerReferences":[owner]},
                        "spec": vct.get("spec").cloned().unwrap_or(json!({})),
                        "status":{"phase":phase}});
                    if store.create(&PVCS, pvc, now).is_ok() && knobs.pvc_pending {
                        self.announce(store, sbx, "ProvisioningFailed", &format!("persistentvolumeclaim {pvc_name}: waiting for a volume to be created, either by external provisioner or manually created by system administrator"), "Warning", now);
                    }
                }
                Some(mut pvc) if s(&pvc, "/status/phase") != phase => {
                    pvc["status"]["phase"] = json!(phase);
                    store.update(&PVCS, pvc);
                }
                Some(_) => {}
            }
        }
    }

    fn create_pod(&mut self, store: &mut Store, sbx: &Value, knobs: &Knobs, now: DateTime<Utc>, settle: bool) -> Value {
        let (ns, name) = (s(sbx, "/metadata/namespace"), s(sbx, "/metadata/name"));
        let template = sbx.pointer("/spec/podTemplate").cloned().unwrap_or(json!({}));
        let mut labels = template.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
        if let Some(l) = labels.as_object_mut() {
            l.retain(|k, _| !k.starts_with("agents.x-k8s.io/") && !k.starts_with("extensions.agents.x-k8s.io/"));
            l.insert("agents.x-k8s.io/sandbox-name-hash".into(), json!(name_hash(name)));
        }
        let mut spec = template.get("spec").cloned().unwrap_or(json!({}));
        let vcts = sbx
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !vcts.is_empty() && spec.is_object() {
            let mut volumes = spec
                .get("volumes")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for v in &vcts {
                let vn = s(v, "/metadata/name");
                volumes.push(json!({"name":vn,"persistentVolumeClaim":{"claimName":format!("{vn}-{name}")}}));
            }
            spec["volumes"] = json!(volumes);
        }
        // a pod someone else made under the Sandbox's name carries that maker's labels, not the
        // controller's
        let (owners, labels) = if knobs.foreign_pod {
            (
                json!([{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"someone-else","uid":"00000000-0000-4000-8000-00000000f0e1","controller":true}]),
                json!({"app": "someone-else"}),
            )
        } else {
            (json!([owner_ref(sbx)]), labels)
        };
        let ready_delay = knobs
            .ready_delay_ms
            .map(|ms| Duration::milliseconds(ms as i64))
            .unwrap_or(self.timing.ready_delay);
        // a settled scenario's pod was made when its workspace last woke (the resume's
        // mode-changed stamp, else the Sandbox's creation), a second after, as a controller
        // would: its start-up waterfall counts from there and has ended by now
        let running = s(sbx, "/spec/operatingMode") != "Suspended";
        let woke = [
            "/metadata/annotations/sandbox.namzu.ai~1operating-mode-changed-at",
            "/metadata/creationTimestamp",
        ]
        .iter()
        // a Suspended one's stamp is its suspend: its pod is from before
        .skip(usize::from(!running))
        .find_map(|p| sbx.pointer(p).and_then(Value::as_str))
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc) + Duration::seconds(1));
        let born = match (settle, woke) {
            (true, Some(t)) => t.min(now - ready_delay),
            (true, None) => now - ready_delay,
            (false, _) => now,
        };
        let pod = json!({"metadata":{"name":name,"namespace":ns,"labels":labels,
            "annotations": template.pointer("/metadata/annotations").cloned().unwrap_or(json!({})),
            "ownerReferences":owners, "creationTimestamp": k8s_time(born)},
            "spec":spec,
            "status":{"phase":"Pending","qosClass":"BestEffort"}});
        let created = store.create(&PODS, pod, &k8s_time(now)).expect("no pod of that name");
        let uid = s(&created, "/metadata/uid").to_string();
        self.started.insert(uid, born);
        if !knobs.foreign_pod {
            self.announce(
                store,
                sbx,
                "SandboxPodCreated",
                &format!("Created pod {name}"),
                "Normal",
                &k8s_time(born),
            );
        }
        created
    }

    /// Move a live pod along: scheduling, image pull, start, readiness — or the knob's trouble.
    fn progress_pod(&mut self, store: &mut Store, sbx: &Value, pod: Value, knobs: &Knobs, now: DateTime<Utc>) -> Value {
        if pod.pointer("/metadata/deletionTimestamp").is_some()
            || matches!(s(&pod, "/status/phase"), "Failed" | "Succeeded")
        {
            return pod;
        }
        let now_s = k8s_time(now);
        let uid = s(&pod, "/metadata/uid").to_string();
        let name = s(&pod, "/metadata/name").to_string();
        let ready_delay = knobs
            .ready_delay_ms
            .map(|ms| Duration::milliseconds(ms as i64))
            .unwrap_or(self.timing.ready_delay);
        let started = *self.started.entry(uid.clone()).or_insert(now);
        let due = now >= started + ready_delay;
        // the container started when the pod became ready, and stays started
        let started_at = pod
            .pointer("/status/containerStatuses/0/state/running/startedAt")
            .and_then(Value::as_str)
            .map_or_else(|| k8s_time(started + ready_delay * 3 / 5), str::to_string);
        if !due {
            self.due(started + ready_delay);
        }
        let containers: Vec<String> = pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .map(|cs| cs.iter().map(|c| s(c, "/name").to_string()).collect())
            .unwrap_or_default();
        let image = pod
            .pointer("/spec/containers/0/image")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let at = |t: DateTime<Utc>| k8s_time(t);
        // the start-up waterfall: created → scheduled → pulled → started → ready
        let pulled = started + ready_delay * 3 / 5;
        let ready_at = started + ready_delay;
        let pc = |t: &str, st: &str, r: &str, m: &str, when: &str| {
            let mut c = json!({"type":t,"status":st,"lastTransitionTime":when,"lastProbeTime":null});
            if !r.is_empty() {
                c["reason"] = json!(r);
            }
            if !m.is_empty() {
                c["message"] = json!(m);
            }
            c
        };
        let mut next = pod.clone();
        let node = "sim-node-1";
        let pod_json = pod.clone();
        let restarts = |c: &str| self.restarts.get(&(uid.clone(), c.to_string())).cloned();
        let cstatus = |state: &dyn Fn(&str) -> Value, ready: bool, crashing: bool| -> Value {
            json!(containers.iter().map(|c| {
                let r = restarts(c);
                let mut state = state(c);
                if let (Some(r), Some(run)) = (&r, state.get_mut("running")) {
                    run["startedAt"] = json!(r.started_at);
                }
                let mut st = json!({"name":c,"image":image,"imageID":format!("{image}@sha256:{}", name_hash(&image).repeat(8)),
                    "ready":ready,"restartCount":r.as_ref().map_or(0, |r| r.count),"started":ready,"state":state,
                    "lastState": r.as_ref().map_or(json!({}), |r| json!({"terminated": r.last}))});
                if !crashing || ready {
                    st["containerID"] = json!(format!("containerd://{}", container_id(&uid, c, r.as_ref().map_or(0, |r| r.count))));
                }
                st
            }).collect::<Vec<_>>())
        };
        let scheduled = |next: &mut Value| {
            next["spec"]["nodeName"] = json!(node);
            next["status"]["hostIP"] = json!("10.0.0.11");
            next["status"]["hostIPs"] = json!([{"ip":"10.0.0.11"}]);
            next["status"]["startTime"] = json!(at(started));
        };
        let base = |phase: &str| json!({"phase":phase,"qosClass":"BestEffort"});
        let not_ready = |reason: &str, when: &str| {
            let msg = format!("containers with unready status: [{}]", containers.join(" "));
            vec![
                pc("PodReadyToStartContainers", "True", "", "", when),
                pc("Initialized", "True", "", "", &at(started)),
                pc("Ready", "False", reason, &msg, when),
                pc("ContainersReady", "False", reason, &msg, when),
                pc("PodScheduled", "True", "", "", &at(started)),
            ]
        };
        let mut pod_events: Vec<(&str, String, &str, Reporter, String)> = Vec::new();
        let ns = s(&pod_json, "/metadata/namespace").to_string();
        if knobs.unschedulable.is_none() && !knobs.pvc_pending && !knobs.disk_missing {
            pod_events.push((
                "Scheduled",
                format!("Successfully assigned {ns}/{name} to {node}"),
                "Normal",
                SCHEDULER,
                at(started),
            ));
            pod_events.push((
                "Pulling",
                format!("Pulling image \"{image}\""),
                "Normal",
                KUBELET,
                at(started),
            ));
        }
        if let Some(msg) = &knobs.unschedulable {
            next["status"] = base("Pending");
            next["status"]["conditions"] = json!([pc("PodScheduled", "False", "Unschedulable", msg, &now_s)]);
            pod_events.push(("FailedScheduling", msg.clone(), "Warning", SCHEDULER, now_s.clone()));
        } else if knobs.pvc_pending || knobs.disk_missing {
            // waiting for its disks: the PVC's own events say why
            next["status"] = base("Pending");
        } else if let Some(reason) = &knobs.image_pull {
            let msg = format!("Back-off pulling image \"{image}\"");
            scheduled(&mut next);
            next["status"] = json!({"phase":"Pending","qosClass":"BestEffort","hostIP":"10.0.0.11","hostIPs":[{"ip":"10.0.0.11"}],
                "podIP":"","startTime":at(started),"conditions":not_ready("ContainersNotReady", &at(started)),
                "containerStatuses": cstatus(&|_| json!({"waiting":{"reason":reason,"message":msg}}), false, true)});
            let fail_at = at((started + Duration::seconds(2)).min(now));
            pod_events.push((
                "Failed",
                format!("Failed to pull image \"{image}\": rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": failed to resolve reference \"{image}\": {image}: not found"),
                "Warning", KUBELET, fail_at.clone()));
            pod_events.push((
                "Failed",
                "Error: ErrImagePull".to_string(),
                "Warning",
                KUBELET,
                fail_at.clone(),
            ));
            pod_events.push((
                "BackOff",
                format!("Back-off pulling image \"{image}\""),
                "Normal",
                KUBELET,
                fail_at.clone(),
            ));
            pod_events.push(("Failed", format!("Error: {reason}"), "Warning", KUBELET, fail_at));
            if let Some(o) = next["status"].as_object_mut() {
                o.remove("podIP");
            }
        } else if !due {
            scheduled(&mut next);
            let st = next["status"].clone();
            next["status"] = base("Pending");
            for k in ["hostIP", "hostIPs", "startTime"] {
                next["status"][k] = st[k].clone();
            }
            next["status"]["conditions"] = json!(not_ready("ContainersNotReady", &at(started)));
            next["status"]["containerStatuses"] =
                cstatus(&|_| json!({"waiting":{"reason":"ContainerCreating"}}), false, true);
        } else {
            let pull = pulled - started;
            pod_events.push((
                "Pulled",
                format!(
                    "Successfully pulled image \"{image}\" in {} ({} including waiting). Image size: {} bytes.",
                    go_duration(pull),
                    go_duration(pull),
                    image_size(&image)
                ),
                "Normal",
                KUBELET,
                at(pulled),
            ));
            for c in &containers {
                pod_events.push((
                    "Created",
                    format!("Created container: {c}"),
                    "Normal",
                    KUBELET,
                    at(pulled),
                ));
                pod_events.push((
                    "Started",
                    format!("Started container {c}"),
                    "Normal",
                    KUBELET,
                    at(pulled),
                ));
            }
            let h = u32::from_str_radix(&name_hash(&uid), 16).unwrap_or(0);
            let ip = format!("10.244.{}.{}", (h >> 8) & 0xff, (h & 0xfd) + 2);
            scheduled(&mut next);
            let mut st = json!({"qosClass":"BestEffort","hostIP":"10.0.0.11","hostIPs":[{"ip":"10.0.0.11"}],
                "podIP":ip,"podIPs":[{"ip":ip}],"startTime":at(started)});
            if knobs.pod_failed {
                st["phase"] = json!("Failed");
                st["reason"] = json!("Error");
                st["message"] = json!("container agent exited with code 137 (OOMKilled)");
                st["conditions"] = json!(not_ready("PodFailed", &now_s));
                st["containerStatuses"] = cstatus(
                    &|_| {
                        json!({"terminated":{"reason":"OOMKilled","exitCode":137,
                    "startedAt":at(pulled),"finishedAt":now_s}})
                    },
                    false,
                    false,
                );
                self.announce(
                    store,
                    sbx,
                    "PodFailed",
                    "Pod failed: container agent OOMKilled",
                    "Warning",
                    &now_s,
                );
                self.seed_logs(&pod_json, &containers, &image, pulled, Some(now));
            } else if knobs.crash_loop {
                st["phase"] = json!("Running");
                st["conditions"] = json!(not_ready("ContainersNotReady", &at(started)));
                // a crash loop that has been going on: restarts, and the last run's fatal end
                for c in &containers {
                    self.restarts.entry((uid.clone(), c.clone())).or_insert_with(|| Restarts {
                        count: 7,
                        last: json!({"exitCode":1,"reason":"Error","startedAt":at(now - Duration::seconds(80)),
                            "finishedAt":at(now - Duration::seconds(74)),"containerID":format!("containerd://{}", container_id(&uid, c, 6))}),
                        started_at: at(now - Duration::seconds(80)),
                    });
                }
                let restarts = |c: &str| self.restarts.get(&(uid.clone(), c.to_string())).cloned();
                st["containerStatuses"] = json!(containers.iter().map(|c| {
                    let r = restarts(c);
                    json!({"name":c,"image":image,"imageID":format!("{image}@sha256:{}", name_hash(&image).repeat(8)),
                        "ready":false,"started":false,"restartCount":r.as_ref().map_or(0, |r| r.count),
                        "state":{"waiting":{"reason":"CrashLoopBackOff","message":format!("back-off 5m0s restarting failed container={c} pod={name}_{ns}({uid})")}},
                        "lastState": r.as_ref().map_or(json!({}), |r| json!({"terminated": r.last})),
                        "containerID": format!("containerd://{}", container_id(&uid, c, r.as_ref().map_or(0, |r| r.count)))})
                }).collect::<Vec<_>>());
                for c in &containers {
                    pod_events.push((
                        "BackOff",
                        format!("Back-off restarting failed container {c} in pod {name}_{ns}({uid})"),
                        "Warning",
                        KUBELET,
                        now_s.clone(),
                    ));
                }
                self.seed_crash_logs(&pod_json, &containers, &image);
            } else {
                st["phase"] = json!("Running");
                st["conditions"] = json!([
                    pc("PodReadyToStartContainers", "True", "", "", &at(pulled)),
                    pc("Initialized", "True", "", "", &at(started)),
                    pc("Ready", "True", "", "", &at(ready_at)),
                    pc("ContainersReady", "True", "", "", &at(ready_at)),
                    pc("PodScheduled", "True", "", "", &at(started)),
                ]);
                st["containerStatuses"] =
                    cstatus(&|_| json!({"running":{"startedAt":started_at.clone()}}), true, false);
                self.seed_logs(&pod_json, &containers, &image, pulled, None);
            }
            next["status"] = st;
        }
        for (reason, message, type_, by, when) in pod_events {
            self.record(store, &pod_json, reason, &message, type_, by, &when);
        }
        // keep transition times of unchanged pod conditions
        keep_transition_times(
            &pod,
            next["status"]["conditions"]
                .as_array_mut()
                .map(Vec::as_mut_slice)
                .unwrap_or(&mut []),
        );
        if next != pod { store.update(&PODS, next) } else { pod }
    }

    fn start_termination(
        &mut self,
        store: &mut Store,
        sbx: &Value,
        mut pod: Value,
        knobs: &Knobs,
        now: DateTime<Utc>,
        settle: bool,
    ) {
        let grace = knobs
            .grace_ms
            .map(|ms| Duration::milliseconds(ms as i64))
            .unwrap_or(self.timing.grace);
        // settling a scenario: a stuck pod was deleted long ago; a pod with its own grace is
        // still draining; any other is already gone
        let deadline = if settle && knobs.stuck_terminating {
            now - Duration::minutes(10)
        } else {
            now + grace
        };
        let gone = if settle && knobs.grace_ms.is_none() {
            now
        } else {
            now + grace
        };
        pod["metadata"]["deletionTimestamp"] = json!(k8s_time(deadline));
        pod["metadata"]["deletionGracePeriodSeconds"] = json!(grace.num_seconds());
        self.gone_at.insert(s(&pod, "/metadata/uid").to_string(), gone);
        if !knobs.stuck_terminating {
            self.due(gone);
        }
        let name = s(&pod, "/metadata/name").to_string();
        let pod = store.update(&PODS, pod);
        let _ = sbx;
        self.record(
            store,
            &pod,
            "Killing",
            "Stopping container agent",
            "Normal",
            KUBELET,
            &k8s_time(now),
        );
        if settle && !knobs.stuck_terminating && knobs.grace_ms.is_none() {
            store.delete(&PODS, s(sbx, "/metadata/namespace"), &name, &k8s_time(now), &[]);
        }
    }

    /// A pod being deleted that stays so while the knob holds (agent-sandbox v1.0 then reports
    /// Ready=False/PodTerminating).
    fn keep_terminating(&mut self, store: &mut Store, mut pod: Value, knobs: &Knobs, now: DateTime<Utc>) -> Value {
        if pod.pointer("/metadata/deletionTimestamp").is_some() {
            return pod;
        }
        let grace = knobs
            .grace_ms
            .map(|ms| Duration::milliseconds(ms as i64))
            .unwrap_or(Duration::hours(1));
        pod["metadata"]["deletionTimestamp"] = json!(k8s_time(now + grace));
        pod["metadata"]["deletionGracePeriodSeconds"] = json!(grace.num_seconds());
        store.update(&PODS, pod)
    }

    fn delete_pod(&mut self, store: &mut Store, ns: &str, name: &str, now: &str) {
        if let Some(p) = store.delete(&PODS, ns, name, now, &[]) {
            let uid = s(&p, "/metadata/uid");
            self.started.remove(uid);
            self.gone_at.remove(uid);
            self.restarts.retain(|(u, _), _| u != uid);
            self.logs.forget_pod(ns, name);
        }
    }

    /// Record an Event on the Sandbox, from the sandbox controller, once per (reason, message).
    fn announce(&mut self, store: &mut Store, sbx: &Value, reason: &str, message: &str, type_: &str, now: &str) {
        self.record(store, sbx, reason, message, type_, SANDBOX_CONTROLLER, now);
    }

    /// Record an Event on any object, once per (object, reason, message).
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        store: &mut Store,
        object: &Value,
        reason: &str,
        message: &str,
        type_: &str,
        by: Reporter,
        at: &str,
    ) {
        let uid = s(object, "/metadata/uid").to_string();
        if !self.announced.insert((uid, format!("{reason}:{message}"))) {
            return;
        }
        self.event_seq += 1;
        let name = format!("{}.{:016x}", s(object, "/metadata/name"), self.event_seq);
        let _ = store.create(&EVENTS, core_event(&name, object, reason, message, type_, by, at), at);
    }

    /// A started container with no log yet gets the start-up lines an agent prints (and, while
    /// it runs, a line every couple of seconds when followed); one that ended (`ended`) gets the
    /// lines of a run that ran out of memory.
    fn seed_logs(
        &mut self,
        pod: &Value,
        containers: &[String],
        image: &str,
        from: DateTime<Utc>,
        ended: Option<DateTime<Utc>>,
    ) {
        let (ns, name, uid) = (
            s(pod, "/metadata/namespace"),
            s(pod, "/metadata/name"),
            s(pod, "/metadata/uid"),
        );
        for c in containers {
            if self.logs.has_any(ns, name, uid, c) {
                continue;
            }
            let mut lines = logs::startup_lines(name, image);
            if ended.is_some() {
                lines.push("level=info msg=\"indexing workspace\" files=48213".to_string());
                lines.push("level=warn msg=\"memory pressure\" rss_mb=1996 limit_mb=2048".to_string());
            }
            let stamped: Vec<(DateTime<Utc>, String)> = lines
                .into_iter()
                .enumerate()
                .map(|(i, l)| (from + Duration::milliseconds(150 * i as i64), l))
                .collect();
            let log = self.logs.entry(ns, name, uid, c);
            log.chatty = ended.is_none();
            self.logs.set(ns, name, uid, c, stamped, false);
        }
    }

    /// A crash loop's previous run: start-up lines ending in a fatal error, at the run's end.
    fn seed_crash_logs(&mut self, pod: &Value, containers: &[String], image: &str) {
        let (ns, name, uid) = (
            s(pod, "/metadata/namespace"),
            s(pod, "/metadata/name"),
            s(pod, "/metadata/uid"),
        );
        for c in containers {
            if self.logs.has_any(ns, name, uid, c) {
                continue;
            }
            let Some(r) = self.restarts.get(&(uid.to_string(), c.clone())) else {
                continue;
            };
            let from = parse_time(r.last["startedAt"].as_str().unwrap_or(""));
            let Some(from) = from else { continue };
            let stamped: Vec<(DateTime<Utc>, String)> = logs::crash_lines(image)
                .into_iter()
                .enumerate()
                .map(|(i, l)| (from + Duration::seconds(i as i64), l))
                .collect();
            self.logs.set(ns, name, uid, c, stamped, true);
        }
    }

    /// A scenario's log lines for a container, stamped a second apart: the current ones up to
    /// `now`, the previous ones up to the last run's end.
    #[allow(clippy::too_many_arguments)]
    pub fn scenario_logs(
        &mut self,
        store: &Store,
        ns: &str,
        pod: &str,
        uid: &str,
        container: &str,
        lines: &[String],
        previous: bool,
        now: DateTime<Utc>,
    ) {
        let end = if previous {
            store
                .get(&PODS, ns, pod)
                .and_then(|p| logs::container_status(p, container))
                .and_then(|c| c.pointer("/lastState/terminated/finishedAt"))
                .and_then(Value::as_str)
                .and_then(parse_time)
                .unwrap_or(now - Duration::minutes(1))
        } else {
            now
        };
        let n = lines.len() as i64;
        let stamped = lines
            .iter()
            .enumerate()
            .map(|(i, l)| (end - Duration::seconds(n - 1 - i as i64), l.clone()))
            .collect();
        self.logs.set(ns, pod, uid, container, stamped, previous);
    }

    /// The container restarts: its log rotates, the pod's status counts the restart and shows
    /// the run that ended (exit code 1, Error), followers of the old run are done.
    pub fn restart_container(&mut self, store: &mut Store, ns: &str, pod: &str, container: &str, now: DateTime<Utc>) {
        let Some(p) = store.get(&PODS, ns, pod).cloned() else {
            return;
        };
        let uid = s(&p, "/metadata/uid").to_string();
        let status = logs::container_status(&p, container).cloned().unwrap_or(json!({}));
        let key = (uid.clone(), container.to_string());
        let (count, started_at) = match self.restarts.get(&key) {
            Some(r) => (r.count, r.started_at.clone()),
            None => (
                status["restartCount"].as_u64().unwrap_or(0) as u32,
                status
                    .pointer("/state/running/startedAt")
                    .and_then(Value::as_str)
                    .map_or_else(|| k8s_time(now), str::to_string),
            ),
        };
        let now_s = k8s_time(now);
        let last = json!({"exitCode":1,"reason":"Error","startedAt":started_at,"finishedAt":now_s,
            "containerID":format!("containerd://{}", container_id(&uid, container, count))});
        self.restarts.insert(
            key,
            Restarts {
                count: count + 1,
                last: last.clone(),
                started_at: now_s.clone(),
            },
        );
        self.logs.restart(ns, pod, &uid, container);
        let mut next = p.clone();
        if let Some(cs) = next
            .pointer_mut("/status/containerStatuses")
            .and_then(Value::as_array_mut)
        {
            for c in cs.iter_mut().filter(|c| c["name"] == container) {
                c["restartCount"] = json!(count + 1);
                c["lastState"] = json!({"terminated": last});
                c["containerID"] = json!(format!("containerd://{}", container_id(&uid, container, count + 1)));
                if c.pointer("/state/running").is_some() {
                    c["state"] = json!({"running": {"startedAt": now_s}});
                }
            }
        }
        let next = store.update(&PODS, next);
        let image = status["image"].as_str().unwrap_or("").to_string();
        self.record(
            store,
            &next,
            "Pulled",
            &format!("Container image \"{image}\" already present on machine"),
            "Normal",
            KUBELET,
            &now_s,
        );
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

/// A plausible, stable image size.
fn image_size(image: &str) -> u64 {
    180_000_000 + u64::from_str_radix(&name_hash(image), 16).unwrap_or(0) % 400_000_000
}

/// A stable containerd id for a pod's container run.
fn container_id(pod_uid: &str, container: &str, run: u32) -> String {
    let h = name_hash(&format!("{pod_uid}/{container}/{run}"));
    h.repeat(8)
}

fn suspended_conditions(cond: &dyn Fn(&str, &str, &str, &str) -> Value) -> Vec<Value> {
    vec![
        cond("Ready", "False", "SandboxSuspended", "Sandbox is suspended"),
        cond("Suspended", "True", "PodTerminated", "Pod is terminated"),
    ]
}

fn owner_ref(sbx: &Value) -> Value {
    json!({"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","name":s(sbx, "/metadata/name"),
        "uid":s(sbx, "/metadata/uid"),"controller":true,"blockOwnerDeletion":true})
}

fn owns(sbx: &Value, pod: &Value) -> bool {
    let uid = s(sbx, "/metadata/uid");
    pod.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid))
}

fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}
