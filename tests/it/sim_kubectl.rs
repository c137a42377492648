//! Fidelity against a real client: kubectl, where it is on PATH, run against the sim.

use crate::support::*;
use namzu_sim::resources::SANDBOXES;
use std::process::Output;

/// Run kubectl against the sim; `None` (and a note) when kubectl is not installed.
async fn kubectl(t: &TestSim, args: &[&str]) -> Option<Output> {
    crate::support::kubectl_on(t, "the kubectl fidelity test", args).await
}

/// `kubectl get` of the Sandboxes in `agents` with `-o output`.
async fn sandboxes_as(t: &TestSim, output: &str) -> Option<Output> {
    kubectl(t, &["get", "sandboxes.agents.x-k8s.io", "-n", "agents", "-o", output]).await
}

const DELETE: &[&str] = &[
    "delete",
    "sandboxes.agents.x-k8s.io",
    "-n",
    "agents",
    "namzu-ws-awake",
    "--wait=false",
];

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reads_patches_and_deletes_like_a_real_server() {
    let t = start().await;
    let Some(out) = kubectl(&t, &["get", "sandboxes.agents.x-k8s.io", "-A"]).await else {
        return;
    };
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let header = stdout.lines().next().unwrap_or("");
    for col in ["NAMESPACE", "NAME", "READY", "REASON", "AGE"] {
        assert!(header.contains(col), "{header}");
    }
    assert!(
        stdout.contains("namzu-ws-awake") && stdout.contains("DependenciesReady"),
        "{stdout}"
    );
    assert!(stdout.contains("SandboxSuspended"), "{stdout}");

    let out = kubectl(
        &t,
        &[
            "get",
            "sandboxes.agents.x-k8s.io",
            "-n",
            "agents",
            "namzu-ws-awake",
            "-o",
            "json",
        ],
    )
    .await
    .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let obj: serde_json::Value = serde_json::from_str(&stdout).expect("kubectl printed JSON");
    assert_eq!(obj["metadata"]["annotations"]["sandbox.namzu.ai/holder-epoch"], "2");

    // a JSON patch whose test fails: kubectl reports the 422 and nothing changes
    let patch = r#"[{"op":"test","path":"/metadata/annotations/sandbox.namzu.ai~1holder-epoch","value":"9"},{"op":"add","path":"/spec/operatingMode","value":"Suspended"}]"#;
    let out = kubectl(
        &t,
        &[
            "patch",
            "sandboxes.agents.x-k8s.io",
            "-n",
            "agents",
            "namzu-ws-awake",
            "--type=json",
            "-p",
            patch,
        ],
    )
    .await
    .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("the server rejected our request due to an error in our request"),
        "{stderr}"
    );
    assert_eq!(
        t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap()["spec"]["operatingMode"],
        "Running"
    );

    // kubectl deletes without preconditions: strict mode refuses, and kubectl says why
    let out = kubectl(&t, DELETE).await.unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("strict mode"), "{stderr}");
    t.sim.set_strict(false);
    let out = kubectl(&t, DELETE).await.unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("deleted"), "{stdout}");
    assert!(t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").is_none());
}

/// kubectl pages its Table requests (`limit=500`, `continue`) and validates what it creates
/// against the server's OpenAPI: both work as against a real server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_pages_tables_and_creates_with_validation() {
    let t = start_demo().await;
    let all = t.sim.list(&SANDBOXES, None).len();
    let Some(out) = kubectl(
        &t,
        &[
            "get",
            "sandboxes.agents.x-k8s.io",
            "-A",
            "--chunk-size=4",
            "--no-headers",
        ],
    )
    .await
    else {
        return;
    };
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stdout.lines().count(),
        all,
        "every row, over {} pages:\n{stdout}",
        all.div_ceil(4)
    );
    let manifest = t.dir.path().join("extra.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata: {name: extra, namespace: agents}\nspec: {podTemplate: {spec: {containers: [{name: c, image: i}]}}}\n",
    )
    .unwrap();
    let path = manifest.display().to_string();
    // apply writes by merge patch, which strict mode refuses on Sandboxes by design
    t.sim.set_strict(false);
    for verb in ["create", "apply"] {
        let out = kubectl(&t, &[verb, "-f", &path]).await.unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "kubectl {verb} -f: {stderr}");
        assert!(stdout.contains("sandbox.agents.x-k8s.io/extra"), "{stdout}");
    }
    assert!(t.sim.get(&SANDBOXES, "agents", "extra").is_some());
}

/// The JSONPath dialect pinned to kubectl's: the same templates, run by kubectl on the sim's
/// Sandboxes and by this tool's engine on the JSON kubectl read, print the same bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonpath_templates_print_what_kubectl_prints() {
    use namzu_engine::present::jsonpath::Template;
    let t = start_demo().await;
    let Some(out) = sandboxes_as(&t, "json").await else {
        return;
    };
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let templates = [
        "{.kind}",
        "{@.kind}",
        "{.items[*].metadata.name}",
        "{.items[0].metadata.annotations}",
        "{.items[0].spec.podTemplate.metadata.labels.sandbox\\.namzu\\.ai/template}",
        "{.items[-1:].metadata.name}",
        "{.items[1:3].metadata.name}",
        "{.items[*]['metadata.name', 'spec.operatingMode']}",
        "{range .items[*]}{.metadata.name}{\"\\t\"}{.spec.operatingMode}{\"\\n\"}{end}",
        "{.items[?(@.spec.operatingMode==\"Suspended\")].metadata.name}",
        "{.items[*].status.conditions[?(@.type==\"Ready\")].status}",
        "{..selector}",
        "{.items[0].metadata.generation}",
        "{.items[0].spec.volumeClaimTemplates}",
        "names: {.items[0].metadata.name} and {.items[1].metadata.name}",
        "{.items[*].metadata.nope}",
    ];
    // one kubectl run renders them all, each after a line of its own: the literal text between
    // templates is printed as it stands
    const SEP: &str = "\n---8<---\n";
    let all = sandboxes_as(&t, &format!("jsonpath={}", templates.join(SEP)))
        .await
        .unwrap();
    assert!(all.status.success(), "{}", String::from_utf8_lossy(&all.stderr));
    let all = String::from_utf8_lossy(&all.stdout).into_owned();
    let theirs: Vec<&str> = all.split(SEP).collect();
    assert_eq!(theirs.len(), templates.len(), "{all}");
    for (template, theirs) in templates.iter().zip(theirs) {
        let ours = Template::parse(template).unwrap().render(&list, true).unwrap();
        assert_eq!(ours, theirs, "{template}");
    }
    // custom columns, a missing field included
    let spec = "NAME:.metadata.name,MODE:{.spec.operatingMode},NOTHING:.spec.nope,TEMPLATE:.spec.podTemplate.metadata.labels.sandbox\\.namzu\\.ai/template";
    let out = sandboxes_as(&t, &format!("custom-columns={spec}")).await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printer = kubectl_namzu::cli::output::parse_printer(&format!("custom-columns={spec}")).unwrap();
    let items = list["items"].as_array().unwrap().clone();
    let ours = printer.render_template(&list, &items, false, true).unwrap();
    assert_eq!(ours, String::from_utf8_lossy(&out.stdout));
}

/// kubectl finds Cilium's policies through the sim's discovery, and the line a refused resume
/// prints removes the foreign one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_lists_and_deletes_ciliumnetworkpolicies_as_the_refusal_says() {
    let scenario = r#"
namespaces: [ns]
workspaces:
  - {namespace: ns, id: a, mode: Suspended, perSandboxEgress: true, foreignPolicy: true, podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: ws}}, spec: {containers: [{name: c, image: i}]}}}
"#;
    let t = start_with(scenario, |c| c.namespace = "ns".into()).await;
    let Some(out) = kubectl(&t, &["get", "ciliumnetworkpolicies", "-n", "ns", "-o", "name"]).await else {
        return;
    };
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    let refused = run_audited(&t, &["resume", "a"]).await;
    assert_eq!(refused.status.code(), Some(3));
    let line = err(&refused);
    let command = line
        .split("Remove it, then resume: ")
        .nth(1)
        .expect("the delete line")
        .trim()
        .to_string();
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(&words[..3], ["kubectl", "delete", "ciliumnetworkpolicy"], "{command}");
    let out = kubectl(&t, &words[1..]).await.unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let o = run_audited(&t, &["resume", "a"]).await;
    assert!(o.status.success(), "{}", err(&o));
}
