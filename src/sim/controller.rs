//! A model of the agent-sandbox controller (docs/interop.md §8) plus the kubelet and scheduler
//! as far as a workspace sees them: pods, PVCs, conditions and events, with per-workspace knobs
//! that reproduce the field's trouble. Driven by the sim's clock, so tests never sleep.

use super::clock::k8s_time;
use super::resources::{CASCADE, EVENTS, PODS, PVCS, SANDBOXES};
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
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            ready_delay: Duration::milliseconds(1500),
            grace: Duration::seconds(2),
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
                extra = json!({"podIPs": pod.pointer("/status/podIPs").cloned().unwrap_or(json!([])),
                    "nodeName": s(&pod, "/spec/nodeName")});
            }
            if let Some(ps) = pod.pointer("/status/conditions").and_then(Value::as_array)
                && let Some(c) = ps.iter().find(|c| c["type"] == "PodScheduled")
            {
                conds.push(cond("PodScheduled", s(c, "/status"), s(c, "/reason"), s(c, "/message")));
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
        }
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
        let mut next = current.clone();
        next["status"] = Value::Object(status);
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
        let pod = json!({"metadata":{"name":name,"namespace":ns,"labels":labels,
            "annotations": template.pointer("/metadata/annotations").cloned().unwrap_or(json!({})),
            "ownerReferences":owners},
            "spec":spec,
            "status":{"phase":"Pending","conditions":[]}});
        let created = store.create(&PODS, pod, &k8s_time(now)).expect("no pod of that name");
        let uid = s(&created, "/metadata/uid").to_string();
        let ready_delay = knobs
            .ready_delay_ms
            .map(|ms| Duration::milliseconds(ms as i64))
            .unwrap_or(self.timing.ready_delay);
        self.started.insert(uid, if settle { now - ready_delay } else { now });
        if !knobs.foreign_pod {
            self.announce(
                store,
                sbx,
                "CreatedPod",
                &format!("Created pod {name}"),
                "Normal",
                &k8s_time(now),
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
            .map_or_else(|| k8s_time(started + ready_delay), str::to_string);
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
        let pc = |t: &str, st: &str, r: &str, m: &str| json!({"type":t,"status":st,"reason":r,"message":m,"lastTransitionTime":now_s});
        let mut next = pod.clone();
        let node = "sim-node-1";
        let cstatus = |state: Value, ready: bool, restarts: u32| -> Value {
            json!(containers.iter().map(|c| json!({"name":c,"image":image,"ready":ready,"restartCount":restarts,"started":ready,"state":state.clone()})).collect::<Vec<_>>())
        };
        if let Some(msg) = &knobs.unschedulable {
            next["status"] = json!({"phase":"Pending","conditions":[pc("PodScheduled","False","Unschedulable",msg)]});
            self.announce(store, sbx, "FailedScheduling", msg, "Warning", &now_s);
        } else if knobs.pvc_pending || knobs.disk_missing {
            next["status"] = json!({"phase":"Pending","conditions":[]});
        } else if let Some(reason) = &knobs.image_pull {
            let msg = format!("Back-off pulling image \"{image}\"");
            next["spec"]["nodeName"] = json!(node);
            next["status"] = json!({"phase":"Pending","conditions":[pc("PodScheduled","True","","")],
                "containerStatuses": cstatus(json!({"waiting":{"reason":reason,"message":msg}}), false, 0)});
            self.announce(
                store,
                sbx,
                "Failed",
                &format!("Failed to pull image \"{image}\": {reason}"),
                "Warning",
                &now_s,
            );
        } else if !due {
            next["spec"]["nodeName"] = json!(node);
            next["status"] = json!({"phase":"Pending","conditions":[pc("PodScheduled","True","","")],
                "containerStatuses": cstatus(json!({"waiting":{"reason":"ContainerCreating"}}), false, 0)});
        } else if knobs.pod_failed {
            next["spec"]["nodeName"] = json!(node);
            next["status"] = json!({"phase":"Failed","reason":"Error","message":"container agent exited with code 137 (OOMKilled)",
                "conditions":[pc("PodScheduled","True","","")],
                "containerStatuses": cstatus(json!({"terminated":{"reason":"OOMKilled","exitCode":137}}), false, 0)});
            self.announce(
                store,
                sbx,
                "PodFailed",
                "Pod failed: container agent OOMKilled",
                "Warning",
                &now_s,
            );
        } else if knobs.crash_loop {
            next["spec"]["nodeName"] = json!(node);
            next["status"] = json!({"phase":"Running","podIP":"10.244.0.9","podIPs":[{"ip":"10.244.0.9"}],
                "conditions":[pc("PodScheduled","True","",""),pc("Ready","False","ContainersNotReady","containers with unready status: [agent]")],
                "containerStatuses": cstatus(json!({"waiting":{"reason":"CrashLoopBackOff","message":format!("back-off 5m0s restarting failed container=agent pod={name}")}}), false, 7)});
            self.announce(
                store,
                sbx,
                "BackOff",
                "Back-off restarting failed container agent",
                "Warning",
                &now_s,
            );
        } else {
            let h = u32::from_str_radix(&name_hash(&uid), 16).unwrap_or(0);
            let ip = format!("10.244.{}.{}", (h >> 8) & 0xff, (h & 0xfd) + 2);
            next["spec"]["nodeName"] = json!(node);
            next["status"] = json!({"phase":"Running","podIP":ip,"podIPs":[{"ip":ip}],
                "conditions":[pc("PodScheduled","True","",""),pc("Ready","True","","")],
                "containerStatuses": cstatus(json!({"running":{"startedAt":started_at}}), true, 0)});
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
        store.update(&PODS, pod);
        self.announce(
            store,
            sbx,
            "Killing",
            &format!("Stopping container agent in pod {name}"),
            "Normal",
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
        }
    }

    /// Record an Event once per (object, reason).
    fn announce(&mut self, store: &mut Store, sbx: &Value, reason: &str, message: &str, type_: &str, now: &str) {
        let uid = s(sbx, "/metadata/uid").to_string();
        if !self.announced.insert((uid.clone(), format!("{reason}:{message}"))) {
            return;
        }
        self.event_seq += 1;
        let (ns, name) = (s(sbx, "/metadata/namespace"), s(sbx, "/metadata/name"));
        let ev = json!({"metadata":{"name":format!("{name}.{:016x}", self.event_seq),"namespace":ns},
            "involvedObject":{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","name":name,"namespace":ns,"uid":uid},
            "reason":reason,"message":message,"type":type_,"count":1,
            "firstTimestamp":now,"lastTimestamp":now,"source":{"component":"sandbox-controller"}});
        let _ = store.create(&EVENTS, ev, now);
    }
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
