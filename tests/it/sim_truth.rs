//! The sim keeps and admits what a real cluster keeps and admits (Events expire after an hour,
//! requests defaulted from limits, a RuntimeClass's overhead), the tool reads a workspace's
//! resources from its pod as admitted, and a scenario of any size loads.

use super::support::*;
use chrono::Duration;
use futures::StreamExt;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use namzu_sim::resources::{PODS, SANDBOXES};
use serde_json::{Value, json};
use std::collections::BTreeSet;

fn core_events(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &ar("", "v1", "Event", "events"))
}

fn v1_events(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &ar("events.k8s.io", "v1", "Event", "events"))
}

async fn names(api: &Api<DynamicObject>) -> BTreeSet<String> {
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|e| e.metadata.name)
        .collect()
}

/// The DELETED events a watch has sent within a short while, by name.
async fn deleted(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<DynamicObject>>> + Unpin),
    want: usize,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    while out.len() < want {
        let next = tokio::time::timeout(std::time::Duration::from_secs(5), stream.next()).await;
        match next {
            Ok(Some(Ok(WatchEvent::Deleted(o)))) => {
                out.insert(o.metadata.name.unwrap_or_default());
            }
            Ok(Some(Ok(_))) => {}
            _ => break,
        }
    }
    out
}

/// Item 1: an Event is kept an hour after its last write (kube-apiserver's `--event-ttl`), then
/// gone from list, get and watch in both event APIs; a write renews it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_expire_an_hour_after_their_last_write() {
    let t = start().await;
    let client = t.client().await;
    let (core, v1) = (core_events(&client, "agents"), v1_events(&client, "agents"));
    let before = names(&core).await;
    assert!(before.len() >= 3, "the settled workspaces have events: {before:?}");
    assert_eq!(names(&v1).await, before, "one set of Events, two views");
    let list = core.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.clone().unwrap();
    let mut core_watch = core.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let mut v1_watch = v1.watch(&WatchParams::default(), &rv).await.unwrap().boxed();

    // half an hour on, one Event is written again (a recorder bumping its count): its lease renews
    t.sim.advance(Duration::minutes(30));
    let renewed = before.iter().next().unwrap().clone();
    core.patch(&renewed, &PatchParams::default(), &Patch::Merge(json!({"count": 2})))
        .await
        .unwrap();
    t.sim.advance(Duration::minutes(29));
    assert_eq!(names(&core).await, before, "59 minutes: every Event is still there");

    t.sim.advance(Duration::minutes(2));
    let expired: BTreeSet<String> = before.iter().filter(|n| **n != renewed).cloned().collect();
    let left = names(&core).await;
    assert!(
        left.is_disjoint(&expired),
        "an hour after their write they are gone: {left:?}"
    );
    assert!(left.contains(&renewed), "the one written again is kept: {left:?}");
    assert_eq!(names(&v1).await, left, "gone from events.k8s.io/v1 as well");
    let gone = expired.iter().next().unwrap();
    for api in [&core, &v1] {
        let e = api.get(gone).await.unwrap_err();
        assert_eq!(status_code(&e), Some(404), "get of an expired Event: {e}");
    }
    // etcd's lease expiry is a delete: both watches see DELETED for each expired Event
    assert_eq!(deleted(&mut core_watch, expired.len()).await, expired, "core/v1 watch");
    assert_eq!(
        deleted(&mut v1_watch, expired.len()).await,
        expired,
        "events.k8s.io/v1 watch"
    );

    t.sim.advance(Duration::minutes(30));
    assert!(
        !names(&core).await.contains(&renewed),
        "an hour after its last write it goes too"
    );
}

const TRUTH: &str = r#"
namespaces: [truth, cap]
objects:
  - apiVersion: node.k8s.io/v1
    kind: RuntimeClass
    metadata: {name: gvisor}
    handler: runsc
    overhead: {podFixed: {cpu: 250m, memory: 120Mi}}
revisions:
  limited: &limited
    metadata: {labels: {sandbox.namzu.ai/template: coder}}
    spec:
      runtimeClassName: gvisor
      containers:
        - name: agent
          image: "ghcr.io/x/agent:1.2"
          resources: {limits: {cpu: "1", memory: 2Gi}, requests: {cpu: 250m}}
workspaces:
  - {namespace: truth, id: limited, podTemplate: *limited}
  - {namespace: truth, id: asleep, podTemplate: *limited, mode: Suspended}
  - namespace: cap
    id: bound
    podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: coder}}, spec: {containers: [{name: agent, image: a, resources: {limits: {cpu: "1"}}}]}}
  - namespace: cap
    id: draining
    podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: coder}}, spec: {containers: [{name: agent, image: a, resources: {limits: {cpu: "2"}}}]}}
    knobs: {readyReason: PodTerminating, readyMessage: "Pod is terminating"}
  - namespace: cap
    id: unplaced
    podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: coder}}, spec: {containers: [{name: agent, image: a, resources: {limits: {cpu: "4"}}}]}}
    knobs: {unschedulable: "0/3 nodes are available: 3 Insufficient cpu."}
"#;

/// Items 2 and 3: the controller's pod and a pod created through the API are admitted as
/// kube-apiserver admits them: requests defaulted from limits, the RuntimeClass's overhead set,
/// the QoS class computed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_are_admitted_with_defaulted_requests_and_overhead() {
    let t = start_with(TRUTH, |_| {}).await;
    let client = t.client().await;
    // the controller's pod, made from the template
    let pod = t.sim.get(&PODS, "truth", "namzu-ws-limited").unwrap();
    assert_eq!(
        pod["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "250m", "memory": "2Gi"}})
    );
    assert_eq!(pod["spec"]["overhead"], json!({"cpu": "250m", "memory": "120Mi"}));
    // its QoS class as the API server gives it, kept as the kubelet carries the pod along
    assert_eq!(pod["status"]["qosClass"], "Burstable");
    assert_eq!(pod["status"]["phase"], "Running");
    // the RuntimeClass is served, cluster-scoped
    let classes: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses"),
    );
    let gvisor = classes.get("gvisor").await.unwrap();
    assert_eq!(gvisor.data["handler"], "runsc");
    classes
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                "metadata": {"name": "kata"}, "handler": "kata", "overhead": {"podFixed": {"memory": "160Mi"}}}))
            .unwrap(),
        )
        .await
        .unwrap();
    // a pod created through the API: answered and stored as admitted
    let created = pods(&client, "truth")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "plain"},
                "spec": {"runtimeClassName": "kata", "containers": [
                    {"name": "a", "image": "a", "resources": {"limits": {"cpu": "500m", "nvidia.com/gpu": "1"}}},
                    {"name": "b", "image": "b"}]}}))
            .unwrap(),
        )
        .await
        .unwrap();
    let want_requests = json!({"cpu": "500m", "nvidia.com/gpu": "1"});
    assert_eq!(
        created.data["spec"]["containers"][0]["resources"]["requests"],
        want_requests
    );
    assert!(
        created.data["spec"]["containers"][1]
            .get("resources")
            .is_none_or(|r| r.get("requests").is_none())
    );
    assert_eq!(created.data["spec"]["overhead"], json!({"memory": "160Mi"}));
    assert_eq!(created.data["status"]["qosClass"], "Burstable");
    // a pod naming a RuntimeClass that is not there is refused, as the admission controller does
    let refused = pods(&client, "truth")
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nowhere"},
                "spec": {"runtimeClassName": "nope", "containers": [{"name": "a", "image": "a"}]}}),
            )
            .unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&refused), Some(403), "{refused}");
    assert!(
        refused
            .to_string()
            .contains(r#"pods "nowhere" is forbidden: pod rejected: RuntimeClass "nope" not found"#),
        "{refused}"
    );
    let stored = t.sim.get(&PODS, "truth", "plain").unwrap();
    assert_eq!(stored["spec"]["containers"][0]["resources"]["requests"], want_requests);
    // kubectl reads the same, where installed: the classes as its table prints them, the pod
    if let Some(o) = kubectl_on(&t, "RuntimeClasses", &["get", "runtimeclasses"]).await {
        assert!(o.status.success(), "{}", err(&o));
        let text = out(&o);
        let header: Vec<&str> = text.lines().next().unwrap_or("").split_whitespace().collect();
        assert_eq!(header, ["NAME", "HANDLER", "AGE"], "{text}");
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().take(2).eq(["gvisor", "runsc"])),
            "{text}"
        );
    }
    if let Some(o) = kubectl_on(
        &t,
        "the admitted pod",
        &[
            "get",
            "pod",
            "plain",
            "-n",
            "truth",
            "-o",
            "jsonpath={.spec.overhead.memory}",
        ],
    )
    .await
    {
        assert_eq!(out(&o), "160Mi", "{}", err(&o));
    }
}

/// Item 4: `list -o json` `resources` come from the pod as admitted (source "pod"), from the
/// template without one (source "template"); capacity's HOLDS counts pods bound to a node,
/// terminating ones too, and not an unscheduled one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_come_from_the_admitted_pod_and_capacity_holds_what_nodes_hold() {
    let t = start_with(TRUTH, |_| {}).await;
    // the template changes under the running pod: the pod, not the template, is what is held
    t.sim.modify(&SANDBOXES, "truth", "namzu-ws-limited", |s| {
        s["spec"]["podTemplate"]["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "8"}});
    });
    let items = listed(&namzu(&t, &["list", "-n", "truth", "-o", "json"]).await);
    let w = |id: &str| items.iter().find(|i| i["id"] == id).unwrap()["resources"].clone();
    let limited = w("limited");
    assert_eq!(limited["source"], "pod");
    // 250m + 250m overhead; 2Gi defaulted from the limit + 120Mi overhead
    assert_eq!(limited["requests"], json!({"cpu": "500m", "memory": "2168Mi"}));
    assert_eq!(limited["limits"], json!({"cpu": "1250m", "memory": "2168Mi"}));
    let asleep = w("asleep");
    assert_eq!(asleep["source"], "template");
    // what its pod would ask for: the request defaulted from the limit, no overhead known
    assert_eq!(asleep["requests"], json!({"cpu": "250m", "memory": "2Gi"}));
    // -o wide keeps its columns: the pod's figures
    let wide = out(&namzu(&t, &["list", "-n", "truth", "-o", "wide"]).await);
    let row: Vec<&str> = wide
        .lines()
        .find(|l| l.starts_with("limited "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert!(
        row.windows(2)
            .any(|c| c == ["500m", "2168Mi"] || c == ["500m", "2.1Gi"]),
        "{row:?}"
    );

    // a bulk dry run's what-if frees what the pod holds, not what the template now says (8 CPU)
    let o = namzu(&t, &["suspend", "-n", "truth", "--all", "--dry-run"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let last = out(&o).lines().last().unwrap_or_default().to_string();
    assert!(
        last.starts_with("would free 500m CPU, 2.1Gi memory (requests)"),
        "{last}"
    );

    // capacity: bound (1 CPU, on a node) and draining (2 CPU, terminating, still on its node)
    // hold; unplaced (4 CPU, Pending without a node) holds nothing
    let o = namzu(&t, &["capacity", "-n", "cap", "-o", "json"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let cap: Vec<Value> = serde_json::from_str(&out(&o)).unwrap();
    let holds = &cap.iter().find(|c| c["namespace"] == "cap").unwrap()["holds"];
    let mcpu: i64 = holds
        .as_object()
        .unwrap()
        .values()
        .filter_map(|h| h["requests"]["cpu"].as_str())
        .map(|c| {
            c.strip_suffix('m')
                .map_or_else(|| c.parse::<i64>().unwrap() * 1000, |m| m.parse().unwrap())
        })
        .sum();
    assert_eq!(mcpu, 3000, "{}", out(&o));
    let items = listed(&namzu(&t, &["list", "-n", "cap", "-o", "json"]).await);
    for i in &items {
        assert_eq!(i["resources"]["source"], "pod", "{}", i["id"]);
    }
}

/// How many workspaces and other pods the large-scenario test generates. A debug build loads
/// 10,000 + 50,000 in minutes, too long for every run: what makes a scenario too large for the
/// YAML parser's default budget (250,000 nodes) that refused such a file before is its nodes, and
/// 200 workspaces (34 nodes each) + 1,500 pods (207 each) are 317,000. `SIM_TRUTH_FULL=1` runs
/// the full 10,000 + 50,000.
fn large_sizes() -> (usize, usize) {
    if std::env::var_os("SIM_TRUTH_FULL").is_some() {
        (10_000, 50_000)
    } else {
        (200, 1_500)
    }
}

/// Item 5: a JSON scenario past the YAML parser's default budget ([`large_sizes`]; thousands of
/// workspaces and tens of thousands of pods with `SIM_TRUTH_FULL=1`) loads in the real binary
/// (`demo --scenario FILE`), read by a JSON parser; the same as YAML loads too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_json_scenario_loads() {
    let (workspaces, others) = large_sizes();
    let now = "2026-11-29T12:00:00Z";
    let template = json!({"metadata": {"labels": {"sandbox.namzu.ai/template": "coder"}},
        "spec": {"containers": [{"name": "agent", "image": "ghcr.io/x/agent:1.2",
            "resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "1Gi"}}}]}});
    let scenario = json!({
        "namespaces": ["big"],
        "workspaces": (0..workspaces).map(|i| json!({"namespace": "big", "id": format!("w{i:05}"),
            "podTemplate": template, "mode": if i % 2 == 0 { "Running" } else { "Suspended" }})).collect::<Vec<_>>(),
        "objects": (0..others).map(|i| namzu_sim::scenario::Background::pod(i, "big", now)).collect::<Vec<_>>(),
    });
    let text = serde_json::to_string(&scenario).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.json");
    std::fs::write(&file, &text).unwrap();
    // the YAML parser's default budget refuses it (what the demo did with any scenario)
    let default_yaml: Result<Value, _> = serde_saphyr::from_str(&text);
    assert!(default_yaml.is_err(), "the size trips the YAML parser's default budget");

    let (ws, other) = (workspaces, others);
    let o = tokio::task::spawn_blocking(move || {
        run_bin(&["demo", "--clusters", "1", "--scenario", file.to_str().unwrap()], None)
    })
    .await
    .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let is_id = |w: &str| w.len() == 6 && w.starts_with('w') && w[1..].bytes().all(|b| b.is_ascii_digit());
    let listed = out(&o).lines().filter(|l| l.split_whitespace().any(is_id)).count();
    assert_eq!(listed, ws, "every workspace listed");

    // the sim holds them all, through the same parse
    let parsed = namzu_sim::scenario::Scenario::parse(&text, namzu_sim::test_start()).unwrap();
    assert_eq!((parsed.workspaces.len(), parsed.objects.len()), (ws, other));
    // the same scenario as YAML (block style, as one writes it) loads too: a budget sized for it
    let yaml = serde_saphyr::to_string(&scenario).unwrap();
    let parsed = namzu_sim::scenario::Scenario::parse(&yaml, namzu_sim::test_start()).unwrap();
    assert_eq!((parsed.workspaces.len(), parsed.objects.len()), (ws, other));
}
