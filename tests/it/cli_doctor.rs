//! `doctor` and `rbac` against the sim: a missing permission is named exactly, and the printed Role
//! is enough for every verb (and the read-only one for none of the writes).

use crate::support::*;
use namzu_sim::auth::{Rule, User};
use namzu_sim::discovery::AgentSandbox;
use namzu_sim::faults::{Fault, FaultAction};
use serde_json::Value;

const SCENARIO: &str = "namespaces: [default]\nobjects:\n  - {apiVersion: extensions.agents.x-k8s.io/v1beta1, kind: SandboxTemplate, metadata: {name: ws, namespace: default}, spec: {podTemplate: {spec: {containers: [{name: c, image: i}]}}}}\nworkspaces:\n  - {namespace: default, id: a, epoch: \"1\", podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: ws}}, spec: {containers: [{name: c, image: i}]}}}\n  - {namespace: default, id: b, mode: Suspended, podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: ws}}, spec: {containers: [{name: c, image: i}]}}}\n";

fn asset(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("assets/rbac")
            .join(name),
    )
    .unwrap()
}

/// The sim rules a Role's YAML grants in `namespace`.
fn rules_of(role_yaml: &str, namespace: &str) -> Vec<Rule> {
    let role: Value = serde_saphyr::from_str(role_yaml.split("---").next().unwrap()).unwrap();
    role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let strings = |k: &str| {
                r[k].as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect::<Vec<_>>()
            };
            Rule::new(
                &strings("verbs"),
                &strings("apiGroups"),
                &strings("resources"),
                &[namespace],
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_prints_the_shipped_roles() {
    let o = namzu_env(vec!["rbac".into(), "-n".into(), "default".into()], vec![]).await;
    assert_eq!(out(&o), asset("role.yaml"));
    let o = namzu_env(
        vec!["rbac".into(), "-n".into(), "default".into(), "--read-only".into()],
        vec![],
    )
    .await;
    assert_eq!(out(&o), asset("role-read-only.yaml"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_printed_role_is_enough_for_every_verb() {
    let users = vec![User::with_rules(
        "operator",
        "op",
        rules_of(&asset("role.yaml"), "default"),
    )];
    let t = start_with(SCENARIO, |c| {
        c.users = users;
        c.timing.grace = chrono::Duration::zero();
        c.timing.ready_delay = chrono::Duration::zero();
    })
    .await;
    let audit = t.dir.path().join("audit.jsonl").display().to_string();
    let uid = t
        .sim
        .get(&namzu_sim::resources::SANDBOXES, "default", "namzu-ws-a")
        .unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    for args in [
        vec!["list"],
        vec!["inspect", "a"],
        vec!["reconcile", "a", "--uid", &uid],
        vec!["drift", "a"],
        vec!["capacity"],
        vec!["suspend", "a", "--wait"],
        vec!["resume", "a", "--wait"],
        vec!["delete", "b", "--yes"],
        vec!["logs", "a"],
        vec!["history", "a"],
        vec!["leaks"],
        vec!["leaks", "--delete", "--yes"],
        vec!["doctor"],
    ] {
        let mut full = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
        full.extend(args.iter().map(|s| s.to_string()));
        let o = namzu_env(full, vec![("KUBECTL_NAMZU_AUDIT_LOG".into(), audit.clone())]).await;
        assert!(o.status.success(), "{args:?}: {}{}", out(&o), err(&o));
        assert!(
            !err(&o).contains("forbidden") && !err(&o).contains("may not"),
            "{args:?}: {}",
            err(&o)
        );
    }
    let forbidden: Vec<String> = t
        .sim
        .requests()
        .iter()
        .filter(|r| r.status == 403)
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(forbidden.is_empty(), "forbidden: {forbidden:?}");
    // `leaks -A` under a Role: the cluster-wide LIST is refused, it falls back per namespace
    let kubeconfig = t.sim.kubeconfig().display().to_string();
    let one = namzu_env(
        vec!["--kubeconfig".into(), kubeconfig.clone(), "leaks".into()],
        Vec::new(),
    )
    .await;
    let all = namzu_env(
        vec!["--kubeconfig".into(), kubeconfig, "leaks".into(), "-A".into()],
        Vec::new(),
    )
    .await;
    assert!(all.status.success(), "{}", err(&all));
    assert!(err(&all).contains("showing namespace default only"), "{}", err(&all));
    assert_eq!(out(&all), out(&one));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_names_what_is_missing() {
    let t = start_with(SCENARIO, |_| {}).await;
    let o = namzu(&t, &["doctor"]).await;
    assert!(o.status.success(), "{}", out(&o));
    assert!(
        out(&o).contains("✓ agent-sandbox agents.x-k8s.io v1beta1"),
        "{}",
        out(&o)
    );
    assert!(
        out(&o).contains("2 workspaces in namespace default; they use 1 templates, 1 of which exist"),
        "{}",
        out(&o)
    );
    assert!(out(&o).contains("Everything kubectl-namzu needs is here."));

    // a user with the read-only Role: told exactly that delete (and patch) are missing
    let users = vec![User::with_rules(
        "viewer",
        "v",
        rules_of(&asset("role-read-only.yaml"), "default"),
    )];
    let t = start_with(SCENARIO, |c| c.users = users).await;
    let o = namzu(&t, &["doctor"]).await;
    assert_eq!(o.status.code(), Some(1));
    let text = out(&o);
    assert!(
        text.contains("  ✗ delete: you may not delete sandboxes.agents.x-k8s.io in namespace default"),
        "{text}"
    );
    assert!(
        text.contains("  ✗ suspend/resume: you may not patch sandboxes.agents.x-k8s.io in namespace default"),
        "{text}"
    );
    assert!(
        text.contains("  ✓ list") && text.contains("kubectl namzu rbac -n default"),
        "{text}"
    );
    // and the read-only Role refuses the writes for real
    let o = namzu(&t, &["suspend", "a"]).await;
    assert!(err(&o).contains("forbidden: you may not patch"), "{}", err(&o));

    let t = start_with("", |c| c.agent_sandbox = AgentSandbox::Missing).await;
    let o = namzu(&t, &["doctor"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert!(
        out(&o).contains("✗ agent-sandbox agents.x-k8s.io is not served") && out(&o).contains("install agent-sandbox"),
        "{}",
        out(&o)
    );
}

/// The read-only Role runs no command in a pod: the sim authorizes an exec WebSocket as servers
/// before 1.35 do (`get` on pods/exec alone), so the Role as it was shipped, with `get` there,
/// opened a shell through real kubectl; the shipped one is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_only_role_runs_no_command_in_a_pod() {
    let o = namzu_env(
        vec!["rbac".into(), "-n".into(), "default".into(), "--read-only".into()],
        vec![],
    )
    .await;
    for sub in ["pods/exec", "pods/attach", "pods/portforward", "pods/proxy"] {
        assert!(!out(&o).contains(sub), "{}", out(&o));
    }
    if tool_missing("kubectl", "the read-only Role's exec test") {
        return;
    }
    let shipped = rules_of(&asset("role-read-only.yaml"), "default");
    let mut as_it_was = shipped.clone();
    as_it_was.push(Rule::new(&["get"], &[""], &["pods/exec"], &["default"]));
    for (rules, runs) in [(as_it_was, true), (shipped, false)] {
        // kubectl sends no token over plain http: the viewer is who an anonymous request is
        let mut viewer = User::with_rules("viewer", "v", rules);
        viewer.anonymous = true;
        let t = start_with(SCENARIO, |c| c.users = vec![viewer]).await;
        let o = namzu(&t, &["exec", "a", "--", "echo", "hi"]).await;
        if runs {
            assert!(o.status.success() && out(&o).contains("hi"), "{}", err(&o));
        } else {
            assert!(!o.status.success());
            // the WebSocket refused (no `get`), kubectl falls back to SPDY: a POST, refused too
            assert!(
                err(&o).contains("forbidden") && err(&o).contains("resource \"pods/exec\""),
                "{}",
                err(&o)
            );
        }
    }
}

/// `doctor` against a server whose /version is `{}`: a ✗ naming it and exit 1, not `✓ … ()`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_does_not_pass_an_empty_version() {
    let t = start().await;
    t.sim.add_fault(Fault::new(
        Some("GET"),
        "/version",
        FaultAction::Raw {
            code: 200,
            body: "{}".into(),
        },
    ));
    let o = namzu(&t, &["doctor"]).await;
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    let all = format!("{}{}", out(&o), err(&o));
    assert!(
        all.contains("✗ server") && all.contains("without a gitVersion"),
        "{all}"
    );
    assert!(!all.contains("()"), "{all}");
}
