//! Why a workspace is not where its mode says it should be (docs/interop.md §9, §13.4), most
//! specific first, with the controller's or kubelet's own reason and message.

use super::age::human_duration;
use super::egress::{Egress, delete_command};
use super::identity::Claim;
use super::object::{at, condition, condition_parts, generation, str_at};
use super::patch::Mode;
use super::pod::{self, PodView};
use super::state::{KNOWN_READY_REASONS, ready_for_current_generation};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DiagnosisKind {
    StuckDeleting,
    Expired,
    ForeignEgressPolicy,
    ForeignDisk,
    Unschedulable,
    ImagePull,
    CrashLoop,
    DiskMissing,
    DiskPending,
    ForeignPod,
    /// agent-sandbox v1.0.3 cannot read the pod's state (Suspended=Unknown PodStateUnknown,
    /// PodScheduled=Unknown PodSchedulingUnknown): its node or kubelet stopped reporting.
    PodStateUnknown,
    StuckTerminating,
    SuspendUnconfirmed,
    PodTerminated,
    ControllerError,
    ControllerReason,
    StaleStatus,
    NoLivePod,
    UnreadableEpoch,
}

impl DiagnosisKind {
    /// Most specific first: the order [`diagnose`] tries them in. `unreadable-epoch` comes last:
    /// it does not explain what the workload does (and the EPOCH column shows `!<raw>` whatever
    /// the diagnosis), so any other finding is named first; the next step of one that needs a
    /// write says the epoch must be repaired first. A Sandbox held in deletion or past its
    /// shutdown comes first: what its pod does no longer matters (an expired one has none).
    pub const ALL: [DiagnosisKind; 19] = [
        DiagnosisKind::StuckDeleting,
        DiagnosisKind::Expired,
        DiagnosisKind::ForeignEgressPolicy,
        DiagnosisKind::ForeignDisk,
        DiagnosisKind::Unschedulable,
        DiagnosisKind::ImagePull,
        DiagnosisKind::CrashLoop,
        DiagnosisKind::DiskMissing,
        DiagnosisKind::DiskPending,
        DiagnosisKind::ForeignPod,
        DiagnosisKind::PodStateUnknown,
        DiagnosisKind::StuckTerminating,
        DiagnosisKind::SuspendUnconfirmed,
        DiagnosisKind::PodTerminated,
        DiagnosisKind::ControllerError,
        DiagnosisKind::ControllerReason,
        DiagnosisKind::StaleStatus,
        DiagnosisKind::NoLivePod,
        DiagnosisKind::UnreadableEpoch,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosisKind::StuckDeleting => "stuck-deleting",
            DiagnosisKind::Expired => "expired",
            DiagnosisKind::ForeignEgressPolicy => "foreign-egress-policy",
            DiagnosisKind::ForeignDisk => "foreign-disk",
            DiagnosisKind::Unschedulable => "unschedulable",
            DiagnosisKind::ImagePull => "image-pull",
            DiagnosisKind::CrashLoop => "crash-loop",
            DiagnosisKind::DiskMissing => "disk-missing",
            DiagnosisKind::DiskPending => "disk-pending",
            DiagnosisKind::ForeignPod => "foreign-pod",
            DiagnosisKind::PodStateUnknown => "pod-state-unknown",
            DiagnosisKind::StuckTerminating => "stuck-terminating",
            DiagnosisKind::SuspendUnconfirmed => "suspend-unconfirmed",
            DiagnosisKind::PodTerminated => "pod-terminated",
            DiagnosisKind::ControllerError => "controller-error",
            DiagnosisKind::ControllerReason => "controller-reason",
            DiagnosisKind::StaleStatus => "stale-status",
            DiagnosisKind::NoLivePod => "no-live-pod",
            DiagnosisKind::UnreadableEpoch => "unreadable-epoch",
        }
    }
    pub fn parse(text: &str) -> Option<DiagnosisKind> {
        DiagnosisKind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// What the word means, in one sentence (the TUI's help explains every diagnosis with it).
    pub fn meaning(self) -> &'static str {
        match self {
            DiagnosisKind::StuckDeleting => {
                "its deletion was asked for more than 10 minutes ago and finalizers still hold it"
            }
            DiagnosisKind::Expired => {
                "past spec.shutdownTime: kept by shutdownPolicy Retain, or not reaped by the controller under Delete"
            }
            DiagnosisKind::ForeignEgressPolicy => {
                "a network policy not its own selects it by the per-sandbox label, so its egress is another's"
            }
            DiagnosisKind::ForeignDisk => "a disk it mounts belongs to another workspace",
            DiagnosisKind::Unschedulable => "the scheduler cannot place its pod (no node has the room or fits)",
            DiagnosisKind::ImagePull => "its pod cannot pull the container image (ErrImagePull, ImagePullBackOff, …)",
            DiagnosisKind::CrashLoop => "a container keeps crashing and the kubelet backs off (CrashLoopBackOff)",
            DiagnosisKind::DiskMissing => "a disk its pod needs does not exist",
            DiagnosisKind::DiskPending => "a disk its pod needs is not bound yet (its claim is Pending)",
            DiagnosisKind::ForeignPod => "the pod under its name is not its own (another owner), so nothing acts on it",
            DiagnosisKind::PodStateUnknown => {
                "agent-sandbox cannot read its pod's state: the node or kubelet stopped reporting"
            }
            DiagnosisKind::StuckTerminating => "its pod is still there more than a minute past its grace period",
            DiagnosisKind::SuspendUnconfirmed => {
                "it was asked to suspend and the controller has not confirmed the pod is gone"
            }
            DiagnosisKind::PodTerminated => "its pod ended (Failed or Succeeded) and is not coming back by itself",
            DiagnosisKind::ControllerError => "the controller reports an error in the Sandbox's Ready condition",
            DiagnosisKind::ControllerReason => {
                "Ready=False for a reason the tool does not know (shown as controller-reason:<Reason>)"
            }
            DiagnosisKind::StaleStatus => "the controller has not yet caught up with the Sandbox's latest change",
            DiagnosisKind::NoLivePod => "the Sandbox says Ready but no live pod of its own stands under it",
            DiagnosisKind::UnreadableEpoch => {
                "the holder-epoch annotation is not a number, so every write is refused (named only when nothing else is wrong)"
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnosis {
    pub kind: DiagnosisKind,
    /// The controller's or kubelet's reason, as it wrote it.
    pub reason: String,
    pub message: String,
    /// What it is about, by name, for the next step: the pod, PVC or policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// The container it is about (image-pull, crash-loop) and the image its pod asks for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
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
pub(crate) struct Evidence<'a> {
    pub pod: Option<PodView<'a>>,
    /// The Sandbox's claims and what stands under each PVC name.
    pub claims: Option<&'a [Claim]>,
    pub egress: &'a Egress,
    pub now: DateTime<Utc>,
}

/// The most specific diagnosis, or `None` when nothing is wrong.
pub(crate) fn diagnose(sandbox: &Value, mode: Mode, ev: &Evidence<'_>) -> Option<Diagnosis> {
    let pod = ev.pod.and_then(|p| p.present());
    let claims = ev.claims.unwrap_or(&[]);
    let found = [
        stuck_deleting(sandbox, ev.now),
        expired(sandbox, ev.now),
        foreign_egress_policy(sandbox, ev.egress),
        foreign_disk(sandbox, claims),
        // the controller mirrors PodScheduled onto the Sandbox (v0.5.6+): useful when pods are forbidden
        pod.and_then(unschedulable).or_else(|| unschedulable(sandbox)),
        pod.and_then(|p| waiting(p, |r| IMAGE_PULL_REASONS.contains(&r), DiagnosisKind::ImagePull)),
        pod.and_then(|p| waiting(p, |r| r == "CrashLoopBackOff", DiagnosisKind::CrashLoop)),
        disk_missing(claims),
        disk_pending(claims),
        foreign_pod(sandbox, pod),
        pod_state_unknown(sandbox),
        pod.and_then(|p| stuck_terminating(p, ev.now)),
        suspend_unconfirmed(mode, pod),
        pod_terminated(sandbox, mode, pod),
        controller_error(sandbox),
        controller_reason(sandbox),
        stale_status(sandbox),
        ev.pod.and_then(|p| no_live_pod(sandbox, mode, &p)),
        unreadable_epoch(sandbox),
    ];
    found.into_iter().flatten().next()
}

fn diag(kind: DiagnosisKind, reason: &str, message: &str) -> Diagnosis {
    Diagnosis {
        kind,
        reason: reason.to_string(),
        message: message.to_string(),
        object: None,
        container: None,
        image: None,
    }
}

impl Diagnosis {
    fn about(mut self, object: &str) -> Diagnosis {
        self.object = Some(object.to_string());
        self
    }
}

/// The controller says it cannot tell the pod's state: `Suspended=Unknown` (`PodStateUnknown`)
/// or `PodScheduled=Unknown` (`PodSchedulingUnknown`), agent-sandbox v1.0.3's words for a pod
/// whose node or kubelet stopped reporting.
fn pod_state_unknown(sandbox: &Value) -> Option<Diagnosis> {
    [
        ("Suspended", "PodStateUnknown"),
        ("PodScheduled", "PodSchedulingUnknown"),
    ]
    .iter()
    .find_map(|(type_, expected)| {
        let (status, reason, message) = condition_parts(condition(sandbox, type_)?);
        (status == "Unknown" && reason == *expected).then(|| {
            let said = if message.is_empty() {
                format!("{type_}=Unknown ({reason}): the controller cannot read the pod's state")
            } else {
                format!("{type_}=Unknown ({reason}): {message}")
            };
            diag(DiagnosisKind::PodStateUnknown, reason, &said)
        })
    })
}

fn unschedulable(pod: &Value) -> Option<Diagnosis> {
    let (status, reason, message) = condition_parts(condition(pod, "PodScheduled")?);
    (status == "False" && reason == "Unschedulable").then(|| diag(DiagnosisKind::Unschedulable, reason, message))
}

fn waiting(pod: &Value, matches: impl Fn(&str) -> bool, kind: DiagnosisKind) -> Option<Diagnosis> {
    [
        ("initContainerStatuses", "initContainers"),
        ("containerStatuses", "containers"),
    ]
    .iter()
    .filter_map(|(k, spec)| Some((at(pod, &["status", k])?.as_array()?, *spec)))
    .flat_map(|(list, spec)| list.iter().map(move |cs| (cs, spec)))
    .find_map(|(cs, spec)| {
        let waiting = at(cs, &["state", "waiting"])?;
        let reason = waiting.get("reason")?.as_str()?;
        matches(reason).then(|| {
            let message = waiting.get("message").and_then(Value::as_str).unwrap_or("");
            let name = cs.get("name").and_then(Value::as_str);
            let container = name.unwrap_or("?");
            // the image the pod's spec asks for; the status's own field as the kubelet wrote it else
            let image = at(pod, &["spec", spec])
                .and_then(Value::as_array)
                .and_then(|cs| {
                    cs.iter()
                        .find(|c| name.is_some() && c.get("name").and_then(Value::as_str) == name)
                })
                .and_then(|c| c.get("image"))
                .or_else(|| cs.get("image"))
                .and_then(Value::as_str)
                .filter(|i| !i.is_empty());
            Diagnosis {
                container: name.map(str::to_string),
                image: image.map(str::to_string),
                ..diag(kind, reason, &format!("container {container}: {message}")).about(super::object::name(pod))
            }
        })
    })
}

/// A per-sandbox CiliumNetworkPolicy selects the workspace and its Sandbox does not own it: it
/// belongs to an earlier workspace of the same name, and a resume would wake into its grant.
fn foreign_egress_policy(sandbox: &Value, egress: &Egress) -> Option<Diagnosis> {
    let foreign = egress.foreign();
    let first = foreign.first()?;
    let ns = super::object::namespace(sandbox);
    let owners = if first.owners.is_empty() {
        "no owner".to_string()
    } else {
        first.owners.join(", ")
    };
    let more = match foreign.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    Some(diag(
        DiagnosisKind::ForeignEgressPolicy,
        "PolicyNotOwned",
        &format!(
            "CiliumNetworkPolicy {}{more} selects this workspace but is owned by {owners}, not by this Sandbox (uid {}): it belongs to an earlier workspace of the same name; a resume is refused until it is gone: {}",
            first.name,
            super::object::uid(sandbox).unwrap_or("-"),
            delete_command(ns, &first.name)
        ),
    ).about(&first.name))
}

/// A PVC under a claim's name whose owners name another object (`volume-claim-owner`).
fn foreign_disk(sandbox: &Value, claims: &[Claim]) -> Option<Diagnosis> {
    let c = claims.iter().find(|c| c.foreign)?;
    let owners: Vec<String> = c.owners.iter().map(|o| o.words()).collect();
    Some(diag(
        DiagnosisKind::ForeignDisk,
        "ClaimNotOwned",
        &format!(
            "PersistentVolumeClaim {} (uid {}) is owned by {}, not by this Sandbox (uid {}): a stranger's disk stands under this workspace's claim name",
            c.pvc,
            c.uid.as_deref().unwrap_or("-"),
            owners.join(", "),
            super::object::uid(sandbox).unwrap_or("-")
        ),
    ).about(&c.pvc))
}

/// A `volumeClaimTemplates` entry without its PVC.
fn disk_missing(claims: &[Claim]) -> Option<Diagnosis> {
    let c = claims.iter().find(|c| c.uid.is_none())?;
    Some(
        diag(
            DiagnosisKind::DiskMissing,
            "Missing",
            &format!(
                "PersistentVolumeClaim {} (volumeClaimTemplates entry {}) does not exist",
                c.pvc, c.entry
            ),
        )
        .about(&c.pvc),
    )
}

/// A PVC of this workspace that exists and is not Bound.
fn disk_pending(claims: &[Claim]) -> Option<Diagnosis> {
    claims.iter().filter(|c| c.uid.is_some() && !c.foreign).find_map(|c| {
        let phase = c.phase.as_deref().unwrap_or("Unknown");
        (phase != "Bound").then(|| {
            diag(
                DiagnosisKind::DiskPending,
                phase,
                &format!("PersistentVolumeClaim {} is {phase}", c.pvc),
            )
            .about(&c.pvc)
        })
    })
}

fn foreign_pod(sandbox: &Value, pod: Option<&Value>) -> Option<Diagnosis> {
    if let Some(c) = condition(sandbox, "Suspended") {
        let (_, reason, message) = condition_parts(c);
        if reason == "PodNotOwned" {
            // the pod that stands under the Sandbox's name
            let pod_name = pod.map_or(super::object::name(sandbox), super::object::name);
            return Some(diag(DiagnosisKind::ForeignPod, reason, message).about(pod_name));
        }
    }
    let (pod, sandbox_uid) = (pod?, super::object::uid(sandbox)?);
    let has_owner = !super::object::owner_refs(pod).is_empty();
    (has_owner && !pod::owned_by(pod, sandbox_uid)).then(|| {
        diag(
            DiagnosisKind::ForeignPod,
            "PodNotOwned",
            &format!("pod {} is not owned by this Sandbox", super::object::name(pod)),
        )
        .about(super::object::name(pod))
    })
}

/// How long past its grace period a pod may take to go before it is stuck: the kubelet kills
/// the containers at the deadline and the API object goes once it confirms, within seconds.
pub(crate) const TERMINATING_MARGIN_SECONDS: i64 = 60;

/// A pod whose deletionTimestamp (deletion request + grace period) has passed by more than
/// [`TERMINATING_MARGIN_SECONDS`] and is still there.
fn stuck_terminating(pod: &Value, now: DateTime<Utc>) -> Option<Diagnosis> {
    let deadline = str_at(pod, &["metadata", "deletionTimestamp"])?;
    let deadline_t = super::timefmt::parse(deadline)?;
    let past = (now - deadline_t).num_seconds();
    (past > TERMINATING_MARGIN_SECONDS).then(|| {
        let grace = at(pod, &["metadata", "deletionGracePeriodSeconds"])
            .and_then(Value::as_i64)
            .map_or(String::new(), |g| format!(" of {}", human_duration(g)));
        diag(
            DiagnosisKind::StuckTerminating,
            "Terminating",
            // no running duration in the words: a row's message changes only when its objects do
            // (`list -w` prints a row again when it changes)
            &format!(
                "pod {} is still terminating past its grace period{grace} (deletionTimestamp {deadline}); check finalizers and the node",
                super::object::name(pod)
            ),
        )
        .about(super::object::name(pod))
    })
}

/// The finalizers a Sandbox carries, as stored.
pub(crate) fn finalizers(sandbox: &Value) -> Vec<&str> {
    at(sandbox, &["metadata", "finalizers"])
        .and_then(Value::as_array)
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// How long a deletion, an unanswered claim or a short warm pool may last before it is stuck (a
/// diagnosis here, a leak for `leaks`).
pub(crate) const STUCK_AFTER_MINUTES: i64 = 10;

/// A Sandbox whose deletion was asked for more than [`STUCK_AFTER_MINUTES`] ago and that
/// finalizers still hold (`leaks` lists it as `stuck-deleting` by the same rule).
fn stuck_deleting(sandbox: &Value, now: DateTime<Utc>) -> Option<Diagnosis> {
    let since_text = str_at(sandbox, &["metadata", "deletionTimestamp"])?;
    let since = super::timefmt::parse(since_text)?;
    let held_by = finalizers(sandbox);
    if held_by.is_empty() || now - since < chrono::Duration::minutes(STUCK_AFTER_MINUTES) {
        return None;
    }
    // how long, as kubectl's ages say it: past 10 minutes it moves by the minute at most
    Some(diag(
        DiagnosisKind::StuckDeleting,
        "DeletionHeld",
        &format!(
            "the Sandbox has been deleting for {} (deletionTimestamp {since_text}), held by finalizer{} {}",
            human_duration((now - since).num_seconds()),
            if held_by.len() == 1 { "" } else { "s" },
            held_by.join(", ")
        ),
    ))
}

/// A workspace past its `spec.shutdownTime` (or Ready=False `SandboxExpired`) and not being
/// deleted. agent-sandbox deletes its pod; under `shutdownPolicy: Delete` it deletes the
/// Sandbox too, under `Retain` (its default when absent) it keeps the Sandbox and its disks.
/// `leaks` lists both by the same rule (`expired-not-reaped`, `retained-by-policy`).
fn expired(sandbox: &Value, now: DateTime<Utc>) -> Option<Diagnosis> {
    if at(sandbox, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null()) {
        return None;
    }
    let shutdown_text = str_at(sandbox, &["spec", "shutdownTime"]);
    let shutdown = shutdown_text.and_then(super::timefmt::parse).filter(|t| *t <= now);
    let expired_reason = condition(sandbox, "Ready").is_some_and(|c| condition_parts(c).1 == "SandboxExpired");
    if shutdown.is_none() && !expired_reason {
        return None;
    }
    let when = match (shutdown, shutdown_text) {
        (Some(_), Some(text)) => format!("past its shutdownTime {text}"),
        _ => "expired (Ready=False SandboxExpired)".to_string(),
    };
    let policy = str_at(sandbox, &["spec", "shutdownPolicy"]).filter(|p| !p.is_empty());
    Some(if policy == Some("Delete") {
        diag(
            DiagnosisKind::Expired,
            "NotReaped",
            &format!(
                "{when} under shutdownPolicy Delete and not reaped by the controller: the Sandbox should be gone; its disks stay with it"
            ),
        )
    } else {
        diag(
            DiagnosisKind::Expired,
            "RetainedByPolicy",
            &format!(
                "{when}, retained by policy (shutdownPolicy {}): its pod is deleted, the Sandbox and its disks are kept on purpose",
                policy.unwrap_or("Retain, agent-sandbox's default")
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
            DiagnosisKind::SuspendUnconfirmed,
            "PodStillPresent",
            &format!("mode is Suspended but pod {} {how}", super::object::name(pod)),
        )
        .about(super::object::name(pod))
    })
}

fn pod_terminated(sandbox: &Value, mode: Mode, pod: Option<&Value>) -> Option<Diagnosis> {
    if mode == Mode::Suspended {
        return None;
    }
    if let Some(c) = condition(sandbox, "Ready") {
        let (_, reason, message) = condition_parts(c);
        if matches!(reason, "PodSucceeded" | "PodFailed") {
            let d = diag(DiagnosisKind::PodTerminated, reason, message);
            return Some(match pod {
                Some(p) => d.about(super::object::name(p)),
                None => d,
            });
        }
    }
    let pod = pod.filter(|p| pod::is_stopped(p))?;
    let phase = pod::phase(pod);
    let message = str_at(pod, &["status", "message"]).unwrap_or("the pod is not recreated");
    Some(diag(DiagnosisKind::PodTerminated, &format!("Pod{phase}"), message).about(super::object::name(pod)))
}

fn controller_error(sandbox: &Value) -> Option<Diagnosis> {
    let (_, reason, message) = condition_parts(condition(sandbox, "Ready")?);
    super::state::ERROR_REASONS
        .contains(&reason)
        .then(|| diag(DiagnosisKind::ControllerError, reason, message))
}

/// A Ready=False reason the tool does not know, shown as the controller wrote it.
fn controller_reason(sandbox: &Value) -> Option<Diagnosis> {
    let (status, reason, message) = condition_parts(condition(sandbox, "Ready")?);
    (status == "False" && !reason.is_empty() && !KNOWN_READY_REASONS.contains(&reason))
        .then(|| diag(DiagnosisKind::ControllerReason, reason, message))
}

/// Ready=True (for the current generation) but no live pod named after the Sandbox stands
/// under it: the library does not count it ready (28.0.0).
fn no_live_pod(sandbox: &Value, mode: Mode, pod: &PodView<'_>) -> Option<Diagnosis> {
    if mode != Mode::Running || !ready_for_current_generation(sandbox) {
        return None;
    }
    if super::state::live_pod(sandbox, Some(pod)).is_some() {
        return None;
    }
    let name = super::object::name(sandbox);
    let what = match pod.present().filter(|p| super::object::name(p) == name) {
        None => format!("no pod {name} exists"),
        Some(p) if pod::is_terminating(p) => format!("pod {name} is terminating"),
        Some(p) if pod::is_stopped(p) => format!("pod {name} is {}", pod::phase(p)),
        Some(_) => format!("pod {name} has no uid"),
    };
    Some(diag(
        DiagnosisKind::NoLivePod,
        "NoLivePod",
        &format!("the Sandbox reports Ready=True but {what}: not ready until a live pod stands under it"),
    ))
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
                    DiagnosisKind::StaleStatus,
                    "ObservedGenerationBehind",
                    &format!("condition {type_} observed generation {observed}, the Sandbox is at generation {current}; the controller has not caught up"),
                )
            })
        })
}

/// The holder-epoch annotation is there and is not a decimal integer ≤ 2^53−1 (docs/interop.md
/// §3): the fence refuses every write, and `--take-over` has nothing to add 1 to.
fn unreadable_epoch(sandbox: &Value) -> Option<Diagnosis> {
    let reading = super::epoch::Reading::of(sandbox);
    if reading.epoch.is_some() {
        return None;
    }
    let raw = reading.annotation.unwrap_or_default();
    Some(diag(
        DiagnosisKind::UnreadableEpoch,
        "HolderEpochUnreadable",
        &format!(
            "the {} annotation reads {raw:?}, which is not a decimal integer: every fenced write (suspend, resume, delete) is refused until it is repaired",
            super::annotations::HOLDER_EPOCH
        ),
    ))
}
