//! Per-sandbox egress on workspaces (docs/interop.md §13.5): the labels on the pod template, the
//! namespace's CiliumNetworkPolicies read cheaply, and a resume refused — before anything is sent —
//! when a policy an earlier workspace of the same name left selects the workspace.

use crate::support::*;
use namzu_sim::auth::{Rule, User};
use namzu_sim::faults::Fault;
use namzu_sim::resources::{CILIUM_POLICIES, SANDBOXES};
use serde_json::Value;

const KEY: &str = "sandbox.namzu.ai/per-sandbox-egress";

/// `own` (per-sandbox egress, its own policy), `stranger` (also a policy an earlier workspace of
/// the same name left, Suspended), `plain` (no per-sandbox egress), in `ns`; `other` in `ns2`.
const SCENARIO: &str = r#"
namespaces: [ns, ns2]
workspaces:
  - {namespace: ns, id: own, perSandboxEgress: true, podTemplate: &pt {metadata: {labels: {sandbox.namzu.ai/template: ws, sandbox.namzu.ai/egress-profile: core}}, spec: {containers: [{name: c, image: i}]}}}
  - {namespace: ns, id: stranger, mode: Suspended, epoch: "4", perSandboxEgress: true, foreignPolicy: true, podTemplate: *pt}
  - {namespace: ns, id: plain, mode: Suspended, podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: ws}}, spec: {containers: [{name: c, image: i}]}}}
  - {namespace: ns2, id: other, perSandboxEgress: true, podTemplate: *pt}
"#;

async fn sim() -> TestSim {
    start_with(SCENARIO, |c| c.namespace = "ns".into()).await
}

fn list_json(o: &std::process::Output) -> Vec<Value> {
    listed(o)
}

fn item<'a>(items: &'a [Value], id: &str) -> &'a Value {
    items.iter().find(|i| i["id"] == id).unwrap()
}

fn policy_reads(t: &TestSim) -> Vec<String> {
    t.sim
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("ciliumnetworkpolicies"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

fn patches(t: &TestSim) -> usize {
    t.sim.requests().iter().filter(|r| r.method == "PATCH").count()
}

fn foreign_policy_name(t: &TestSim) -> String {
    let own_uid = t.sim.get(&SANDBOXES, "ns", "namzu-ws-stranger").unwrap()["metadata"]["uid"].clone();
    t.sim
        .list(&CILIUM_POLICIES, Some("ns"))
        .into_iter()
        .find(|p| {
            p["spec"]["endpointSelector"]["matchLabels"][KEY] == "namzu-ws-stranger"
                && p["metadata"]["ownerReferences"][0]["uid"] != own_uid
        })
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_are_read_once_per_namespace_or_once_cluster_wide() {
    let t = sim().await;
    t.sim.clear_requests();
    let items = list_json(&namzu(&t, &["list", "-o", "json"]).await);
    assert_eq!(
        policy_reads(&t),
        ["GET /apis/cilium.io/v2/namespaces/ns/ciliumnetworkpolicies"]
    );
    assert_eq!(item(&items, "own")["egress"]["policies"][0]["owned"], true);
    t.sim.clear_requests();
    let items = list_json(&namzu(&t, &["list", "-A", "-o", "json"]).await);
    assert_eq!(policy_reads(&t), ["GET /apis/cilium.io/v2/ciliumnetworkpolicies"]);
    assert_eq!(items.len(), 4);
    let other = item(&items, "other");
    assert_eq!(other["egress"]["policies"][0]["owned"], true, "split by namespace");
    assert!(t.sim.requests().iter().all(|r| r.method == "GET"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wide_and_inspect_show_the_egress_profile_per_sandbox_egress_and_whose_policy_selects_it() {
    let t = sim().await;
    let wide = out(&namzu(&t, &["list", "-o", "wide"]).await);
    let row = |id: &str| -> Vec<String> {
        let line = wide.lines().find(|l| l.starts_with(id)).unwrap();
        let cells: Vec<&str> = line.split_whitespace().collect();
        cells[cells.len() - 3..].iter().map(|s| s.to_string()).collect()
    };
    assert_eq!(row("own"), ["core", "on", "own"]);
    assert_eq!(row("stranger"), ["core", "on", "foreign"]);
    assert_eq!(row("plain"), ["-", "off", "-"]);
    let items = list_json(&namzu(&t, &["list", "-o", "json"]).await);
    let stranger = item(&items, "stranger");
    assert_eq!(stranger["diagnosis"]["kind"], "foreign-egress-policy");
    assert_eq!(stranger["egress"]["perSandbox"], true);
    assert_eq!(stranger["egress"]["profile"], "core");

    let o = namzu(&t, &["inspect", "stranger"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    let foreign = foreign_policy_name(&t);
    assert!(text.contains("Egress profile:  core"), "{text}");
    assert!(
        text.contains("Per-sandbox:     on (pod template label value namzu-ws-stranger)"),
        "{text}"
    );
    assert!(
        text.contains(&format!("  {foreign}  owners: Sandbox namzu-ws-stranger (uid ")),
        "{text}"
    );
    assert!(
        text.contains(&format!("kubectl delete ciliumnetworkpolicy {foreign} -n ns")),
        "{text}"
    );
    assert!(text.contains("  own"), "its own policy is listed too: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_into_a_foreign_policy_is_refused_before_anything_is_sent() {
    let t = sim().await;
    let foreign = foreign_policy_name(&t);
    for dry_run in [true, false] {
        t.sim.clear_requests();
        let mut args = vec!["resume", "stranger"];
        if dry_run {
            args.push("--dry-run");
        }
        let o = run_audited(&t, &args).await;
        assert_eq!(o.status.code(), Some(3), "{}", err(&o));
        let e = err(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.contains(&format!("CiliumNetworkPolicy {foreign} selects this workspace")),
            "{e}"
        );
        assert!(
            e.contains(&format!("kubectl delete ciliumnetworkpolicy {foreign} -n ns")),
            "{e}"
        );
        assert_eq!(patches(&t), 0, "nothing sent");
    }
    let s = t.sim.get(&SANDBOXES, "ns", "namzu-ws-stranger").unwrap();
    assert_eq!(s["spec"]["operatingMode"], "Suspended");
    // once the earlier workspace's policy is gone, the resume goes through, and says what this
    // tool could not check
    let client = t.client().await;
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        client,
        "ns",
        &ar("cilium.io", "v2", "CiliumNetworkPolicy", "ciliumnetworkpolicies"),
    );
    api.delete(&foreign, &Default::default()).await.unwrap();
    t.sim.clear_requests();
    let o = run_audited(&t, &["resume", "stranger"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(patches(&t), 1);
    assert!(
        err(&o).contains("the host's admission fence") && err(&o).contains("this tool cannot"),
        "{}",
        err(&o)
    );
    // a resume of a workspace without per-sandbox egress says nothing of the kind
    let o = run_audited(&t, &["resume", "plain"]).await;
    assert!(
        o.status.success() && !err(&o).contains("admission fence"),
        "{}",
        err(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_that_cannot_read_the_policies_is_refused_only_for_per_sandbox_egress() {
    let rules = vec![Rule::new(
        &["*"],
        &["*"],
        &["sandboxes", "pods", "persistentvolumeclaims"],
        &[],
    )];
    let t = start_with(SCENARIO, |c| {
        c.namespace = "ns".into();
        c.users = vec![User::with_rules("ops", "ops-token", rules)];
    })
    .await;
    t.sim.clear_requests();
    let o = run_audited(&t, &["resume", "stranger"]).await;
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains("may not list ciliumnetworkpolicies"), "{}", err(&o));
    assert_eq!(patches(&t), 0);
    // no per-sandbox label: no per-sandbox policy can select its pod
    let o = run_audited(&t, &["resume", "plain"]).await;
    assert!(o.status.success(), "{}", err(&o));
    // a failed read is an error, and still nothing is sent
    let t = sim().await;
    t.sim.add_fault(Fault::status(
        Some("GET"),
        "ciliumnetworkpolicies",
        500,
        "etcdserver: request timed out",
    ));
    t.sim.clear_requests();
    let o = run_audited(&t, &["resume", "plain"]).await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert_eq!(patches(&t), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cilium_a_per_sandbox_workspace_is_one_warning_and_a_question_mark() {
    let t = start_with(SCENARIO, |c| {
        c.namespace = "ns".into();
        c.cilium = false;
    })
    .await;
    let o = namzu(&t, &["list", "-o", "wide"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("not served") && e.contains("2 workspaces ask for per-sandbox egress"),
        "{e}"
    );
    let policy = |id: &str| {
        out(&o)
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap()
            .split_whitespace()
            .last()
            .unwrap()
            .to_string()
    };
    assert_eq!((policy("own"), policy("plain")), ("?".into(), "-".into()));
    // no workspace asks for it: nothing to warn about, no such policy can exist
    let plain_only = "namespaces: [ns]\nworkspaces:\n  - {namespace: ns, id: plain, podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: ws}}, spec: {containers: [{name: c, image: i}]}}}\n";
    let t = start_with(plain_only, |c| {
        c.namespace = "ns".into();
        c.cilium = false;
    })
    .await;
    let o = namzu(&t, &["list"]).await;
    assert!(o.status.success() && err(&o).is_empty(), "{}", err(&o));
    // and a resume has nothing to refuse
    let o = run_audited(&t, &["resume", "plain"]).await;
    assert!(o.status.success(), "{}", err(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_per_sandbox_label_key_is_host_configuration() {
    let scenario = r#"
namespaces: [ns]
workspaces:
  - {namespace: ns, id: custom, mode: Suspended, podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: ws, example.com/egress-owner: namzu-ws-custom}}, spec: {containers: [{name: c, image: i}]}}}
objects:
  - apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: namzu-sbx-gone, namespace: ns, ownerReferences: [{apiVersion: agents.x-k8s.io/v1beta1, kind: Sandbox, name: namzu-ws-custom, uid: gone}]}
    spec: {endpointSelector: {matchLabels: {"k8s:example.com/egress-owner": namzu-ws-custom}}}
"#;
    let t = start_with(scenario, |c| c.namespace = "ns".into()).await;
    // the default key: this workspace has no per-sandbox egress, and the policy does not select it
    let items = list_json(&namzu(&t, &["list", "-o", "json"]).await);
    assert_eq!(items[0]["egress"]["perSandbox"], false);
    assert_eq!(items[0]["diagnosis"], Value::Null);
    let key = ["--per-sandbox-label-key", "example.com/egress-owner"];
    let items = list_json(&namzu(&t, &[&["list", "-o", "json"][..], &key[..]].concat()).await);
    assert_eq!(items[0]["egress"]["perSandbox"], true);
    assert_eq!(items[0]["diagnosis"]["kind"], "foreign-egress-policy");
    t.sim.clear_requests();
    let o = run_audited(&t, &[&["resume", "custom"][..], &key[..]].concat()).await;
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains("namzu-sbx-gone"), "{}", err(&o));
    assert_eq!(patches(&t), 0);
    // a key that is not a label key is a usage error
    let o = namzu(&t, &["list", "--per-sandbox-label-key", "not a key"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
}

const EGRESS: &str = r#"
namespaces: [ns]
workspaces:
  - {namespace: ns, id: unlabelled, mode: Suspended, foreignPolicy: true, podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: ws}}, spec: {containers: [{name: c, image: i}]}}}
  - {namespace: ns, id: labelled, mode: Suspended, perSandboxEgress: true, foreignPolicy: true, podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: ws}}, spec: {containers: [{name: c, image: i}]}}}
"#;

#[tokio::test]
async fn a_foreign_per_sandbox_policy_refuses_only_a_workspace_with_the_per_sandbox_label() {
    let t = start_with(EGRESS, |c| c.namespace = "ns".into()).await;
    // without the label no per-sandbox policy can select the pod: no diagnosis, the resume goes
    let o = namzu(&t, &["inspect", "unlabelled", "-o", "json"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(!out(&o).contains("foreign-egress-policy"), "{}", out(&o));
    let o = namzu(&t, &["resume", "unlabelled"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    // with it: diagnosed and refused, nothing sent
    let o = namzu(&t, &["inspect", "labelled", "-o", "json"]).await;
    assert!(out(&o).contains("foreign-egress-policy"), "{}", out(&o));
    let before = patches(&t);
    let o = namzu(&t, &["resume", "labelled"]).await;
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert_eq!(patches(&t), before);
}
