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

mod templates {
    use namzu_engine::present::jsonpath::{MAX_DEPTH, Template};
    use proptest::prelude::*;
    use serde_json::json;

    fn doc() -> serde_json::Value {
        json!({"kind": "List", "items": [
            {"id": "a", "spec": {"n": 1, "tags": ["x", "y"]}, "status": {"ok": true}},
            {"id": "b", "spec": {"n": 2, "tags": []}, "status": {"ok": false}}
        ]})
    }

    /// Pieces templates are made of, so that random strings reach deep into the parser.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("{".to_string()),
            Just("}".to_string()),
            Just("{range ".to_string()),
            Just("{end}".to_string()),
            Just("[?(@".to_string()),
            Just(")]".to_string()),
            Just("[*]".to_string()),
            Just("['a','b']".to_string()),
            Just("$..*".to_string()),
            Just(".items".to_string()),
            Just(".spec.n".to_string()),
            Just("==1".to_string()),
            Just("\"x\"".to_string()),
            Just("[0:2:1]".to_string()),
            Just("[-1]".to_string()),
            "[ -~]{0,6}",
            any::<char>().prop_map(String::from),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Any template: parsed and run it prints something, or it is one error line; never a
        /// panic (a stack overflow would abort the test binary).
        #[test]
        fn any_template_is_a_result_or_one_error_line(pieces in proptest::collection::vec(piece(), 0..40)) {
            let template: String = pieces.concat();
            match Template::parse(&template).and_then(|t| t.render(&doc(), true)) {
                Ok(_) => {}
                Err(e) => prop_assert!(!e.contains('\n') || template.contains('\n'), "{e}"),
            }
        }
    }

    /// Nesting deeper than the limit is one error, at any size; as deep as the limit runs.
    #[test]
    fn nesting_is_bounded() {
        let nested = |depth: usize| {
            let mut path = "@.id".to_string();
            for _ in 0..depth {
                path = format!("@.items[?({path})]");
            }
            format!("{{.items[?({path})].id}}")
        };
        assert!(Template::parse(&nested(MAX_DEPTH - 2)).is_ok());
        for depth in [MAX_DEPTH + 1, 5_000] {
            let e = Template::parse(&nested(depth)).unwrap_err();
            assert!(
                e.contains("nested deeper than 64"),
                "{}",
                &e[e.len().saturating_sub(80)..]
            );
        }
        let ranges = |depth: usize| format!("{}x{}", "{range .items}".repeat(depth), "{end}".repeat(depth));
        assert!(Template::parse(&ranges(MAX_DEPTH)).is_ok());
        assert!(
            Template::parse(&ranges(100_000))
                .unwrap_err()
                .contains("ranges nested deeper than 64")
        );
        // a range over every value within one over every value: bounded, an error past the cap
        let big = json!({"items": vec!["p".repeat(1000); 2000]});
        let e = Template::parse("{range $..*}{range $.items[*]}{@}{end}{end}")
            .unwrap()
            .render(&big, true)
            .unwrap_err();
        assert!(e.contains("larger than 256 MiB"), "{e}");
    }
}
