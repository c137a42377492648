//! The inventory's columns (docs/interop.md §2) as text: absent `-`, unreadable `!<raw>`, not allowed
//! to read `?`. Shared by `list` and the TUI so both say the same thing.

use super::age::age;
use super::drift::DriftState;
use super::quantities::{Unit, human};
use super::timefmt;
use super::workspace::{Observed, Workspace};
use chrono::{DateTime, Utc};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// The kube context, first in a fleet's views.
    Context,
    Workspace,
    Namespace,
    Mode,
    State,
    Age,
    ModeChanged,
    Epoch,
    Template,
    Drift,
    Diagnosis,
    Uid,
    Pod,
    /// The pod's restarts as `kubectl get pods` shows them: `7 (74s ago)`.
    Restarts,
    Node,
    Image,
    TemplateHash,
    Egress,
    PerSandbox,
    Policy,
    /// The pod template's CPU requests (summed as the scheduler does).
    Cpu,
    /// Its memory requests.
    Mem,
    /// Its disks' total size.
    Disk,
}

impl Column {
    pub fn header(self) -> &'static str {
        match self {
            Column::Context => "CONTEXT",
            Column::Workspace => "WORKSPACE",
            Column::Namespace => "NAMESPACE",
            Column::Mode => "MODE",
            Column::State => "STATE",
            Column::Age => "AGE",
            Column::ModeChanged => "MODE-CHANGED",
            Column::Epoch => "EPOCH",
            Column::Template => "TEMPLATE",
            Column::Drift => "DRIFT",
            Column::Diagnosis => "DIAGNOSIS",
            Column::Uid => "UID",
            Column::Pod => "POD",
            Column::Restarts => "RESTARTS",
            Column::Node => "NODE",
            Column::Image => "IMAGE",
            Column::TemplateHash => "TEMPLATE-HASH",
            Column::Egress => "EGRESS",
            Column::PerSandbox => "PER-SANDBOX",
            Column::Policy => "POLICY",
            Column::Cpu => "CPU",
            Column::Mem => "MEM",
            Column::Disk => "DISK",
        }
    }

    /// What the column shows, in a few words (the TUI's help explains every column with it).
    pub fn meaning(self) -> &'static str {
        match self {
            Column::Context => "the kube context the row is read from (its badge from the rules file)",
            Column::Workspace => "the workspace id (the Sandbox is namzu-ws-<id>)",
            Column::Namespace => "the Sandbox's namespace",
            Column::Mode => "the mode asked for (spec.operatingMode): Running or Suspended",
            Column::State => {
                "what is true now: Running (Ready for the current generation with a live pod), Starting, Suspending, Suspended, Failed, Expired, Deleting, Error"
            }
            Column::Age => "how long ago the Sandbox was created",
            Column::ModeChanged => "how long ago the mode was last changed (its operating-mode-changed-at annotation)",
            Column::Epoch => "the holder epoch every write is fenced by (!<raw>: unreadable)",
            Column::Template => "the SandboxTemplate it was made from",
            Column::Drift => {
                "whether its pod template still equals the template's: current, drifted, unknown (no hash stored), no-template, ? (the template may not be read)"
            }
            Column::Diagnosis => "why it is not where its mode says it should be, worst first (the words below)",
            Column::Uid => "the Sandbox's uid",
            Column::Pod => "its own pod (by owner, never a name guess)",
            Column::Restarts => {
                "the pod's restarts as kubectl get pods counts them, with how long ago the newest ended"
            }
            Column::Node => "the node its pod runs on",
            Column::Image => "the image of its pod's main container",
            Column::TemplateHash => "the pod-template hash stored on it",
            Column::Egress => "its egress profile label",
            Column::PerSandbox => "on when its pod template carries the per-sandbox egress label",
            Column::Policy => "whose per-sandbox network policy selects it: own, foreign, - none, ? unreadable",
            Column::Cpu => "its CPU requests, summed as the scheduler sums them",
            Column::Mem => "its memory requests, summed as the scheduler sums them",
            Column::Disk => "its disks' total size",
        }
    }
}

/// The columns of a view: CONTEXT first across contexts, NAMESPACE only across namespaces; wide adds identity, pod detail (its
/// restarts as `kubectl get pods` counts them) and
/// what it asks for (CPU and memory requests, disks) and egress (the profile, whether
/// per-sandbox egress is on, and whose per-sandbox policy selects it).
pub fn columns(fleet: bool, all_namespaces: bool, wide: bool) -> Vec<Column> {
    let mut out = Vec::from(if fleet { &[Column::Context][..] } else { &[] });
    out.push(Column::Workspace);
    if all_namespaces {
        out.push(Column::Namespace);
    }
    out.extend([
        Column::Mode,
        Column::State,
        Column::Age,
        Column::ModeChanged,
        Column::Epoch,
        Column::Template,
        Column::Drift,
        Column::Diagnosis,
    ]);
    if wide {
        out.extend([
            Column::Uid,
            Column::Pod,
            Column::Restarts,
            Column::Node,
            Column::Image,
            Column::TemplateHash,
            Column::Cpu,
            Column::Mem,
            Column::Disk,
            Column::Egress,
            Column::PerSandbox,
            Column::Policy,
        ]);
    }
    out
}

fn quantity(q: Option<&i128>, unit: Unit) -> String {
    q.map_or_else(|| "-".into(), |q| human(*q, unit))
}

fn or_dash(s: Option<&str>) -> String {
    s.filter(|s| !s.is_empty()).unwrap_or("-").to_string()
}

fn ts_age(ts: Option<&str>, now: DateTime<Utc>) -> String {
    match ts {
        None => "-".into(),
        Some(raw) => timefmt::parse(raw).map_or_else(|| format!("!{raw}"), |t| age(t, now)),
    }
}

/// kubectl's RESTARTS cell: the count, with how long ago the newest restart's run ended when
/// there was one (`7 (74s ago)`).
pub fn restarts_text(p: &super::workspace::PodSummary, now: DateTime<Utc>) -> String {
    let ended = p
        .last_termination
        .as_ref()
        .and_then(|t| t.finished_at.as_deref())
        .and_then(timefmt::parse);
    match ended {
        Some(t) if p.restarts > 0 => format!("{} ({} ago)", p.restarts, age(t, now)),
        _ => p.restarts.to_string(),
    }
}

/// The epoch as shown: the number, `-` when absent (reads as 0), `!<raw>` when unreadable.
pub fn epoch_text(w: &Workspace) -> String {
    match (&w.epoch.annotation, w.epoch.epoch) {
        (None, _) => "-".into(),
        (Some(_), Some(e)) => e.to_string(),
        (Some(raw), None) => format!("!{raw}"),
    }
}

pub fn cell(w: &Workspace, column: Column, now: DateTime<Utc>) -> String {
    let pod = w.pod.known();
    let pod_field = |f: &dyn Fn(&super::workspace::PodSummary) -> Option<String>| match pod {
        None => "?".to_string(),
        Some(None) => "-".to_string(),
        Some(Some(p)) => or_dash(f(p).as_deref()),
    };
    match column {
        Column::Context => or_dash(w.context.as_deref()),
        Column::Workspace => w.id.clone(),
        Column::Namespace => w.namespace.clone(),
        Column::Mode => w.mode.as_str().into(),
        Column::State => w.state.as_str().into(),
        Column::Age => ts_age(w.created_at.as_deref(), now),
        Column::ModeChanged => ts_age(w.changed_at.as_deref(), now),
        Column::Epoch => epoch_text(w),
        Column::Template => or_dash(w.template.as_deref()),
        Column::Drift => match w.drift.state {
            DriftState::Unreadable => "?".into(),
            s => s.as_str().into(),
        },
        Column::Diagnosis => match (&w.diagnosis, &w.pod) {
            // a reason the tool does not know is shown as the controller wrote it
            (Some(d), _) if d.kind == super::diagnosis::DiagnosisKind::ControllerReason => {
                format!("{}:{}", d.kind.as_str(), d.reason)
            }
            (Some(d), _) => d.kind.as_str().into(),
            (None, Observed::Forbidden) => "?".into(),
            (None, _) => "-".into(),
        },
        Column::Uid => or_dash(w.uid.as_deref()),
        Column::Pod => pod_field(&|p| Some(p.name.clone())),
        Column::Restarts => pod_field(&|p| Some(restarts_text(p, now))),
        Column::Node => pod_field(&|p| p.node.clone()),
        Column::Image => pod_field(&|p| p.image.clone()),
        Column::TemplateHash => or_dash(w.drift.stored.as_deref()),
        Column::Egress => or_dash(w.egress.profile.as_deref()),
        Column::PerSandbox => if w.egress.per_sandbox.is_some() { "on" } else { "off" }.into(),
        Column::Policy => w.egress.policy_cell().into(),
        Column::Cpu => quantity(w.resources.requests.get("cpu"), Unit::Cores),
        Column::Mem => quantity(w.resources.requests.get("memory"), Unit::Bytes),
        Column::Disk => match w.resources.disks.iter().filter_map(|d| d.size).sum::<i128>() {
            0 => "-".into(),
            total => human(total, Unit::Bytes),
        },
    }
}
