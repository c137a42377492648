//! Why a workspace is not where its mode says it should be (docs/interop.md §9), most specific first,
//! with the controller's or kubelet's own reason and message.

use super::object::{at, condition, condition_parts, generation, str_at};
use super::patch::Mode;
use super::pod::{self, PodView};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Unschedulable,
    ImagePull,
    CrashLoop,
    DiskPending,
    ForeignPod,
    StuckTerminating,
    SuspendUnconfirmed,
    PodTerminated,
    ControllerError,
    StaleStatus,
}

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::Unschedulable,
        Kind::ImagePull,
        Kind::CrashLoop,
        Kind::DiskPending,
        Kind::ForeignPod,
        Kind::StuckTerminating,
        Kind::SuspendUnconfirmed,
        Kind::PodTerminated,
        Kind::ControllerError,
        Kind::StaleStatus,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Unschedulable => "unschedulable",
            Kind::ImagePull => "image-pull",
            Kind::CrashLoop => "crash-loop",
            Kind::DiskPending => "disk-pending",
            Kind::ForeignPod => "foreign-pod",
            Kind::StuckTerminating => "stuck-terminating",
            Kind::SuspendUnconfirmed => "suspend-unconfirmed",
            Kind::PodTerminated => "pod-terminated",
            Kind::ControllerError => "controller-error",
            Kind::StaleStatus => "stale-status",
        }
    }
    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnosis {
    pub kind: Kind,
    /// The controller's or kubelet's reason, as it wrote it.
    pub reason: String,
    pub message: String,
}

/// Waiting reasons that mean the image cannot be pulled (init containers too).
const IMAGE_PULL_REASONS: [&str; 5] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "ImageInspectError",
    "RegistryUnavailable",
    "InvalidImageName",
];

/// What the diagnosis looks at besides the Sandbox. `None` = that read was not allowed.
pub struct Evidence<'a> {
    pub pod: Option<PodView<'a>>,
    /// `(expected PVC name, the PVC if it exists)`.
    pub pvcs: Option<Vec<(String, Option<&'a Value>)>>,
    pub now: DateTime<Utc>,
}

/// The most specific diagnosis, or `None` when nothing is wrong.
pub fn diagnose(sandbox: &Value, mode: Mode, ev: &Evidence<'_>) -> Option<Diagnosis> {
    let pod = ev.pod.and_then(|p| p.present());
    let found = [
        // the controller mirrors PodScheduled onto the Sandbox (v0.5.6+): useful when pods are forbidden
        pod.and_then(unschedulable).or_else(|| unschedulable(sandbox)),
        pod.and_then(|p| waiting(p, |r| IMAGE_PULL_REASONS.contains(&r), Kind::ImagePull)),
        pod.and_then(|p| waiting(p, |r| r == "CrashLoopBackOff", Kind::CrashLoop)),
        ev.pvcs.as_deref().and_then(disk_pending),
        foreign_pod(sandbox, pod),
        pod.and_then(|p| stuck_terminating(p, ev.now)),
        suspend_unconfirmed(mode, pod),
        pod_terminated(sandbox, mode, pod),
        controller_error(sandbox),
        stale_status(sandbox),
    ];
    found.into_iter().flatten().next()
}

fn diag(kind: Kind, reason: &str, message: &str) -> Diagnosis {
    Diagnosis {
        kind,
        reason: reason.to_string(),
        message: message.to_string(),
    }
}

fn unschedulable(pod: &Value) -> Option<Diagnosis> {
    let (status, reason, message) = condition_parts(condition(pod, "PodScheduled")?);
    (status == "False" && reason == "Unschedulable").then(|| diag(Kind::Unschedulable, reason, message))
}

fn waiting(pod: &Value, matches: impl Fn(&str) -> bool, kind: Kind) -> Option<Diagnosis> {
    ["initContainerStatuses", "containerStatuses"]
        .iter()
        .filter_map(|k| at(pod, &["status", k])?.as_array())
        .flatten()
        .find_map(|cs| {
            let waiting = at(cs, &["state", "waiting"])?;
            let reason = waiting.get("reason")?.as_str()?;
            matches(reason).then(|| {
                let message = waiting.get("message").and_then(Value::as_str).unwrap_or("");
                let container = cs.get("name").and_then(Value::as_str).unwrap_or("?");
                diag(kind, reason, &format!("container {container}: {message}"))
            })
        })
}

fn disk_pending(pvcs: &[(String, Option<&Value>)]) -> Option<Diagnosis> {
    pvcs.iter().find_map(|(name, pvc)| match pvc {
        None => Some(diag(
            Kind::DiskPending,
            "Missing",
            &format!("PersistentVolumeClaim {name} does not exist"),
        )),
        Some(p) => {
            let phase = str_at(p, &["status", "phase"]).unwrap_or("Unknown");
            (phase != "Bound").then(|| {
                diag(
                    Kind::DiskPending,
                    phase,
                    &format!("PersistentVolumeClaim {name} is {phase}"),
                )
            })
        }
    })
}

fn foreign_pod(sandbox: &Value, pod: Option<&Value>) -> Option<Diagnosis> {
    if let Some(c) = condition(sandbox, "Suspended") {
        let (_, reason, message) = condition_parts(c);
        if reason == "PodNotOwned" {
            return Some(diag(Kind::ForeignPod, reason, message));
        }
    }
    let (pod, sandbox_uid) = (pod?, super::object::uid(sandbox)?);
    let has_owner = !super::object::owner_refs(pod).is_empty();
    (has_owner && !pod::owned_by(pod, sandbox_uid)).then(|| {
        diag(
            Kind::ForeignPod,
            "PodNotOwned",
            &format!("pod {} is not owned by this Sandbox", super::object::name(pod)),
        )
    })
}

/// A pod whose deletionTimestamp (deletion request + grace period) has passed and is still there.
fn stuck_terminating(pod: &Value, now: DateTime<Utc>) -> Option<Diagnosis> {
    let deadline = str_at(pod, &["metadata", "deletionTimestamp"])?;
    let deadline_t = super::timefmt::parse(deadline)?;
    (now > deadline_t).then(|| {
        diag(
            Kind::StuckTerminating,
            "Terminating",
            &format!(
                "pod {} is still terminating past its grace period (deletionTimestamp {deadline}); check finalizers and the node",
                super::object::name(pod)
            ),
        )
    })
}

fn suspend_unconfirmed(mode: Mode, pod: Option<&Value>) -> Option<Diagnosis> {
    let pod = pod?;
    (mode == Mode::Suspended && !pod::is_stopped(pod)).then(|| {
        let how = if pod::is_terminating(pod) {
            "is still terminating"
        } else {
            "has not been deleted yet"
        };
        diag(
            Kind::SuspendUnconfirmed,
            "PodStillPresent",
            &format!("mode is Suspended but pod {} {how}", super::object::name(pod)),
        )
    })
}

fn pod_terminated(sandbox: &Value, mode: Mode, pod: Option<&Value>) -> Option<Diagnosis> {
    if mode == Mode::Suspended {
        return None;
    }
    if let Some(c) = condition(sandbox, "Ready") {
        let (_, reason, message) = condition_parts(c);
        if matches!(reason, "PodSucceeded" | "PodFailed") {
            return Some(diag(Kind::PodTerminated, reason, message));
        }
    }
    let pod = pod.filter(|p| pod::is_stopped(p))?;
    let phase = pod::phase(pod);
    let message = str_at(pod, &["status", "message"]).unwrap_or("the pod is not recreated");
    Some(diag(Kind::PodTerminated, &format!("Pod{phase}"), message))
}

fn controller_error(sandbox: &Value) -> Option<Diagnosis> {
    let (_, reason, message) = condition_parts(condition(sandbox, "Ready")?);
    matches!(reason, "ReconcilerError" | "MultiplePods").then(|| diag(Kind::ControllerError, reason, message))
}

fn stale_status(sandbox: &Value) -> Option<Diagnosis> {
    let current = generation(sandbox)?;
    at(sandbox, &["status", "conditions"])?
        .as_array()?
        .iter()
        .find_map(|c| {
            let observed = c.get("observedGeneration")?.as_i64()?;
            (observed < current).then(|| {
                let type_ = c.get("type").and_then(Value::as_str).unwrap_or("?");
                diag(
                    Kind::StaleStatus,
                    "ObservedGenerationBehind",
                    &format!("condition {type_} observed generation {observed}, the Sandbox is at generation {current}; the controller has not caught up"),
                )
            })
        })
}
