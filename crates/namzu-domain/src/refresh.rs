//! The library's refresh (`resume({refreshPodTemplate: true})`, docs/interop.md §14): only on
//! Suspended → Running, one JSON Patch that replaces `spec.podTemplate` with the SandboxTemplate as
//! it is now plus the hosts' overlays, stamps its hash and the changed-at, and wakes the workspace —
//! or the typed reason nothing is sent. Overlays are host configuration the object does not carry:
//! flags pin them; otherwise only the overlays that reproduce the stored hash are used, and a
//! refresh that would have to guess is refused.

use super::annotations::TEMPLATE_LABEL;
use super::diff::Change;
use super::drift::{self, OverlayFlags, Overlays, TemplateRead};
use super::epoch::Reading;
use super::fence::{self, Change as Body, Decision, EpochChoice, EpochUse, Hold, WriteBody};
use super::naming::template_label;
use super::object::{at, str_at};
use super::patch::{self, Mode};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// What the caller asks of a refresh.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ask {
    /// The hosts' overlays where the caller knows them (`--runtime-class`, `--egress-profile`,
    /// `--egress-profile-label-key`, the per-sandbox label key); the rest are inferred.
    pub flags: OverlayFlags,
    /// The hash a confirmation showed: a refresh that would now write another one is refused.
    pub expected_hash: Option<String>,
}

/// One overlay a refresh applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Field {
    TemplateLabel,
    RuntimeClassName,
    EgressProfile,
    PerSandboxLabel,
}

/// Where an overlay's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The Sandbox's own `sandbox.namzu.ai/template` label: a refresh never moves a workspace.
    StoredLabel,
    /// Given by the caller.
    Flag,
    /// The overlays that reproduce the stored hash with the SandboxTemplate as it is now.
    ReproducedWithTemplate,
    /// The overlays that reproduce the stored hash from the Sandbox's own pod template (the
    /// template changed since); every one of them gives the same refreshed pod template.
    ReproducedFromStored,
    /// Both with and without this overlay the stored hash is reproduced and the same pod template
    /// is written (the value is the template's own, or the hosts' overlay of the same value): the
    /// value shown is the one written.
    EitherWay,
}

/// One overlay, its value (`None`: not configured, the template's own value stands) and source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OverlayUse {
    pub field: Field,
    pub value: Option<String>,
    pub source: Source,
}

/// What a refresh writes, and from what.
#[derive(Debug, Clone, PartialEq)]
pub struct Refresh {
    /// The SandboxTemplate read (the one the Sandbox's label names).
    pub template: String,
    pub overlays: Overlays,
    pub uses: Vec<OverlayUse>,
    /// The hash written, as the library computes it for the template with these overlays.
    pub hash: String,
    /// The hash stored before.
    pub stored: Option<String>,
    /// Every field of `spec.podTemplate` the refresh changes.
    pub changes: Vec<Change>,
}

/// An overlay asked for that a Sandbox's pod template does not carry (the library's
/// `KubernetesWorkspaceMismatchError`, fields `runtimeClassName` and `egressProfile`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub field: Field,
    /// What the pod template carries (`key=value` for a profile).
    pub stored: Option<String>,
    pub wanted: String,
}

/// Why a SandboxTemplate cannot be refreshed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// The read was forbidden.
    Forbidden,
    /// It has no `spec.podTemplate`.
    NoPodTemplate,
}

/// A disk the refreshed workspace would lose or could not have (the library's
/// `KubernetesWorkspaceDiskError`). `spec.volumeClaimTemplates` is CEL-immutable and never patched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskProblem {
    /// The Sandbox declares no disk at all.
    NoDisk,
    /// The SandboxTemplate declares a disk the Sandbox lacks.
    Lacking(String),
    /// A Sandbox disk without a name.
    Unnamed,
    /// A Sandbox disk that is not `volumeMode: Block`.
    NotBlock { disk: String, mode: Option<String> },
    /// The refreshed pod template mounts a Sandbox disk as a filesystem.
    Mounted(String),
    /// The refreshed pod template no longer claims a Sandbox disk through `volumeDevices`.
    Unclaimed(String),
}

/// Why a refresh sends nothing (besides the fence's [`Hold`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Refresh happens only on Suspended → Running; `mismatches` are overlays asked for that the
    /// running pod template does not carry.
    Running {
        mismatches: Vec<Mismatch>,
    },
    NoTemplate {
        template: String,
    },
    TemplateUnreadable {
        template: String,
        why: Unreadable,
    },
    /// The SandboxTemplate's own pod-template label names another template.
    OtherTemplate {
        template: String,
        label: String,
    },
    Disk {
        template: String,
        problem: DiskProblem,
    },
    /// No hash stored, and `open` overlays are not pinned: nothing records which built the pod template.
    UnknownDrift {
        open: Vec<Field>,
    },
    /// No candidate overlays reproduce the stored hash.
    NoCandidate {
        stored: String,
    },
    /// Overlays that reproduce the stored hash disagree on what the refresh would write.
    Ambiguous {
        fields: Vec<Field>,
    },
    /// The refresh would now write another hash than the one confirmed.
    Changed {
        confirmed: String,
        now: String,
    },
}

/// Why nothing is sent: the fence, or a refusal of the refresh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    Fence(Hold),
    Refusal(Refusal),
}

/// The checks that need nothing but the Sandbox: the fence, then the mode (a refresh happens only
/// on Suspended → Running). The epoch the refresh carries.
pub fn admit(sandbox: &Value, choice: EpochChoice, flags: &OverlayFlags) -> Result<EpochUse, Refused> {
    let epoch = fence::admit(sandbox, choice).map_err(Refused::Fence)?;
    if !refreshes(Mode::of_sandbox(sandbox)) {
        let asked = Overlays {
            runtime_class_name: flags.runtime_class_name.clone(),
            profile: flags.profile.clone(),
            profile_label_key: flags.profile_label_key.clone(),
            ..Overlays::default()
        };
        return Err(Refused::Refusal(Refusal::Running {
            mismatches: mismatches(sandbox, &asked),
        }));
    }
    Ok(epoch)
}

/// Whether a workspace in `mode` may be refreshed: only a Suspended one (its pod is gone, so
/// the template can change under no running pod).
pub fn refreshes(mode: Mode) -> bool {
    mode == Mode::Suspended
}

/// The `runtimeClassName` and egress profile `wanted` configures that `sandbox`'s pod template
/// does not carry.
pub fn mismatches(sandbox: &Value, wanted: &Overlays) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let stored_rc = str_at(sandbox, &["spec", "podTemplate", "spec", "runtimeClassName"]);
    if let Some(rc) = &wanted.runtime_class_name
        && stored_rc != Some(rc.as_str())
    {
        out.push(Mismatch {
            field: Field::RuntimeClassName,
            stored: stored_rc.map(str::to_string),
            wanted: rc.clone(),
        });
    }
    if let Some(profile) = &wanted.profile {
        let key = wanted.profile_key();
        let stored = str_at(sandbox, &["spec", "podTemplate", "metadata", "labels", key]);
        if stored != Some(profile.as_str()) {
            out.push(Mismatch {
                field: Field::EgressProfile,
                stored: stored.map(|s| format!("{key}={s}")),
                wanted: format!("{key}={profile}"),
            });
        }
    }
    out
}

/// Decide a refresh from one read of the Sandbox and one of its SandboxTemplate: the fence, the
/// mode, the template, its label, the disks, the overlays, the confirmed hash — then the body.
pub fn decide(
    sandbox: &Value,
    template: TemplateRead<'_>,
    ask: &Ask,
    choice: EpochChoice,
    changed_at: &str,
) -> Result<(Decision, Refresh), Refused> {
    let epoch = admit(sandbox, choice, &ask.flags)?;
    let refuse = |r: Refusal| Err(Refused::Refusal(r));
    let name = template_label(sandbox).unwrap_or_default().to_string();
    let template = match template {
        TemplateRead::Found(t) => t,
        TemplateRead::NotFound => return refuse(Refusal::NoTemplate { template: name }),
        TemplateRead::Unreadable => {
            return refuse(Refusal::TemplateUnreadable {
                template: name,
                why: Unreadable::Forbidden,
            });
        }
    };
    let Some(pod_template) = at(template, &["spec", "podTemplate"]).filter(|p| p.is_object()) else {
        return refuse(Refusal::TemplateUnreadable {
            template: name,
            why: Unreadable::NoPodTemplate,
        });
    };
    if let Some(label) = str_at(pod_template, &["metadata", "labels", TEMPLATE_LABEL]).filter(|l| *l != name) {
        return refuse(Refusal::OtherTemplate {
            label: label.to_string(),
            template: name,
        });
    }
    if let Some(problem) = disk_problem(sandbox, template, pod_template) {
        return refuse(Refusal::Disk {
            template: name,
            problem,
        });
    }
    let (overlays, uses) = infer(sandbox, template, &ask.flags).map_err(Refused::Refusal)?;
    let (Some(written), Some(hash)) = (
        drift::pod_template_written(template, &overlays),
        drift::template_hash(template, &overlays),
    ) else {
        // (overlay and hash need exactly the spec.podTemplate checked above)
        return refuse(Refusal::TemplateUnreadable {
            template: name,
            why: Unreadable::NoPodTemplate,
        });
    };
    if let Some(confirmed) = ask.expected_hash.as_ref().filter(|c| **c != hash) {
        return refuse(Refusal::Changed {
            confirmed: confirmed.clone(),
            now: hash,
        });
    }
    // a workspace without a stored epoch, refreshed at the stored one, is refreshed unfenced as
    // the library does: a refresh never acquires a fence (an explicit epoch or a take-over does)
    let reading = Reading::of(sandbox);
    let fenced = reading.annotation.is_some() || !matches!(choice, EpochChoice::Stored | EpochChoice::Explicit(0));
    let epoch = EpochUse {
        unfenced: !fenced,
        ..epoch
    };
    let ops = patch::refresh(
        &reading,
        fenced.then_some(epoch.carried),
        changed_at.to_string(),
        hash.clone(),
        written,
    )
    .map_err(|e| Refused::Fence(Hold::Unconditionable(e.to_string())))?;
    let refresh = Refresh {
        template: name,
        changes: drift::field_changes(sandbox, template, &overlays),
        stored: drift::stored_hash(sandbox).map(str::to_string),
        overlays,
        uses,
        hash,
    };
    let body = WriteBody::Patch {
        ops,
        change: Body::Refresh,
    };
    Ok((Decision { epoch, body }, refresh))
}

/// The library's disk checks on a refresh: the SandboxTemplate declares no disk the Sandbox lacks,
/// and the refreshed pod template still claims every Sandbox disk as a Block `volumeDevices`.
fn disk_problem(sandbox: &Value, template: &Value, pod_template: &Value) -> Option<DiskProblem> {
    let list = |obj: &Value, path: &[&str]| -> Vec<Value> {
        at(obj, path).and_then(Value::as_array).cloned().unwrap_or_default()
    };
    let disks = list(sandbox, &["spec", "volumeClaimTemplates"]);
    if disks.is_empty() {
        return Some(DiskProblem::NoDisk);
    }
    let name = |d: &Value| {
        str_at(d, &["metadata", "name"])
            .filter(|n| !n.is_empty())
            .map(str::to_string)
    };
    let held: Vec<String> = disks.iter().filter_map(name).collect();
    if let Some(lacking) = list(template, &["spec", "volumeClaimTemplates"])
        .iter()
        .filter_map(name)
        .find(|n| !held.contains(n))
    {
        return Some(DiskProblem::Lacking(lacking));
    }
    let (devices, mounts) = consumers(pod_template);
    for disk in &disks {
        let Some(n) = name(disk) else {
            return Some(DiskProblem::Unnamed);
        };
        let mode = str_at(disk, &["spec", "volumeMode"]);
        if mode != Some("Block") {
            return Some(DiskProblem::NotBlock {
                disk: n,
                mode: mode.map(str::to_string),
            });
        }
        if mounts.contains(&n) {
            return Some(DiskProblem::Mounted(n));
        }
        if !devices.contains(&n) {
            return Some(DiskProblem::Unclaimed(n));
        }
    }
    None
}

/// Every name a pod template's containers and init containers claim through `volumeDevices` and
/// through `volumeMounts`.
fn consumers(pod_template: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut devices, mut mounts) = (BTreeSet::new(), BTreeSet::new());
    for list in ["containers", "initContainers"] {
        let containers = at(pod_template, &["spec", list]).and_then(Value::as_array);
        for c in containers.into_iter().flatten() {
            for (field, into) in [("volumeDevices", &mut devices), ("volumeMounts", &mut mounts)] {
                let entries = c.get(field).and_then(Value::as_array).into_iter().flatten();
                into.extend(entries.filter_map(|e| str_at(e, &["name"])).map(str::to_string));
            }
        }
    }
    (devices, mounts)
}

/// The overlays a refresh uses: flags where given; the rest inferred from the candidates that
/// reproduce the stored hash — with the template as it is now, else from the Sandbox's own pod
/// template — and refused when none does, or when those that do would write different templates.
fn infer(sandbox: &Value, template: &Value, flags: &OverlayFlags) -> Result<(Overlays, Vec<OverlayUse>), Refusal> {
    let open = OverlayFlags {
        runtime_class_name: None,
        profile: None,
        ..flags.clone()
    };
    let candidates = drift::candidate_overlays(sandbox, &open);
    let pin = |o: &Overlays| Overlays {
        runtime_class_name: flags
            .runtime_class_name
            .clone()
            .or_else(|| o.runtime_class_name.clone()),
        profile: flags.profile.clone().or_else(|| o.profile.clone()),
        ..o.clone()
    };
    let mut unpinned = Vec::new();
    if flags.runtime_class_name.is_none() {
        unpinned.push(Field::RuntimeClassName);
    }
    if flags.profile.is_none() {
        unpinned.push(Field::EgressProfile);
    }
    if candidates.iter().any(|o| o.per_sandbox_label.is_some()) {
        unpinned.push(Field::PerSandboxLabel);
    }
    if let (true, Some(only)) = (unpinned.is_empty(), candidates.first()) {
        let chosen = pin(only);
        let uses = uses(&chosen, flags, Source::Flag);
        return Ok((chosen, uses));
    }
    let Some(stored) = drift::stored_hash(sandbox) else {
        return Err(Refusal::UnknownDrift { open: unpinned });
    };
    let reproducing = |t: &Value| -> Vec<Overlays> {
        candidates
            .iter()
            .filter(|o| drift::template_hash(t, o).as_deref() == Some(stored))
            .map(pin)
            .collect()
    };
    let (mut matched, mut basis) = (reproducing(template), Source::ReproducedWithTemplate);
    if matched.is_empty() {
        matched = reproducing(&stored_as_template(sandbox, open.per_sandbox_key()));
        basis = Source::ReproducedFromStored;
    }
    let Some(first) = matched.first().cloned() else {
        return Err(Refusal::NoCandidate {
            stored: stored.to_string(),
        });
    };
    let writes = |o: &Overlays| drift::template_hash(template, o);
    let mut fields = Vec::new();
    for other in matched.iter().filter(|o| writes(o) != writes(&first)) {
        if other.runtime_class_name != first.runtime_class_name {
            fields.push(Field::RuntimeClassName);
        }
        if other.profile != first.profile {
            fields.push(Field::EgressProfile);
        }
        if other.per_sandbox_label != first.per_sandbox_label {
            fields.push(Field::PerSandboxLabel);
        }
    }
    if !fields.is_empty() {
        fields.sort();
        fields.dedup();
        return Err(Refusal::Ambiguous { fields });
    }
    let mut uses = uses(&first, flags, basis);
    // an overlay the reproducing candidates disagree on without changing what is written
    let written = drift::pod_template_written(template, &first).unwrap_or(Value::Null);
    for u in uses.iter_mut() {
        let (differs, value) = match u.field {
            Field::RuntimeClassName => (
                matched.iter().any(|o| o.runtime_class_name != first.runtime_class_name),
                str_at(&written, &["spec", "runtimeClassName"]).map(str::to_string),
            ),
            Field::EgressProfile => {
                let key = first.profile_key();
                let value = str_at(&written, &["metadata", "labels", key]).map(|v| format!("{key}={v}"));
                (matched.iter().any(|o| o.profile != first.profile), value)
            }
            Field::TemplateLabel | Field::PerSandboxLabel => (false, None),
        };
        if differs {
            u.source = Source::EitherWay;
            u.value = value;
        }
    }
    Ok((first, uses))
}

/// The Sandbox's own pod template as a SandboxTemplate, without the per-sandbox label (which the
/// hash may or may not have counted: a candidate that counts it puts it back).
fn stored_as_template(sandbox: &Value, per_sandbox_key: &str) -> Value {
    let mut pod_template = at(sandbox, &["spec", "podTemplate"]).cloned().unwrap_or(Value::Null);
    if let Some(labels) = pod_template
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(per_sandbox_key);
    }
    json!({"spec": {"podTemplate": pod_template}})
}

fn uses(o: &Overlays, flags: &OverlayFlags, inferred: Source) -> Vec<OverlayUse> {
    let source = |flagged: bool| if flagged { Source::Flag } else { inferred };
    let mut out = vec![
        OverlayUse {
            field: Field::TemplateLabel,
            value: Some(o.template_name.clone()),
            source: Source::StoredLabel,
        },
        OverlayUse {
            field: Field::RuntimeClassName,
            value: o.runtime_class_name.clone(),
            source: source(flags.runtime_class_name.is_some()),
        },
        OverlayUse {
            field: Field::EgressProfile,
            value: o.profile.as_ref().map(|p| format!("{}={p}", o.profile_key())),
            source: source(flags.profile.is_some()),
        },
    ];
    if let Some(p) = &o.per_sandbox_label {
        out.push(OverlayUse {
            field: Field::PerSandboxLabel,
            value: Some(format!("{}={}", p.key, p.value)),
            source: inferred,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::{HOLDER_EPOCH, POD_TEMPLATE_HASH};
    use crate::canonical::pod_template_hash;
    use crate::patch::to_json;

    fn template(image: &str, runtime: Option<&str>) -> Value {
        let mut spec = json!({"containers": [{"name": "agent", "image": image,
            "volumeDevices": [{"name": "disk", "devicePath": "/dev/disk"}]}]});
        if let Some(rc) = runtime {
            spec["runtimeClassName"] = json!(rc);
        }
        json!({"metadata": {"name": "ws"}, "spec": {"podTemplate": {"metadata": {"labels": {"app": "a"}}, "spec": spec},
            "volumeClaimTemplates": [{"metadata": {"name": "disk"}, "spec": {"volumeMode": "Block"}}]}})
    }

    fn sandbox(from: &Value, o: &Overlays, mode: &str) -> Value {
        let pt = drift::overlay(from, o).unwrap();
        json!({"metadata": {"name": "namzu-ws-a", "uid": "u1", "resourceVersion": "5",
                "annotations": {POD_TEMPLATE_HASH: pod_template_hash(&pt), HOLDER_EPOCH: "3"}},
            "spec": {"operatingMode": mode, "podTemplate": pt,
                "volumeClaimTemplates": [{"metadata": {"name": "disk"}, "spec": {"volumeMode": "Block"}}]}})
    }

    fn base() -> Overlays {
        Overlays {
            template_name: "ws".into(),
            ..Default::default()
        }
    }

    fn run(sbx: &Value, t: &Value, flags: OverlayFlags) -> Result<(Decision, Refresh), Refused> {
        let ask = Ask {
            flags,
            expected_hash: None,
        };
        decide(sbx, TemplateRead::Found(t), &ask, EpochChoice::Stored, "T")
    }

    fn refusal(r: Result<(Decision, Refresh), Refused>) -> Refusal {
        match r {
            Err(Refused::Refusal(r)) => r,
            other => panic!("not a refusal: {other:?}"),
        }
    }

    #[test]
    fn a_drifted_suspended_workspace_gets_the_library_body() {
        let old = template("agent:1", None);
        let sbx = sandbox(&old, &base(), "Suspended");
        let new = template("agent:2", None);
        let (d, r) = run(&sbx, &new, OverlayFlags::default()).unwrap();
        let WriteBody::Patch { ops, change } = d.body else {
            panic!()
        };
        assert_eq!(change, Body::Refresh);
        // the library's refresh body (its shape is `patch::tests::refresh_shapes`'s), with the
        // template as it is now and its hash
        let written = drift::overlay(&new, &base()).unwrap();
        let expected = patch::refresh(&Reading::of(&sbx), Some(3), "T".into(), r.hash.clone(), written).unwrap();
        assert_eq!(ops, expected);
        let body = to_json(&ops);
        assert_eq!(body[5]["value"], drift::overlay(&new, &base()).unwrap());
        assert_eq!(body[4]["value"], json!(r.hash));
        assert_eq!(r.uses[1].source, Source::ReproducedFromStored);
        assert_eq!(r.changes.len(), 1, "{:?}", r.changes);
    }

    #[test]
    fn running_is_refused_naming_what_the_flags_want() {
        let t = template("agent:1", Some("runc"));
        let sbx = sandbox(&t, &base(), "Running");
        let flags = OverlayFlags {
            runtime_class_name: Some("kata-qemu".into()),
            ..Default::default()
        };
        let Refusal::Running { mismatches } = refusal(run(&sbx, &t, flags)) else {
            panic!()
        };
        assert_eq!(mismatches[0].stored.as_deref(), Some("runc"));
    }

    #[test]
    fn an_ambiguous_runtime_is_refused_until_a_flag_pins_it() {
        // stored runc: the hosts' overlay, or the template's own that it has since changed?
        let old = template("agent:1", Some("runc"));
        let sbx = sandbox(&old, &base(), "Suspended");
        let new = template("agent:2", Some("gvisor"));
        assert_eq!(
            refusal(run(&sbx, &new, OverlayFlags::default())),
            Refusal::Ambiguous {
                fields: vec![Field::RuntimeClassName]
            }
        );
        let flags = OverlayFlags {
            runtime_class_name: Some("runc".into()),
            ..Default::default()
        };
        let (_, r) = run(&sbx, &new, flags).unwrap();
        assert_eq!(r.overlays.runtime_class_name.as_deref(), Some("runc"));
        assert_eq!(r.uses[1].source, Source::Flag);
        // the template still says runc: either reading writes the same, so nothing is guessed
        let same = template("agent:2", Some("runc"));
        assert!(run(&sbx, &same, OverlayFlags::default()).is_ok());
    }

    #[test]
    fn no_hash_and_no_reproducing_candidate_are_refused() {
        let t = template("agent:1", None);
        let mut sbx = sandbox(&t, &base(), "Suspended");
        sbx["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove(POD_TEMPLATE_HASH);
        assert!(matches!(
            refusal(run(&sbx, &t, OverlayFlags::default())),
            Refusal::UnknownDrift { .. }
        ));
        // both overlays pinned and no per-sandbox label: nothing left to infer
        let pinned = OverlayFlags {
            runtime_class_name: Some("runc".into()),
            profile: Some("open".into()),
            ..Default::default()
        };
        assert!(run(&sbx, &t, pinned).is_ok());
        sbx["metadata"]["annotations"][POD_TEMPLATE_HASH] = json!("sha256:0000");
        assert!(matches!(
            refusal(run(&sbx, &t, OverlayFlags::default())),
            Refusal::NoCandidate { .. }
        ));
    }

    #[test]
    fn disks_labels_and_templates() {
        let t = template("agent:1", None);
        let sbx = sandbox(&t, &base(), "Suspended");
        let mut extra = t.clone();
        extra["spec"]["volumeClaimTemplates"]
            .as_array_mut()
            .unwrap()
            .push(json!({"metadata": {"name": "cache"}, "spec": {"volumeMode": "Block"}}));
        assert!(matches!(
            refusal(run(&sbx, &extra, OverlayFlags::default())),
            Refusal::Disk { problem: DiskProblem::Lacking(d), .. } if d == "cache"
        ));
        let mut unclaimed = t.clone();
        unclaimed["spec"]["podTemplate"]["spec"]["containers"][0]["volumeDevices"] = json!([]);
        assert!(matches!(
            refusal(run(&sbx, &unclaimed, OverlayFlags::default())),
            Refusal::Disk { problem: DiskProblem::Unclaimed(d), .. } if d == "disk"
        ));
        let mut mounted = t.clone();
        mounted["spec"]["podTemplate"]["spec"]["containers"][0]["volumeMounts"] =
            json!([{"name": "disk", "mountPath": "/w"}]);
        assert!(matches!(
            refusal(run(&sbx, &mounted, OverlayFlags::default())),
            Refusal::Disk {
                problem: DiskProblem::Mounted(_),
                ..
            }
        ));
        let mut other = t.clone();
        other["spec"]["podTemplate"]["metadata"]["labels"][TEMPLATE_LABEL] = json!("other");
        assert!(matches!(
            refusal(run(&sbx, &other, OverlayFlags::default())),
            Refusal::OtherTemplate { .. }
        ));
        assert!(matches!(
            refusal(run(&sbx, &json!({"spec": {}}), OverlayFlags::default())),
            Refusal::TemplateUnreadable {
                why: Unreadable::NoPodTemplate,
                ..
            }
        ));
    }

    #[test]
    fn a_confirmed_hash_pins_the_body_and_the_fence_comes_first() {
        let old = template("agent:1", None);
        let sbx = sandbox(&old, &base(), "Suspended");
        let new = template("agent:2", None);
        let ask = Ask {
            flags: OverlayFlags::default(),
            expected_hash: Some("sha256:shown".into()),
        };
        assert!(matches!(
            decide(&sbx, TemplateRead::Found(&new), &ask, EpochChoice::Stored, "T"),
            Err(Refused::Refusal(Refusal::Changed { .. }))
        ));
        assert!(matches!(
            decide(&sbx, TemplateRead::NotFound, &ask, EpochChoice::Explicit(2), "T"),
            Err(Refused::Fence(Hold::Fenced { .. }))
        ));
    }
}
