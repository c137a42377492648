//! The leftovers of issues 26, 27 and 28, each through the real binary on the sim: the wording of
//! a failed `/version`, the library's unfenced refresh said and audited as such, the scenario's
//! server knobs, `demo --serve` cleaning up on SIGTERM/SIGHUP, the rules file named before a
//! write, and the TUI's second `q` abandoning a write in flight.

use crate::support::*;
use kubectl_namzu::sim::faults::Fault;
use serde_json::Value;

const V1: &str = r#"{metadata: {labels: {app: agent, sandbox.namzu.ai/template: ws}}, spec: {terminationGracePeriodSeconds: 5, nodeSelector: {kubernetes.io/arch: amd64, pool: blue}, containers: [{name: main, image: "namzu/agent:1", volumeDevices: [{name: workspace-disk, devicePath: /dev/workspace}]}]}}"#;
const V2: &str = r#"{metadata: {labels: {app: agent, sandbox.namzu.ai/template: ws}}, spec: {terminationGracePeriodSeconds: 90, nodeSelector: {kubernetes.io/arch: amd64}, containers: [{name: main, image: "namzu/agent:2", volumeDevices: [{name: workspace-disk, devicePath: /dev/workspace}]}]}}"#;
const H1: &str = "sha256:7f3b5b2c5b7612709730dde3a89f382b803a3612244cc863752280125508e5e3";

fn refresh_scenario() -> String {
    format!(
        "namespaces: [ns]\nobjects:\n  - apiVersion: extensions.agents.x-k8s.io/v1beta1\n    kind: SandboxTemplate\n    metadata: {{name: ws, namespace: ns}}\n    spec: {{podTemplate: {V2}, volumeClaimTemplates: [{{metadata: {{name: workspace-disk}}, spec: {{accessModes: [ReadWriteOnce], volumeMode: Block}}}}]}}\nworkspaces:\n  - {{namespace: ns, id: desk, podTemplate: {V1}, mode: Suspended, hash: \"{H1}\"}}\n"
    )
}

fn audit_entries(t: &TestSim) -> Vec<Value> {
    std::fs::read_to_string(t.dir.path().join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Issue 26: a failed `GET /version` is in no namespace; a list across namespaces still says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_version_request_names_no_namespace() {
    let t = start().await;
    t.sim.add_fault(Fault::status(Some("GET"), "/version", 403, "no"));
    let o = namzu(&t, &["tui"]).await;
    assert!(!o.status.success());
    assert!(err(&o).contains("get /version"), "{}", err(&o));
    assert!(!err(&o).contains("namespaces"), "{}", err(&o));
}

/// Issue 27: a refresh of a workspace with no stored epoch carries none: the tool says so and
/// audits `epochCarried: null`, not "keeps holder epoch 0".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfenced_refresh_says_and_audits_no_holder_epoch() {
    let t = start_with(&refresh_scenario(), |c| c.namespace = "ns".into()).await;
    let o = run_audited(&t, &["resume", "desk", "--refresh-template"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let said = format!("{}{}", out(&o), err(&o));
    assert!(
        said.contains("no holder epoch (unfenced, as the library refreshes)"),
        "{said}"
    );
    assert!(!said.contains("holder epoch 0"), "{said}");
    let entries = audit_entries(&t);
    let applied: Vec<&Value> = entries.iter().filter(|e| e["outcome"] == "applied").collect();
    assert_eq!(applied.len(), 1, "{entries:?}");
    assert!(applied[0]["epochCarried"].is_null(), "{entries:?}");
    assert!(applied[0].get("epochCarried").is_some(), "{entries:?}");
}
