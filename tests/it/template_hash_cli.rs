//! `kubectl namzu template-hash` run as a process on every template-hash vector and on bad input.

use crate::support::{err, out, run_bin, vector_cases};
use crate::vectors::overlays_of;

#[test]
fn prints_the_vector_hash_for_every_case() {
    let dir = tempfile::tempdir().unwrap();
    for (i, case) in vector_cases("template-hash.json").iter().enumerate() {
        let path = dir.path().join(format!("t{i}.json"));
        std::fs::write(&path, serde_json::to_string(&case["template"]).unwrap()).unwrap();
        let o = overlays_of(case);
        let mut args = vec!["template-hash".to_string(), "-f".into(), path.display().to_string()];
        let opts = &case["options"];
        for (flag, key) in [
            ("--template-name", "templateName"),
            ("--runtime-class", "runtimeClassName"),
            ("--egress-profile", "profile"),
            ("--egress-profile-label-key", "profileLabelKey"),
        ] {
            if let Some(v) = opts[key].as_str() {
                args.push(flag.into());
                args.push(v.into());
            }
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let done = run_bin(&argv, None);
        assert!(done.status.success(), "case {}: {}", case["name"], err(&done));
        assert_eq!(
            out(&done),
            format!("{}\n", case["hash"].as_str().unwrap()),
            "case {} ({o:?})",
            case["name"]
        );
    }
}

#[test]
fn reads_yaml_from_stdin() {
    let case = &vector_cases("template-hash.json")[0];
    let yaml = serde_saphyr::to_string(&case["template"]).unwrap();
    let o = run_bin(&["template-hash", "-f", "-"], Some(&yaml));
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o).trim(), case["hash"].as_str().unwrap());
}

#[test]
fn bad_input_is_one_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let cases = [
        (dir.path().join("missing.yaml").display().to_string(), "cannot read"),
        (write("garbage.yaml", "{ [ nope"), "neither JSON nor YAML"),
        (
            write("pod.yaml", "kind: Pod\nmetadata: {name: x}\n"),
            "is not a SandboxTemplate",
        ),
        (
            write(
                "nospec.yaml",
                "kind: SandboxTemplate\nmetadata: {name: x}\nspec: {podTemplate: {}}\n",
            ),
            "no spec.podTemplate.spec",
        ),
        (
            write(
                "noname.yaml",
                "kind: SandboxTemplate\nspec: {podTemplate: {spec: {}}}\n",
            ),
            "--template-name",
        ),
    ];
    for (path, want) in cases {
        let o = run_bin(&["template-hash", "-f", &path], None);
        assert_eq!(o.status.code(), Some(1), "{path}");
        let err = err(&o);
        assert_eq!(err.lines().count(), 1, "{path}: {err}");
        assert!(err.contains(want), "{path}: {err}");
        assert!(out(&o).is_empty());
    }
}

#[test]
fn usage_error_is_exit_2() {
    let o = run_bin(&["template-hash"], None);
    assert_eq!(o.status.code(), Some(2));
}
