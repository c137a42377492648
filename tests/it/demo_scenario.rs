//! The built-in demo scenario loads, and every stored hash is the hash of the stored template.

use kubectl_namzu::domain::canonical::pod_template_hash;
use kubectl_namzu::domain::keys::POD_TEMPLATE_HASH;
use kubectl_namzu::domain::naming::is_workspace;
use kubectl_namzu::sim::resources::SANDBOXES;
use kubectl_namzu::sim::scenario::Scenario;
use kubectl_namzu::sim::{Sim, SimConfig};

#[tokio::test]
async fn demo_scenario_loads_with_consistent_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let config = SimConfig::for_tests(&dir.path().join("kc"));
    let scenario = Scenario::demo(config.manual_clock.unwrap());
    let sim = Sim::start(config, &scenario).await.unwrap();
    let all = sim.list(&SANDBOXES, None);
    let workspaces: Vec<_> = all.iter().filter(|s| is_workspace(s)).collect();
    assert!(workspaces.len() >= 20, "{}", workspaces.len());
    assert_eq!(
        all.len() - workspaces.len(),
        3,
        "three Sandboxes that are not workspaces"
    );
    let mut namespaces: Vec<_> = workspaces
        .iter()
        .map(|w| w["metadata"]["namespace"].as_str().unwrap())
        .collect();
    namespaces.dedup();
    assert_eq!(namespaces.len(), 3);
    for w in &workspaces {
        if let Some(h) = w["metadata"]["annotations"].get(POD_TEMPLATE_HASH) {
            assert_eq!(
                h.as_str().unwrap(),
                pod_template_hash(&w["spec"]["podTemplate"]),
                "{}",
                w["metadata"]["name"]
            );
        }
    }
    // the three annotation shapes of docs/interop.md §4 among Running workspaces
    let running: Vec<_> = workspaces
        .iter()
        .filter(|w| w["spec"]["operatingMode"] == "Running")
        .collect();
    assert!(running.iter().any(|w| {
        w["metadata"]["annotations"]
            .get("sandbox.namzu.ai/holder-epoch")
            .is_some()
    }));
    assert!(running.iter().any(|w| {
        w["metadata"]
            .get("annotations")
            .is_some_and(|a| a.get("sandbox.namzu.ai/holder-epoch").is_none())
    }));
    assert!(running.iter().any(|w| w["metadata"].get("annotations").is_none()));
}
