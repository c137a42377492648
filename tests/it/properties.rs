//! Property tests: canonical JSON is a fixed point; every built patch is tests-then-mutations.

use namzu_domain::canonical::canonical_json;
use namzu_domain::epoch::Reading;
use namzu_domain::patch::{self, Mode, OpKind, PatchInput, PatchOp};
use proptest::prelude::*;
use serde_json::{Value, json};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "\\PC{0,8}".prop_map(Value::String),
        "[\\x00-\\x1f\"\\\\]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("([0-9]{1,3}|[a-z~/]{1,4}|\\PC{1,3})", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn canonical_of_parsed_canonical_is_stable(v in json_value()) {
        let once = canonical_json(&v);
        let reparsed: Value = serde_json::from_str(&once).expect("canonical JSON parses");
        prop_assert_eq!(canonical_json(&reparsed), once);
    }

    #[test]
    fn every_patch_tests_first_and_never_after_a_mutation(
        annotations in prop::option::of(prop::collection::btree_map("[a-z./-]{1,12}", "[a-z0-9]{0,4}", 0..3)),
        stored in prop::option::of("[0-9a-z]{0,3}"),
        rv in prop::option::of("[0-9]{1,4}"),
        epoch in prop::option::of(0u64..10),
        extra_test in any::<bool>(),
        mode in prop::option::of(prop_oneof![Just(Mode::Running), Just(Mode::Suspended)]),
        stamp in any::<bool>(),
        template in any::<bool>(),
    ) {
        let mut meta = json!({});
        if let Some(rv) = &rv { meta["resourceVersion"] = json!(rv); }
        if let Some(map) = &annotations {
            let mut m: serde_json::Map<String, Value> = map.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            if let Some(s) = &stored { m.insert("sandbox.namzu.ai/holder-epoch".into(), json!(s)); }
            meta["annotations"] = Value::Object(m);
        }
        let reading = Reading::of_metadata(Some(&meta));
        let input = PatchInput {
            epoch,
            tests: if extra_test { vec![PatchOp::test(patch::MODE_POINTER, "Suspended")] } else { vec![] },
            operating_mode: mode,
            changed_at: stamp.then(|| "2026-11-29T10:00:00.000Z".to_string()),
            pod_template: template.then(|| json!({})),
            ..PatchInput::new(&reading)
        };
        if let Ok(ops) = patch::build(input) {
            prop_assert!(!ops.is_empty());
            prop_assert_eq!(ops[0].op, OpKind::Test, "the first op is a test");
            let first_add = ops.iter().position(|o| o.op == OpKind::Add).unwrap_or(ops.len());
            prop_assert!(ops[first_add..].iter().all(|o| o.op == OpKind::Add), "no test after a mutation");
        } else {
            // refusals only where the library refuses
            prop_assert!(epoch.is_none() && !extra_test || rv.is_none());
        }
    }
}
