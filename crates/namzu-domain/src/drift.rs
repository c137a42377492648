//! Template drift (docs/interop.md §6, §7): the library's overlay (`sandboxPodTemplate`), the hash it
//! stamps, and how a Sandbox's stored hash compares with its template's current one.

use super::annotations::{EGRESS_PROFILE_LABEL, PER_SANDBOX_LABEL, POD_TEMPLATE_HASH, TEMPLATE_LABEL};
use super::canonical::pod_template_hash;
use super::object::{annotation, at, str_at};
use serde::Serialize;
use serde_json::{Map, Value};

/// Host config the overlay needs; it is not on the object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Overlays {
    pub template_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_class_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The profile label key; `None` is the default key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_label_key: Option<String>,
    /// A workspace with per-sandbox egress carries its per-sandbox label on the pod template;
    /// whether the library's hash includes it is not known (docs/interop.md §13.6), so drift is
    /// computed both ways and this says which one was used. `None` for a workspace without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_sandbox_label: Option<PerSandboxLabel>,
}

/// The per-sandbox label of a workspace, and whether a hash counted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PerSandboxLabel {
    pub key: String,
    pub value: String,
    /// The hash was computed with the label on the pod template (`false`: without it).
    pub hashed: bool,
}

impl Overlays {
    pub fn profile_key(&self) -> &str {
        self.profile_label_key.as_deref().unwrap_or(EGRESS_PROFILE_LABEL)
    }
}

/// Overlay flags given by the user; each one given overrides inference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OverlayFlags {
    pub runtime_class_name: Option<String>,
    pub profile: Option<String>,
    pub profile_label_key: Option<String>,
    /// The per-sandbox egress label key (default `sandbox.namzu.ai/per-sandbox-egress`).
    pub per_sandbox_label_key: Option<String>,
}

impl OverlayFlags {
    pub fn per_sandbox_key(&self) -> &str {
        self.per_sandbox_label_key.as_deref().unwrap_or(PER_SANDBOX_LABEL)
    }
    pub(crate) fn profile_key(&self) -> &str {
        self.profile_label_key.as_deref().unwrap_or(EGRESS_PROFILE_LABEL)
    }
}

/// `sandboxPodTemplate`: the template's `spec.podTemplate` with the workspace overlays.
/// `None` when the template has no `spec.podTemplate`.
pub(crate) fn overlay(template: &Value, overlays: &Overlays) -> Option<Value> {
    let pod_template = at(template, &["spec", "podTemplate"])?.as_object()?;
    let mut out = pod_template.clone();

    let mut metadata = match pod_template.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    let mut labels = match metadata.get("labels") {
        Some(Value::Object(l)) => l.clone(),
        _ => Map::new(),
    };
    labels.insert(TEMPLATE_LABEL.into(), overlays.template_name.clone().into());
    if let Some(profile) = &overlays.profile {
        labels.insert(overlays.profile_key().into(), profile.clone().into());
    }
    if let Some(p) = overlays.per_sandbox_label.as_ref().filter(|p| p.hashed) {
        labels.insert(p.key.clone(), p.value.clone().into());
    }
    metadata.insert("labels".into(), Value::Object(labels));
    out.insert("metadata".into(), Value::Object(metadata));

    let mut spec = match pod_template.get("spec") {
        Some(Value::Object(s)) => s.clone(),
        _ => Map::new(),
    };
    if let Some(rc) = &overlays.runtime_class_name {
        spec.insert("runtimeClassName".into(), rc.clone().into());
    }
    out.insert("spec".into(), Value::Object(spec));
    Some(Value::Object(out))
}

/// The hash a workspace created from `template` with `overlays` carries.
pub fn template_hash(template: &Value, overlays: &Overlays) -> Option<String> {
    overlay(template, overlays).map(|t| pod_template_hash(&t))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriftState {
    Current,
    Drifted,
    /// No hash stored (a workspace from before the hash existed).
    Unknown,
    /// The template is gone.
    NoTemplate,
    /// The template could not be read (forbidden or failed).
    Unreadable,
}

impl DriftState {
    pub const ALL: [DriftState; 5] = [
        DriftState::Current,
        DriftState::Drifted,
        DriftState::Unknown,
        DriftState::NoTemplate,
        DriftState::Unreadable,
    ];
    pub fn parse(text: &str) -> Option<DriftState> {
        DriftState::ALL.into_iter().find(|d| d.as_str() == text)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            DriftState::Current => "current",
            DriftState::Drifted => "drifted",
            DriftState::Unknown => "unknown",
            DriftState::NoTemplate => "no-template",
            DriftState::Unreadable => "unreadable",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    pub state: DriftState,
    pub stored: Option<String>,
    pub current: Option<String>,
    /// The overlays the current hash was computed with.
    pub overlays: Option<Overlays>,
}

/// What reading the workspace's template gave.
#[derive(Debug, Clone, Copy)]
pub enum TemplateRead<'a> {
    Found(&'a Value),
    NotFound,
    Unreadable,
}

/// What reading one template gave.
#[derive(Debug, Clone)]
pub enum TemplateFetch {
    Found(Value),
    NotFound,
    /// Forbidden, or the read failed.
    Unreadable,
}

impl TemplateFetch {
    pub fn as_read(&self) -> TemplateRead<'_> {
        match self {
            TemplateFetch::Found(t) => TemplateRead::Found(t),
            TemplateFetch::NotFound => TemplateRead::NotFound,
            TemplateFetch::Unreadable => TemplateRead::Unreadable,
        }
    }
}

/// The stored hash, or `None` when absent or empty ("unknown is not current").
pub(crate) fn stored_hash(sandbox: &Value) -> Option<&str> {
    annotation(sandbox, POD_TEMPLATE_HASH).filter(|s| !s.is_empty())
}

/// Candidate host configs that could have produced this Sandbox, most plausible first:
/// flags pin their field; otherwise "not configured", then the value the Sandbox's own pod
/// template carries (the host may have configured exactly that). A workspace carrying the
/// per-sandbox label is tried without it in the hash, then with it.
pub(crate) fn candidate_overlays(sandbox: &Value, flags: &OverlayFlags) -> Vec<Overlays> {
    let template_name = super::naming::template_label(sandbox).unwrap_or("").to_string();
    let stored_spec = |k: &str| str_at(sandbox, &["spec", "podTemplate", "spec", k]);
    let key = flags.profile_label_key.clone();
    let key_str = key.as_deref().unwrap_or(EGRESS_PROFILE_LABEL);
    let stored_profile = str_at(sandbox, &["spec", "podTemplate", "metadata", "labels", key_str]);

    let runtimes: Vec<Option<String>> = match &flags.runtime_class_name {
        Some(rc) => vec![Some(rc.clone())],
        None => dedup([None, stored_spec("runtimeClassName").map(str::to_string)]),
    };
    let profiles: Vec<Option<String>> = match &flags.profile {
        Some(p) => vec![Some(p.clone())],
        None => dedup([None, stored_profile.map(str::to_string)]),
    };
    let per_sandbox = str_at(
        sandbox,
        &["spec", "podTemplate", "metadata", "labels", flags.per_sandbox_key()],
    );
    let per_sandbox: Vec<Option<PerSandboxLabel>> = match per_sandbox {
        None => vec![None],
        Some(value) => [false, true]
            .into_iter()
            .map(|hashed| {
                Some(PerSandboxLabel {
                    key: flags.per_sandbox_key().to_string(),
                    value: value.to_string(),
                    hashed,
                })
            })
            .collect(),
    };
    let mut out = Vec::new();
    for rc in &runtimes {
        for p in &profiles {
            for ps in &per_sandbox {
                out.push(Overlays {
                    template_name: template_name.clone(),
                    runtime_class_name: rc.clone(),
                    profile: p.clone(),
                    profile_label_key: key.clone(),
                    per_sandbox_label: ps.clone(),
                });
            }
        }
    }
    out
}

fn dedup<const N: usize>(items: [Option<String>; N]) -> Vec<Option<String>> {
    let mut out: Vec<Option<String>> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// Drift of one workspace against the current template. With no flags, the overlays are inferred:
/// the first candidate whose hash reproduces the stored one (so a host's own overlay is not drift),
/// else the most specific one the Sandbox suggests.
pub fn drift(sandbox: &Value, template: TemplateRead<'_>, flags: &OverlayFlags) -> Drift {
    let stored = stored_hash(sandbox).map(str::to_string);
    let template = match template {
        TemplateRead::Found(t) => t,
        TemplateRead::NotFound => return no_current(DriftState::NoTemplate, stored),
        TemplateRead::Unreadable => return no_current(DriftState::Unreadable, stored),
    };
    let candidates = candidate_overlays(sandbox, flags);
    // a candidate that hashes like an earlier one adds nothing (a runtime equal to the template's)
    let mut hashed: Vec<(Overlays, Option<String>)> = Vec::new();
    for o in candidates {
        let h = template_hash(template, &o);
        if !hashed.iter().any(|(_, seen)| *seen == h) {
            hashed.push((o, h));
        }
    }
    if hashed.iter().all(|(_, h)| h.is_none()) {
        // a template without spec.podTemplate cannot be hashed
        return no_current(DriftState::Unreadable, stored);
    }
    let matching = stored
        .as_ref()
        .and_then(|s| hashed.iter().find(|(_, h)| h.as_ref() == Some(s)));
    let (overlays, current) = match matching {
        Some(found) => found.clone(),
        None => hashed.last().cloned().expect("at least one candidate"),
    };
    let state = match (&stored, matching) {
        (None, _) => DriftState::Unknown,
        (Some(_), Some(_)) => DriftState::Current,
        (Some(_), None) => DriftState::Drifted,
    };
    Drift {
        state,
        stored,
        current,
        overlays: Some(overlays),
    }
}

/// Field-level changes from the Sandbox's stored pod template to what `template` gives today.
/// The per-sandbox label is on the pod template whether or not the hash counts it, so it is
/// never shown as a change.
pub fn field_changes(sandbox: &Value, template: &Value, overlays: &Overlays) -> Vec<super::diff::Change> {
    let stored = at(sandbox, &["spec", "podTemplate"]).cloned().unwrap_or(Value::Null);
    let current = pod_template_written(template, overlays).unwrap_or(Value::Null);
    super::diff::diff(&stored, &current)
}

/// The pod template a workspace created (or refreshed) from `template` with `overlays` carries:
/// the per-sandbox label is on it whether or not its hash counts it.
pub(crate) fn pod_template_written(template: &Value, overlays: &Overlays) -> Option<Value> {
    let mut carried = overlays.clone();
    if let Some(p) = &mut carried.per_sandbox_label {
        p.hashed = true;
    }
    overlay(template, &carried)
}

fn no_current(state: DriftState, stored: Option<String>) -> Drift {
    Drift {
        state,
        stored,
        current: None,
        overlays: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(image: &str) -> Value {
        json!({"metadata":{"name":"ws"},"spec":{"podTemplate":{"metadata":{"labels":{"app":"a"}},
            "spec":{"runtimeClassName":"runc","containers":[{"name":"agent","image":image}]}}}})
    }

    fn sandbox_from(t: &Value, o: &Overlays) -> Value {
        let pt = overlay(t, o).unwrap();
        json!({"metadata":{"name":"namzu-ws-a","annotations":{POD_TEMPLATE_HASH: pod_template_hash(&pt)}},
            "spec":{"podTemplate":pt}})
    }

    fn base() -> Overlays {
        Overlays {
            template_name: "ws".into(),
            ..Default::default()
        }
    }

    #[test]
    fn current_then_drifted_after_edit() {
        let t1 = template("agent:1");
        let sbx = sandbox_from(&t1, &base());
        let d = drift(&sbx, TemplateRead::Found(&t1), &OverlayFlags::default());
        assert_eq!(d.state, DriftState::Current);
        assert_eq!(d.stored, d.current);
        let t2 = template("agent:2");
        let d = drift(&sbx, TemplateRead::Found(&t2), &OverlayFlags::default());
        assert_eq!(d.state, DriftState::Drifted);
        assert_ne!(d.stored, d.current);
    }

    #[test]
    fn host_runtime_overlay_is_inferred_not_drift() {
        let t = template("agent:1");
        let host = Overlays {
            runtime_class_name: Some("kata-qemu".into()),
            profile: Some("restricted".into()),
            ..base()
        };
        let sbx = sandbox_from(&t, &host);
        let d = drift(&sbx, TemplateRead::Found(&t), &OverlayFlags::default());
        assert_eq!(d.state, DriftState::Current);
        assert_eq!(d.overlays, Some(host));
        // a flag that contradicts the host config is taken at its word
        let flags = OverlayFlags {
            runtime_class_name: Some("runc".into()),
            ..Default::default()
        };
        assert_eq!(drift(&sbx, TemplateRead::Found(&t), &flags).state, DriftState::Drifted);
    }

    #[test]
    fn unknown_no_template_unreadable() {
        let t = template("agent:1");
        let mut sbx = sandbox_from(&t, &base());
        sbx["metadata"]["annotations"] = json!({});
        assert_eq!(
            drift(&sbx, TemplateRead::Found(&t), &OverlayFlags::default()).state,
            DriftState::Unknown
        );
        assert_eq!(
            drift(&sbx, TemplateRead::NotFound, &OverlayFlags::default()).state,
            DriftState::NoTemplate
        );
        assert_eq!(
            drift(&sbx, TemplateRead::Unreadable, &OverlayFlags::default()).state,
            DriftState::Unreadable
        );
        let broken = json!({"spec":{}});
        assert_eq!(
            drift(&sbx, TemplateRead::Found(&broken), &OverlayFlags::default()).state,
            DriftState::Unreadable
        );
    }
}
