//! `inspect`, `drift` and `capacity` as processes against the demo scenario.

use crate::support::*;
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_shows_identity_conditions_events_and_the_claim_warning() {
    let t = start_demo().await;
    let o = namzu(&t, &["inspect", "-n", "agents", "juliet"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    for want in [
        "Name:            namzu-ws-juliet",
        "State:           Suspending",
        "Diagnosis:       stuck-terminating",
        "Holder epoch:    9 (annotation \"9\")",
        "Stored hash:",
        "Pod:             namzu-ws-juliet",
        "(terminating)",
        "workspace-disk-namzu-ws-juliet",
        "Bound",
        "SandboxSuspended",
        "PodTerminating",
        "gen 1/1",
        "Killing",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let romeo = out(&namzu(&t, &["describe", "-n", "agents", "romeo"]).await);
    assert!(
        romeo.contains("SandboxClaim claim-romeo") && romeo.contains("delete the claim instead"),
        "{romeo}"
    );
    let oscar = out(&namzu(&t, &["inspect", "-n", "agents", "oscar"]).await);
    assert!(oscar.contains("STALE"), "{oscar}");
    let sierra = out(&namzu(&t, &["inspect", "-n", "agents", "sierra"]).await);
    assert!(
        sierra.contains("unreadable: the annotation reads \"latest\""),
        "{sierra}"
    );
    let charlie = out(&namzu(&t, &["inspect", "-n", "agents", "charlie"]).await);
    assert!(
        charlie.contains("Mode changed at: - (never changed") && charlie.contains("0 (no holder-epoch annotation)"),
        "{charlie}"
    );

    let json: Value = serde_json::from_str(&out(
        &namzu(&t, &["inspect", "-n", "agents", "foxtrot", "-o", "json"]).await
    ))
    .unwrap();
    assert_eq!(json["diagnosis"]["kind"], "unschedulable");
    assert!(
        json["diagnosis"]["message"]
            .as_str()
            .unwrap()
            .contains("Insufficient memory")
    );
    assert!(
        json["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["reason"] == "FailedScheduling")
    );

    let missing = namzu(&t, &["inspect", "-n", "agents", "nobody"]).await;
    assert_eq!(missing.status.code(), Some(4));
    assert_eq!(
        err(&missing).trim(),
        "error: workspace nobody not found in namespace agents"
    );
    let bad = namzu(&t, &["inspect", "Not_A_Label"]).await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(err(&bad).contains("cannot name a Sandbox"), "{}", err(&bad));
    assert_eq!(
        t.sim
            .requests()
            .iter()
            .filter(|r| r.path.contains("Not_A_Label"))
            .count(),
        0,
        "refused before any request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_shows_field_changes() {
    let t = start_demo().await;
    let o = namzu(&t, &["drift", "-n", "agents", "bravo"]).await;
    let text = out(&o);
    assert!(text.starts_with("bravo (agents): drifted"), "{text}");
    assert!(
        text.contains("spec.containers[0].image: \"ghcr.io/namzu/agent:1.3.0\" → \"ghcr.io/namzu/agent:1.4.2\""),
        "{text}"
    );
    assert!(
        text.contains("spec.containers[0].resources.limits.memory: \"2Gi\" → \"4Gi\""),
        "{text}"
    );

    let all: Value = serde_json::from_str(&out(&namzu(&t, &["drift", "-A", "-o", "json"]).await)).unwrap();
    let ids: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["bravo", "delta", "ember", "flint", "golf", "papa", "quebec"]);
    assert!(
        all[0]["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["path"] == "spec.containers[0].image")
    );

    let current = out(&namzu(&t, &["drift", "-n", "agents", "alpha"]).await);
    assert!(
        current.contains("current") && current.contains("current revision"),
        "{current}"
    );
    let gone = out(&namzu(&t, &["drift", "-n", "research", "victor"]).await);
    assert!(gone.contains("no-template"), "{gone}");
    // a host overlay given as a flag changes what "current" means
    let flagged: Value = serde_json::from_str(&out(&namzu(
        &t,
        &[
            "drift",
            "-n",
            "agents",
            "alpha",
            "-o",
            "json",
            "--runtime-class",
            "kata-qemu",
        ],
    )
    .await))
    .unwrap();
    assert_eq!(flagged[0]["state"], "drifted");
    assert_eq!(flagged[0]["changes"][0]["path"], "spec.runtimeClassName");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_counts_pools_claims_pending_pods_and_states() {
    let t = start_demo().await;
    let o = namzu(&t, &["capacity", "-n", "agents", "-o", "json"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    let agents = &v[0];
    assert_eq!(agents["namespace"], "agents");
    assert_eq!(agents["warmPools"][0]["name"], "coder-pool");
    assert_eq!(
        (
            agents["warmPools"][0]["ready"].as_i64(),
            agents["warmPools"][0]["desired"].as_i64()
        ),
        (Some(2), Some(3))
    );
    assert_eq!(agents["warmPools"][0]["claims"], 2);
    assert_eq!(
        agents["pendingPods"], 4,
        "foxtrot (unschedulable), golf (image pull), india (disk pending), umber (disk missing)"
    );
    // oscar's Ready is an older generation's, tempest has no live pod, zinc an unknown reason
    assert_eq!(agents["workspaces"]["Starting"], 8);
    let table = out(&namzu(&t, &["capacity", "-A"]).await);
    assert!(
        table.contains("coder-pool") && table.contains("2/3") && table.contains("research"),
        "{table}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_names_each_claims_owners_and_flags_a_legacy_pod_name() {
    let t = start_demo().await;
    let text = out(&namzu(&t, &["inspect", "topaz"]).await);
    let disk = text
        .lines()
        .find(|l| l.starts_with("  workspace-disk-namzu-ws-topaz"))
        .unwrap();
    assert!(
        disk.contains("owners: Sandbox namzu-ws-topaz (uid 0e0e0e0e-") && disk.contains("FOREIGN"),
        "{disk}"
    );
    assert!(text.contains("Diagnosis:       foreign-disk (ClaimNotOwned)"), "{text}");
    let text = out(&namzu(&t, &["inspect", "alpha"]).await);
    let disk = text
        .lines()
        .find(|l| l.starts_with("  workspace-disk-namzu-ws-alpha"))
        .unwrap();
    assert!(
        disk.contains("owners: Sandbox namzu-ws-alpha (uid ") && !disk.contains("FOREIGN"),
        "{disk}"
    );
    assert!(!text.contains("Legacy pod name"), "{text}");
    let o = namzu(&t, &["inspect", "zulu"]).await;
    let text = out(&o);
    assert!(
        text.contains("Legacy pod name: the agents.x-k8s.io/pod-name annotation names pod namzu-ws-zulu-7c9f2, not the Sandbox's own pod namzu-ws-zulu"),
        "{text}"
    );
    assert!(
        text.contains("Pod:             namzu-ws-zulu  uid"),
        "the Sandbox's own pod: {text}"
    );
    assert!(text.contains("State:           Running"), "{text}");
    let json: Value = serde_json::from_str(&out(&namzu(&t, &["inspect", "umber", "-o", "json"]).await)).unwrap();
    assert_eq!(json["missingVolumeClaims"], serde_json::json!(["workspace-disk"]));
    assert_eq!(json["diagnosis"]["kind"], "disk-missing");
}
