//! Every case of every vector file, reproduced byte for byte.

use crate::support::vector_cases;
use namzu_domain::canonical::pod_template_hash;
use namzu_domain::drift::{Overlays, template_hash};
use namzu_domain::epoch::Reading;
use namzu_domain::patch::{self, Mode};
use serde_json::{Value, json};

#[test]
fn pod_template_hash_vectors() {
    for case in vector_cases("pod-template-hash.json") {
        let input: Value = serde_json::from_str(case["input"].as_str().unwrap()).unwrap();
        assert_eq!(
            pod_template_hash(&input),
            case["hash"].as_str().unwrap(),
            "case {}",
            case["name"]
        );
    }
}

pub(crate) fn overlays_of(case: &Value) -> Overlays {
    let opt = |k: &str| case["options"][k].as_str().map(str::to_string);
    Overlays {
        template_name: opt("templateName")
            .unwrap_or_else(|| case["template"]["metadata"]["name"].as_str().unwrap().into()),
        runtime_class_name: opt("runtimeClassName"),
        profile: opt("profile"),
        profile_label_key: opt("profileLabelKey"),
        per_sandbox_label: None,
    }
}

#[test]
fn template_hash_vectors() {
    for case in vector_cases("template-hash.json") {
        let got = template_hash(&case["template"], &overlays_of(&case));
        assert_eq!(got.as_deref(), case["hash"].as_str(), "case {}", case["name"]);
    }
}

#[test]
fn holder_epoch_patch_vectors() {
    for case in vector_cases("holder-epoch-patch.json") {
        let name = &case["name"];
        let reading = Reading::of_metadata(Some(&case["metadata"]));
        let want = &case["reading"];
        let got = json!({
            "epoch": reading.epoch,
            "annotation": reading.annotation,
            "hasAnnotations": reading.has_annotations,
            "resourceVersion": reading.resource_version,
        });
        for key in ["epoch", "annotation", "hasAnnotations", "resourceVersion"] {
            // the vectors omit a member JavaScript left undefined
            let want_member = want.get(key).cloned().unwrap_or(Value::Null);
            assert_eq!(got[key], want_member, "reading.{key} of case {name}");
        }
        let epoch = case["epoch"].as_u64().unwrap();
        let allowed = reading.allows(epoch);
        assert_eq!(allowed, case["allowed"].as_bool().unwrap(), "allowed, case {name}");
        if !allowed {
            assert!(case.get("patch").is_none());
            continue;
        }
        let changed_at = case["changedAt"].as_str().map(str::to_string);
        let body = match case["verb"].as_str().unwrap() {
            "suspend" => patch::mode_change(&reading, epoch, Mode::Suspended, changed_at.unwrap()),
            "resume" => patch::mode_change(&reading, epoch, Mode::Running, changed_at.unwrap()),
            "stamp-only" => patch::stamp_only(&reading, epoch),
            other => panic!("unknown verb {other}"),
        }
        .expect("allowed case builds");
        let wire = serde_json::to_string(&patch::to_json(&body)).unwrap();
        let expected = serde_json::to_string(&case["patch"]).unwrap();
        assert_eq!(wire, expected, "patch bytes, case {name}");
    }
}
