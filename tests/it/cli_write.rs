//! Fenced writes through the real binary against the strict sim: the operator-relevant scenarios
//! of docs/interop.md §10 (holder-epoch 2, 3, 5, 7–11, 15–21; management 8–11), with the exact
//! bodies from the sim's request record.

use crate::support::*;
use namzu_sim::auth::{Rule, User};
use namzu_sim::controller::Knobs;
use namzu_sim::faults::{Fault, FaultAction, Mutation};
use namzu_sim::record::Recorded;
use namzu_sim::resources::SANDBOXES;
use serde_json::{Value, json};
use std::time::Duration;

const E: &str = "/metadata/annotations/sandbox.namzu.ai~1holder-epoch";
const C: &str = "/metadata/annotations/sandbox.namzu.ai~1operating-mode-changed-at";

/// One workspace `shared-desk` in `ns`, with the given metadata shape.
fn scenario(mode: &str, annotations: &str) -> String {
    format!(
        "namespaces: [ns]\nworkspaces:\n  - {{namespace: ns, id: shared-desk, mode: {mode}, {annotations} podTemplate: {{metadata: {{labels: {{sandbox.namzu.ai/template: ws}}}}, spec: {{containers: [{{name: c, image: i}}]}}}}}}\n"
    )
}

async fn sim_with(mode: &str, annotations: &str) -> TestSim {
    start_with(&scenario(mode, annotations), |c| c.namespace = "ns".into()).await
}

fn writes(t: &TestSim) -> Vec<Recorded> {
    t.sim
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH" || r.method == "DELETE")
        .collect()
}

fn sandbox(t: &TestSim) -> Option<Value> {
    t.sim.get(&SANDBOXES, "ns", "namzu-ws-shared-desk")
}

/// The body with changed-at wildcarded (it is the tool's clock).
fn wild(body: &Value) -> Value {
    let mut b = body.clone();
    for op in b.as_array_mut().unwrap() {
        if op["path"] == C {
            assert!(op["value"].as_str().unwrap().ends_with('Z'), "toISOString form");
            op["value"] = json!("*");
        }
        if op["path"] == "/metadata/annotations"
            && op["value"].get("sandbox.namzu.ai/operating-mode-changed-at").is_some()
        {
            op["value"]["sandbox.namzu.ai/operating-mode-changed-at"] = json!("*");
        }
    }
    b
}

fn mode_of(v: &Value) -> &str {
    v["spec"]["operatingMode"].as_str().unwrap_or("")
}

fn epoch_of(v: &Value) -> Option<&str> {
    v["metadata"]["annotations"]["sandbox.namzu.ai/holder-epoch"].as_str()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn he2_and_he7_suspend_keeps_the_stored_epoch_with_the_exact_body() {
    let t = sim_with("Running", r#"epoch: "7","#).await;
    let o = run_audited(&t, &["suspend", "shared-desk"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o).trim(), "shared-desk: suspended (keeps holder epoch 7)");
    let w = writes(&t);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].content_type, "application/json-patch+json");
    assert_eq!(
        wild(w[0].body.as_ref().unwrap()),
        json!([{"op":"test","path":E,"value":"7"},{"op":"add","path":E,"value":"7"},{"op":"add","path":C,"value":"*"},{"op":"add","path":"/spec/operatingMode","value":"Suspended"}])
    );
    assert_eq!(w[0].query_param("fieldManager").as_deref(), Some("kubectl-namzu"));
    assert!(w[0].user_agent.starts_with("kubectl-namzu/"));
    let s = sandbox(&t).unwrap();
    assert_eq!((mode_of(&s), epoch_of(&s)), ("Suspended", Some("7")));
    // the GET came first: the read half of the pair
    let rec = t.sim.requests();
    let patch_at = rec.iter().position(|r| r.method == "PATCH").unwrap();
    assert!(
        rec[..patch_at]
            .iter()
            .any(|r| r.method == "GET" && r.path.ends_with("/sandboxes/namzu-ws-shared-desk"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn he3_a_host_that_took_over_fences_the_older_epoch_out() {
    let t = sim_with("Running", r#"epoch: "4","#).await;
    // B adopts the Running workspace at 5: a stamp-only write
    let o = run_audited(&t, &["resume", "shared-desk", "--epoch", "5"]).await;
    assert!(
        out(&o).contains("holder epoch stamped, mode unchanged (takes over: 4 → 5)"),
        "{}",
        out(&o)
    );
    assert_eq!(
        writes(&t)[0].body,
        Some(json!([{"op":"test","path":E,"value":"4"},{"op":"add","path":E,"value":"5"}]))
    );
    let pod_uid = |t: &TestSim| {
        t.sim
            .get(&namzu_sim::resources::PODS, "ns", "namzu-ws-shared-desk")
            .unwrap()["metadata"]["uid"]
            .clone()
    };
    let uid_before = pod_uid(&t);
    // A suspends at 4: refused, nothing sent
    let o = run_audited(&t, &["suspend", "shared-desk", "--epoch", "4"]).await;
    assert_eq!(o.status.code(), Some(3));
    assert!(
        err(&o).contains(
            "carried holder epoch 4, but the Sandbox is held at epoch 5 — another process took this workspace over"
        ),
        "{}",
        err(&o)
    );
    assert_eq!(writes(&t).len(), 1);
    let s = sandbox(&t).unwrap();
    assert_eq!((mode_of(&s), epoch_of(&s)), ("Running", Some("5")));
    assert_eq!(pod_uid(&t), uid_before, "the pod is untouched");
    // B's own suspend succeeds and the stored epoch stays 5
    let o = run_audited(&t, &["suspend", "shared-desk", "--epoch", "5"]).await;
    assert!(o.status.success());
    let s = sandbox(&t).unwrap();
    assert_eq!((mode_of(&s), epoch_of(&s)), ("Suspended", Some("5")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn he5_resume_below_the_stored_epoch_is_refused() {
    let t = sim_with("Suspended", r#"epoch: "5","#).await;
    let o = run_audited(&t, &["resume", "shared-desk", "--epoch", "4"]).await;
    assert_eq!(o.status.code(), Some(3));
    assert!(writes(&t).is_empty());
    assert_eq!(mode_of(&sandbox(&t).unwrap()), "Suspended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn he8_no_annotations_map_adds_the_whole_map_under_a_resource_version_test() {
    let t = sim_with("Running", "noAnnotations: true,").await;
    let rv = sandbox(&t).unwrap()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let o = run_audited(&t, &["suspend", "shared-desk", "--epoch", "3"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(
        wild(writes(&t)[0].body.as_ref().unwrap()),
        json!([{"op":"test","path":"/metadata/resourceVersion","value":rv},
            {"op":"add","path":"/metadata/annotations","value":{"sandbox.namzu.ai/holder-epoch":"3","sandbox.namzu.ai/operating-mode-changed-at":"*"}},
            {"op":"add","path":"/spec/operatingMode","value":"Suspended"}])
    );
    assert_eq!(epoch_of(&sandbox(&t).unwrap()), Some("3"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn he9_foreign_annotation_survives_per_key_adds() {
    let t = sim_with("Running", "annotations: {example.com/owner: ops},").await;
    let rv = sandbox(&t).unwrap()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    run_audited(&t, &["suspend", "shared-desk", "--epoch", "3"]).await;
    assert_eq!(
        wild(writes(&t)[0].body.as_ref().unwrap()),
        json!([{"op":"test","path":"/metadata/resourceVersion","value":rv},{"op":"add","path":E,"value":"3"},
            {"op":"add","path":C,"value":"*"},{"op":"add","path":"/spec/operatingMode","value":"Suspended"}])
    );
    let s = sandbox(&t).unwrap();
    assert_eq!(s["metadata"]["annotations"]["example.com/owner"], "ops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn he10_a_moved_resource_version_is_reread_rebuilt_and_resent() {
    let t = sim_with("Running", "annotations: {example.com/owner: ops},").await;
    t.sim.add_fault(
        Fault::new(
            Some("PATCH"),
            "/sandboxes/namzu-ws-shared-desk",
            FaultAction::Mutate(Mutation::BumpResourceVersion),
        )
        .nth(1),
    );
    t.sim.clear_requests();
    let o = run_audited(&t, &["suspend", "shared-desk", "--epoch", "1"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let calls: Vec<(String, u16)> = t
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/sandboxes/namzu-ws-shared-desk"))
        .map(|r| (r.method, r.status))
        .collect();
    let want: Vec<(String, u16)> = [("GET", 200), ("PATCH", 422), ("GET", 200), ("PATCH", 200)]
        .iter()
        .map(|(m, s)| (m.to_string(), *s))
        .collect();
    assert_eq!(calls, want);
    assert_eq!(epoch_of(&sandbox(&t).unwrap()), Some("1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn he11_refused_with_nothing_moved_is_not_retried() {
    let t = sim_with("Running", "annotations: {example.com/owner: ops},").await;
    t.sim.add_fault(Fault::status(
        Some("PATCH"),
        "/sandboxes/",
        422,
        "the server rejected our request due to an error in our request",
    ));
    t.sim.clear_requests();
    let o = run_audited(&t, &["suspend", "shared-desk", "--epoch", "1"]).await;
    assert_eq!(o.status.code(), Some(3));
    assert!(err(&o).contains("not applied"), "{}", err(&o));
    let calls: Vec<String> = t
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/sandboxes/"))
        .map(|r| r.method)
        .collect();
    assert_eq!(calls, ["GET", "PATCH", "GET"]);
    assert_eq!(mode_of(&sandbox(&t).unwrap()), "Running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn he15_to_he18_fenced_delete() {
    // 15: at 4 against 5: refused, no DELETE
    let t = sim_with("Suspended", r#"epoch: "5","#).await;
    for verb in ["suspend", "delete"] {
        let o = run_audited(
            &t,
            &[verb, "shared-desk", "--epoch", "4", "--yes"]
                .iter()
                .filter(|a| verb == "delete" || **a != "--yes")
                .copied()
                .collect::<Vec<_>>(),
        )
        .await;
        assert_eq!(o.status.code(), Some(3), "{verb}: {}", err(&o));
    }
    assert!(writes(&t).is_empty());
    // 16: at 5 against 5: one DELETE with the library's exact body; gone, disk and pod with it
    let rv = sandbox(&t).unwrap()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let o = run_audited(&t, &["delete", "shared-desk", "--epoch", "5", "--yes"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let w = writes(&t);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].content_type, "application/json");
    assert_eq!(
        w[0].body,
        Some(json!({"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"resourceVersion":rv}}))
    );
    assert!(sandbox(&t).is_none());
    assert!(
        t.sim
            .get(&namzu_sim::resources::PVCS, "ns", "workspace-disk-namzu-ws-shared-desk")
            .is_none()
    );
    // 17: already deleted by somebody else: success, no DELETE
    let o = run_audited(&t, &["delete", "shared-desk", "--yes"]).await;
    assert!(o.status.success());
    assert!(out(&o).contains("already gone"));
    assert_eq!(writes(&t).len(), 1);

    // 18: one 409, then OK: two DELETEs
    let t = sim_with("Suspended", r#"epoch: "5","#).await;
    t.sim
        .add_fault(Fault::status(Some("DELETE"), "/sandboxes/", 409, "Operation cannot be fulfilled").nth(1));
    let o = run_audited(&t, &["delete", "shared-desk", "--yes"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let statuses: Vec<u16> = writes(&t).iter().map(|r| r.status).collect();
    assert_eq!(statuses, [409, 200]);
    assert!(sandbox(&t).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn he19_to_he21_reads_and_bad_epochs() {
    let t = sim_with("Running", r#"epoch: "5","#).await;
    let items = listed(&run_audited(&t, &["list", "-o", "json"]).await);
    assert_eq!(items[0]["holderEpoch"]["value"], 5);
    assert!(writes(&t).is_empty());
    // 20: 1.5 and -1 are refused before any request
    t.sim.clear_requests();
    for bad in ["1.5", "-1", "9007199254740992"] {
        let o = run_audited(&t, &["suspend", "shared-desk", &format!("--epoch={bad}")]).await;
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(err(&o).contains("non-negative safe integer"), "{bad}: {}", err(&o));
    }
    assert!(t.sim.requests().is_empty(), "0 requests");
    // 21: an unreadable stored epoch refuses, naming the raw value
    let t = sim_with("Running", r#"epoch: "latest","#).await;
    let o = run_audited(&t, &["suspend", "shared-desk", "--epoch", "9"]).await;
    assert_eq!(o.status.code(), Some(3));
    assert!(
        err(&o).contains("\"latest\", which is not a decimal integer"),
        "{}",
        err(&o)
    );
    assert!(writes(&t).is_empty());
    let items = listed(&run_audited(&t, &["list", "-o", "json"]).await);
    assert_eq!(
        items[0]["holderEpoch"],
        json!({"value":null,"readable":false,"raw":"latest"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn management_8_delete_of_a_suspended_workspace() {
    let t = sim_with("Suspended", "").await;
    t.sim
        .add_fault(Fault::status(Some("DELETE"), "/sandboxes/", 500, "etcdserver: request timed out").nth(1));
    let o = run_audited(&t, &["delete", "shared-desk", "--yes"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("etcdserver: request timed out"), "{}", err(&o));
    assert!(sandbox(&t).is_some(), "a 500 is not a delete");
    let o = run_audited(&t, &["delete", "shared-desk", "--yes"]).await;
    assert!(o.status.success(), "the retry succeeds: {}", err(&o));
    let deletes: Vec<u16> = writes(&t).iter().map(|r| r.status).collect();
    assert_eq!(deletes, [500, 200], "exactly one DELETE per attempt");
    let o = run_audited(&t, &["delete", "shared-desk", "--yes"]).await;
    assert!(o.status.success() && out(&o).contains("already gone"));
    let o = run_audited(&t, &["delete", "Not A Label", "--yes"]).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("cannot name a Sandbox"));
    assert_eq!(writes(&t).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn management_9_to_11_suspend_waits_for_the_pod() {
    let t = start_with(&scenario("Running", r#"epoch: "1","#), |c| {
        c.namespace = "ns".into();
        c.timing.grace = chrono::Duration::zero();
    })
    .await;
    let o = run_audited(&t, &["suspend", "shared-desk", "--wait"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains("suspended (keeps holder epoch 1); confirmed"),
        "{}",
        out(&o)
    );
    assert_eq!(writes(&t).len(), 1);
    assert!(
        t.sim.requests().iter().any(|r| r.path.contains("/pods")),
        "the wait read the pod"
    );
    assert!(
        t.sim
            .get(&namzu_sim::resources::PODS, "ns", "namzu-ws-shared-desk")
            .is_none()
    );

    // 10: draining forever: the wait times out, the workspace stays Suspended, nothing deleted
    let t = sim_with("Running", r#"epoch: "1","#).await;
    stuck_terminating(&t, "ns", "namzu-ws-shared-desk");
    let o = run_audited(&t, &["suspend", "shared-desk", "--wait", "--timeout", "1s"]).await;
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    assert!(
        err(&o).contains("unconfirmed: still waiting for pod namzu-ws-shared-desk to finish terminating"),
        "{}",
        err(&o)
    );
    assert_eq!(mode_of(&sandbox(&t).unwrap()), "Suspended");
    assert!(t.sim.requests().iter().all(|r| r.method != "DELETE"));

    // 11: a missing workspace
    let o = run_audited(&t, &["suspend", "nobody"]).await;
    assert_eq!(o.status.code(), Some(4));
    assert!(err(&o).contains("not found"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_waits_for_ready_and_a_new_pod() {
    let t = start_with(&scenario("Suspended", r#"epoch: "2","#), |c| {
        c.namespace = "ns".into();
        c.timing.ready_delay = chrono::Duration::zero();
    })
    .await;
    let o = run_audited(&t, &["resume", "shared-desk", "--wait", "-o", "json"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v[0]["result"], "applied");
    assert_eq!(v[0]["epoch"]["effect"], "keeps holder epoch 2");
    assert_eq!(v[0]["request"]["method"], "PATCH");
    // the pod that stays Pending: the wait times out with the diagnosis
    let t = sim_with("Suspended", r#"epoch: "2","#).await;
    t.sim.set_knobs(
        "ns",
        "namzu-ws-shared-desk",
        Knobs {
            unschedulable: Some("0/3 nodes are available: 3 Insufficient memory.".into()),
            ..Default::default()
        },
    );
    let o = run_audited(&t, &["resume", "shared-desk", "--wait", "--timeout", "1s"]).await;
    assert_eq!(o.status.code(), Some(5));
    assert!(
        err(&o).contains("unschedulable: 0/3 nodes are available: 3 Insufficient memory."),
        "{}",
        err(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_on_the_write_path() {
    // the object deleted between GET and PATCH
    let t = sim_with("Running", r#"epoch: "1","#).await;
    t.sim
        .add_fault(Fault::new(Some("PATCH"), "/sandboxes/", FaultAction::Mutate(Mutation::Delete)).nth(1));
    let o = run_audited(&t, &["suspend", "shared-desk"]).await;
    assert_eq!(o.status.code(), Some(4), "{}", out(&o));
    // a host takes over between our GET and our PATCH: re-read, the fence now refuses
    let t = sim_with("Running", r#"epoch: "1","#).await;
    t.sim.add_fault(before_patch("/sandboxes/", 1, stamp_epoch("2")));
    let o = run_audited(&t, &["suspend", "shared-desk"]).await;
    assert_eq!(o.status.code(), Some(3), "{}", out(&o));
    assert!(err(&o).contains("held at epoch 2"), "{}", err(&o));
    assert_eq!(writes(&t).iter().map(|r| r.status).collect::<Vec<_>>(), [422]);
    assert_eq!(mode_of(&sandbox(&t).unwrap()), "Running");
    // the Sandbox replaced (same name, new uid) between GET and PATCH: the resourceVersion test
    // fails, the re-read finds a stranger, and nothing is written to it
    let t2 = sim_with("Running", "annotations: {example.com/owner: ops},").await;
    t2.sim
        .add_fault(Fault::new(Some("PATCH"), "/sandboxes/", FaultAction::Mutate(Mutation::Replace)).nth(1));
    let o = run_audited(&t2, &["suspend", "shared-desk", "--epoch", "1"]).await;
    assert_eq!(o.status.code(), Some(3), "{}", out(&o));
    assert!(err(&o).contains("the Sandbox was replaced"), "{}", err(&o));
    assert_eq!(writes(&t2).iter().map(|r| r.status).collect::<Vec<_>>(), [422]);
    assert_eq!(mode_of(&sandbox(&t2).unwrap()), "Running");

    // a hang: the request timeout ends it, one line
    t.sim
        .add_fault(Fault::new(Some("PATCH"), "/sandboxes/", FaultAction::Hang));
    let o = run_audited(
        &t,
        &["suspend", "shared-desk", "--take-over", "--request-timeout", "1s"],
    )
    .await;
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("timed out after 1s: patch sandboxes.agents.x-k8s.io"),
        "{}",
        err(&o)
    );
    // a 500 on PATCH: not applied; the retry later succeeds
    let t = sim_with("Running", r#"epoch: "1","#).await;
    t.sim
        .add_fault(Fault::status(Some("PATCH"), "/sandboxes/", 500, "etcdserver: request timed out").nth(1));
    assert_eq!(
        run_audited(&t, &["suspend", "shared-desk"]).await.status.code(),
        Some(1)
    );
    assert_eq!(mode_of(&sandbox(&t).unwrap()), "Running");
    assert!(run_audited(&t, &["suspend", "shared-desk"]).await.status.success());
    assert_eq!(mode_of(&sandbox(&t).unwrap()), "Suspended");
    // 403 on patch: one line naming the verb
    let rules = vec![Rule::new(&["get", "list"], &["*"], &["*"], &[])];
    let t = start_with(&scenario("Running", ""), |c| {
        c.namespace = "ns".into();
        c.users = vec![User::with_rules("viewer", "v", rules)];
    })
    .await;
    let o = run_audited(&t, &["suspend", "shared-desk"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("forbidden: you may not patch sandboxes.agents.x-k8s.io namzu-ws-shared-desk in namespace ns"),
        "{}",
        err(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_blocks_every_verb_and_sends_nothing() {
    let t = sim_with("Running", r#"epoch: "1","#).await;
    for args in [
        vec!["--read-only", "suspend", "shared-desk"],
        vec!["--read-only", "resume", "shared-desk"],
        vec!["--read-only", "delete", "shared-desk", "--yes"],
    ] {
        let o = run_audited(&t, &args).await;
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(err(&o).lines().count(), 1);
        assert!(err(&o).contains("read-only mode"), "{}", err(&o));
    }
    let mut full = vec![
        "--kubeconfig".to_string(),
        t.sim.kubeconfig().display().to_string(),
        "suspend".into(),
        "shared-desk".into(),
    ];
    full.push("--take-over".into());
    let o = namzu_env(full, vec![("KUBECTL_NAMZU_READ_ONLY".into(), "1".into())]).await;
    assert_eq!(o.status.code(), Some(1));
    assert!(writes(&t).is_empty(), "no write reached the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_prints_the_exact_request_and_sends_nothing() {
    let t = sim_with("Running", r#"epoch: "7","#).await;
    let o = run_audited(
        &t,
        &["suspend", "shared-desk", "--take-over", "--dry-run", "-o", "json"],
    )
    .await;
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v[0]["result"], "dry-run");
    assert_eq!(
        v[0]["request"]["path"],
        "/apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes/namzu-ws-shared-desk?fieldManager=kubectl-namzu"
    );
    assert_eq!(v[0]["request"]["contentType"], "application/json-patch+json");
    assert_eq!(v[0]["request"]["body"][1], json!({"op":"add","path":E,"value":"8"}));
    assert_eq!(v[0]["epoch"]["effect"], "takes over: 7 → 8");
    assert!(writes(&t).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selections_and_the_audit_log() {
    let t = start_demo().await;
    let o = run_audited(&t, &["suspend", "-n", "research", "--state", "Running"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert!(
        text.contains("tango: suspended (keeps holder epoch 12)")
            && text.contains("whiskey: suspended (keeps holder epoch 0)"),
        "{text}"
    );
    assert!(
        text.contains("WORKSPACE") && text.contains("RESULT"),
        "summary table: {text}"
    );
    let o = run_audited(&t, &["suspend", "-n", "research"]).await;
    assert_eq!(o.status.code(), Some(2), "no ids and no selection");
    let o = run_audited(&t, &["audit", "-o", "json"]).await;
    let entries: Value = serde_json::from_str(&out(&o)).unwrap();
    let entries = entries.as_array().unwrap();
    // tango, whiskey and zephyr
    assert_eq!(entries.len(), 3);
    for e in entries {
        assert_eq!(e["verb"], "suspend");
        assert_eq!(e["status"], 200);
        assert_eq!(e["outcome"], "applied");
        assert_eq!(e["request"]["method"], "PATCH");
        assert!(e["request"]["body"][0]["op"] == "test");
        assert!(e["server"].as_str().unwrap().starts_with("http://127.0.0.1:"));
    }
    // a mixed selection: one refused, one applied → non-zero exit
    for id in ["namzu-ws-uniform", "namzu-ws-tango"] {
        t.sim.modify(&SANDBOXES, "research", id, |o| {
            o["spec"]["operatingMode"] = json!("Running")
        });
    }
    let o = run_audited(
        &t,
        &[
            "suspend",
            "-n",
            "research",
            "--state",
            "Running,Starting",
            "--epoch",
            "5",
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(3), "{}", out(&o));
}

/// Bulk writes run several at a time, each through the one write path with its own fence; the
/// results come in the selection's order; a 429 holds the batch back and the write is resent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_bulk_writes_report_in_order_and_honour_back_pressure() {
    let t = start_demo().await;
    let running = running_ids(&t, "agents");
    t.sim.add_fault(
        Fault::status(Some("PATCH"), "/sandboxes/", 429, "too many requests")
            .retry_after(1)
            .nth(2),
    );
    t.sim.clear_requests();
    let o = run_audited(
        &t,
        &["-n", "agents", "suspend", "--state", "Running", "--parallel", "4"],
    )
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    // every workspace suspended, reported in the selection's (name) order
    let reported: Vec<String> = out(&o)
        .lines()
        .filter_map(|l| l.split_once(": suspended").map(|(id, _)| id.to_string()))
        .collect();
    let selected: Vec<String> = {
        let mut v: Vec<String> = running.clone();
        v.sort();
        v.into_iter()
            .filter(|id| {
                t.sim.get(&SANDBOXES, "agents", &format!("namzu-ws-{id}")).unwrap()["spec"]["operatingMode"]
                    == "Suspended"
            })
            .collect()
    };
    assert_eq!(reported, selected, "{}", out(&o));
    let patches: Vec<u16> = writes(&t).iter().map(|r| r.status).collect();
    assert_eq!(patches.iter().filter(|s| **s == 429).count(), 1, "{patches:?}");
    assert_eq!(
        patches.iter().filter(|s| **s == 200).count(),
        selected.len(),
        "the refused one was resent"
    );
    // one audit line per workspace, each applied; no progress line on a pipe
    let audit: Vec<Value> = std::fs::read_to_string(t.dir.path().join("audit.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        audit.iter().filter(|e| e["outcome"] == "applied").count(),
        selected.len()
    );
    assert!(!err(&o).contains('\r') && !err(&o).contains("/s, about"), "{}", err(&o));
}

/// @namzu/sandbox 28.0.0's allocation annotations (and any other `sandbox.namzu.ai/*` key the
/// tool does not know) are the library's: per-key adds leave them byte-identical.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspend_and_a_resume_leave_unknown_library_annotations_byte_identical() {
    let t = sim_with(
        "Running",
        r#"epoch: "2", annotations: {"sandbox.namzu.ai/allocation": "{\"cpu\": 2,  \"host\": \"h-7\"}\n", "sandbox.namzu.ai/allocation-host": "h-7", "sandbox.namzu.ai/zz": ""},"#,
    )
    .await;
    let library = |t: &TestSim| -> Vec<(String, String)> {
        sandbox(t).unwrap()["metadata"]["annotations"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| {
                k.starts_with("sandbox.namzu.ai/")
                    && !k.ends_with("/holder-epoch")
                    && !k.ends_with("/operating-mode-changed-at")
            })
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect()
    };
    let before = library(&t);
    assert_eq!(before.len(), 3);
    // list carries them, as stored
    let items = listed(&run_audited(&t, &["list", "-o", "json"]).await);
    assert_eq!(
        items[0]["namzuAnnotations"]["sandbox.namzu.ai/allocation"],
        "{\"cpu\": 2,  \"host\": \"h-7\"}\n"
    );
    for verb in ["suspend", "resume"] {
        let o = run_audited(&t, &[verb, "shared-desk"]).await;
        assert!(o.status.success(), "{verb}: {}", err(&o));
        assert_eq!(library(&t), before, "after {verb}");
    }
    assert_eq!(writes(&t).len(), 2);
    // inspect shows them
    let text = out(&run_audited(&t, &["inspect", "shared-desk"]).await);
    assert!(
        text.contains("Library annotations:") && text.contains("  sandbox.namzu.ai/allocation-host: \"h-7\""),
        "{text}"
    );
}

/// A write that hangs: Ctrl-C lets it finish, a second Ctrl-C abandons it — exit 1 at once, and
/// its intent stays in the audit log as "outcome unknown".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ctrl_c_abandons_a_hung_write_with_its_outcome_unknown() {
    let t = start().await;
    t.sim
        .add_fault(Fault::new(Some("PATCH"), "namzu-ws-awake", FaultAction::Hang));
    let log = t.dir.path().join("audit.jsonl");
    let mut child = t
        .bin()
        .args([
            "--kubeconfig",
            t.sim.kubeconfig().to_str().unwrap(),
            "-n",
            "agents",
            "suspend",
            "awake",
        ])
        .args(["--audit-log", log.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    until("the PATCH came", Duration::from_secs(20), || !sent(&t).is_empty()).await;
    // signals until it ends, one each 200 ms (a signal between the two listeners would be lost:
    // send again)
    let status = tokio::task::block_in_place(|| {
        wait_for_every(Duration::from_millis(200), Duration::from_secs(20), || {
            match child.try_wait().unwrap() {
                Some(status) => Ok(status),
                None => {
                    sigint(&child);
                    Err("two Ctrl-Cs did not end it".into())
                }
            }
        })
    });
    let mut e = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut e).unwrap();
    assert_eq!(status.code(), Some(1), "{e}");
    assert!(e.contains("interrupted twice"), "{e}");
    let o = run_audited(&t, &["audit"]).await;
    assert!(out(&o).contains("outcome unknown"), "{}", out(&o));
    assert!(err(&o).contains("kubectl namzu inspect awake -n agents"), "{}", err(&o));
}
