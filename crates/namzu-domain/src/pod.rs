//! Pod facts the library relies on (docs/interop.md §8): live, stopped, terminating; and finding
//! the pod and disks of a Sandbox in a namespace-wide list.

use super::annotations::POD_NAME_ANNOTATION;
use super::object::{annotation, at, name, owner_refs, str_at};
use serde_json::Value;
use std::collections::HashMap;

/// What is known of a workspace's pod.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PodView<'a> {
    Present(&'a Value),
    Absent,
}

impl<'a> PodView<'a> {
    pub(crate) fn present(&self) -> Option<&'a Value> {
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
    pub(crate) fn labelled(&self, key: &str, value: &str) -> &[&'a Value] {
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
pub(crate) fn legacy_pod_name(sandbox: &Value) -> Option<&str> {
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

/// How a container's last run ended: `lastState.terminated` of its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Termination {
    pub container: String,
    pub exit_code: Option<i64>,
    pub reason: Option<String>,
    pub finished_at: Option<String>,
}

/// A pod's restarts as `kubectl get pods` counts them (`printPod`): once it is initialized, its
/// containers' `restartCount` plus its sidecars' (init containers with `restartPolicy:
/// Always`); while an init container still runs, every init container's. `last` is the most
/// recent `lastState.terminated` (by `finishedAt`) among the containers counted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Restarts {
    pub count: u64,
    pub last: Option<Termination>,
}

pub(crate) fn restarts(pod: &Value) -> Restarts {
    let statuses = |key: &str| {
        at(pod, &["status", key])
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    };
    let sidecars: Vec<&str> = at(pod, &["spec", "initContainers"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always"))
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    let is_sidecar = |cs: &Value| {
        cs.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| sidecars.contains(&n))
    };
    let inits = statuses("initContainerStatuses");
    // an init container that has not ended well (a sidecar runs on: it does not hold the start)
    let initializing = inits
        .iter()
        .any(|cs| !is_sidecar(cs) && at(cs, &["state", "terminated", "exitCode"]).and_then(Value::as_i64) != Some(0));
    let initialized =
        super::object::condition(pod, "Initialized").is_some_and(|c| super::object::condition_parts(c).0 == "True");
    let counted: Vec<&Value> = if initializing && !initialized {
        inits.iter().collect()
    } else {
        inits
            .iter()
            .filter(|cs| is_sidecar(cs))
            .chain(statuses("containerStatuses"))
            .collect()
    };
    let count = counted
        .iter()
        .filter_map(|cs| cs.get("restartCount").and_then(Value::as_u64))
        .sum();
    let last = counted
        .iter()
        .filter_map(|cs| {
            let t = at(cs, &["lastState", "terminated"]).filter(|t| t.is_object())?;
            let finished = t.get("finishedAt").and_then(Value::as_str);
            Some((
                finished.and_then(super::timefmt::parse),
                Termination {
                    container: cs.get("name").and_then(Value::as_str).unwrap_or("?").to_string(),
                    exit_code: t.get("exitCode").and_then(Value::as_i64),
                    reason: t
                        .get("reason")
                        .and_then(Value::as_str)
                        .filter(|r| !r.is_empty())
                        .map(str::to_string),
                    finished_at: finished.map(str::to_string),
                },
            ))
        })
        // the newest; one without a readable finishedAt only when none has one
        .max_by_key(|(when, _)| *when)
        .map(|(_, t)| t);
    Restarts { count, last }
}

#[cfg(test)]
mod restart_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn restarts_sum_as_kubectl_get_pods_and_the_newest_end_wins() {
        let pod = json!({"spec": {"initContainers": [{"name": "setup"}, {"name": "proxy", "restartPolicy": "Always"}]},
            "status": {"conditions": [{"type": "Initialized", "status": "True"}],
                "initContainerStatuses": [
                    {"name": "setup", "restartCount": 4, "state": {"terminated": {"exitCode": 0}},
                        "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2026-11-29T11:59:00Z"}}},
                    {"name": "proxy", "restartCount": 1, "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2026-11-29T11:00:00Z"}}}],
                "containerStatuses": [
                    {"name": "agent", "restartCount": 7, "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-11-29T11:58:46Z"}}},
                    {"name": "side", "restartCount": 0, "lastState": {}}]}});
        let r = restarts(&pod);
        // setup's restarts count only while the pod initializes
        assert_eq!(r.count, 8);
        assert_eq!(
            r.last,
            Some(Termination {
                container: "agent".into(),
                exit_code: Some(1),
                reason: Some("Error".into()),
                finished_at: Some("2026-11-29T11:58:46Z".into())
            })
        );
        let mut initializing = pod.clone();
        initializing["status"]["conditions"] = json!([{"type": "Initialized", "status": "False"}]);
        initializing["status"]["initContainerStatuses"][0]["state"] =
            json!({"waiting": {"reason": "CrashLoopBackOff"}});
        let r = restarts(&initializing);
        assert_eq!((r.count, r.last.unwrap().container.as_str()), (5, "setup"));
        assert_eq!(restarts(&json!({"status": {"phase": "Pending"}})), Restarts::default());
    }
}
