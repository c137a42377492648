//! The display state of a workspace (docs/interop.md §8):
//! from `spec.operatingMode`, `Ready`, the Sandbox's deletionTimestamp and the pod.

use super::object::{at, condition, condition_parts};
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

/// Derive the state. `pod` is what is known of the workspace's pod (`None` = not readable).
pub fn derive(sandbox: &Value, mode: Mode, pod: Option<&PodView<'_>>) -> State {
    if at(sandbox, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null()) {
        return State::Deleting;
    }
    let ready = condition(sandbox, "Ready").map(condition_parts);
    let reason = ready.map(|(_, r, _)| r).unwrap_or("");
    match reason {
        "SandboxExpired" => return State::Expired,
        "ReconcilerError" | "MultiplePods" => return State::Error,
        _ => {}
    }
    match mode {
        Mode::Suspended => {
            let pod_gone = match pod {
                Some(p) => p.present().is_none_or(pod::is_stopped),
                // pods unreadable: the controller's Suspended condition is the best evidence
                None => condition(sandbox, "Suspended").is_some_and(|c| condition_parts(c).0 == "True"),
            };
            if pod_gone { State::Suspended } else { State::Suspending }
        }
        Mode::Running => match ready {
            Some(("True", _, _)) => State::Running,
            Some((_, "PodSucceeded" | "PodFailed", _)) => State::Failed,
            _ => State::Starting,
        },
    }
}
