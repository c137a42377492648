//! What a real kube-apiserver answers (issue 28, checked against 1.20.2 and 1.3x): the sim's
//! answers to each, and the tool's behaviour where a real server differs from the sim of before
//! (the restart recovery, the Events table, `list -A` with nothing readable).

use crate::support::*;
use chrono::Duration as ChronoDuration;
use http_body_util::BodyExt;
use kube::Client;
use namzu_engine::cluster::live::{LiveOptions, StreamStatus};
use namzu_sim::auth::{Rule, User};
use namzu_sim::resources::{EVENTS, PODS, SANDBOXES};
use namzu_tui::action::{Action, Effect};
use namzu_tui::app::{App, AppOptions, update};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

const AWAKE: &str = "/apis/agents.x-k8s.io/v1beta1/namespaces/agents/sandboxes/namzu-ws-awake";
const SANDBOXES_PATH: &str = "/apis/agents.x-k8s.io/v1beta1/namespaces/agents/sandboxes";

/// One raw request through the kube client: status, the body as JSON (Null when it is not),
/// and the body's bytes.
async fn raw(client: &Client, method: &str, uri: &str, content_type: &str, body: &[u8]) -> (u16, Value, Vec<u8>) {
    let mut req = http::Request::builder().method(method).uri(uri);
    if !content_type.is_empty() {
        req = req.header("content-type", content_type);
    }
    let req = req.body(body.to_vec()).expect("request");
    let resp = client.send(req.map(kube::client::Body::from)).await.expect("an answer");
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes().to_vec();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null), bytes)
}

async fn get(client: &Client, uri: &str) -> (u16, Value) {
    let (code, v, _) = raw(client, "GET", uri, "", b"").await;
    (code, v)
}

fn rv(v: &Value) -> String {
    v.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_patch_that_does_not_decode_is_400_and_one_that_fails_is_422() {
    let t = start().await;
    let c = t.client().await;
    t.sim.set_strict(false);
    let (code, body, _) = raw(&c, "PATCH", AWAKE, "application/json-patch+json", b"{\"op\":\"test\"}").await;
    assert_eq!((code, body["reason"].as_str()), (400, Some("BadRequest")), "{body}");
    let failing = br#"[{"op":"test","path":"/spec/operatingMode","value":"Suspended"}]"#;
    let (code, body, _) = raw(&c, "PATCH", AWAKE, "application/json-patch+json", failing).await;
    assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_subresource_is_served_and_validated_against_the_crd_schema() {
    let t = start().await;
    let c = t.client().await;
    let status = format!("{AWAKE}/status");
    let (code, before) = get(&c, &status).await;
    assert_eq!(code, 200, "{before}");
    let merge = "application/merge-patch+json";
    // a pod's podIPs shape is not the CRD's (strings)
    let bad = br#"{"status":{"podIPs":[{"ip":"10.0.0.9"}]}}"#;
    let (code, body, _) = raw(&c, "PATCH", &status, merge, bad).await;
    assert_eq!(code, 422, "{body}");
    assert!(body["message"].as_str().unwrap().contains("status.podIPs[0]"), "{body}");
    let empty_reason = br#"{"status":{"conditions":[{"type":"Ready","status":"True","reason":"","message":"","lastTransitionTime":"2026-11-29T12:00:00Z"}]}}"#;
    let (code, body, _) = raw(&c, "PATCH", &status, merge, empty_reason).await;
    assert_eq!(code, 422, "{body}");
    let bad_reason = br#"{"status":{"conditions":[{"type":"Ready","status":"False","reason":"not a reason!","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#;
    let (code, body, _) = raw(&c, "PATCH", &status, merge, bad_reason).await;
    assert_eq!(code, 422, "{body}");
    // a good status is written; the spec sent with it is not
    let good = br#"{"spec":{"operatingMode":"Suspended"},"status":{"podIPs":["10.0.0.9"]}}"#;
    let (code, body, _) = raw(&c, "PATCH", &status, merge, good).await;
    assert_eq!(code, 200, "{body}");
    // (the controller owns the status and writes its own again at once: the answer shows the write)
    assert_eq!(body["status"]["podIPs"], json!(["10.0.0.9"]));
    assert_eq!(body["spec"]["operatingMode"], "Running");
    let stored = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    assert_eq!(stored["spec"]["operatingMode"], "Running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_the_sims_controller_writes_passes_the_crd_schema() {
    let t = start().await;
    let awake = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    let ips = awake["status"]["podIPs"]
        .as_array()
        .expect("a Running Sandbox has podIPs");
    assert!(!ips.is_empty() && ips.iter().all(Value::is_string), "{ips:?}");
    for s in t.sim.list(&SANDBOXES, None) {
        for c in s["status"]["conditions"].as_array().into_iter().flatten() {
            assert!(c["reason"].as_str().is_some_and(|r| !r.is_empty()), "{c}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_created_custom_resource_gets_crd_defaults_unknown_fields_pruned_and_sorted_keys() {
    let t = start().await;
    let c = t.client().await;
    let body = json!({"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","extra":1,
        "metadata":{"name":"fresh","namespace":"agents"},
        "spec":{"podTemplate":{"spec":{"containers":[{"name":"a","image":"x"}]}},"bogus":true}});
    let (code, created, bytes) = raw(
        &c,
        "POST",
        SANDBOXES_PATH,
        "application/json",
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["operatingMode"], "Running");
    assert_eq!(created["spec"]["shutdownPolicy"], "Retain");
    assert!(
        created["spec"].get("bogus").is_none() && created.get("extra").is_none(),
        "{created}"
    );
    // keys as Go writes a map: sorted, at every depth
    let text = String::from_utf8(bytes).unwrap();
    let at = |k: &str| text.find(&format!("\"{k}\"")).unwrap();
    assert!(
        at("apiVersion") < at("kind") && at("kind") < at("metadata") && at("metadata") < at("spec"),
        "{text}"
    );
    let (_, got, bytes) = raw(&c, "GET", AWAKE, "", b"").await;
    let text = String::from_utf8(bytes).unwrap();
    let keys: Vec<&String> = got["metadata"].as_object().unwrap().keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_label_key_is_422() {
    let t = start().await;
    let c = t.client().await;
    t.sim.set_strict(false);
    let merge = "application/merge-patch+json";
    let (code, body, _) = raw(
        &c,
        "PATCH",
        AWAKE,
        merge,
        "{\"metadata\":{\"labels\":{\"é\":\"x\"}}}".as_bytes(),
    )
    .await;
    assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("metadata.labels"), "{body}");
    let (code, _, _) = raw(
        &c,
        "PATCH",
        AWAKE,
        merge,
        br#"{"metadata":{"labels":{"example.com/ok":"fine"}}}"#,
    )
    .await;
    assert_eq!(code, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_is_served_and_a_protobuf_body_is_415() {
    let t = start().await;
    let c = t.client().await;
    let apply = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: applied\n";
    let (code, body, _) = raw(
        &c,
        "PATCH",
        "/api/v1/namespaces/applied?fieldManager=kubectl",
        "application/apply-patch+yaml",
        apply.as_bytes(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, body, _) = raw(
        &c,
        "PATCH",
        "/api/v1/namespaces/applied?fieldManager=kubectl",
        "application/apply-patch+yaml",
        b"metadata:\n  labels: {team: a}\n",
    )
    .await;
    assert_eq!(
        (code, &body["metadata"]["labels"]["team"]),
        (200, &json!("a")),
        "{body}"
    );
    let (code, body, _) = raw(
        &c,
        "POST",
        "/api/v1/namespaces",
        "application/vnd.kubernetes.protobuf",
        b"k8s\x00\x0a\x0f",
    )
    .await;
    assert_eq!(code, 415, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_metadata_continue_tokens_and_resource_versions_as_a_real_server() {
    let t = start().await;
    let c = t.client().await;
    let (code, list) = get(&c, SANDBOXES_PATH).await;
    assert_eq!(code, 200);
    assert_eq!(
        list["metadata"]["continue"], "",
        "a custom resource list always has continue"
    );
    let (_, page) = get(&c, &format!("{SANDBOXES_PATH}?limit=1")).await;
    assert_eq!(page["metadata"]["remainingItemCount"], 2, "{page}");
    let (code, body) = get(&c, &format!("{SANDBOXES_PATH}?continue=zz-not-a-token")).await;
    assert_eq!((code, body["reason"].as_str()), (400, Some("BadRequest")), "{body}");
    let current: u64 = rv(&list).parse().unwrap();
    let (code, body) = get(&c, &format!("{SANDBOXES_PATH}?resourceVersion={}", current + 100)).await;
    assert_eq!(code, 504, "{body}");
    let (code, body) = get(&c, &format!("{SANDBOXES_PATH}?resourceVersionMatch=NotOlderThan")).await;
    assert_eq!(code, 422, "{body}");
    let (code, body) = get(
        &c,
        &format!("{SANDBOXES_PATH}?resourceVersion=1&resourceVersionMatch=Exact"),
    )
    .await;
    assert_eq!(code, 410, "{body}");
    let (code, _) = get(
        &c,
        &format!("{SANDBOXES_PATH}?resourceVersion={current}&resourceVersionMatch=NotOlderThan"),
    )
    .await;
    assert_eq!(code, 200);
}

/// The lines of a watch, read until it ends or `n` lines came.
async fn watch_lines(client: &Client, uri: &str, n: usize) -> (u16, Vec<Value>) {
    let req = http::Request::get(uri).body(Vec::new()).expect("request");
    let resp = client.send(req.map(kube::client::Body::from)).await.expect("an answer");
    let code = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    let mut lines = Vec::new();
    while lines.len() < n {
        let Ok(Some(Ok(frame))) = tokio::time::timeout(Duration::from_secs(10), body.frame()).await else {
            break;
        };
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
        while let Some(i) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=i).collect();
            lines.push(serde_json::from_slice(&line).unwrap_or(Value::Null));
        }
    }
    (code, lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_over_the_kept_store_every_old_resource_version_is_410() {
    let mut t = start().await;
    let c = t.client().await;
    // the scenario's writes came before the server's watch cache
    let (code, lines) = watch_lines(&c, &format!("{SANDBOXES_PATH}?watch=1&resourceVersion=1"), 1).await;
    assert_eq!((code, &lines[0]["type"]), (200, &json!("ERROR")), "{lines:?}");
    let (_, list) = get(&c, SANDBOXES_PATH).await;
    let old = rv(&list);
    let (code, lines) = watch_lines(
        &c,
        &format!("{SANDBOXES_PATH}?watch=1&resourceVersion={old}&timeoutSeconds=1"),
        1,
    )
    .await;
    assert_eq!(code, 200);
    assert!(lines.iter().all(|l| l["type"] != "ERROR"), "{lines:?}");
    t.sim.restart_expiring().await.unwrap();
    let c = t.client().await;
    let (code, lines) = watch_lines(&c, &format!("{SANDBOXES_PATH}?watch=1&resourceVersion={old}"), 1).await;
    assert_eq!(code, 200, "200, then the error on the stream");
    assert_eq!(lines[0]["type"], "ERROR", "{lines:?}");
    assert_eq!(lines[0]["object"]["code"], 410);
    assert!(
        lines[0]["object"]["message"]
            .as_str()
            .unwrap()
            .starts_with("too old resource version")
    );
    // the objects are all there
    let (_, after) = get(&c, SANDBOXES_PATH).await;
    assert_eq!(after["items"].as_array().unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_version_knob_sets_watch_list_and_openapi() {
    let t = start().await;
    let c = t.client().await;
    let (_, v) = get(&c, "/version").await;
    assert_eq!(v["minor"], "33");
    let streaming = format!(
        "{SANDBOXES_PATH}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
    );
    assert_eq!(watch_lines(&c, &streaming, 1).await.0, 200);
    t.sim.set_server_version(31);
    let (_, v) = get(&c, "/version").await;
    assert_eq!(
        (v["minor"].as_str(), v["gitVersion"].as_str()),
        (Some("31"), Some("v1.31.0-namzu-sim"))
    );
    assert_eq!(watch_lines(&c, &streaming, 1).await.0, 422);
    assert_eq!(get(&c, "/openapi/v3").await.0, 200);
    t.sim.set_server_version(20);
    assert_eq!(get(&c, "/openapi/v3").await.0, 404, "1.20 serves OpenAPI v2 only");
    // 1.20 knows nothing of the parameters: a plain watch, no initial-events-end bookmark
    let (code, lines) = watch_lines(&c, &streaming, 10).await;
    assert_eq!(code, 200);
    assert_eq!(lines.iter().filter(|l| l["type"] == "ADDED").count(), 3);
    assert!(
        lines.iter().all(|l| l
            .pointer("/object/metadata/annotations/k8s.io~1initial-events-end")
            .is_none()),
        "no initial-events-end bookmark: {lines:?}"
    );
    let (_, table_list) = {
        let req = http::Request::get(SANDBOXES_PATH)
            .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
            .body(Vec::new())
            .unwrap();
        let resp = c.send(req.map(kube::client::Body::from)).await.unwrap();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        ((), serde_json::from_slice::<Value>(&bytes).unwrap())
    };
    assert!(
        table_list["metadata"].get("continue").is_none(),
        "{}",
        table_list["metadata"]
    );
    let (code, v2) = get(&c, "/openapi/v2").await;
    assert_eq!((code, v2["swagger"].as_str()), (200, Some("2.0")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_gc_delay_dependents_go_later_and_a_bound_pod_stays_terminating() {
    let t = start().await;
    let c = t.client().await;
    t.sim.set_strict(false);
    t.sim.set_gc_delay(Some(ChronoDuration::seconds(2)));
    // a bound pod: Terminating until its kubelet confirms
    let (code, body, _) = raw(&c, "DELETE", "/api/v1/namespaces/agents/pods/namzu-ws-awake", "", b"").await;
    assert_eq!(code, 200, "{body}");
    let pod = t
        .sim
        .get(&PODS, "agents", "namzu-ws-awake")
        .expect("still there, Terminating");
    assert!(pod["metadata"]["deletionTimestamp"].is_string(), "{pod}");
    t.sim.advance(ChronoDuration::seconds(3));
    let _ = get(&c, SANDBOXES_PATH).await;
    let gone_or_new = t.sim.get(&PODS, "agents", "namzu-ws-awake");
    assert!(
        gone_or_new
            .as_ref()
            .is_none_or(|p| p["metadata"]["uid"] != pod["metadata"]["uid"]),
        "{gone_or_new:?}"
    );
    // an owner: its dependents are still there after the DELETE, gone after the GC's delay
    let (code, body, _) = raw(
        &c,
        "DELETE",
        "/apis/agents.x-k8s.io/v1beta1/namespaces/agents/sandboxes/namzu-ws-asleep",
        "",
        b"",
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert!(t.sim.get(&SANDBOXES, "agents", "namzu-ws-asleep").is_none());
    let dependents = |t: &TestSim| {
        t.sim
            .list(&namzu_sim::resources::PVCS, Some("agents"))
            .into_iter()
            .filter(|p| p["metadata"]["name"].as_str().is_some_and(|n| n.contains("asleep")))
            .count()
    };
    let before = dependents(&t);
    assert!(before > 0, "the Suspended workspace keeps its PVCs");
    t.sim.advance(ChronoDuration::seconds(3));
    let _ = get(&c, SANDBOXES_PATH).await;
    assert_eq!(dependents(&t), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_delete_precondition_is_worded_as_the_api_server_does() {
    let t = start().await;
    let c = t.client().await;
    let opts = br#"{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"not-the-uid"}}"#;
    let (code, body, _) = raw(&c, "DELETE", AWAKE, "application/json", opts).await;
    assert_eq!(code, 409, "{body}");
    let uid = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap()["metadata"]["uid"].clone();
    let uid = uid.as_str().unwrap();
    assert_eq!(
        body["message"],
        format!(
            "Operation cannot be fulfilled on Sandbox.agents.x-k8s.io \"namzu-ws-awake\": the UID in the precondition (not-the-uid) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
        )
    );
    assert_eq!(body["details"]["kind"], "Sandbox");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_all_writes_nothing_and_answers_as_if_written() {
    let t = start().await;
    let c = t.client().await;
    t.sim.set_strict(false);
    let before = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    let (_, list) = get(&c, SANDBOXES_PATH).await;
    let rv_before = rv(&list);
    let merge = "application/merge-patch+json";
    let (code, patched, _) = raw(
        &c,
        "PATCH",
        &format!("{AWAKE}?dryRun=All"),
        merge,
        br#"{"spec":{"operatingMode":"Suspended"}}"#,
    )
    .await;
    assert_eq!((code, &patched["spec"]["operatingMode"]), (200, &json!("Suspended")));
    let new = json!({"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox",
        "metadata":{"name":"dry","namespace":"agents"},"spec":{"podTemplate":{"spec":{"containers":[]}}}});
    let (code, created, _) = raw(
        &c,
        "POST",
        &format!("{SANDBOXES_PATH}?dryRun=All"),
        "application/json",
        new.to_string().as_bytes(),
    )
    .await;
    assert_eq!((code, &created["metadata"]["name"]), (201, &json!("dry")), "{created}");
    let (code, _, _) = raw(&c, "DELETE", &format!("{AWAKE}?dryRun=All"), "", b"").await;
    assert_eq!(code, 200);
    assert!(t.sim.get(&SANDBOXES, "agents", "dry").is_none());
    assert_eq!(t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap(), before);
    let (_, list) = get(&c, SANDBOXES_PATH).await;
    assert_eq!(rv(&list), rv_before, "no resourceVersion moved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_validates_a_list_holding_a_pvc_and_a_cilium_policy() {
    let t = start().await;
    if std::process::Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: kubectl is not on PATH");
        return;
    }
    let list = r#"apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: listed, namespace: agents}
  spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
- apiVersion: cilium.io/v2
  kind: CiliumNetworkPolicy
  metadata: {name: listed, namespace: agents}
  spec: {endpointSelector: {}}
"#;
    let file = t.dir.path().join("list.yaml");
    std::fs::write(&file, list).unwrap();
    let args = vec![
        "--kubeconfig".to_string(),
        t.sim.kubeconfig().display().to_string(),
        "--cache-dir".into(),
        t.dir.path().join("kube-cache").display().to_string(),
        "create".into(),
        "-f".into(),
        file.display().to_string(),
    ];
    let out = tokio::task::spawn_blocking(move || std::process::Command::new("kubectl").args(&args).output())
        .await
        .unwrap()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(t.sim.get(&namzu_sim::resources::PVCS, "agents", "listed").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspects_events_table_fits_agent_sandbox_v1_reasons() {
    let t = start().await;
    t.sim
        .create(
            &EVENTS,
            json!({"apiVersion":"v1","kind":"Event","metadata":{"name":"ev1","namespace":"agents"},
                "type":"Warning","reason":"SandboxPodCreateFailed","message":"pods is forbidden",
                "involvedObject":{"kind":"Sandbox","name":"namzu-ws-awake","namespace":"agents"},
                "lastTimestamp": t.sim.now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)}),
        )
        .unwrap();
    let o = namzu(&t, &["inspect", "-n", "agents", "awake"]).await;
    let text = out(&o);
    let line = text
        .lines()
        .find(|l| l.contains("SandboxPodCreateFailed"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("SandboxPodCreateFailed  "),
        "the reason runs into the age: {line:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_all_namespaces_by_a_user_who_can_read_nothing_exits_1() {
    let t = start_with(SMALL, |c| {
        c.users = vec![User::with_rules(
            "elsewhere",
            "t-elsewhere",
            vec![Rule::new(&["get", "list", "watch"], &["*"], &["*"], &["other"])],
        )];
        c.namespace = "agents".into();
    })
    .await;
    let o = namzu(&t, &["list", "-A"]).await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "one line, as kubectl: {e}");
    assert!(e.contains("forbidden") || e.contains("may not"), "{e}");
    assert!(!e.contains("No workspaces found"), "{e}");
}

struct Live {
    app: App,
    actions: UnboundedReceiver<Action>,
    _io: Arc<namzu_tui::io::Io>,
}

impl Live {
    async fn until(&mut self, what: &str, mut seen: impl FnMut(&App), done: impl Fn(&App) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !done(&self.app) {
            match tokio::time::timeout_at(deadline, self.actions.recv()).await {
                Ok(Some(action)) => {
                    update(&mut self.app, action);
                    seen(&self.app);
                }
                _ => panic!("never saw {what}: streams {:?}", self.app.contexts[0].streams),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_apiserver_restart_the_tui_is_live_again_at_once_without_a_410_warning() {
    let mut t = start().await;
    let conn = connect(&t, t.sim.kubeconfig(), None, Duration::from_secs(2)).await;
    let app = App::new(AppOptions {
        contexts: vec![context_options(&conn, Default::default())],
        several_contexts: false,
        namespace: "agents".into(),
        all_namespaces: false,
        read_only: true,
        now: t.sim.now(),
    });
    let options = LiveOptions {
        poll_every: Duration::from_millis(200),
        probe_every: Duration::from_millis(200),
        watch_seconds: 290,
        ..Default::default()
    };
    let io = Arc::new(tui_io(vec![(conn, policy(true, Default::default()))], options));
    let (tx, actions) = unbounded_channel();
    let follower = io.clone();
    let mut live = Live { app, actions, _io: io };
    let follow = live.app.start().remove(0);
    assert!(matches!(follow, Effect::Follow { .. }));
    tokio::spawn(async move { follower.perform(follow, tx).await });
    live.until("the first screen", |_| {}, |a| a.contexts[0].loaded_at.is_some())
        .await;

    // an outage long enough for the watches' backoff to grow
    t.sim.stop().await;
    live.until("reconnecting", |_| {}, |a| a.contexts[0].stale_since().is_some())
        .await;
    let outage = tokio::time::Instant::now() + Duration::from_secs(3);
    while tokio::time::Instant::now() < outage {
        if let Ok(Some(action)) = tokio::time::timeout_at(outage, live.actions.recv()).await {
            update(&mut live.app, action);
        }
    }
    t.sim.modify(&SANDBOXES, "agents", "namzu-ws-awake", |o| {
        o["metadata"]["annotations"]["sandbox.namzu.ai/holder-epoch"] = json!("9");
    });
    let back = std::time::Instant::now();
    t.sim.restart_expiring().await.unwrap();
    let warned = RefCell::new(Vec::new());
    live.until(
        "live again with the change",
        |a| {
            for s in a.contexts[0].streams.values() {
                if let StreamStatus::Reconnecting { why, .. } = s
                    && why.contains("(410)")
                {
                    warned.borrow_mut().push(why.clone());
                }
            }
        },
        |a| {
            a.contexts[0].stale_since().is_none()
                && a.inventory
                    .rows()
                    .iter()
                    .any(|w| w.id == "awake" && w.epoch.epoch == Some(9))
        },
    )
    .await;
    let took = back.elapsed();
    assert!(warned.borrow().is_empty(), "{:?}", warned.borrow());
    assert!(took < Duration::from_secs(2), "live again {took:?} after the restart");
}
