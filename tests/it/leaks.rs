//! `leaks` and what the fleet holds: every leak kind found on the demo and nothing live listed
//! (a Sandbox deleted and re-created under its name included), the fenced DELETEs in the sim's
//! record, a re-adopted disk refused, the rules (read-only, maxBulk, typed confirmation) honoured,
//! and `resources` equal to a hand computation.

use crate::support::*;
use namzu_engine::cluster::audit::AuditLog;
use namzu_engine::cluster::write::{self, LeakOutcome, LeakPlan, LeakTarget};
use namzu_sim::controller::earlier_uid;
use namzu_sim::resources::{CILIUM_POLICIES, PVCS, SANDBOXES};
use serde_json::{Value, json};

const GHOST_DISK: &str = "workspace-disk-namzu-ws-ghost";
/// The demo's orphaned per-sandbox policy: its task's Sandbox is gone, nothing it selects exists.
const TASK_POLICY: &str = "namzu-sbx-0e0e0e0e-0000-4000-8000-00000000cafe";

fn json_of(o: &std::process::Output) -> Vec<Value> {
    serde_json::from_str::<Value>(&out(o))
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out(o), err(o)))
        .as_array()
        .expect("a list")
        .clone()
}

fn find<'a>(items: &'a [Value], name: &str) -> Option<&'a Value> {
    items.iter().find(|i| i["name"] == name)
}

fn deletes(t: &TestSim) -> Vec<namzu_sim::record::Recorded> {
    t.sim.requests().into_iter().filter(|r| r.method == "DELETE").collect()
}

fn rules_env(t: &TestSim, rules: &str) -> (String, String) {
    let path = t.dir.path().join("rules.yaml");
    std::fs::write(&path, rules).expect("rules file");
    ("KUBECTL_NAMZU_CONFIG".into(), path.display().to_string())
}

async fn run_with(t: &TestSim, env: Vec<(String, String)>, args: &[&str]) -> std::process::Output {
    let mut full = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
    full.extend(args.iter().map(|s| s.to_string()));
    let mut all = vec![now_env(t), audit_env(t)];
    all.extend(env);
    namzu_env(full, all).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_leak_kind_of_the_demo_is_found_and_nothing_live() {
    let t = start_demo().await;
    let o = namzu(&t, &["leaks", "-A", "-o", "json"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let items = json_of(&o);
    for i in &items {
        for key in ["kind", "namespace", "name", "reason", "age", "next"] {
            assert!(!i[key].is_null(), "{key} missing in {i}");
        }
    }
    let disk = find(&items, GHOST_DISK).expect("the orphaned disk");
    assert_eq!(disk["kind"], "PersistentVolumeClaim");
    assert_eq!(disk["leak"], "orphaned-disk");
    assert_eq!(disk["size"], "10Gi");
    assert_eq!(disk["age"], "40d");
    // wren's foreign policy still selects the re-created wren: in use, with the proof
    let wren_policy = format!("namzu-sbx-{}", earlier_uid("namzu-ws-wren"));
    let policy = find(&items, &wren_policy).expect("the stranger's policy");
    assert_eq!(
        (policy["leak"].as_str(), policy["deletable"].as_bool()),
        (Some("in-use"), Some(false))
    );
    assert!(
        policy["reason"].as_str().unwrap().contains("selects namzu-ws-wren"),
        "{policy}"
    );
    let task = find(&items, TASK_POLICY).expect("the gone task's policy");
    assert_eq!(task["leak"], "orphaned-policy");
    let stuck = find(&items, "namzu-ws-quebec").expect("the Sandbox stuck on a finalizer");
    assert_eq!(stuck["leak"], "stuck-deleting");
    assert!(
        stuck["reason"].as_str().unwrap().contains("namzu.ai/demo-hold"),
        "{stuck}"
    );
    // Expired under shutdownPolicy Retain (agent-sandbox's default): kept on purpose
    let expired = find(&items, "namzu-ws-papa").expect("the Expired workspace");
    assert_eq!(expired["leak"], "retained-by-policy");
    assert_eq!(
        find(&items, "coder-pool").expect("the short warm pool")["reason"],
        "2/3 ready"
    );
    assert_eq!(
        find(&items, "sandbox-claim-7f3a9c21").expect("the unanswered claim")["leak"],
        "claim-without-sandbox"
    );
    // nothing live: every disk and policy of a Sandbox that exists stays out, topaz's disk
    // (owned by an earlier uid, adopted by name) and wren's own policy included
    let live: Vec<String> = t
        .sim
        .list(&SANDBOXES, None)
        .iter()
        .filter(|s| s["metadata"]["deletionTimestamp"].is_null())
        .filter(|s| s["spec"]["shutdownTime"].is_null())
        .map(|s| s["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    for i in &items {
        let name = i["name"].as_str().unwrap();
        assert!(
            !live.iter().any(|l| name == l || name.ends_with(&format!("-{l}"))),
            "{name} belongs to a live Sandbox"
        );
    }
    assert!(find(&items, "workspace-disk-namzu-ws-topaz").is_none());
    // the demo's detached disk of keep, the Expired retained, the gone task's policy, staging's
    // stuck pool and the stale members of its rollout pool (a finding, not a leak)
    assert_eq!(items.len(), 11, "{items:#?}");
    // the reads are narrowed: PVCs only by the controller's label
    for r in t
        .sim
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/persistentvolumeclaims"))
    {
        assert_eq!(
            r.query_param("labelSelector").as_deref(),
            Some("agents.x-k8s.io/sandbox-name-hash"),
            "{r:?}"
        );
    }
    // the table and wide say the same
    let table = out(&namzu(&t, &["leaks", "-A"]).await);
    assert!(table.contains(GHOST_DISK) && table.contains("10Gi"), "{table}");
    let wide = out(&namzu(&t, &["leaks", "-A", "-o", "wide"]).await);
    assert!(
        wide.contains("NEXT") && wide.contains("CHECKS") && wide.contains("kubectl namzu inspect -n agents papa"),
        "{wide}"
    );
    let yaml = out(&namzu(&t, &["leaks", "-A", "-o", "yaml"]).await);
    assert!(yaml.contains("leak: orphaned-disk"), "{yaml}");
}

/// A workspace deleted with its disk orphaned: its disk is a leak; re-created under the same
/// name, the disk is its again and nothing is listed — and a DELETE planned before is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_deleted_and_recreated_under_its_name_re_adopts_its_disk() {
    let t = start().await;
    let disk = "workspace-disk-namzu-ws-asleep";
    // an orphaning delete: the disk loses its owner, the Sandbox goes
    let old = t.sim.get(&SANDBOXES, "agents", "namzu-ws-asleep").unwrap();
    t.sim.delete_orphaning(&SANDBOXES, "agents", "namzu-ws-asleep");
    let items = json_of(&namzu(&t, &["leaks", "-n", "agents", "-o", "json"]).await);
    let leak = find(&items, disk).expect("the detached disk").clone();
    // unowned with its name hash: agent-sandbox takes it back if the workspace comes back
    assert_eq!(leak["leak"], "detached-disk", "{leak}");
    assert!(
        leak["reason"]
            .as_str()
            .unwrap()
            .contains("re-adopted if namzu-ws-asleep is created again"),
        "{leak}"
    );
    assert_eq!(items.len(), 1, "{items:#?}");
    let pvc = t.sim.get(&PVCS, "agents", disk).unwrap();
    let plan = LeakPlan {
        target: LeakTarget::Disk,
        namespace: "agents".into(),
        name: disk.into(),
        uid: pvc["metadata"]["uid"].as_str().unwrap().into(),
        resource_version: pvc["metadata"]["resourceVersion"].as_str().unwrap().into(),
        dry_run: false,
        server_dry_run: false,
        allow_detached: true,
        quarantine_days: None,
        quarantine_only: false,
    };
    // re-created under the same name (a new uid)
    let mut again = old.clone();
    for k in ["uid", "resourceVersion", "creationTimestamp"] {
        again["metadata"].as_object_mut().unwrap().remove(k);
    }
    again.as_object_mut().unwrap().remove("status");
    t.sim.create(&SANDBOXES, again).unwrap();
    let items = json_of(&namzu(&t, &["leaks", "-n", "agents", "-o", "json"]).await);
    assert!(items.is_empty(), "nothing live is listed: {items:#?}");
    // the DELETE planned from the earlier report is refused: the disk is claimed again
    t.sim.clear_requests();
    let conn = connect(&t, t.sim.kubeconfig(), None, std::time::Duration::from_secs(5)).await;
    let audit = AuditLog {
        path: Some(t.dir.path().join("audit.jsonl")),
        ..Default::default()
    };
    let outcome = write::delete_leak(&conn, &policy(false, audit), &plan).await;
    match outcome {
        // the controller took the disk back (its ownerReference, a new resourceVersion)
        LeakOutcome::Refused { message } => assert!(
            message.contains("re-adopted") || message.contains("changed since it was reported"),
            "{message}"
        ),
        other => panic!("not refused: {other:?}"),
    }
    assert!(deletes(&t).is_empty(), "nothing sent");
    assert!(t.sim.get(&PVCS, "agents", disk).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaks_delete_sends_fenced_audited_deletes_of_disks_and_policies_only() {
    let t = start_demo().await;
    let wren_policy = TASK_POLICY.to_string();
    let before_disk = t.sim.get(&PVCS, "agents", GHOST_DISK).unwrap();
    let before_policy = t.sim.get(&CILIUM_POLICIES, "agents", &wren_policy).unwrap();
    // a dry run: the requests said, nothing sent
    t.sim.clear_requests();
    let o = namzu(&t, &["leaks", "-A", "--delete", "--dry-run"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains("would send DELETE") && out(&o).contains("preconditions"),
        "{}",
        out(&o)
    );
    assert!(deletes(&t).is_empty());
    // a server-side dry run: sent with dryRun=All, nothing deleted
    let o = namzu(&t, &["leaks", "-A", "--delete", "--dry-run=server", "--yes"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let sent = deletes(&t);
    // the ghost's disk, keep's detached disk and wren's policy
    assert_eq!(sent.len(), 2, "{sent:?}");
    // (DeleteOptions.dryRun, as kubectl --dry-run=server sends it)
    assert!(
        sent.iter()
            .all(|r| r.body.as_ref().is_some_and(|b| b["dryRun"] == json!(["All"]))),
        "{sent:?}"
    );
    assert!(t.sim.get(&PVCS, "agents", GHOST_DISK).is_some());
    // audited as what it was: a dry run, never "applied"
    let log = std::fs::read_to_string(t.dir.path().join("audit.jsonl")).unwrap();
    let dry: Vec<&str> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["verb"] == "delete-leak" && e["workspace"] == GHOST_DISK)
        .filter_map(|e| e["outcome"].as_str().map(str::to_string))
        .map(|o| {
            if o == "dry-run" {
                "dry-run"
            } else if o == "intent" {
                "intent"
            } else {
                "other"
            }
        })
        .collect();
    assert_eq!(dry.last(), Some(&"dry-run"), "{log}");
    assert!(!dry.contains(&"other"), "{log}");
    // the deletes: each with uid and resourceVersion preconditions, the objects' own
    t.sim.clear_requests();
    let o = namzu(&t, &["leaks", "-A", "--delete", "--yes", "-o", "json"]).await;
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    let sent = deletes(&t);
    assert_eq!(
        sent.len(),
        2,
        "only the orphaned disk and policy (keep's is detached): {sent:?}"
    );
    for (before, path) in [
        (
            &before_disk,
            format!("/api/v1/namespaces/agents/persistentvolumeclaims/{GHOST_DISK}"),
        ),
        (
            &before_policy,
            format!("/apis/cilium.io/v2/namespaces/agents/ciliumnetworkpolicies/{wren_policy}"),
        ),
    ] {
        let r = sent
            .iter()
            .find(|r| r.path == path)
            .unwrap_or_else(|| panic!("{path}: {sent:?}"));
        let body = r.body.as_ref().expect("DeleteOptions");
        assert_eq!(body["preconditions"]["uid"], before["metadata"]["uid"]);
        assert_eq!(
            body["preconditions"]["resourceVersion"],
            before["metadata"]["resourceVersion"]
        );
        assert_eq!(r.status, 200);
    }
    assert!(t.sim.get(&PVCS, "agents", GHOST_DISK).is_none());
    assert!(t.sim.get(&CILIUM_POLICIES, "agents", &wren_policy).is_none());
    // the stuck and the Expired stay: reported, not deleted
    assert!(t.sim.get(&SANDBOXES, "agents", "namzu-ws-quebec").is_some());
    assert!(t.sim.get(&SANDBOXES, "agents", "namzu-ws-papa").is_some());
    let report = json_of(&o);
    assert!(report.iter().all(|r| r["result"] == "deleted"), "{report:#?}");
    // audited write-ahead: an intent before each outcome
    let log = std::fs::read_to_string(t.dir.path().join("audit.jsonl")).unwrap();
    let entries: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let of = |name: &str| -> Vec<String> {
        entries
            .iter()
            .filter(|e| e["workspace"] == name && e["verb"] == "delete-leak")
            .map(|e| e["outcome"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(of(GHOST_DISK).last().map(String::as_str), Some("applied"));
    assert!(of(GHOST_DISK).contains(&"intent".to_string()));
    assert_eq!(of(&wren_policy).last().map(String::as_str), Some("applied"));
    // gone: the next report lists neither
    let items = json_of(&namzu(&t, &["leaks", "-A", "-o", "json"]).await);
    assert!(find(&items, GHOST_DISK).is_none() && find(&items, &wren_policy).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaks_delete_honours_read_only_max_bulk_and_typed_confirmation() {
    let t = start_demo().await;
    t.sim.clear_requests();
    // disks hold data: a typed confirmation by default, which a pipe cannot give
    let o = namzu(&t, &["leaks", "-A", "--delete"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("--yes"), "{}", err(&o));
    // read-only: by the context's rules, and by the flag
    let ro = rules_env(&t, "contexts:\n  - context: '*'\n    readOnly: true\n");
    let o = run_with(&t, vec![ro], &["leaks", "-A", "--delete", "--yes"]).await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("read-only"), "{}", err(&o));
    let o = namzu(&t, &["--read-only", "leaks", "-A", "--delete", "--yes"]).await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    // maxBulk: two objects are more than one
    let bulk = rules_env(&t, "contexts:\n  - context: '*'\n    maxBulk: 1\n");
    let o = run_with(&t, vec![bulk], &["leaks", "-A", "--delete", "--yes"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("maxBulk of 1"), "{}", err(&o));
    assert!(deletes(&t).is_empty(), "nothing sent");
    assert!(t.sim.get(&PVCS, "agents", GHOST_DISK).is_some());
    // the report itself is a read: read-only allows it
    let ro = rules_env(&t, "contexts:\n  - context: '*'\n    readOnly: true\n");
    let o = run_with(&t, vec![ro], &["leaks", "-A"]).await;
    assert!(o.status.success(), "{}", err(&o));
}

/// `resources` in `list -o json`, CPU/MEM/DISK in `-o wide` and `capacity`'s totals equal a hand
/// computation on the demo's templates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_equal_a_hand_computation_on_the_demo() {
    let t = start_demo().await;
    let items = listed(&namzu(&t, &["list", "-A", "-o", "json"]).await);
    let w = |id: &str| items.iter().find(|i| i["id"] == id).unwrap().clone();
    // coder-v2: one container, requests 250m / 1Gi, limits 2 / 4Gi; one 10Gi disk
    assert_eq!(
        w("alpha")["resources"],
        json!({"source": "pod", "requests": {"cpu": "250m", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "4Gi"},
            "disks": [{"claim": "workspace-disk-namzu-ws-alpha", "size": "10Gi"}]})
    );
    // coder-v1: limits 1 / 2Gi
    assert_eq!(w("bravo")["resources"]["limits"], json!({"cpu": "1", "memory": "2Gi"}));
    // researcher: limits only, so the request is the limit (the API server defaults it)
    assert_eq!(w("tango")["resources"]["requests"], json!({"memory": "8Gi"}));
    assert_eq!(w("tango")["resources"]["limits"], json!({"memory": "8Gi"}));
    let wide = out(&namzu(&t, &["list", "-o", "wide"]).await);
    assert!(wide.lines().next().unwrap().contains("CPU"), "{wide}");
    let alpha: Vec<&str> = wide
        .lines()
        .find(|l| l.starts_with("alpha "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert!(alpha.windows(3).any(|c| c == ["250m", "1Gi", "10Gi"]), "{alpha:?}");
    // capacity: what each state holds; Running pods' requests by hand from list's own figures
    let cap: Vec<Value> = serde_json::from_str(&out(&namzu(&t, &["capacity", "-A", "-o", "json"]).await)).unwrap();
    let agents = cap.iter().find(|c| c["namespace"] == "agents").unwrap();
    let running: Vec<&Value> = items
        .iter()
        .filter(|i| i["namespace"] == "agents" && i["state"] == "Running")
        .collect();
    let mcpu: i64 = running
        .iter()
        .map(|i| match i["resources"]["requests"]["cpu"].as_str() {
            Some("250m") => 250,
            None => 0,
            other => panic!("unexpected {other:?}"),
        })
        .sum();
    assert!(mcpu > 0);
    let want = if mcpu % 1000 == 0 {
        (mcpu / 1000).to_string()
    } else {
        format!("{mcpu}m")
    };
    assert_eq!(agents["holds"]["Running"]["requests"]["cpu"], want, "{agents:#}");
    let suspended = items
        .iter()
        .filter(|i| i["namespace"] == "agents" && i["state"] == "Suspended")
        .count();
    assert_eq!(
        agents["holds"]["Suspended"]["disks"],
        format!("{}Gi", 10 * suspended),
        "{agents:#}"
    );
    assert!(agents["holds"]["Suspended"]["requests"].as_object().unwrap().is_empty());
}

/// A bulk dry run ends with what the writes would free: the Running workspaces' requests by hand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_dry_run_says_what_it_would_free() {
    let t = start_demo().await;
    let items = listed(&namzu(&t, &["list", "-n", "research", "-o", "json"]).await);
    let running = items.iter().filter(|i| i["mode"] == "Running").count();
    assert!(running > 1, "{items:#?}");
    t.sim.clear_requests();
    let o = namzu(&t, &["suspend", "-n", "research", "--all", "--dry-run"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let last = out(&o).lines().last().unwrap_or_default().to_string();
    // researcher has limits only (8Gi memory): its pods ask for their limit, as admitted; the
    // written ones' disks (10Gi each) stay
    assert_eq!(
        last,
        format!(
            "would free {}Gi memory (requests); disks stay: {}Gi",
            8 * items
                .iter()
                .filter(|i| i["mode"] == "Running" && i["resources"]["requests"]["memory"] == "8Gi")
                .count(),
            10 * running
        ),
        "{}",
        out(&o)
    );
    assert!(
        t.sim.requests().iter().all(|r| r.method == "GET"),
        "a dry run sends nothing"
    );
    let o = namzu(&t, &["suspend", "-n", "agents", "--state", "Running", "--dry-run"]).await;
    let last = out(&o).lines().last().unwrap_or_default().to_string();
    let agents = listed(&namzu(&t, &["list", "-n", "agents", "--state", "Running", "-o", "json"]).await);
    let mcpu: usize = agents
        .iter()
        .filter(|i| i["mode"] == "Running" && i["resources"]["requests"]["cpu"] == "250m")
        .count()
        * 250;
    let cpu = if mcpu.is_multiple_of(1000) {
        (mcpu / 1000).to_string()
    } else {
        format!("{:.1}", mcpu as f64 / 1000.0)
            .trim_end_matches(".0")
            .to_string()
    };
    assert!(
        last.starts_with(&format!("would free {cpu} CPU, ")),
        "{last}\n{}",
        out(&o)
    );
    assert!(last.contains("disks stay: "), "{last}");
    let o = namzu(&t, &["delete", "-n", "research", "--all", "--dry-run"]).await;
    assert!(
        out(&o).lines().last().unwrap_or_default().contains("disks deleted: "),
        "{}",
        out(&o)
    );
}

/// Review of issue 29: `leaks --delete` stops as a bulk write does — the delete in flight
/// finishes, none starts after stdout is found closed, the stop is said and audited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_pipe_stops_leak_deletes_and_the_stop_is_audited() {
    let t = start_demo().await;
    t.sim.clear_requests();
    let o = crate::hostile::run_into_closed_pipe(&t, &["leaks", "-A", "--delete", "--yes"]).await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert_eq!(deletes(&t).len(), 1, "the first delete only: {}", err(&o));
    assert!(
        err(&o).contains("stopped (stdout was closed) after 1 of 2 deletes; not started: "),
        "{}",
        err(&o)
    );
    let log = std::fs::read_to_string(t.dir.path().join("audit.jsonl")).unwrap();
    let stop: Value = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["outcome"] == "stopped")
        .expect("a stop entry");
    assert_eq!(stop["verb"], "delete-leak");
    assert_eq!(stop["done"].as_array().unwrap().len(), 1, "{stop}");
    assert_eq!(stop["notStarted"].as_array().unwrap().len(), 1, "{stop}");
}

/// `leaks --delete` holds on a 429 as the workspace writes do: the DELETE is resent after the
/// server's Retry-After (with its preconditions, its intent audited again), not failed at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaks_delete_holds_on_a_429_and_resends() {
    let t = start_demo().await;
    t.sim.add_fault(
        namzu_sim::faults::Fault::status(Some("DELETE"), GHOST_DISK, 429, "too many requests")
            .retry_after(1)
            .times(1),
    );
    t.sim.clear_requests();
    let o = namzu(&t, &["leaks", "-A", "--delete", "--yes"]).await;
    assert!(
        o.status.success(),
        "{}\n{}\n{:?}",
        out(&o),
        err(&o),
        t.sim
            .requests()
            .iter()
            .map(|r| (r.method.clone(), r.path.clone(), r.status))
            .collect::<Vec<_>>()
    );
    let sent: Vec<(u16, Value)> = deletes(&t)
        .into_iter()
        .filter(|r| r.path.ends_with(GHOST_DISK))
        .map(|r| (r.status, r.body.unwrap_or_default()["preconditions"].clone()))
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0].0, 429);
    assert!(sent[1].0 < 300, "{sent:?}");
    assert_eq!(sent[0].1, sent[1].1, "resent with the same preconditions");
    assert!(t.sim.get(&PVCS, "agents", GHOST_DISK).is_none());
}
