//! Many writers, one workspace: tool invocations (keeping and taking over the epoch) against a
//! simulated host that keeps taking over. Afterwards the sim's record must show every applied
//! write conditional, epochs never going backwards, and the object matching the last write.

use crate::support::*;
use kube::api::{Patch, PatchParams};
use namzu_sim::resources::SANDBOXES;
use serde_json::{Value, json};

const E: &str = "/metadata/annotations/sandbox.namzu.ai~1holder-epoch";
const EPOCH_KEY: &str = "sandbox.namzu.ai/holder-epoch";

/// The epoch and mode an applied PATCH body wrote.
fn written(body: &Value) -> (Option<u64>, Option<String>) {
    let mut epoch = None;
    let mut mode = None;
    for op in body.as_array().unwrap() {
        if op["op"] != "add" {
            continue;
        }
        if op["path"] == E {
            epoch = op["value"].as_str().and_then(|v| v.parse().ok());
        }
        if op["path"] == "/metadata/annotations" {
            epoch = op["value"][EPOCH_KEY].as_str().and_then(|v| v.parse().ok());
        }
        if op["path"] == "/spec/operatingMode" {
            mode = op["value"].as_str().map(str::to_string);
        }
    }
    (epoch, mode)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_never_lose_the_fence() {
    let scenario = "namespaces: [ns]\nworkspaces:\n  - {namespace: ns, id: shared-desk, epoch: \"1\", podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: ws}}, spec: {containers: [{name: c, image: i}]}}}\n";
    let t = start_with(scenario, |c| c.namespace = "ns".into()).await;
    // a third party stamps a far higher epoch just before the 6th PATCH is served: that PATCH's
    // test must fail, whatever the interleaving, and everyone below 1000 is fenced out after it
    t.sim
        .add_fault(before_patch("/sandboxes/namzu-ws-shared-desk", 6, stamp_epoch("1000")));
    let kc = t.sim.kubeconfig().display().to_string();
    let audit = t.dir.path().join("audit.jsonl").display().to_string();

    let tool = |who: usize| {
        let (kc, audit) = (kc.clone(), audit.clone());
        async move {
            for round in 0..8 {
                let verb = if (round + who).is_multiple_of(2) {
                    "suspend"
                } else {
                    "resume"
                };
                let mut args = vec![
                    "--kubeconfig".to_string(),
                    kc.clone(),
                    verb.into(),
                    "shared-desk".into(),
                ];
                if round % 3 == who % 3 {
                    args.push("--take-over".into());
                }
                let o = namzu_env(args, vec![("KUBECTL_NAMZU_AUDIT_LOG".into(), audit.clone())]).await;
                // applied, unchanged, or refused/changed concurrently — never anything else
                assert!(matches!(o.status.code(), Some(0 | 3)), "{}{}", out(&o), err(&o));
            }
        }
    };
    let client = t.client().await;
    let host = async {
        let api = sandboxes(&client, "ns");
        for round in 0..12u32 {
            let current = api.get("namzu-ws-shared-desk").await.unwrap();
            let stored = current
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(EPOCH_KEY))
                .cloned()
                .unwrap_or_default();
            let next: u64 = stored.parse::<u64>().unwrap() + 1;
            let mode = if round.is_multiple_of(2) {
                "Suspended"
            } else {
                "Running"
            };
            let patch: json_patch::Patch = serde_json::from_value(json!([
                {"op":"test","path":E,"value":stored},
                {"op":"add","path":E,"value":next.to_string()},
                {"op":"add","path":"/spec/operatingMode","value":mode}]))
            .unwrap();
            // a 422 means a tool got there first: the host simply tries again next round
            let _ = api
                .patch(
                    "namzu-ws-shared-desk",
                    &PatchParams::default(),
                    &Patch::Json::<()>(patch),
                )
                .await;
            tokio::task::yield_now().await;
        }
    };
    tokio::join!(tool(0), tool(1), tool(2), host);

    let patches: Vec<_> = t.sim.requests().into_iter().filter(|r| r.method == "PATCH").collect();
    assert!(patches.len() >= 20, "enough contention: {}", patches.len());
    let mut highest = 0u64;
    let mut last_mode = None;
    let mut applied = 0;
    for p in &patches {
        let body = p.body.as_ref().unwrap();
        assert_eq!(body[0]["op"], "test", "every write is conditional");
        if p.status != 200 {
            assert!(matches!(p.status, 422), "only fence failures: {}", p.status);
            continue;
        }
        applied += 1;
        let (epoch, mode) = written(body);
        let epoch = epoch.expect("every applied write stamps the epoch");
        assert!(
            epoch >= highest,
            "an applied write carried {epoch} after {highest} was stored"
        );
        highest = epoch;
        if mode.is_some() {
            last_mode = mode;
        }
    }
    assert!(
        applied >= 5 && patches.iter().any(|p| p.status == 422),
        "both outcomes happened (the 6th PATCH is always refused)"
    );
    let end = t.sim.get(&SANDBOXES, "ns", "namzu-ws-shared-desk").unwrap();
    assert_eq!(end["metadata"]["annotations"][EPOCH_KEY], highest.to_string());
    assert_eq!(end["spec"]["operatingMode"].as_str(), last_mode.as_deref());
}
