//! One workspace as the inventory shows it: everything the CLI and the TUI render, derived in one
//! pure function from the Sandbox, its pod, its PVCs and its template.

use super::diagnosis::{self, Diagnosis, Evidence};
use super::drift::{self, Drift, OverlayFlags, TemplateRead};
use super::epoch::Reading;
use super::keys::CHANGED_AT;
use super::naming::{id_of, template_label};
use super::object::{annotation, name, namespace, non_empty, str_at, uid};
use super::patch::Mode;
use super::pod::{self, Index, PodView};
use super::state::{self, State};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// What a read gave: the data, or "not allowed to read" (shown as `?`).
#[derive(Debug, Clone, PartialEq)]
pub enum Observed<T> {
    Known(T),
    Forbidden,
}

impl<T> Observed<T> {
    pub fn known(&self) -> Option<&T> {
        match self {
            Observed::Known(t) => Some(t),
            Observed::Forbidden => None,
        }
    }

    pub fn as_ref(&self) -> Observed<&T> {
        self.map(|t| t)
    }

    /// The same observation of something derived from the data.
    pub fn map<'a, U>(&'a self, f: impl FnOnce(&'a T) -> U) -> Observed<U> {
        match self {
            Observed::Known(t) => Observed::Known(f(t)),
            Observed::Forbidden => Observed::Forbidden,
        }
    }
}

/// The reads one workspace is derived from.
pub struct Inputs<'a> {
    pub sandbox: &'a Value,
    /// All pods of the namespace (`Forbidden` when pods cannot be listed).
    pub pods: Observed<&'a Index<'a>>,
    /// All PVCs of the namespace.
    pub pvcs: Observed<&'a Index<'a>>,
    pub template: TemplateRead<'a>,
    pub flags: &'a OverlayFlags,
    pub now: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PodSummary {
    pub name: String,
    pub uid: Option<String>,
    pub phase: String,
    pub terminating: bool,
    pub node: Option<String>,
    pub image: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PvcSummary {
    pub name: String,
    pub uid: Option<String>,
    /// `None` when the PVC does not exist.
    pub phase: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workspace {
    pub id: String,
    pub namespace: String,
    pub sandbox_name: String,
    pub uid: Option<String>,
    pub mode: Mode,
    pub state: State,
    pub diagnosis: Option<Diagnosis>,
    pub created_at: Option<String>,
    /// The changed-at annotation as stored; never defaulted.
    pub changed_at: Option<String>,
    pub epoch: Reading,
    pub template: Option<String>,
    pub drift: Drift,
    pub pod: Observed<Option<PodSummary>>,
    pub pvcs: Observed<Vec<PvcSummary>>,
    /// The Sandbox's labels, and its pod template's (where the library puts its own).
    pub labels: std::collections::BTreeMap<String, String>,
    pub template_labels: std::collections::BTreeMap<String, String>,
}

/// The string values of the map at `path` (labels), empty when there is none.
fn string_map(obj: &Value, path: &[&str]) -> std::collections::BTreeMap<String, String> {
    super::object::at(obj, path)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Derive the whole view of one workspace.
pub fn derive(inputs: &Inputs<'_>) -> Workspace {
    let sbx = inputs.sandbox;
    let mode = Mode::of_sandbox(sbx);
    let pod_view = inputs.pods.known().map(|pods| match pod::find(sbx, pods) {
        Some(p) => PodView::Present(p),
        None => PodView::Absent,
    });
    let pvc_pairs = inputs.pvcs.known().map(|pvcs| {
        pod::pvc_names(sbx)
            .into_iter()
            .map(|n| {
                let found = pvcs.named(&n).filter(|p| owned_or_unowned(p, sbx));
                (n, found)
            })
            .collect::<Vec<_>>()
    });
    let evidence = Evidence {
        pod: pod_view,
        pvcs: pvc_pairs.clone(),
        now: inputs.now,
    };
    let sandbox_name = name(sbx).to_string();
    Workspace {
        id: id_of(&sandbox_name).unwrap_or(&sandbox_name).to_string(),
        namespace: namespace(sbx).to_string(),
        uid: uid(sbx).map(str::to_string),
        mode,
        state: state::derive(sbx, mode, pod_view.as_ref()),
        diagnosis: diagnosis::diagnose(sbx, mode, &evidence),
        created_at: non_empty(sbx, &["metadata", "creationTimestamp"]).map(str::to_string),
        changed_at: annotation(sbx, CHANGED_AT)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        epoch: Reading::of(sbx),
        template: template_label(sbx).map(str::to_string),
        labels: string_map(sbx, &["metadata", "labels"]),
        template_labels: string_map(sbx, &["spec", "podTemplate", "metadata", "labels"]),
        drift: drift::drift(sbx, inputs.template, inputs.flags),
        pod: match pod_view {
            None => Observed::Forbidden,
            Some(v) => Observed::Known(v.present().map(summarize_pod)),
        },
        pvcs: match pvc_pairs {
            None => Observed::Forbidden,
            Some(pairs) => Observed::Known(
                pairs
                    .into_iter()
                    .map(|(name, p)| PvcSummary {
                        name,
                        uid: p.and_then(uid).map(str::to_string),
                        phase: p.map(|p| str_at(p, &["status", "phase"]).unwrap_or("Unknown").to_string()),
                    })
                    .collect(),
            ),
        },
        sandbox_name,
    }
}

/// A PVC of the right name that another object owns is not this workspace's disk.
fn owned_or_unowned(pvc: &Value, sandbox: &Value) -> bool {
    let owners = super::object::owner_refs(pvc);
    owners.is_empty() || uid(sandbox).is_some_and(|u| pod::owned_by(pvc, u))
}

fn summarize_pod(p: &Value) -> PodSummary {
    PodSummary {
        name: name(p).to_string(),
        uid: uid(p).map(str::to_string),
        phase: pod::phase(p).to_string(),
        terminating: pod::is_terminating(p),
        node: non_empty(p, &["spec", "nodeName"]).map(str::to_string),
        image: p
            .pointer("/spec/containers/0/image")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
}
