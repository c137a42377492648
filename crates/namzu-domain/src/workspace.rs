//! One workspace as the inventory shows it: everything the CLI and the TUI render, derived in one
//! pure function from the Sandbox, its pod, its PVCs and its template.

use super::annotations::{CHANGED_AT, NAMZU_PREFIX};
use super::diagnosis::{self, Diagnosis, Evidence};
use super::drift::{self, Drift, OverlayFlags, TemplateRead};
use super::egress::{Egress, PolicyIndex, PolicyRead};
use super::epoch::Reading;
use super::identity::{self, Claim, Identity, Owner};
use super::naming::{id_of, template_label};
use super::object::{annotation, name, namespace, non_empty, uid};
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
    /// The namespace's per-sandbox CiliumNetworkPolicies.
    pub policies: PolicyRead<&'a PolicyIndex<'a>>,
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
    /// Its containers' restarts as `kubectl get pods` counts them, and the newest
    /// `lastState.terminated` among them (`pod::restarts`).
    pub restarts: u64,
    pub last_termination: Option<pod::Termination>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PvcSummary {
    pub name: String,
    /// The `volumeClaimTemplates` entry it is the disk of.
    pub entry: String,
    pub uid: Option<String>,
    /// `None` when the PVC does not exist.
    pub phase: Option<String>,
    pub owners: Vec<Owner>,
    /// Owned by another object than this Sandbox (docs/interop.md §13.2).
    pub foreign: bool,
}

/// A row's string map (labels, annotations, images by container): sorted pairs in one
/// allocation, where a `BTreeMap` takes a ~500-byte node for one entry (50,000 rows hold four).
pub type StrMap = litemap::LiteMap<String, String>;

/// Pairs as a [`StrMap`] holding exactly them (collecting leaves room for four).
pub fn str_map(pairs: impl IntoIterator<Item = (String, String)>) -> StrMap {
    let mut pairs = pairs.into_iter().collect::<StrMap>().into_tuple_vec();
    pairs.shrink_to_fit();
    StrMap::from_sorted_store_unchecked(pairs)
}

/// A [`StrMap`] as a JSON object — `{}` when empty, where litemap's own serde writes an empty
/// map as `[]`.
pub fn str_map_json(map: &StrMap) -> Value {
    Value::Object(map.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect())
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
    /// The Sandbox's `metadata.deletionTimestamp` and the finalizers that hold it.
    pub deletion: Option<String>,
    pub finalizers: Vec<String>,
    /// `spec.shutdownTime` and `spec.shutdownPolicy` as stored (absent: agent-sandbox's Retain).
    pub shutdown_time: Option<String>,
    pub shutdown_policy: Option<String>,
    /// The changed-at annotation as stored; never defaulted.
    pub changed_at: Option<String>,
    pub epoch: Reading,
    pub template: Option<String>,
    pub drift: Drift,
    pub pod: Observed<Option<PodSummary>>,
    pub pvcs: Observed<Vec<PvcSummary>>,
    /// The Sandbox's labels, and its pod template's (where the library puts its own).
    pub labels: StrMap,
    pub template_labels: StrMap,
    /// The library's `ready` (28.0.0): Running, Ready=True for the current generation and a
    /// live pod; `None` when pods may not be read.
    pub ready: Option<bool>,
    /// The uids that say which workspace this is (pod and claim uids as far as readable).
    pub identity: Identity,
    /// `volumeClaimTemplates` entries without their PVC.
    pub missing_claims: Observed<Vec<String>>,
    pub egress: Egress,
    /// Every `sandbox.namzu.ai/*` annotation, as stored: the library's, known to the tool or not.
    pub namzu_annotations: StrMap,
    /// A legacy `agents.x-k8s.io/pod-name` annotation naming another pod than the Sandbox's own.
    pub legacy_pod_name: Option<String>,
    /// The kube context it was read through, when several are (a fleet); `None` with one.
    pub context: Option<String>,
    /// The images the SandboxTemplate names today, by container (init containers too): what a
    /// refresh would run. `None` when the template was not read.
    pub template_images: Option<StrMap>,
    /// What it asks for and holds: its own pod's requests and limits as admitted (else its pod
    /// template's) summed as the scheduler sums them, and its disks (`domain/quantities.rs`).
    pub resources: super::quantities::Resources,
}

/// Container name → image of a SandboxTemplate's pod template.
fn template_images(template: TemplateRead<'_>) -> Option<StrMap> {
    let TemplateRead::Found(t) = template else {
        return None;
    };
    let spec = super::object::at(t, &["spec", "podTemplate", "spec"]);
    Some(str_map(
        ["initContainers", "containers"]
            .iter()
            .filter_map(|k| spec?.get(*k)?.as_array())
            .flatten()
            .filter_map(|c| {
                let name = c.get("name")?.as_str()?;
                let image = c.get("image")?.as_str()?;
                Some((name.to_string(), image.to_string()))
            }),
    ))
}

/// The string values of the map at `path` (labels), empty when there is none.
fn string_map(obj: &Value, path: &[&str]) -> StrMap {
    super::object::at(obj, path)
        .and_then(Value::as_object)
        .map(|m| str_map(m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))))
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
    let claims: Option<Vec<Claim>> = inputs.pvcs.known().map(|pvcs| identity::claims(sbx, |n| pvcs.named(n)));
    let egress = Egress::of(sbx, inputs.flags, inputs.policies);
    let evidence = Evidence {
        pod: pod_view,
        claims: claims.as_deref(),
        egress: &egress,
        now: inputs.now,
    };
    let live = state::live_pod(sbx, pod_view.as_ref());
    let mut identity = identity::identity(sbx, claims.as_deref().unwrap_or(&[]), live);
    if inputs.pods.known().is_none() {
        identity.pod_uid = None;
    }
    let sandbox_name = name(sbx).to_string();
    // the pod the Sandbox owns, as admitted; a pod of its name owned by another is not its
    let own_pod = pod_view
        .as_ref()
        .and_then(PodView::present)
        .filter(|p| uid(sbx).is_some_and(|u| pod::owned_by(p, u)));
    let resources =
        super::quantities::of_workspace(sbx, own_pod, |claim| inputs.pvcs.known().and_then(|p| p.named(claim)));
    Workspace {
        resources,
        ready: state::ready(sbx, mode, pod_view.as_ref()),
        identity,
        missing_claims: match &claims {
            None => Observed::Forbidden,
            Some(c) => Observed::Known(identity::missing(c)),
        },
        namzu_annotations: str_map(
            string_map(sbx, &["metadata", "annotations"])
                .into_iter()
                .filter(|(k, _)| k.starts_with(NAMZU_PREFIX)),
        ),
        legacy_pod_name: pod::legacy_pod_name(sbx).map(str::to_string),
        context: None,
        template_images: template_images(inputs.template),
        id: id_of(&sandbox_name).unwrap_or(&sandbox_name).to_string(),
        namespace: namespace(sbx).to_string(),
        uid: uid(sbx).map(str::to_string),
        mode,
        state: state::derive(sbx, mode, pod_view.as_ref()),
        diagnosis: diagnosis::diagnose(sbx, mode, &evidence),
        created_at: non_empty(sbx, &["metadata", "creationTimestamp"]).map(str::to_string),
        deletion: non_empty(sbx, &["metadata", "deletionTimestamp"]).map(str::to_string),
        finalizers: diagnosis::finalizers(sbx).into_iter().map(str::to_string).collect(),
        shutdown_time: non_empty(sbx, &["spec", "shutdownTime"]).map(str::to_string),
        shutdown_policy: non_empty(sbx, &["spec", "shutdownPolicy"]).map(str::to_string),
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
        pvcs: match claims {
            None => Observed::Forbidden,
            Some(claims) => Observed::Known(
                claims
                    .into_iter()
                    .map(|c| PvcSummary {
                        name: c.pvc,
                        entry: c.entry,
                        uid: c.uid,
                        phase: c.phase,
                        owners: c.owners,
                        foreign: c.foreign,
                    })
                    .collect(),
            ),
        },
        egress,
        sandbox_name,
    }
}

fn summarize_pod(p: &Value) -> PodSummary {
    let restarts = pod::restarts(p);
    PodSummary {
        restarts: restarts.count,
        last_termination: restarts.last,
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
