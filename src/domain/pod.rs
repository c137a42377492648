//! Pod facts the library relies on (docs/interop.md §8): live, stopped, terminating; and finding
//! the pod and disks of a Sandbox in a namespace-wide list.

use super::keys::POD_NAME_ANNOTATION;
use super::object::{annotation, at, name, owner_refs, str_at};
use serde_json::Value;
use std::collections::HashMap;

/// What is known of a workspace's pod.
#[derive(Debug, Clone, Copy)]
pub enum PodView<'a> {
    Present(&'a Value),
    Absent,
}

impl<'a> PodView<'a> {
    pub fn present(&self) -> Option<&'a Value> {
        match self {
            PodView::Present(p) => Some(p),
            PodView::Absent => None,
        }
    }
}

pub fn phase(pod: &Value) -> &str {
    str_at(pod, &["status", "phase"]).unwrap_or("")
}

pub fn is_terminating(pod: &Value) -> bool {
    at(pod, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null())
}

/// `isPodLive`: no deletionTimestamp and not in a terminal phase (Pending counts as live).
pub fn is_live(pod: &Value) -> bool {
    !is_terminating(pod) && !is_stopped(pod)
}

/// `isPodStopped`: phase Succeeded or Failed.
pub fn is_stopped(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// Objects of one namespace by name, built once so a pass over n workspaces stays O(n).
#[derive(Debug, Default)]
pub struct Index<'a> {
    by_name: HashMap<&'a str, &'a Value>,
    /// Each label (key, value) to the pods carrying it, in list order: a Sandbox's selector is
    /// one lookup, not a scan of every pod per Sandbox.
    by_label: HashMap<&'a str, HashMap<&'a str, Vec<&'a Value>>>,
}

impl<'a> Index<'a> {
    pub fn new(objects: &'a [Value]) -> Index<'a> {
        let mut by_label: HashMap<&'a str, HashMap<&'a str, Vec<&'a Value>>> = HashMap::new();
        for o in objects {
            let labels = at(o, &["metadata", "labels"]).and_then(Value::as_object);
            for (k, v) in labels.into_iter().flatten() {
                if let Some(v) = v.as_str() {
                    by_label.entry(k.as_str()).or_default().entry(v).or_default().push(o);
                }
            }
        }
        Index {
            by_name: objects.iter().map(|o| (name(o), o)).collect(),
            by_label,
        }
    }

    pub fn named(&self, n: &str) -> Option<&'a Value> {
        self.by_name.get(n).copied()
    }

    /// The pods labelled `key=value`, in list order.
    pub fn labelled(&self, key: &str, value: &str) -> &[&'a Value] {
        self.by_label
            .get(key)
            .and_then(|values| values.get(value))
            .map_or(&[], Vec::as_slice)
    }
}

/// The pod of a Sandbox: the one named after it (agent-sandbox v1.0; the legacy
/// `agents.x-k8s.io/pod-name` annotation is not followed), else the first live pod matching
/// `status.selector`.
pub fn find<'a>(sandbox: &Value, pods: &Index<'a>) -> Option<&'a Value> {
    if let Some(p) = pods.named(pod_name(sandbox)) {
        return Some(p);
    }
    let (key, value) = str_at(sandbox, &["status", "selector"])?.split_once('=')?;
    pods.labelled(key, value).iter().copied().find(|p| is_live(p))
}

/// The name a Sandbox's pod goes by: the Sandbox's own (agent-sandbox v1.0 names the pod after
/// the Sandbox and no longer writes the `agents.x-k8s.io/pod-name` annotation).
pub fn pod_name(sandbox: &Value) -> &str {
    name(sandbox)
}

/// A legacy `agents.x-k8s.io/pod-name` annotation that names a pod other than the Sandbox's
/// own: not followed (another pod's name on the object is a confused-deputy risk), only flagged.
pub fn legacy_pod_name(sandbox: &Value) -> Option<&str> {
    annotation(sandbox, POD_NAME_ANNOTATION).filter(|n| *n != name(sandbox))
}

/// Whether a pod should stand under this Sandbox: its mode is Running, or its status still
/// reports one (Ready, a replica, a suspension not yet complete). The inventory reads a pod by
/// name only then.
pub fn pod_expected(sandbox: &Value) -> bool {
    let condition_is = |kind: &str, status: &str| {
        super::object::condition(sandbox, kind).is_some_and(|c| super::object::condition_parts(c).0 == status)
    };
    super::patch::Mode::of_sandbox(sandbox) == super::patch::Mode::Running
        || at(sandbox, &["status", "replicas"])
            .and_then(Value::as_i64)
            .unwrap_or(0)
            > 0
        || condition_is("Ready", "True")
        || condition_is("Suspended", "False")
}

/// Whether `obj` names `owner_uid` among its ownerReferences.
pub fn owned_by(obj: &Value, owner_uid: &str) -> bool {
    owner_refs(obj)
        .iter()
        .any(|r| r.get("uid").and_then(Value::as_str) == Some(owner_uid))
}

/// Each `volumeClaimTemplates` entry with a non-empty name, with its PVC's name
/// `<entry>-<sandbox>`, in the template's order (the library skips an entry without a name).
pub fn claims(sandbox: &Value) -> Vec<(String, String)> {
    let sandbox_name = name(sandbox);
    at(sandbox, &["spec", "volumeClaimTemplates"])
        .and_then(Value::as_array)
        .map(|vcts| {
            vcts.iter()
                .filter_map(|v| str_at(v, &["metadata", "name"]).filter(|n| !n.is_empty()))
                .map(|n| (n.to_string(), format!("{n}-{sandbox_name}")))
                .collect()
        })
        .unwrap_or_default()
}

/// `<volumeClaimTemplates[].metadata.name>-<sandbox>` for each entry.
pub fn pvc_names(sandbox: &Value) -> Vec<String> {
    claims(sandbox).into_iter().map(|(_, pvc)| pvc).collect()
}
