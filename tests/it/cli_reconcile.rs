//! `kubectl namzu reconcile`: the library's closure answer for a retained identity (docs/interop.md
//! §13.3) — live, suspended, absent (exit 4) or replaced (exit 6) — from GET requests only.

use crate::support::*;
use namzu_sim::faults::{Fault, FaultAction, Mutation};
use namzu_sim::resources::{PVCS, SANDBOXES};
use serde_json::Value;

/// `awake` (Running, two disks), `asleep` (Suspended), `stranger` (its disk owned by an earlier
/// Sandbox of the same name).
const SCENARIO: &str = r#"
namespaces: [ns]
workspaces:
  - {namespace: ns, id: awake, disks: [workspace-disk, cache], podTemplate: &pt {metadata: {labels: {sandbox.namzu.ai/template: ws}}, spec: {containers: [{name: c, image: i}]}}}
  - {namespace: ns, id: asleep, mode: Suspended, podTemplate: *pt}
  - {namespace: ns, id: stranger, podTemplate: *pt, knobs: {foreignDisk: true}}
"#;

async fn sim() -> TestSim {
    start_with(SCENARIO, |c| c.namespace = "ns".into()).await
}

fn uid(t: &TestSim, id: &str) -> String {
    t.sim.get(&SANDBOXES, "ns", &format!("namzu-ws-{id}")).unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string()
}

fn claim_uid(t: &TestSim, pvc: &str) -> String {
    t.sim.get(&PVCS, "ns", pvc).unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn reconcile(t: &TestSim, args: &[&str]) -> (Option<i32>, Value) {
    let mut full = vec!["reconcile"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["-o", "json"]);
    let o = namzu(t, &full).await;
    assert!(err(&o).is_empty(), "an answer is not an error: {}", err(&o));
    (o.status.code(), serde_json::from_str(&out(&o)).expect("JSON"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retained_workspace_is_live_or_suspended() {
    let t = sim().await;
    let (disk, cache) = (
        claim_uid(&t, "workspace-disk-namzu-ws-awake"),
        claim_uid(&t, "cache-namzu-ws-awake"),
    );
    let claim = format!("workspace-disk={disk}");
    t.sim.clear_requests();
    let (code, v) = reconcile(&t, &["awake", "--uid", &uid(&t, "awake"), "--claim", &claim]).await;
    assert_eq!(code, Some(0));
    assert_eq!(v["state"], "live");
    assert_eq!(v["identity"]["volumeClaimUids"]["cache"], cache.as_str());
    assert!(v["identity"]["podUid"].is_string());
    // GET only, in the library's order: the Sandbox, each claim, the pod
    let paths: Vec<String> = t
        .sim
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        paths,
        [
            "GET /apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes/namzu-ws-awake",
            "GET /api/v1/namespaces/ns/persistentvolumeclaims/workspace-disk-namzu-ws-awake",
            "GET /api/v1/namespaces/ns/persistentvolumeclaims/cache-namzu-ws-awake",
            "GET /api/v1/namespaces/ns/pods/namzu-ws-awake",
        ]
    );
    let (code, v) = reconcile(&t, &["asleep", "--uid", &uid(&t, "asleep")]).await;
    assert_eq!((code, v["state"].as_str()), (Some(0), Some("suspended")));
    assert_eq!(
        v["identity"]["podUid"],
        Value::Null,
        "no pod uid for a suspended workspace"
    );
    let o = namzu(&t, &["reconcile", "asleep", "--uid", &uid(&t, "asleep")]).await;
    assert!(
        out(&o).starts_with("suspended: namzu-ws-asleep is the retained workspace"),
        "{}",
        out(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_working_is_never_a_change_of_owner() {
    let t = sim().await;
    let awake = uid(&t, "awake");
    // a moved resourceVersion, a flipped Ready from an older generation: still live
    t.sim.modify(&SANDBOXES, "ns", "namzu-ws-awake", |o| {
        o["status"]["conditions"][0]["status"] = "False".into();
        o["status"]["conditions"][0]["observedGeneration"] = 0.into();
    });
    t.sim.add_fault(Fault::new(
        Some("GET"),
        "sandboxes/namzu-ws-awake",
        FaultAction::Mutate(Mutation::BumpResourceVersion),
    ));
    let (code, v) = reconcile(&t, &["awake", "--uid", &awake]).await;
    assert_eq!((code, v["state"].as_str()), (Some(0), Some("live")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_sandbox_under_the_name_is_absent_exit_4() {
    let t = sim().await;
    let (code, v) = reconcile(&t, &["gone", "--uid", "u-1"]).await;
    assert_eq!((code, v["state"].as_str()), (Some(4), Some("absent")));
    assert!(v.get("identity").is_none());
    let o = namzu(&t, &["reconcile", "gone", "--uid", "u-1"]).await;
    assert_eq!(out(&o), "absent: no Sandbox namzu-ws-gone in namespace ns\n");
    assert!(err(&o).is_empty(), "{}", err(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_under_the_name_is_replaced_exit_6_with_its_identity() {
    let t = sim().await;
    let awake = uid(&t, "awake");
    // another Sandbox uid
    let (code, v) = reconcile(&t, &["awake", "--uid", "the-old-one"]).await;
    assert_eq!((code, v["state"].as_str()), (Some(6), Some("replaced")));
    assert_eq!(v["mismatch"]["kind"], "sandbox-uid");
    assert_eq!(v["mismatch"]["expected"], "the-old-one");
    assert_eq!(v["identity"]["sandboxUid"], awake.as_str(), "the stranger's identity");
    // the same Sandbox, but a claim with another uid than the one retained
    let (code, v) = reconcile(&t, &["awake", "--uid", &awake, "--claim", "cache=an-older-disk"]).await;
    assert_eq!(code, Some(6));
    assert_eq!(
        (v["mismatch"]["kind"].as_str(), v["mismatch"]["claim"].as_str()),
        (Some("volume-claim-uid"), Some("cache"))
    );
    // a claim owned by another Sandbox
    let (code, v) = reconcile(&t, &["stranger", "--uid", &uid(&t, "stranger")]).await;
    assert_eq!(code, Some(6));
    assert_eq!(v["mismatch"]["kind"], "volume-claim-owner");
    let o = namzu(&t, &["reconcile", "awake", "--uid", "the-old-one"]).await;
    assert_eq!(o.status.code(), Some(6));
    assert!(
        out(&o).starts_with("replaced (sandbox-uid): the Sandbox is uid "),
        "{}",
        out(&o)
    );
    assert!(err(&o).is_empty(), "{}", err(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_read_is_an_error_never_absent() {
    let t = sim().await;
    let awake = uid(&t, "awake");
    for (path, code) in [
        ("sandboxes/namzu-ws-awake", 500),
        ("sandboxes/namzu-ws-awake", 403),
        ("persistentvolumeclaims/cache-namzu-ws-awake", 500),
        ("pods/namzu-ws-awake", 500),
    ] {
        t.sim.clear_faults();
        t.sim
            .add_fault(Fault::status(Some("GET"), path, code, "the read failed"));
        let o = namzu(&t, &["reconcile", "awake", "--uid", &awake]).await;
        assert_eq!(o.status.code(), Some(1), "{path} {code}: {}", out(&o));
        assert!(out(&o).is_empty(), "{path}: no answer: {}", out(&o));
        assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
    }
    assert!(t.sim.requests().iter().all(|r| r.method == "GET"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_reconcile_input_is_one_line_and_exit_2_before_any_request() {
    let t = sim().await;
    t.sim.clear_requests();
    for args in [
        vec!["reconcile", "awake"],
        vec!["reconcile", "awake", "--uid", ""],
        vec!["reconcile", "Not An Id", "--uid", "u"],
        vec!["reconcile", "awake", "--uid", "u", "--claim", "no-equals"],
        vec!["reconcile", "awake", "--uid", "u", "--claim", "=u2"],
        vec!["reconcile", "awake", "--uid", "u", "--claim", "a=1", "--claim", "a=2"],
        vec!["reconcile", "-A", "awake", "--uid", "u"],
    ] {
        let o = namzu(&t, &args).await;
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert_eq!(err(&o).lines().count(), 1, "{args:?}: {}", err(&o));
    }
    assert!(t.sim.requests().is_empty(), "{:?}", t.sim.requests());
}

/// `reconcile --claim typo=X`: an entry the Sandbox has no volumeClaimTemplates entry for is one
/// line and exit 2, never silently ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_refuses_a_claim_entry_the_sandbox_lacks() {
    let t = sim().await;
    let entries = t.sim.get(&SANDBOXES, "ns", "namzu-ws-awake").unwrap()["spec"]["volumeClaimTemplates"].clone();
    let o = namzu(
        &t,
        &["reconcile", "awake", "--uid", &uid(&t, "awake"), "--claim", "typo=u-1"],
    )
    .await;
    assert_eq!(o.status.code(), Some(2), "{} {entries}", err(&o));
    assert!(
        err(&o).contains("no volumeClaimTemplates entry \"typo\""),
        "{}",
        err(&o)
    );
    assert_eq!(err(&o).trim_end().lines().count(), 1);
}
