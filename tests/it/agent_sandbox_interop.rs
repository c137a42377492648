//! agent-sandbox as it writes and serves its objects, across versions, through the real binary on
//! the sim: `annotations: null` read as a map (as the library reads it), a controller that lags
//! after a write, v1.0's `AdoptionPending` read as starting, v1.0's CRDs served by default and
//! 0.5's on a scenario knob.

use crate::support::*;
use kube::api::DynamicObject;
use namzu_sim::controller::Knobs;
use namzu_sim::faults::{Fault, FaultAction};
use namzu_sim::resources::SANDBOXES;
use serde_json::Value;

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
    let rows = listed(&namzu(&t, &["-n", "agents", "list", "-o", "json"]).await);
    let row = rows.iter().find(|r| r["id"] == "awake").unwrap();
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
