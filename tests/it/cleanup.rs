//! The clean-up that never destroys what is in use, and can be undone (`leaks`, `restore`),
//! through the real binary and the real client against the sim: look-alikes of every kind are
//! listed in use with their proof and never deleted, also when they become in use between the
//! list and the DELETE; a detached disk waits for `--include-detached` and its age; a deleted
//! policy and disk come back with `restore`, and a restore onto a taken name is refused.

use crate::support::*;
use namzu_domain::leaks::name_hash;
use namzu_engine::cluster::audit::AuditLog;
use namzu_engine::cluster::write::{self, LeakOutcome, LeakPlan, LeakTarget};
use namzu_sim::resources::{CILIUM_POLICIES, CLAIMS, PODS, PVCS, PVS};
use serde_json::{Value, json};

const GHOST_DISK: &str = "workspace-disk-namzu-ws-ghost";

fn items(o: &std::process::Output) -> Vec<Value> {
    serde_json::from_str::<Value>(&out(o))
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out(o), err(o)))
        .as_array()
        .expect("a list")
        .clone()
}

fn item<'a>(items: &'a [Value], name: &str) -> &'a Value {
    items
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not listed: {items:#?}"))
}

/// What ties it, as `-o json` gives its checks.
fn ties(item: &Value) -> String {
    item["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["inUse"] == true)
        .map(|c| c["found"].as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

fn disk(name: &str, labels: Value, owners: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "agents", "labels": labels, "ownerReferences": owners},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound"}})
}

fn hash_label(sandbox: &str) -> Value {
    json!({"agents.x-k8s.io/sandbox-name-hash": name_hash(sandbox)})
}

/// A SandboxClaim `name` in agents that no Sandbox answers yet; its uid.
fn claim(t: &TestSim, name: &str) -> String {
    let c = t
        .sim
        .create(
            &CLAIMS,
            json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
                "metadata": {"name": name, "namespace": "agents"},
                "spec": {"sandboxTemplateRef": {"name": "no-such-template"}}}),
        )
        .unwrap();
    c["metadata"]["uid"].as_str().unwrap().to_string()
}

fn rescue_pod(t: &TestSim, mounts: &str) {
    t.sim
        .create(
            &PODS,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "rescue", "namespace": "agents"},
                "spec": {"containers": [{"name": "sh", "image": "busybox"}],
                    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": mounts}}]}}),
        )
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn look_alikes_are_listed_in_use_with_their_proof_and_never_deleted() {
    let t = start_demo().await;
    // the pooled path: a claim pending, its per-sandbox policy named after and owned by it
    let task = claim(&t, "namzu-ws-task");
    let owner = json!([{"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
        "name": "namzu-ws-task", "uid": task}]);
    let policy = format!("namzu-sbx-{task}");
    t.sim
        .create(
            &CILIUM_POLICIES,
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
                "metadata": {"name": policy, "namespace": "agents", "ownerReferences": owner}, "spec": {}}),
        )
        .unwrap();
    // a disk the claim's Sandbox will take; one owned by a kind the tool does not read; one a
    // rescue pod mounts; one whose name hash is a live workspace's; one of a claim's by label
    let look_alikes = [
        disk(
            "workspace-disk-namzu-ws-task",
            hash_label("namzu-ws-task"),
            owner.clone(),
        ),
        disk(
            "workspace-disk-namzu-ws-web",
            hash_label("namzu-ws-web"),
            json!([{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "5e7-1"}]),
        ),
        disk(
            "workspace-disk-namzu-ws-rescued",
            hash_label("namzu-ws-gone"),
            json!([]),
        ),
        disk("workspace-disk-namzu-ws-moved", hash_label("namzu-ws-alpha"), json!([])),
        disk(
            "workspace-disk-namzu-ws-pending",
            json!({"agents.x-k8s.io/sandbox-name-hash": "00000000", "agents.x-k8s.io/claim-uid": task}),
            json!([]),
        ),
    ];
    for d in look_alikes.iter().cloned() {
        t.sim.create(&PVCS, d).unwrap();
    }
    // policies whose selectors this tool does not evaluate: another key, an expression, none
    let selectors = [
        (
            "namzu-sbx-11111111-0000-4000-8000-000000000001",
            json!({"matchExpressions": [{"key": "sandbox.namzu.ai/per-sandbox-egress", "operator": "In", "values": ["namzu-ws-alpha"]}]}),
        ),
        (
            "namzu-sbx-11111111-0000-4000-8000-000000000002",
            json!({"matchLabels": {"agents.x-k8s.io/sandbox-name-hash": name_hash("namzu-ws-alpha")}}),
        ),
        ("namzu-sbx-11111111-0000-4000-8000-000000000003", json!({})),
    ];
    for (name, selector) in &selectors {
        t.sim
            .create(
                &CILIUM_POLICIES,
                json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
                    "metadata": {"name": name, "namespace": "agents"}, "spec": {"endpointSelector": selector}}),
            )
            .unwrap();
    }
    rescue_pod(&t, "workspace-disk-namzu-ws-rescued");
    let o = namzu(&t, &["leaks", "-n", "agents", "-o", "json"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let found = items(&o);
    for (name, tie) in [
        ("workspace-disk-namzu-ws-task", "SandboxClaim namzu-ws-task"),
        ("workspace-disk-namzu-ws-web", "StatefulSet web"),
        ("workspace-disk-namzu-ws-rescued", "mounted by pod rescue"),
        ("workspace-disk-namzu-ws-moved", "existing Sandbox's name hash"),
        ("workspace-disk-namzu-ws-pending", "existing claim's uid"),
        (policy.as_str(), "existing SandboxClaim's or pool's uid"),
        (selectors[0].0, "may select live pods"),
        (selectors[1].0, "may select live pods"),
        (selectors[2].0, "may select live pods"),
    ] {
        let i = item(&found, name);
        assert_eq!(
            (i["leak"].as_str(), i["deletable"].as_bool()),
            (Some("in-use"), Some(false)),
            "{i:#}"
        );
        assert!(ties(i).contains(tie), "{name}: {}", ties(i));
    }
    // a true orphan is still one, with the checks that cleared it
    let ghost = item(&found, GHOST_DISK);
    assert_eq!(ghost["leak"], "orphaned-disk");
    assert!(ties(ghost).is_empty(), "{ghost:#}");
    let checked: Vec<&str> = ghost["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    for check in ["owners", "sandbox", "claims", "labels", "pods", "tracking"] {
        assert!(checked.contains(&check), "{check}: {checked:?}");
    }
    // a kind that is none is one line, exit 2; a kind that is one selects only its own
    let o = namzu(&t, &["leaks", "-n", "agents", "--kind", "orphan"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("unknown leak kind \"orphan\""), "{}", err(&o));
    let o = namzu(&t, &["leaks", "-n", "agents", "--kind", "in-use", "-o", "json"]).await;
    assert!(items(&o).iter().all(|i| i["leak"] == "in-use"), "{}", out(&o));
    // the wide table carries the proof too
    let o = namzu(&t, &["leaks", "-n", "agents", "-o", "wide"]).await;
    assert!(out(&o).contains("mounted by pod rescue"), "{}", out(&o));
    // --delete deletes the true orphans only
    let o = run_audited(&t, &["leaks", "-n", "agents", "--delete", "--yes"]).await;
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert!(t.sim.get(&PVCS, "agents", GHOST_DISK).is_none());
    for d in &look_alikes {
        let name = d["metadata"]["name"].as_str().unwrap();
        assert!(t.sim.get(&PVCS, "agents", name).is_some(), "{name} was deleted");
    }
    assert!(t.sim.get(&CILIUM_POLICIES, "agents", &policy).is_some());
    for (name, _) in &selectors {
        assert!(
            t.sim.get(&CILIUM_POLICIES, "agents", name).is_some(),
            "{name} was deleted"
        );
    }
    // a name given that is in use is said, and nothing is sent for it
    t.sim.clear_requests();
    let o = run_audited(
        &t,
        &[
            "leaks",
            "-n",
            "agents",
            "--delete",
            "--yes",
            "pvc/workspace-disk-namzu-ws-rescued",
        ],
    )
    .await;
    assert!(!o.status.success());
    assert!(err(&o).contains("mounted by pod rescue"), "{}", err(&o));
    assert!(t.sim.requests().iter().all(|r| r.method != "DELETE"));
}

/// The re-check just before each DELETE applies every rule again: a disk that a pod starts to
/// mount, or a claim starts to want, after the list is refused; nothing is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_that_becomes_in_use_before_its_delete_is_refused() {
    let t = start_demo().await;
    let found = items(&namzu(&t, &["leaks", "-n", "agents", "-o", "json"]).await);
    let ghost = item(&found, GHOST_DISK);
    let plan = LeakPlan {
        target: LeakTarget::Disk,
        namespace: "agents".into(),
        name: GHOST_DISK.into(),
        uid: ghost["uid"].as_str().unwrap().into(),
        resource_version: t.sim.get(&PVCS, "agents", GHOST_DISK).unwrap()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .into(),
        dry_run: false,
        server_dry_run: false,
        allow_detached: false,
        quarantine_days: None,
        quarantine_only: false,
    };
    let conn = connect(&t, t.sim.kubeconfig(), None, std::time::Duration::from_secs(5)).await;
    let audit = AuditLog {
        path: Some(t.dir.path().join("audit.jsonl")),
        ..Default::default()
    };
    rescue_pod(&t, GHOST_DISK);
    t.sim.clear_requests();
    match write::delete_leak(&conn, &policy(false, audit.clone()), &plan).await {
        LeakOutcome::Refused { message } => assert!(message.contains("mounted by pod rescue"), "{message}"),
        other => panic!("not refused: {other:?}"),
    }
    t.sim.delete(&PODS, "agents", "rescue");
    claim(&t, "namzu-ws-ghost");
    match write::delete_leak(&conn, &policy(false, audit), &plan).await {
        LeakOutcome::Refused { message } => assert!(message.contains("SandboxClaim namzu-ws-ghost"), "{message}"),
        other => panic!("not refused: {other:?}"),
    }
    assert!(t.sim.requests().iter().all(|r| r.method != "DELETE"), "nothing sent");
    assert!(t.sim.get(&PVCS, "agents", GHOST_DISK).is_some());
}

/// A detached disk (unowned, its workspace's name hash: agent-sandbox takes it back when the
/// workspace is created again) is deleted only with --include-detached, and only past the
/// context's age threshold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_disk_waits_for_include_detached_and_its_age() {
    let t = start_demo().await;
    let name = "workspace-disk-namzu-ws-keepsake";
    t.sim
        .create(&PVCS, disk(name, hash_label("namzu-ws-keepsake"), json!([])))
        .unwrap();
    let found = items(&namzu(&t, &["leaks", "-n", "agents", "-o", "json"]).await);
    let d = item(&found, name);
    assert_eq!(d["leak"], "detached-disk");
    assert!(
        d["reason"]
            .as_str()
            .unwrap()
            .contains("re-adopted if namzu-ws-keepsake is created again"),
        "{d:#}"
    );
    // without the flag, and with it before a quarantine of its age: not deleted (when it became
    // detached cannot be read off it: its age counts from a quarantine)
    let o = run_audited(&t, &["leaks", "-n", "agents", "--delete", "--yes", name]).await;
    assert!(
        !o.status.success() && err(&o).contains("--include-detached"),
        "{}",
        err(&o)
    );
    let detached = ["leaks", "-n", "agents", "--delete", "--yes", "--include-detached", name];
    let o = run_audited(&t, &detached).await;
    assert!(
        !o.status.success() && err(&o).contains("quarantine it first"),
        "{}",
        err(&o)
    );
    let o = run_audited(
        &t,
        &[
            "leaks",
            "-n",
            "agents",
            "--quarantine",
            "--yes",
            "--include-detached",
            name,
        ],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    let o = run_audited(&t, &detached).await;
    assert!(!o.status.success() && err(&o).contains("too recent"), "{}", err(&o));
    assert!(t.sim.get(&PVCS, "agents", name).is_some());
    // the context's rule lowers the threshold: then it goes
    let rules = t.dir.path().join("rules.yaml");
    std::fs::write(&rules, "contexts:\n  - context: '*'\n    detachedAfterDays: 0\n").unwrap();
    let config = rules.display().to_string();
    let o = run_audited(
        &t,
        &[
            "--config",
            &config,
            "leaks",
            "-n",
            "agents",
            "--delete",
            "--yes",
            "--include-detached",
            name,
        ],
    )
    .await;
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert!(t.sim.get(&PVCS, "agents", name).is_none());
}

/// What `leaks --delete` deleted comes back with `restore`: the object as it was (no owner, a new
/// uid), from its tombstone; a restore onto a name something else now holds is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_policy_and_disk_come_back_with_restore() {
    let t = start_demo().await;
    let found = items(&namzu(&t, &["leaks", "-n", "agents", "-o", "json"]).await);
    let policy = found
        .iter()
        .find(|i| i["leak"] == "orphaned-policy")
        .and_then(|i| i["name"].as_str())
        .expect("the demo's orphaned policy")
        .to_string();
    let before = t.sim.get(&PVCS, "agents", GHOST_DISK).unwrap();
    let volume = before["spec"]["volumeName"]
        .as_str()
        .expect("the disk's volume")
        .to_string();
    assert_eq!(
        t.sim.get(&PVS, "", &volume).unwrap()["spec"]["persistentVolumeReclaimPolicy"],
        "Delete"
    );
    let o = run_audited(&t, &["leaks", "-n", "agents", "--delete", "--yes"]).await;
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert!(t.sim.get(&CILIUM_POLICIES, "agents", &policy).is_none());
    // the data survived the delete: the volume was set to Retain first, and is Released — as the
    // result line says
    let pv = t.sim.get(&PVS, "", &volume).expect("the volume survives");
    assert_eq!(pv["status"]["phase"], "Released", "{pv:#}");
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert!(
        out(&o).contains(&format!(
            "its volume {volume} is kept (reclaim policy Retain, was Delete"
        )),
        "{}",
        out(&o)
    );
    let o = run_audited(&t, &["restore", "--list"]).await;
    assert!(
        out(&o).contains(&format!("persistentvolumeclaim/{GHOST_DISK}")),
        "{}",
        out(&o)
    );
    assert!(
        out(&o).contains(&format!("ciliumnetworkpolicy/{policy}")),
        "{}",
        out(&o)
    );
    let o = run_audited(
        &t,
        &[
            "-n",
            "agents",
            "restore",
            &format!("cnp/{policy}"),
            &format!("persistentvolumeclaim/{GHOST_DISK}"),
        ],
    )
    .await;
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    let back = t.sim.get(&PVCS, "agents", GHOST_DISK).expect("the disk is back");
    assert_eq!(back["metadata"]["labels"], before["metadata"]["labels"]);
    assert_ne!(back["metadata"]["uid"], before["metadata"]["uid"]);
    // on its own data: the volume kept (Retain) before the delete, bound to the claim again
    assert!(
        out(&o).contains(&format!("bound to its retained volume {volume}")),
        "{}",
        out(&o)
    );
    assert_eq!(back["spec"]["volumeName"], json!(volume));
    let pv = t.sim.get(&PVS, "", &volume).expect("the volume");
    // bound to the new claim, its reclaim policy what it was before the delete kept it
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete", "{pv:#}");
    assert_eq!(pv["spec"]["claimRef"]["uid"], back["metadata"]["uid"], "{pv:#}");
    assert_eq!(back["status"]["phase"], "Bound", "{back:#}");
    assert!(t.sim.get(&CILIUM_POLICIES, "agents", &policy).is_some());
    // audited: each request's intent before it
    let log = std::fs::read_to_string(t.dir.path().join("audit.jsonl")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("\"verb\":\"restore\"") && l.contains("\"intent\"")),
        "{log}"
    );
    // the name is taken now (by what was restored): a second restore is refused, naming it
    let o = run_audited(&t, &["-n", "agents", "restore", &format!("cnp/{policy}")]).await;
    assert!(!o.status.success());
    assert!(
        err(&o).contains("no tombstone") || err(&o).contains("exists now"),
        "{}",
        err(&o)
    );
}

/// Quarantine before delete: in a context whose rules set `quarantineDays`, `--delete` takes only
/// what `--quarantine` marked that long ago and nothing touched since; a touch cancels it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quarantine_comes_before_the_delete_and_a_touch_cancels_it() {
    let t = start_demo().await;
    let rules = t.dir.path().join("rules.yaml");
    std::fs::write(&rules, "contexts:\n  - context: '*'\n    quarantineDays: 3\n").unwrap();
    let config = rules.display().to_string();
    let with_rules = |args: &[&str]| {
        let mut all = vec!["--config", config.as_str()];
        all.extend(args);
        all.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    // not quarantined: nothing deleted
    let args = with_rules(&["leaks", "-n", "agents", "--delete", "--yes", GHOST_DISK]);
    let o = run_audited(&t, &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert!(!o.status.success(), "{}", out(&o));
    assert!(err(&o).contains("it is not quarantined"), "{}", err(&o));
    assert!(t.sim.get(&PVCS, "agents", GHOST_DISK).is_some());
    // quarantined: two annotations by a conditional patch, audited; nothing deleted
    let args = with_rules(&["leaks", "-n", "agents", "--quarantine", "--yes"]);
    let o = run_audited(&t, &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert!(out(&o).contains("quarantined"), "{}", out(&o));
    let disk = t
        .sim
        .get(&PVCS, "agents", GHOST_DISK)
        .expect("not deleted by a quarantine");
    assert!(
        disk["metadata"]["annotations"]["kubectl-namzu.io/quarantined-at"].is_string(),
        "{disk:#}"
    );
    let log = std::fs::read_to_string(t.dir.path().join("audit.jsonl")).unwrap();
    assert!(log.contains("\"verb\":\"quarantine-leak\""), "{log}");
    let found = items(&namzu(&t, &["leaks", "-n", "agents", "-o", "json"]).await);
    assert!(
        item(&found, GHOST_DISK)["checks"]
            .to_string()
            .contains("untouched since"),
        "{found:#?}"
    );
    // too recent: still nothing deleted; three days on, it goes
    let args = with_rules(&["leaks", "-n", "agents", "--delete", "--yes", GHOST_DISK]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run_audited(&t, &argv).await;
    assert!(!o.status.success() && err(&o).contains("too recent"), "{}", err(&o));
    t.sim.advance(chrono::Duration::days(3));
    let o = run_audited(&t, &argv).await;
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert!(t.sim.get(&PVCS, "agents", GHOST_DISK).is_none());
    // restored, it is a new object: no quarantine of the old one, so no delete takes it at once
    let o = run_audited(&t, &["-n", "agents", "restore", &format!("pvc/{GHOST_DISK}")]).await;
    assert!(o.status.success(), "{}", err(&o));
    let back = t.sim.get(&PVCS, "agents", GHOST_DISK).unwrap();
    assert!(
        back["metadata"]["annotations"]["kubectl-namzu.io/quarantined-at"].is_null(),
        "{back:#}"
    );
    let o = run_audited(&t, &argv).await;
    assert!(
        !o.status.success() && t.sim.get(&PVCS, "agents", GHOST_DISK).is_some(),
        "{}",
        err(&o)
    );
    // a quarantined object touched since (relabelled) is not deleted: the touch cancelled it
    // (the policy was quarantined with the disk, and is marked once)
    let policy = "namzu-sbx-0e0e0e0e-0000-4000-8000-00000000cafe";
    let args = with_rules(&["leaks", "-n", "agents", "--quarantine", "--yes", policy]);
    let o = run_audited(&t, &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert!(err(&o).contains("quarantined already"), "{}", err(&o));
    t.sim.modify(&CILIUM_POLICIES, "agents", policy, |p| {
        p["metadata"]["labels"] = json!({"team": "infra"})
    });
    let args = with_rules(&["leaks", "-n", "agents", "--delete", "--yes", policy]);
    let o = run_audited(&t, &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert!(!o.status.success(), "{}", out(&o));
    assert!(err(&o).contains("cancelled"), "{}", err(&o));
    assert!(t.sim.get(&CILIUM_POLICIES, "agents", policy).is_some());
}

/// A DELETE the server refuses leaves nothing of the undo behind: the volume's reclaim policy is
/// put back as it was (by the same conditional patch) and no tombstone claims a delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_delete_leaves_the_volume_and_no_tombstone() {
    let t = start_demo().await;
    let volume = t.sim.get(&PVCS, "agents", GHOST_DISK).unwrap()["spec"]["volumeName"]
        .as_str()
        .unwrap()
        .to_string();
    t.sim.add_fault(namzu_sim::faults::Fault::status(
        Some("DELETE"),
        GHOST_DISK,
        409,
        "the object has been modified",
    ));
    let o = run_audited(&t, &["leaks", "-n", "agents", "--delete", "--yes", GHOST_DISK]).await;
    assert!(!o.status.success(), "{}", out(&o));
    assert!(t.sim.get(&PVCS, "agents", GHOST_DISK).is_some());
    let pv = t.sim.get(&PVS, "", &volume).unwrap();
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete", "{pv:#}");
    let stones = std::fs::read_dir(t.dir.path().join("tombstones"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(stones, 0, "no tombstone for a delete that did not happen");
    let log = std::fs::read_to_string(t.dir.path().join("audit.jsonl")).unwrap();
    assert_eq!(
        log.matches("\"verb\":\"retain-volume\"").count(),
        4,
        "two patches, each intent and outcome:\n{log}"
    );
}

/// A tombstone names the server its object was deleted from: a context of the same name that
/// reaches another cluster does not get it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_reaches_only_the_cluster_the_object_was_deleted_from() {
    let (a, b) = (start_demo().await, start_demo().await);
    let policy = "namzu-sbx-0e0e0e0e-0000-4000-8000-00000000cafe";
    let o = run_audited(&a, &["leaks", "-n", "agents", "--delete", "--yes", policy]).await;
    assert!(o.status.success(), "{}", err(&o));
    b.sim.delete(&CILIUM_POLICIES, "agents", policy);
    // b's context has the same name; the tombstones are a's (the same state directory)
    let o = namzu_env(
        vec![
            "--kubeconfig".into(),
            b.sim.kubeconfig().display().to_string(),
            "-n".into(),
            "agents".into(),
            "restore".into(),
            format!("cnp/{policy}"),
        ],
        vec![now_env(&b), audit_env(&a)],
    )
    .await;
    assert!(!o.status.success());
    assert!(err(&o).contains("its tombstone was kept for server"), "{}", err(&o));
    assert!(b.sim.get(&CILIUM_POLICIES, "agents", policy).is_none());
    // and a's restore still has it
    let o = run_audited(&a, &["-n", "agents", "restore", &format!("cnp/{policy}")]).await;
    assert!(o.status.success(), "{}", err(&o));
}

/// A tombstone is state on disk: a kept copy that names another object (edited, or planted)
/// re-creates only the object named and checked, never the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_re_creates_only_the_object_named() {
    let t = start_demo().await;
    let policy = "namzu-sbx-0e0e0e0e-0000-4000-8000-00000000cafe";
    let o = run_audited(&t, &["leaks", "-n", "agents", "--delete", "--yes", policy]).await;
    assert!(o.status.success(), "{}", err(&o));
    let dir = t.dir.path().join("tombstones");
    let file = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
    let mut stone: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    stone["object"]["metadata"]["name"] = json!("planted");
    stone["object"]["metadata"]["namespace"] = json!("default");
    std::fs::write(&file, stone.to_string()).unwrap();
    let o = run_audited(&t, &["-n", "agents", "restore", &format!("cnp/{policy}")]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(t.sim.get(&CILIUM_POLICIES, "agents", policy).is_some());
    assert!(t.sim.get(&CILIUM_POLICIES, "agents", "planted").is_none());
    assert!(t.sim.get(&CILIUM_POLICIES, "default", "planted").is_none());
}
