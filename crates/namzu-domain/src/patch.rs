//! The one RFC 6902 body builder (`buildHolderEpochPatch`, docs/interop.md §4).
//! Tests first, then mutations in a fixed order; a write with nothing to condition it on is refused.

use super::annotations::{CHANGED_AT, HOLDER_EPOCH, POD_TEMPLATE_HASH};
use super::epoch::Reading;
use serde::Serialize;
use serde_json::{Map, Value};

pub(crate) const RESOURCE_VERSION_POINTER: &str = "/metadata/resourceVersion";
pub const MODE_POINTER: &str = "/spec/operatingMode";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Test,
    Add,
}

/// One operation, in the only two shapes the library sends.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatchOp {
    pub op: OpKind,
    pub path: String,
    pub value: Value,
}

impl PatchOp {
    pub fn test(path: impl Into<String>, value: impl Into<Value>) -> Self {
        PatchOp {
            op: OpKind::Test,
            path: path.into(),
            value: value.into(),
        }
    }
    pub(crate) fn add(path: impl Into<String>, value: impl Into<Value>) -> Self {
        PatchOp {
            op: OpKind::Add,
            path: path.into(),
            value: value.into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum Mode {
    Running,
    Suspended,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Running => "Running",
            Mode::Suspended => "Suspended",
        }
    }
    /// The library's reading of `spec.operatingMode`: only "Suspended" is Suspended.
    pub fn of_sandbox(sandbox: &Value) -> Mode {
        match super::object::str_at(sandbox, &["spec", "operatingMode"]) {
            Some("Suspended") => Mode::Suspended,
            _ => Mode::Running,
        }
    }
}

/// RFC 6901 reference token: `~` → `~0`, then `/` → `~1`.
pub(crate) fn escape_pointer_segment(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

pub(crate) fn annotation_pointer(key: &str) -> String {
    format!("/metadata/annotations/{}", escape_pointer_segment(key))
}

/// What a conditional write carries and under what condition.
#[derive(Debug, Clone)]
pub struct PatchInput<'a> {
    /// The read the condition is built from.
    pub reading: &'a Reading,
    /// The epoch carried and stored; `None` is the unfenced conditional write.
    pub epoch: Option<u64>,
    /// Further `test` clauses in the same body (e.g. the refresh's mode test).
    pub tests: Vec<PatchOp>,
    pub operating_mode: Option<Mode>,
    /// Only for a write that changes the mode.
    pub changed_at: Option<String>,
    /// Further annotations landed atomically (the refresh's hash), in order.
    pub annotations: Vec<(String, String)>,
    /// Replaces `spec.podTemplate` whole (refresh only).
    pub pod_template: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    #[error(
        "cannot build a conditional patch that carries neither a holder epoch nor a test clause — there is nothing to condition the write on"
    )]
    NoCondition,
    #[error(
        "cannot build a holder-epoch patch from an object that carries neither the holder-epoch annotation nor a metadata.resourceVersion — there is nothing to condition the write on"
    )]
    NoResourceVersion,
    #[error(
        "cannot add a metadata.annotations map to an object that carries no metadata.resourceVersion — a whole-map write with nothing to condition it on would overwrite annotations written since the read"
    )]
    WholeMapUnconditioned,
}

impl<'a> PatchInput<'a> {
    /// Nothing but the read: every other field empty.
    pub fn new(reading: &'a Reading) -> Self {
        PatchInput {
            reading,
            epoch: None,
            tests: Vec::new(),
            operating_mode: None,
            changed_at: None,
            annotations: Vec::new(),
            pod_template: None,
        }
    }
}

/// Build the one RFC 6902 body for `input`, exactly as the library does.
pub fn build(input: PatchInput<'_>) -> Result<Vec<PatchOp>, PatchError> {
    let reading = input.reading;
    let epoch_pointer = annotation_pointer(HOLDER_EPOCH);
    let mut tests = Vec::new();
    match input.epoch {
        None if input.tests.is_empty() => return Err(PatchError::NoCondition),
        None => {}
        Some(_) => match (&reading.annotation, &reading.resource_version) {
            (Some(stored), _) => tests.push(PatchOp::test(&epoch_pointer, stored.as_str())),
            (None, Some(rv)) => tests.push(PatchOp::test(RESOURCE_VERSION_POINTER, rv.as_str())),
            (None, None) => return Err(PatchError::NoResourceVersion),
        },
    }
    tests.extend(input.tests);

    let mut annotations: Vec<(String, String)> = Vec::new();
    if let Some(e) = input.epoch {
        annotations.push((HOLDER_EPOCH.to_string(), e.to_string()));
    }
    if let Some(at) = input.changed_at {
        annotations.push((CHANGED_AT.to_string(), at));
    }
    for (k, v) in input.annotations {
        // a later entry for the same key replaces the value in place, like an object spread
        match annotations.iter_mut().find(|(key, _)| *key == k) {
            Some(slot) => slot.1 = v,
            None => annotations.push((k, v)),
        }
    }

    let mut mutations = Vec::new();
    if !annotations.is_empty() {
        if reading.has_annotations {
            for (k, v) in annotations {
                mutations.push(PatchOp::add(annotation_pointer(&k), v));
            }
        } else {
            // a whole-map add replaces the map: only safe under a resourceVersion test
            if !tests.iter().any(|t| t.path == RESOURCE_VERSION_POINTER) {
                let rv = reading
                    .resource_version
                    .as_deref()
                    .ok_or(PatchError::WholeMapUnconditioned)?;
                tests.push(PatchOp::test(RESOURCE_VERSION_POINTER, rv));
            }
            let map: Map<String, Value> = annotations.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            mutations.push(PatchOp::add("/metadata/annotations", map));
        }
    }
    if let Some(template) = input.pod_template {
        mutations.push(PatchOp::add("/spec/podTemplate", template));
    }
    if let Some(mode) = input.operating_mode {
        mutations.push(PatchOp::add(MODE_POINTER, mode.as_str()));
    }
    tests.extend(mutations);
    Ok(tests)
}

/// A fenced mode change at `epoch`: the suspend and resume bodies.
pub fn mode_change(reading: &Reading, epoch: u64, mode: Mode, changed_at: String) -> Result<Vec<PatchOp>, PatchError> {
    build(PatchInput {
        reading,
        epoch: Some(epoch),
        operating_mode: Some(mode),
        changed_at: Some(changed_at),
        ..PatchInput::new(reading)
    })
}

/// A fenced stamp of the epoch alone: no changed-at, no mode.
pub fn stamp_only(reading: &Reading, epoch: u64) -> Result<Vec<PatchOp>, PatchError> {
    build(PatchInput {
        reading,
        epoch: Some(epoch),
        ..PatchInput::new(reading)
    })
}

/// The library's refresh body (`writeRefreshedPodTemplate`, docs/interop.md §14): the epoch's
/// condition and `test /spec/operatingMode "Suspended"` in one body, then the epoch, changed-at and
/// the hash (which lands with the template it describes), the whole pod template, and the wake.
/// `epoch: None` is the library's unfenced refresh (a host without a fence must not acquire one
/// by asking for a new pod template): the mode test is its condition.
pub(crate) fn refresh(
    reading: &Reading,
    epoch: Option<u64>,
    changed_at: String,
    hash: String,
    pod_template: Value,
) -> Result<Vec<PatchOp>, PatchError> {
    build(PatchInput {
        reading,
        epoch,
        tests: vec![PatchOp::test(MODE_POINTER, Mode::Suspended.as_str())],
        operating_mode: Some(Mode::Running),
        changed_at: Some(changed_at),
        annotations: vec![(POD_TEMPLATE_HASH.to_string(), hash)],
        pod_template: Some(pod_template),
    })
}

/// The library's fenced DELETE body: a resourceVersion precondition, never uid, no propagation.
pub(crate) fn delete_options(resource_version: &str) -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"resourceVersion": resource_version}})
}

/// The body as JSON, as it goes on the wire.
pub fn to_json(ops: &[PatchOp]) -> Value {
    serde_json::to_value(ops).expect("patch ops serialise")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reading(meta: Value) -> Reading {
        Reading::of_metadata(Some(&meta))
    }

    #[test]
    fn unfenced_without_tests_is_refused() {
        let r = reading(json!({"resourceVersion":"1"}));
        let err = build(PatchInput {
            operating_mode: Some(Mode::Suspended),
            ..PatchInput::new(&r)
        });
        assert_eq!(err, Err(PatchError::NoCondition));
    }

    #[test]
    fn fenced_without_rv_or_annotation_is_refused() {
        let r = reading(json!({}));
        assert_eq!(stamp_only(&r, 1), Err(PatchError::NoResourceVersion));
    }

    #[test]
    fn refresh_shapes() {
        let mode_test = || PatchOp::test(MODE_POINTER, "Suspended");
        let hash = || vec![("sandbox.namzu.ai/pod-template-hash".to_string(), "sha256:x".to_string())];
        // unfenced, no annotations map: tests [mode, rv], whole-map add {C, H}
        let r = reading(json!({"resourceVersion":"12"}));
        let ops = build(PatchInput {
            tests: vec![mode_test()],
            operating_mode: Some(Mode::Running),
            changed_at: Some("T".into()),
            annotations: hash(),
            pod_template: Some(json!({"spec":{}})),
            ..PatchInput::new(&r)
        })
        .unwrap();
        assert_eq!(
            to_json(&ops),
            json!([
                {"op":"test","path":"/spec/operatingMode","value":"Suspended"},
                {"op":"test","path":"/metadata/resourceVersion","value":"12"},
                {"op":"add","path":"/metadata/annotations","value":{
                    "sandbox.namzu.ai/operating-mode-changed-at":"T",
                    "sandbox.namzu.ai/pod-template-hash":"sha256:x"}},
                {"op":"add","path":"/spec/podTemplate","value":{"spec":{}}},
                {"op":"add","path":"/spec/operatingMode","value":"Running"}
            ])
        );
        // e=4 with the annotation present
        let r = reading(json!({"resourceVersion":"12","annotations":{HOLDER_EPOCH:"4"}}));
        let ops = build(PatchInput {
            reading: &r,
            epoch: Some(4),
            tests: vec![mode_test()],
            operating_mode: Some(Mode::Running),
            changed_at: Some("T".into()),
            annotations: hash(),
            pod_template: Some(json!({})),
        })
        .unwrap();
        let paths: Vec<_> = ops.iter().map(|o| (o.op, o.path.as_str())).collect();
        assert_eq!(
            paths,
            vec![
                (OpKind::Test, "/metadata/annotations/sandbox.namzu.ai~1holder-epoch"),
                (OpKind::Test, "/spec/operatingMode"),
                (OpKind::Add, "/metadata/annotations/sandbox.namzu.ai~1holder-epoch"),
                (
                    OpKind::Add,
                    "/metadata/annotations/sandbox.namzu.ai~1operating-mode-changed-at"
                ),
                (OpKind::Add, "/metadata/annotations/sandbox.namzu.ai~1pod-template-hash"),
                (OpKind::Add, "/spec/podTemplate"),
                (OpKind::Add, "/spec/operatingMode"),
            ]
        );
    }

    #[test]
    fn pointer_escaping_order() {
        assert_eq!(escape_pointer_segment("a~1/b"), "a~01~1b");
    }
}
