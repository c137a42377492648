//! The display state of a workspace (docs/interop.md §8, §13.1):
//! from `spec.operatingMode`, `Ready` (for the current generation), the Sandbox's
//! deletionTimestamp and the pod.

use super::object::{at, condition, condition_parts, generation, name, uid};
use super::patch::Mode;
use super::pod::{self, PodView};
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum State {
    Running,
    Starting,
    Suspending,
    Suspended,
    Failed,
    Expired,
    Deleting,
    Error,
}

impl State {
    pub const ALL: [State; 8] = [
        State::Running,
        State::Starting,
        State::Suspending,
        State::Suspended,
        State::Failed,
        State::Expired,
        State::Deleting,
        State::Error,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            State::Running => "Running",
            State::Starting => "Starting",
            State::Suspending => "Suspending",
            State::Suspended => "Suspended",
            State::Failed => "Failed",
            State::Expired => "Expired",
            State::Deleting => "Deleting",
            State::Error => "Error",
        }
    }
    pub fn parse(text: &str) -> Option<State> {
        State::ALL.into_iter().find(|s| s.as_str().eq_ignore_ascii_case(text))
    }
}

/// Ready reasons of agent-sandbox's controller (v0.5 and v1.0) that the tool reads; any other
/// Ready=False reason is shown verbatim as the `controller-reason` diagnosis.
pub(crate) const KNOWN_READY_REASONS: [&str; 11] = [
    "DependenciesReady",
    "DependenciesNotReady",
    "SandboxSuspended",
    "PodSucceeded",
    "PodFailed",
    "SandboxExpired",
    "ReconcilerError",
    "MultiplePods",
    "InvalidConfiguration",
    "PodTerminating",
    // agent-sandbox v1.0: a transient reason while an adopted pod is taken over (Starting)
    "AdoptionPending",
];

/// Ready reasons that mean the controller cannot go on: state Error.
pub(crate) const ERROR_REASONS: [&str; 3] = ["ReconcilerError", "MultiplePods", "InvalidConfiguration"];

/// `isReadyForCurrentGeneration`: the Ready condition is True and not written for an older
/// generation (both `metadata.generation` and the condition's `observedGeneration` present and
/// the latter lower). Either absent: no generation check.
pub fn ready_for_current_generation(sandbox: &Value) -> bool {
    let Some(c) = condition(sandbox, "Ready") else {
        return false;
    };
    if condition_parts(c).0 != "True" {
        return false;
    }
    let observed = c.get("observedGeneration").and_then(Value::as_i64);
    !matches!((generation(sandbox), observed), (Some(g), Some(o)) if o < g)
}

/// The live pod the library's readiness asks for: the pod named after the Sandbox, live, with a
/// uid.
pub(crate) fn live_pod<'a>(sandbox: &Value, pod: Option<&PodView<'a>>) -> Option<&'a Value> {
    pod.and_then(PodView::present)
        .filter(|p| name(p) == name(sandbox) && pod::is_live(p) && uid(p).is_some())
}

/// The library's `ready` (28.0.0): mode Running, Ready=True for the current generation, and a
/// live pod under it. `None` when pods may not be read (the last part cannot be told).
pub(crate) fn ready(sandbox: &Value, mode: Mode, pod: Option<&PodView<'_>>) -> Option<bool> {
    let condition = mode == Mode::Running && ready_for_current_generation(sandbox);
    match pod {
        None if condition => None,
        None => Some(false),
        Some(_) => Some(condition && live_pod(sandbox, pod).is_some()),
    }
}

/// Derive the state. `pod` is what is known of the workspace's pod (`None` = not readable).
/// `Running` means exactly the library's `ready` (pods unreadable: Ready=True for the current
/// generation).
pub(crate) fn derive(sandbox: &Value, mode: Mode, pod: Option<&PodView<'_>>) -> State {
    if at(sandbox, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null()) {
        return State::Deleting;
    }
    let ready_condition = condition(sandbox, "Ready").map(condition_parts);
    let reason = ready_condition.map(|(_, r, _)| r).unwrap_or("");
    if reason == "SandboxExpired" {
        return State::Expired;
    }
    if ERROR_REASONS.contains(&reason) {
        return State::Error;
    }
    match mode {
        Mode::Suspended => {
            let pod_gone = match pod {
                Some(p) => p.present().is_none_or(pod::is_stopped),
                // pods unreadable: the controller's conditions are the best evidence
                None => {
                    reason != "PodTerminating"
                        && condition(sandbox, "Suspended").is_some_and(|c| condition_parts(c).0 == "True")
                }
            };
            if pod_gone { State::Suspended } else { State::Suspending }
        }
        // agent-sandbox v1.0: the pod is being deleted (a resume that came mid-suspend)
        Mode::Running if reason == "PodTerminating" => State::Suspending,
        Mode::Running => match ready_condition {
            Some(("True", _, _)) if ready(sandbox, mode, pod) != Some(false) => State::Running,
            Some((_, "PodSucceeded" | "PodFailed", _)) => State::Failed,
            _ => State::Starting,
        },
    }
}
