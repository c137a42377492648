//! Issue 27's interop deltas, each through the real binary (or the real kube client) on the sim:
//! ownership held on every pass of a wait, per-sandbox rules only where the label is, the
//! library's unfenced refresh, a 410 on a GET read as gone, `annotations: null`, a controller that
//! lags after a write, and agent-sandbox v1.0's `AdoptionPending`.

use crate::support::*;
use kube::api::{DeleteParams, DynamicObject, PostParams, Preconditions};
use namzu_sim::controller::Knobs;
use namzu_sim::faults::{Fault, FaultAction};
use namzu_sim::resources::SANDBOXES;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The sim's clock, as the changed-at stamp a write carries.
const AT: &str = "2026-11-29T12:00:00.000Z";

fn patches(t: &TestSim) -> Vec<Value> {
    t.sim
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH")
        .filter_map(|r| r.body)
        .collect()
}

/// The real binary started with `args` on the sim's clock (not waited for).
fn spawn(t: &TestSim, args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"))
        .arg("--kubeconfig")
        .arg(t.sim.kubeconfig())
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("KUBECTL_NAMZU_CONFIG")
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("kubectl-namzu-tests-without-config"),
        )
        .env("NO_COLOR", "1")
        .env(now_env(t).0, now_env(t).1)
        .env(audit_env(t).0, audit_env(t).1)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn kubectl-namzu")
}

/// Until the sim has answered a PATCH of `sandbox` with 200 (the write landed; the binary waits).
async fn until_patched(t: &TestSim, sandbox: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !t
        .sim
        .requests()
        .iter()
        .any(|r| r.method == "PATCH" && r.path.ends_with(sandbox) && r.status == 200)
    {
        assert!(Instant::now() < deadline, "the write never landed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn signal(child: &std::process::Child, sig: &str) {
    std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill runs");
}

/// Another party deletes the Sandbox and creates a copy under the same name (a new uid, epoch
/// 42, Running): a DELETE and a POST back to back on one kube client, while the waiting binary
/// is stopped, so no poll of its lands between them.
async fn replace(t: &TestSim, child: &std::process::Child, ns: &str, name: &str) -> (String, String) {
    let api = sandboxes(&t.client().await, ns);
    let old = api.get(name).await.expect("the Sandbox is there");
    let was = old.metadata.uid.clone().expect("uid");
    signal(child, "-STOP");
    api.delete(name, &precondition(&was)).await.expect("DELETE");
    let mut copy: Value = serde_json::to_value(&old).unwrap();
    let meta = copy["metadata"].as_object_mut().unwrap();
    for k in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "managedFields",
    ] {
        meta.remove(k);
    }
    copy["metadata"]["annotations"]["sandbox.namzu.ai/holder-epoch"] = json!("42");
    copy["spec"]["operatingMode"] = json!("Running");
    copy.as_object_mut().unwrap().remove("status");
    let copy: DynamicObject = serde_json::from_value(copy).unwrap();
    let made = api.create(&PostParams::default(), &copy).await.expect("POST");
    signal(child, "-CONT");
    (was, made.metadata.uid.expect("uid"))
}

/// A DELETE of exactly the object of `uid` (the strict sim wants a precondition).
fn precondition(uid: &str) -> DeleteParams {
    DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    }
}

async fn finish(child: std::process::Child) -> std::process::Output {
    tokio::task::spawn_blocking(move || child.wait_with_output().expect("wait"))
        .await
        .expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_wait_ends_when_the_sandbox_is_replaced_naming_both_uids() {
    // the manual clock never moves: the resumed pod is never Ready, the wait stays open
    let t = start().await;
    let child = spawn(&t, &["-n", "agents", "resume", "asleep", "--wait", "--timeout", "60s"]);
    until_patched(&t, "namzu-ws-asleep").await;
    let (was, now) = replace(&t, &child, "agents", "namzu-ws-asleep").await;
    let o = finish(child).await;
    let text = format!("{}{}", out(&o), err(&o));
    assert_eq!(o.status.code(), Some(6), "{text}");
    assert!(text.contains("replaced while waiting"), "{text}");
    assert!(text.contains(&was) && text.contains(&now), "{text}");
    assert!(!text.contains("; confirmed"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspend_wait_ends_when_the_sandbox_is_replaced_and_one_deleted_says_so() {
    // a stuck pod keeps the suspend's wait open
    let t = start().await;
    t.sim.set_knobs(
        "agents",
        "namzu-ws-awake",
        Knobs {
            stuck_terminating: true,
            ..Knobs::default()
        },
    );
    let child = spawn(
        &t,
        &[
            "-n",
            "agents",
            "suspend",
            "awake",
            "--wait",
            "--timeout",
            "60s",
            "-o",
            "json",
        ],
    );
    until_patched(&t, "namzu-ws-awake").await;
    let (was, now) = replace(&t, &child, "agents", "namzu-ws-awake").await;
    let o = finish(child).await;
    assert_eq!(o.status.code(), Some(6), "{}{}", out(&o), err(&o));
    let text = out(&o);
    assert!(text.contains("\"replaced\""), "{text}");
    assert!(text.contains(&was) && text.contains(&now), "{text}");

    // a deletion while waiting: "deleted while waiting", not confirmed
    let t = start().await;
    let child = spawn(&t, &["-n", "agents", "resume", "asleep", "--wait", "--timeout", "60s"]);
    until_patched(&t, "namzu-ws-asleep").await;
    let uid = t.sim.get(&SANDBOXES, "agents", "namzu-ws-asleep").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    sandboxes(&t.client().await, "agents")
        .delete("namzu-ws-asleep", &precondition(&uid))
        .await
        .expect("DELETE");
    let o = finish(child).await;
    let text = format!("{}{}", out(&o), err(&o));
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("deleted while waiting"), "{text}");
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
    let before = patches(&t).len();
    let o = namzu(&t, &["resume", "labelled"]).await;
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert_eq!(patches(&t).len(), before);
}

/// The revision the workspace was created from, and the template as it is now (the refresh
/// suite's V1/V2, `tests/it/refresh.rs`).
const V1: &str = r#"{metadata: {labels: {app: agent, sandbox.namzu.ai/template: ws}}, spec: {terminationGracePeriodSeconds: 5, nodeSelector: {kubernetes.io/arch: amd64, pool: blue}, containers: [{name: main, image: "namzu/agent:1", volumeDevices: [{name: workspace-disk, devicePath: /dev/workspace}]}]}}"#;
const H1: &str = "sha256:7f3b5b2c5b7612709730dde3a89f382b803a3612244cc863752280125508e5e3";
const V2: &str = r#"{metadata: {labels: {app: agent, sandbox.namzu.ai/template: ws}}, spec: {terminationGracePeriodSeconds: 90, nodeSelector: {kubernetes.io/arch: amd64}, containers: [{name: main, image: "namzu/agent:2", volumeDevices: [{name: workspace-disk, devicePath: /dev/workspace}]}]}}"#;
const H2: &str = "sha256:8d1b3cf9efa9404ff7f69f541303dd0b1e4589b8e26d9c15f8f77a0c030ff163";

fn refresh_scenario(rest: &str) -> String {
    format!(
        "namespaces: [ns]\nobjects:\n  - apiVersion: extensions.agents.x-k8s.io/v1beta1\n    kind: SandboxTemplate\n    metadata: {{name: ws, namespace: ns}}\n    spec: {{podTemplate: {V2}, volumeClaimTemplates: [{{metadata: {{name: workspace-disk}}, spec: {{accessModes: [ReadWriteOnce], volumeMode: Block}}}}]}}\nworkspaces:\n  - {{namespace: ns, id: desk, podTemplate: {V1}, mode: Suspended, hash: \"{H1}\"{rest}}}\n"
    )
}

#[tokio::test]
async fn a_refresh_without_a_stored_epoch_sends_the_librarys_unfenced_body() {
    let t = start_with(&refresh_scenario(""), |c| c.namespace = "ns".into()).await;
    let template = t.sim.get(&namzu_sim::resources::TEMPLATES, "ns", "ws").unwrap();
    let o = namzu(&t, &["resume", "desk", "--refresh-template"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let sent = patches(&t);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0],
        json!([
            {"op": "test", "path": "/spec/operatingMode", "value": "Suspended"},
            {"op": "add", "path": "/metadata/annotations/sandbox.namzu.ai~1operating-mode-changed-at", "value": AT},
            {"op": "add", "path": "/metadata/annotations/sandbox.namzu.ai~1pod-template-hash", "value": H2},
            {"op": "add", "path": "/spec/podTemplate", "value": template["spec"]["podTemplate"]},
            {"op": "add", "path": "/spec/operatingMode", "value": "Running"},
        ])
    );
    let after = t.sim.get(&SANDBOXES, "ns", "namzu-ws-desk").unwrap();
    assert!(
        after["metadata"]["annotations"]
            .get("sandbox.namzu.ai/holder-epoch")
            .is_none()
    );
    // a stored epoch is still carried and tested
    let t = start_with(&refresh_scenario(", epoch: \"3\""), |c| c.namespace = "ns".into()).await;
    let o = namzu(&t, &["resume", "desk", "--refresh-template"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let body = &patches(&t)[0];
    assert_eq!(
        body[0],
        json!({"op": "test", "path": "/metadata/annotations/sandbox.namzu.ai~1holder-epoch", "value": "3"})
    );
    assert_eq!(
        body[2],
        json!({"op": "add", "path": "/metadata/annotations/sandbox.namzu.ai~1holder-epoch", "value": "3"})
    );
}

#[tokio::test]
async fn a_410_on_a_get_reads_as_gone() {
    let t = start().await;
    t.sim
        .add_fault(Fault::status(Some("GET"), "/sandboxes/namzu-ws-awake", 410, "gone"));
    // as a workspace that is not there
    let o = namzu(&t, &["-n", "agents", "inspect", "awake"]).await;
    let missing = namzu(&t, &["-n", "agents", "inspect", "nosuch"]).await;
    assert_eq!(o.status.code(), missing.status.code(), "{}", err(&o));
    assert!(err(&o).contains("workspace awake not found"), "{}", err(&o));
    let o = namzu(&t, &["-n", "agents", "suspend", "awake"]).await;
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    let uid = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let o = namzu(&t, &["-n", "agents", "reconcile", "awake", "--uid", &uid]).await;
    assert_eq!(o.status.code(), Some(4), "{}{}", out(&o), err(&o));
    // a 410 while waiting: the Sandbox went away
    let t = start().await;
    let child = spawn(&t, &["-n", "agents", "resume", "asleep", "--wait", "--timeout", "60s"]);
    until_patched(&t, "namzu-ws-asleep").await;
    t.sim
        .add_fault(Fault::status(Some("GET"), "/sandboxes/namzu-ws-asleep", 410, "gone"));
    let o = finish(child).await;
    let text = format!("{}{}", out(&o), err(&o));
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("deleted while waiting"), "{text}");
}

#[tokio::test]
async fn annotations_null_reads_as_a_map_as_the_library_reads_it() {
    // the sim, like a real server, never serves `null` maps: a proxy answers the GET with one
    let t = start().await;
    let mut sandbox = t.sim.get(&SANDBOXES, "agents", "namzu-ws-asleep").unwrap();
    sandbox["metadata"]["annotations"] = Value::Null;
    t.sim.add_fault(Fault::new(
        Some("GET"),
        "/sandboxes/namzu-ws-asleep",
        FaultAction::Raw {
            code: 200,
            body: sandbox.to_string(),
        },
    ));
    let o = namzu(&t, &["-n", "agents", "resume", "asleep", "--dry-run", "-o", "json"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    let text = v.to_string();
    // per-key adds (the library's `annotations !== undefined`), never a whole-map add
    assert!(
        text.contains("/metadata/annotations/sandbox.namzu.ai~1holder-epoch"),
        "{text}"
    );
    assert!(!text.contains(r#""path":"/metadata/annotations","#), "{text}");
}

#[tokio::test]
async fn the_controller_lags_after_a_write_and_list_meets_the_earlier_generations_ready() {
    let t = start_with(SMALL, |c| {
        c.timing.reconcile_delay = chrono::Duration::milliseconds(300);
        c.timing.grace = chrono::Duration::zero();
    })
    .await;
    let before = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    let o = namzu(&t, &["-n", "agents", "suspend", "awake"]).await;
    assert!(o.status.success(), "{}", err(&o));
    // the write is in; the controller has not seen it: Ready=True of the earlier generation
    let s = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    let generation = s["metadata"]["generation"].as_i64().unwrap();
    assert!(generation > before["metadata"]["generation"].as_i64().unwrap());
    let ready = s["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready["status"], "True");
    assert!(ready["observedGeneration"].as_i64().unwrap() < generation);
    let o = namzu(&t, &["-n", "agents", "list", "-o", "json"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let rows: Value = serde_json::from_str(&out(&o)).unwrap();
    let row = rows.as_array().unwrap().iter().find(|r| r["id"] == "awake").unwrap();
    assert_eq!(row["state"], "Suspending", "{row}");
    // a wait meets the window too: not confirmed while the pod stands
    let o = namzu(&t, &["-n", "agents", "suspend", "awake", "--wait", "--timeout", "1s"]).await;
    assert_eq!(o.status.code(), Some(5), "{}{}", out(&o), err(&o));
    // the controller's pass, once its lag has passed
    t.sim.advance(chrono::Duration::milliseconds(300));
    let o = namzu(&t, &["-n", "agents", "suspend", "awake", "--wait", "--timeout", "5s"]).await;
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
}

#[tokio::test]
async fn adoption_pending_is_starting_not_an_error() {
    let t = start().await;
    t.sim.set_knobs(
        "agents",
        "namzu-ws-awake",
        Knobs {
            ready_reason: Some("AdoptionPending".into()),
            ready_message: Some("adopting the warm pod".into()),
            ..Knobs::default()
        },
    );
    let o = namzu(&t, &["-n", "agents", "inspect", "awake", "-o", "json"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["state"], "Starting", "{v}");
    let text = v.to_string();
    assert!(
        !text.contains("controller-reason") && !text.contains("controller-error"),
        "{text}"
    );
}

/// The versions of `agents.x-k8s.io` the sim's discovery serves.
async fn sandbox_versions(t: &TestSim) -> Vec<String> {
    let groups = t.client().await.list_api_groups().await.expect("discovery");
    groups
        .groups
        .iter()
        .find(|g| g.name == "agents.x-k8s.io")
        .map(|g| g.versions.iter().map(|v| v.version.clone()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_sim_serves_v1_0s_crds_by_default_and_0_5s_on_a_scenario_knob() {
    let t = start().await;
    assert_eq!(sandbox_versions(&t).await, vec!["v1beta1"]);
    let o = namzu(&t, &["-n", "agents", "list"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let old = format!("agentSandbox: v0.5\n{SMALL}");
    let t = start_with(&old, |_| {}).await;
    assert_eq!(sandbox_versions(&t).await, vec!["v1beta1", "v1alpha1"]);
    let o = namzu(&t, &["-n", "agents", "list"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("awake"), "{}", out(&o));
    // the v1alpha1 shape reads the same objects
    let alpha = kube::Api::<DynamicObject>::namespaced_with(
        t.client().await,
        "agents",
        &ar("agents.x-k8s.io", "v1alpha1", "Sandbox", "sandboxes"),
    );
    assert!(alpha.get("namzu-ws-awake").await.is_ok());
}
