//! Issue 40 item 7, the rest of agent-sandbox v1.0.3 as it runs: warm pools (update strategy,
//! members on a stale template, the progress Events a pool has instead of conditions) in
//! `capacity` and `leaks`; the template's policies and the refusals they explain in `drift`; a
//! claim's lifecycle (policy, ttl, a keepalive said once, an expiry under Retain) in `inspect`.

use crate::support::*;
use chrono::Duration;
use kube::api::{Api, DynamicObject, PostParams};
use namzu_sim::controller::Knobs;
use namzu_sim::resources::{CLAIMS, EVENTS, SANDBOXES, TEMPLATES, WARM_POOLS};
use serde_json::{Value, json};

fn json_of(o: &std::process::Output) -> Value {
    assert!(o.status.success(), "{}", err(o));
    serde_json::from_str(&out(o)).expect("JSON on stdout")
}

fn pool<'a>(cap: &'a Value, ns: &str, name: &str) -> &'a Value {
    cap.as_array()
        .and_then(|rows| rows.iter().find(|r| r["namespace"] == ns))
        .and_then(|r| r["warmPools"].as_array())
        .and_then(|ps| ps.iter().find(|p| p["name"] == name))
        .unwrap_or_else(|| panic!("no pool {ns}/{name} in {cap}"))
}

fn finding<'a>(items: &'a Value, leak: &str, name: &str) -> Option<&'a Value> {
    items
        .as_array()?
        .iter()
        .find(|l| l["leak"] == leak && l["name"] == name)
}

/// The demo's staging pools: rollout-pool (OnReplenish, the default) keeps two members made
/// before its template's last edit beside one made since; stuck-pool (Recreate) cannot place its
/// members and said WarmPoolNotProgressing. `capacity` shows both, `leaks` shows each as a
/// finding with its evidence — the stale members never as something to delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_and_leaks_show_pool_strategy_stale_members_and_progress() {
    let t = start_demo().await;
    let cap = json_of(&namzu(&t, &["capacity", "-n", "staging", "-o", "json"]).await);
    let rollout = pool(&cap, "staging", "rollout-pool");
    assert_eq!(rollout["updateStrategy"], "OnReplenish");
    assert_eq!(rollout["updateStrategyDefaulted"], true);
    assert_eq!(rollout["members"], 3);
    assert_eq!(
        rollout["staleMembers"],
        json!(["rollout-pool-q9m4z", "rollout-pool-x7k2p"])
    );
    let compared = rollout["staleComparedWith"]["member"].as_str().unwrap();
    assert!(
        compared.starts_with("rollout-pool-") && !compared.ends_with("x7k2p"),
        "{rollout}"
    );
    assert!(
        rollout["staleEvidence"].as_str().unwrap().contains("not recomputed"),
        "{rollout}"
    );
    let stuck = pool(&cap, "staging", "stuck-pool");
    assert_eq!(stuck["updateStrategy"], "Recreate");
    assert_eq!(stuck["ready"], 0);
    assert_eq!(stuck["progress"]["reason"], "WarmPoolNotProgressing");
    assert_eq!(stuck["progress"]["type"], "Warning");
    assert_eq!(stuck["staleMembers"], json!([]));
    // the coder-pool's status is the scenario's: no progress Event held, said so
    let cap_agents = json_of(&namzu(&t, &["capacity", "-n", "agents", "-o", "json"]).await);
    let coder = pool(&cap_agents, "agents", "coder-pool");
    assert_eq!(
        (coder["progress"].clone(), coder["progressEventsRead"].clone()),
        (Value::Null, json!(true))
    );

    let table = out(&namzu(&t, &["capacity", "-n", "staging"]).await);
    let header = table.lines().next().unwrap_or_default();
    assert!(
        header.contains("STRATEGY") && header.contains("STALE") && header.contains("LAST-PROGRESS-EVENT"),
        "{table}"
    );
    let line = |name: &str| table.lines().find(|l| l.contains(name)).unwrap_or_default().to_string();
    assert!(
        line("rollout-pool").contains("OnReplenish") && line("rollout-pool").contains(" 2/3 "),
        "{table}"
    );
    assert!(
        line("stuck-pool").contains("Recreate") && line("stuck-pool").contains("WarmPoolNotProgressing 0s ago"),
        "{table}"
    );

    let leaks = json_of(&namzu(&t, &["leaks", "-n", "staging", "-o", "json"]).await);
    let stale = finding(&leaks, "stale-pool-members", "rollout-pool").expect("the stale members");
    assert_eq!(stale["deletable"], false);
    let reason = stale["reason"].as_str().unwrap();
    assert!(reason.starts_with("2 of 3 members run an older template"), "{reason}");
    assert!(reason.contains("rollout-pool-q9m4z, rollout-pool-x7k2p"), "{reason}");
    assert!(
        stale["next"].as_str().unwrap().starts_with("nothing to delete"),
        "{stale}"
    );
    let not_progressing = finding(&leaks, "warm-pool-not-progressing", "stuck-pool").expect("the stuck pool");
    assert_eq!(not_progressing["deletable"], false);
    assert!(
        not_progressing["reason"]
            .as_str()
            .unwrap()
            .starts_with("WarmPoolNotProgressing (Warning) 0s ago: 2 of 2 members unschedulable"),
        "{not_progressing}"
    );
    assert!(finding(&leaks, "stale-pool-members", "stuck-pool").is_none(), "{leaks}");
    // a stale member is a finding, not a leak: the summary does not count it as one
    let text = out(&namzu(&t, &["leaks", "-n", "staging"]).await);
    assert!(text.contains("stale-pool-members"), "{text}");
    assert!(!text.contains("in use, never deleted"), "{text}");
}

const POOLS: &str = r#"
namespaces: [p]
objects:
  - apiVersion: extensions.agents.x-k8s.io/v1beta1
    kind: SandboxTemplate
    metadata: {name: t, namespace: p}
    spec:
      podTemplate: {spec: {containers: [{name: agent, image: "ghcr.io/x/agent:1.0"}]}}
  - apiVersion: extensions.agents.x-k8s.io/v1beta1
    kind: SandboxWarmPool
    metadata: {name: keep, namespace: p}
    spec: {replicas: 2, sandboxTemplateRef: {name: t}}
  - apiVersion: extensions.agents.x-k8s.io/v1beta1
    kind: SandboxWarmPool
    metadata: {name: swap, namespace: p}
    spec: {replicas: 2, sandboxTemplateRef: {name: t}, updateStrategy: {type: Recreate}}
  - apiVersion: extensions.agents.x-k8s.io/v1beta1
    kind: SandboxWarmPool
    metadata: {name: gpu, namespace: p}
    spec: {replicas: 1, sandboxTemplateRef: {name: t}}
knobs:
  p/gpu: {unschedulable: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}
"#;

fn members(t: &TestSim, pool: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = t
        .sim
        .list(&SANDBOXES, Some("p"))
        .iter()
        .filter(|s| s["metadata"]["ownerReferences"][0]["name"] == pool)
        .filter(|s| s["metadata"]["deletionTimestamp"].is_null())
        .map(|s| {
            (
                s["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                s["metadata"]["labels"]["agents.x-k8s.io/sandbox-pod-template-hash"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn progress_events(t: &TestSim, pool: &str) -> Vec<String> {
    t.sim
        .list(&EVENTS, Some("p"))
        .iter()
        .filter(|e| e["involvedObject"]["kind"] == "SandboxWarmPool" && e["involvedObject"]["name"] == pool)
        .map(|e| {
            format!(
                "{} {}",
                e["type"].as_str().unwrap_or(""),
                e["reason"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// The sim's pool controller: members labelled with the template's hash; after a template edit
/// OnReplenish keeps the old members (a replenished one carries the new hash, and the tool then
/// tells the others stale) where Recreate replaces them; members unschedulable for five minutes
/// make one WarmPoolNotProgressing, however long they stay so, and one WarmPoolProgressing once
/// they are placed and Ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_controller_keeps_or_replaces_members_by_strategy_and_says_progress_once() {
    let t = start_with(POOLS, |_| {}).await;
    let (keep, swap) = (members(&t, "keep"), members(&t, "swap"));
    assert_eq!((keep.len(), swap.len()), (2, 2));
    let first_hash = keep[0].1.clone();
    assert!(
        !first_hash.is_empty() && keep.iter().chain(&swap).all(|(_, h)| *h == first_hash),
        "{keep:?} {swap:?}"
    );
    let pool_obj = t.sim.get(&WARM_POOLS, "p", "keep").unwrap();
    assert_eq!(pool_obj["status"]["replicas"], 2);
    assert_eq!(
        pool_obj["status"]["selector"],
        format!(
            "agents.x-k8s.io/warm-pool-sandbox={}",
            namzu_sim::controller::name_hash("keep")
        )
    );

    t.sim.modify(&TEMPLATES, "p", "t", |tpl| {
        tpl["spec"]["podTemplate"]["spec"]["containers"][0]["image"] = json!("ghcr.io/x/agent:2.0");
    });
    let (keep_after, swap_after) = (members(&t, "keep"), members(&t, "swap"));
    assert_eq!(keep_after, keep, "OnReplenish keeps its members");
    assert_eq!(swap_after.len(), 2);
    assert!(
        swap_after
            .iter()
            .all(|(n, h)| *h != first_hash && !swap.iter().any(|(o, _)| o == n)),
        "{swap_after:?}"
    );
    // every keep member still carries one hash: nothing to compare against yet, and said so
    let cap = json_of(&namzu(&t, &["capacity", "-n", "p", "-o", "json"]).await);
    assert_eq!(pool(&cap, "p", "keep")["staleMembers"], json!([]));
    assert!(
        pool(&cap, "p", "keep")["staleEvidence"]
            .as_str()
            .unwrap()
            .contains("a template edit no member was made since would not show"),
        "{cap}"
    );
    // one member goes (a claim took it): the replacement carries the new hash, the other is stale
    t.sim.advance(Duration::minutes(1));
    t.sim.delete(&SANDBOXES, "p", &keep[0].0);
    let now_keep = members(&t, "keep");
    assert_eq!(now_keep.len(), 2);
    let cap = json_of(&namzu(&t, &["capacity", "-n", "p", "-o", "json"]).await);
    assert_eq!(pool(&cap, "p", "keep")["staleMembers"], json!([keep[1].0]));
    assert_eq!(pool(&cap, "p", "swap")["staleMembers"], json!([]));

    // gpu's member cannot be placed: nothing said before five minutes, one Event after, however long
    assert!(progress_events(&t, "gpu").is_empty());
    t.sim.advance(Duration::minutes(6));
    assert_eq!(progress_events(&t, "gpu"), ["Warning WarmPoolNotProgressing"]);
    t.sim.advance(Duration::minutes(30));
    assert_eq!(progress_events(&t, "gpu"), ["Warning WarmPoolNotProgressing"]);
    let leaks = json_of(&namzu(&t, &["leaks", "-n", "p", "-o", "json"]).await);
    let gpu = finding(&leaks, "warm-pool-not-progressing", "gpu").expect("gpu not progressing");
    assert!(gpu["reason"].as_str().unwrap().contains("30m ago"), "{gpu}");
    // a node with GPUs joins: the member is placed and Ready, and the pool says so once
    t.sim.set_knobs("p", "gpu", Knobs::default());
    for (member, _) in members(&t, "gpu") {
        t.sim.set_knobs("p", &member, Knobs::default());
    }
    t.sim.advance(Duration::minutes(1));
    t.sim.advance(Duration::minutes(1));
    assert_eq!(
        progress_events(&t, "gpu"),
        ["Warning WarmPoolNotProgressing", "Normal WarmPoolProgressing"]
    );
    let cap = json_of(&namzu(&t, &["capacity", "-n", "p", "-o", "json"]).await);
    assert_eq!(pool(&cap, "p", "gpu")["progress"]["reason"], "WarmPoolProgressing");
    let leaks = json_of(&namzu(&t, &["leaks", "-n", "p", "-o", "json"]).await);
    assert!(finding(&leaks, "warm-pool-not-progressing", "gpu").is_none(), "{leaks}");
}

/// The sim admits pools, claims and templates as their CRDs say: defaults where the parent is
/// given, enums and minimums refused with the API server's 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sim_defaults_and_checks_pools_claims_and_templates_as_the_crds_do() {
    let t = start_with(POOLS, |_| {}).await;
    let client = t.client().await;
    let api = |kind: &str, plural: &str| -> Api<DynamicObject> {
        Api::namespaced_with(
            client.clone(),
            "p",
            &ar("extensions.agents.x-k8s.io", "v1beta1", kind, plural),
        )
    };
    let obj = |v: Value| serde_json::from_value::<DynamicObject>(v).unwrap();
    let claims = api("SandboxClaim", "sandboxclaims");
    let made = claims
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
                "metadata": {"name": "c1"}, "spec": {"warmPoolRef": {"name": "keep"}, "lifecycle": {"ttlSecondsAfterFinished": 60}}})),
        )
        .await
        .expect("a claim with a lifecycle");
    assert_eq!(made.data["spec"]["lifecycle"]["shutdownPolicy"], "Retain");
    let bad = claims
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
                "metadata": {"name": "c2"}, "spec": {"warmPoolRef": {"name": "keep"}, "lifecycle": {"shutdownPolicy": "Orphan"}}})),
        )
        .await
        .expect_err("an unknown shutdownPolicy");
    assert_eq!(status_code(&bad), Some(422));
    let no_pool = claims
        .create(
            &PostParams::default(),
            &obj(
                json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
                "metadata": {"name": "c3"}, "spec": {}}),
            ),
        )
        .await
        .expect_err("warmPoolRef is required");
    assert_eq!(status_code(&no_pool), Some(422));
    let pools = api("SandboxWarmPool", "sandboxwarmpools");
    let made = pools
        .create(
            &PostParams::default(),
            &obj(
                json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
                "metadata": {"name": "w"}, "spec": {"sandboxTemplateRef": {"name": "t"}, "updateStrategy": {}}}),
            ),
        )
        .await
        .expect("a pool");
    assert_eq!(made.data["spec"]["replicas"], 1);
    assert_eq!(made.data["spec"]["updateStrategy"]["type"], "OnReplenish");
    let templates = api("SandboxTemplate", "sandboxtemplates");
    let made = templates
        .create(
            &PostParams::default(),
            &obj(
                json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
                "metadata": {"name": "t2"}, "spec": {"podTemplate": {"spec": {"containers": []}}}}),
            ),
        )
        .await
        .expect("a template");
    assert_eq!(
        (
            made.data["spec"]["networkPolicyManagement"].as_str(),
            made.data["spec"]["envVarsInjectionPolicy"].as_str(),
            made.data["spec"]["volumeClaimTemplatesPolicy"].as_str()
        ),
        (Some("Managed"), Some("Disallowed"), Some("Disallowed"))
    );
}

/// The demo's vetoed: its Sandbox says Ready=False VolumeClaimTemplatesError; `drift` shows the
/// template's three policies and names the one that explains the refusal, in text and JSON, and
/// `inspect` says it under the template's policies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_shows_the_template_policies_and_the_one_behind_a_refusal() {
    let t = start_demo().await;
    let text = out(&namzu(&t, &["drift", "-n", "research", "vetoed"]).await);
    assert!(
        text.contains(
            "template policies: networkPolicyManagement Managed (default), envVarsInjectionPolicy Allowed, volumeClaimTemplatesPolicy Disallowed (default)"
        ),
        "{text}"
    );
    assert!(
        text.contains("diagnosis: VolumeClaimTemplatesError (Sandbox condition Ready=False)")
            && text.contains("the template's volumeClaimTemplatesPolicy Disallowed (default) refuses the claim's volumeClaimTemplates"),
        "{text}"
    );
    let v = json_of(&namzu(&t, &["drift", "-n", "research", "vetoed", "-o", "json"]).await);
    let r = &v[0];
    assert_eq!(
        r["templatePolicies"]["envVarsInjectionPolicy"],
        json!({"value": "Allowed", "defaulted": false})
    );
    assert_eq!(r["refusals"][0]["reason"], "VolumeClaimTemplatesError");
    assert_eq!(
        r["refusals"][0]["policy"],
        json!({"name": "volumeClaimTemplatesPolicy", "value": "Disallowed", "defaulted": true})
    );
    assert_eq!(r["eventsRead"], true);
    // inspect says it under the template's policies
    let inspect = out(&namzu(&t, &["inspect", "-n", "research", "vetoed"]).await);
    assert!(
        inspect.contains("  Refused:       VolumeClaimTemplatesError (Sandbox condition Ready=False)")
            && inspect.contains("volumeClaimTemplatesPolicy Disallowed (default) refuses"),
        "{inspect}"
    );
    // a workspace without a refusal: the policies, no diagnosis
    let tango = out(&namzu(&t, &["drift", "-n", "research", "tango"]).await);
    assert!(
        tango.contains("template policies:") && !tango.contains("diagnosis:"),
        "{tango}"
    );
}

/// The demo's romeo: its claim's shutdownTime is moved forward by a keepalive — said once, from
/// the claim's generation and managedFields, and never a change of note in `history`; lapsed's
/// claim expired under Retain: a diagnosis with a next step. The sim enforces a claim's policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_shows_a_claims_lifecycle_a_keepalive_once_and_an_expiry_under_retain() {
    let t = start_demo().await;
    let romeo = out(&namzu(&t, &["inspect", "-n", "agents", "romeo"]).await);
    assert!(
        romeo.contains("Claim lifecycle: claim-romeo: shutdownPolicy Retain (the default), no ttlSecondsAfterFinished"),
        "{romeo}"
    );
    assert!(romeo.contains("(in 14m)"), "{romeo}");
    assert!(
        romeo.contains("keepalive: moved forward again and again — the claim's spec was written 1920 time(s) in its 8d (generation 1921), shutdownTime last written by agent-gateway 12s ago"),
        "{romeo}"
    );
    let v = json_of(&namzu(&t, &["inspect", "-n", "agents", "romeo", "-o", "json"]).await);
    let l = &v["claimLifecycle"];
    assert_eq!(
        (
            l["shutdownPolicy"].as_str(),
            l["shutdownPolicyDefaulted"].as_bool(),
            l["keepalive"].as_bool()
        ),
        (Some("Retain"), Some(true), Some(true))
    );
    assert_eq!(l["shutdownTimeWriter"]["manager"], "agent-gateway");
    // the keepalive moves it again and again: history tells no move as a change
    for _ in 0..3 {
        t.sim.advance(Duration::seconds(30));
        let at = namzu_sim::clock::k8s_time(t.sim.now() + Duration::minutes(15));
        t.sim.modify(&CLAIMS, "agents", "claim-romeo", |c| {
            c["spec"]["lifecycle"]["shutdownTime"] = json!(at);
        });
    }
    let history = namzu(&t, &["history", "-n", "agents", "romeo"]).await;
    assert!(history.status.success(), "{}", err(&history));
    assert!(!out(&history).contains("shutdownTime"), "{}", out(&history));

    let lapsed = out(&namzu(&t, &["inspect", "-n", "staging", "lapsed"]).await);
    assert!(
        lapsed.contains("shutdownPolicy Retain (the default), ttlSecondsAfterFinished 3600"),
        "{lapsed}"
    );
    assert!(
        lapsed.contains("claim-expired (ClaimExpired): Claim expired at")
            && lapsed.contains("kubectl delete sandboxclaims.extensions.agents.x-k8s.io claim-lapsed -n staging"),
        "{lapsed}"
    );
    let claim = t.sim.get(&CLAIMS, "staging", "claim-lapsed").unwrap();
    assert_eq!(claim["status"]["conditions"][0]["reason"], "ClaimExpired");

    // shutdownPolicy Delete: the claim goes at its time, and its Sandbox with it
    t.sim.modify(&CLAIMS, "agents", "claim-romeo", |c| {
        c["spec"]["lifecycle"]["shutdownPolicy"] = json!("Delete");
    });
    t.sim.advance(Duration::minutes(16));
    assert!(t.sim.get(&CLAIMS, "agents", "claim-romeo").is_none());
    assert!(
        t.sim
            .get(&SANDBOXES, "agents", "namzu-ws-romeo")
            .is_none_or(|s| !s["metadata"]["deletionTimestamp"].is_null())
    );
}
