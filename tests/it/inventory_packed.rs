//! The inventory pass derived one Sandbox at a time from packed lists (`list -A`, capacity, the
//! write selections) gives the rows the whole-namespace derivation gives.

use crate::support::*;
use namzu_domain::state::State;
use namzu_domain::workspace::Workspace;
use namzu_engine::cluster::inventory::{self, Query, Scope};
use std::time::Duration;

async fn packed_rows(conn: &namzu_engine::cluster::connect::Connection, scope: &Scope, t: &TestSim) -> Vec<Workspace> {
    let mut rows = Vec::new();
    let mut order = Vec::new();
    inventory::read_packed(conn, scope, &Query::default(), &mut |packed| {
        order.push(packed.namespace.clone());
        packed.derive(&Default::default(), t.sim.now(), |w| rows.push(w));
    })
    .await
    .unwrap();
    let mut sorted = order.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(order, sorted, "namespaces come in name order, each once");
    rows
}

/// Every row of the demo (foreign pods and disks, a pod found by selector, drift, egress …)
/// derived from the packed lists equals the row of the whole-namespace derivation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packed_derivation_equals_the_whole_namespace_derivation_on_the_demo() {
    let t = start_demo().await;
    let conn = connect(&t, t.sim.kubeconfig(), None, Duration::from_secs(5)).await;
    for scope in [Scope::All, Scope::Namespace("agents".into())] {
        let whole = inventory::read(&conn, &scope, &Query::default()).await.unwrap();
        let expected = whole.workspaces(&Default::default(), t.sim.now());
        let rows = packed_rows(&conn, &scope, &t).await;
        assert!(!rows.is_empty());
        assert_eq!(rows.len(), expected.len());
        for (p, w) in rows.iter().zip(&expected) {
            assert_eq!(p, w, "{} differs", w.id);
        }
    }
}

/// A selection yields (namespace, id) in namespace then list order, the filter applied; a
/// Sandbox whose name holds no valid id is skipped with a warning after the read's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_yields_the_selected_ids_one_namespace_at_a_time() {
    let t = start_demo().await;
    let conn = connect(&t, t.sim.kubeconfig(), None, Duration::from_secs(5)).await;
    let now = t.sim.now();
    let whole = inventory::read(&conn, &Scope::All, &Query::default()).await.unwrap();
    let running: Vec<(String, String)> = whole
        .workspaces(&Default::default(), now)
        .into_iter()
        .filter(|w| w.state == State::Running)
        .map(|w| (w.namespace, w.id))
        .collect();
    assert!(running.len() > 1);
    let (warnings, targets) = namzu_engine::ops::inventory::select(
        &namzu_engine::ops::inventory::Source::Live,
        &conn,
        &Scope::All,
        &Query::default(),
        &Default::default(),
        now,
        &|w: &Workspace| w.state == State::Running,
    )
    .await
    .unwrap();
    assert_eq!(warnings, whole.warnings);
    let got: Vec<(String, String)> = targets.into_iter().map(|(ns, id)| (ns, id.to_string())).collect();
    assert_eq!(got, running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_skips_a_sandbox_without_a_valid_id_with_a_warning() {
    let t = start_with(
        "namespaces: [a]\nworkspaces:\n  - {namespace: a, id: good, mode: Running, podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: t}}}}\n",
        |_| {},
    )
    .await;
    // a Sandbox named like a workspace whose name holds no valid id (a dot)
    let api = sandboxes(&t.client().await, "a");
    let mut odd: serde_json::Value = serde_json::to_value(api.get("namzu-ws-good").await.unwrap()).unwrap();
    odd["metadata"] = serde_json::json!({"name": "namzu-ws-not.an.id", "namespace": "a"});
    odd.as_object_mut().unwrap().remove("status");
    api.create(&Default::default(), &serde_json::from_value(odd).unwrap())
        .await
        .unwrap();
    let conn = connect(&t, t.sim.kubeconfig(), None, Duration::from_secs(5)).await;
    let (warnings, targets) = namzu_engine::ops::inventory::select(
        &namzu_engine::ops::inventory::Source::Live,
        &conn,
        &Scope::Namespace("a".into()),
        &Query::default(),
        &Default::default(),
        t.sim.now(),
        &|_: &Workspace| true,
    )
    .await
    .unwrap();
    let got: Vec<(String, String)> = targets.into_iter().map(|(ns, id)| (ns, id.to_string())).collect();
    assert_eq!(got, [("a".to_string(), "good".to_string())]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("skipped: ") && warnings[0].contains("not.an.id"),
        "{warnings:?}"
    );
}
