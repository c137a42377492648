//! The built-in demo scenario loads, and every stored hash is the hash of the stored template.

use kubectl_namzu::domain::canonical::pod_template_hash;
use kubectl_namzu::domain::keys::{PER_SANDBOX_LABEL, POD_TEMPLATE_HASH};
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
    // a workspace with per-sandbox egress was hashed with its per-sandbox label or without it
    // (the library's choice is not visible): the demo has one of each
    let (mut with_label, mut without_label) = (0, 0);
    for w in &workspaces {
        if let Some(h) = w["metadata"]["annotations"].get(POD_TEMPLATE_HASH) {
            let stored = &w["spec"]["podTemplate"];
            let mut stripped = stored.clone();
            let per_sandbox = stripped["metadata"]["labels"]
                .as_object_mut()
                .and_then(|l| l.remove(PER_SANDBOX_LABEL))
                .is_some();
            let h = h.as_str().unwrap();
            if !per_sandbox {
                assert_eq!(h, pod_template_hash(stored), "{}", w["metadata"]["name"]);
            } else if h == pod_template_hash(stored) {
                with_label += 1;
            } else {
                assert_eq!(h, pod_template_hash(&stripped), "{}", w["metadata"]["name"]);
                without_label += 1;
            }
        }
    }
    assert_eq!((with_label, without_label), (1, 1));
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
