//! `kubectl namzu list` as a process against the sim: formats, filters, sort, errors, RBAC.

use crate::support::*;
use namzu_sim::auth::{Rule, User};
use namzu_sim::discovery::AgentSandbox;
use namzu_sim::faults::{Fault, FaultAction};
use serde_json::Value;
use std::collections::BTreeSet;

fn json(o: &std::process::Output) -> Vec<Value> {
    listed(o)
}

fn field(items: &[Value], pointer: &str) -> BTreeSet<String> {
    items
        .iter()
        .filter_map(|i| i.pointer(pointer))
        .map(|v| v.as_str().map_or(v.to_string(), str::to_string))
        .collect()
}

const MT: &str = "multi_thread";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_covers_every_state_diagnosis_and_drift_and_hides_non_workspaces() {
    let _ = MT;
    let t = start_demo().await;
    let o = namzu(&t, &["list", "-A", "-o", "json"]).await;
    let items = json(&o);
    // (39 with the Expired retained, the slow starter zephyr and nomad, whose state is unknown;
    // 41 with lapsed, whose claim expired, and vetoed, whose claim's disks were refused)
    assert_eq!(items.len(), 41);
    let states = field(&items, "/state");
    for s in [
        "Running",
        "Starting",
        "Suspending",
        "Suspended",
        "Failed",
        "Expired",
        "Deleting",
        "Error",
    ] {
        assert!(states.contains(s), "state {s} missing: {states:?}");
    }
    let kinds = field(&items, "/diagnosis/kind");
    for k in [
        "unschedulable",
        "image-pull",
        "crash-loop",
        "disk-pending",
        "suspend-unconfirmed",
        "stuck-terminating",
        "pod-terminated",
        "controller-error",
        "foreign-pod",
        "stale-status",
        "no-live-pod",
        "foreign-disk",
        "disk-missing",
        "foreign-egress-policy",
        "controller-reason",
        "stuck-deleting",
        "expired",
    ] {
        assert!(kinds.contains(k), "diagnosis {k} missing: {kinds:?}");
    }
    assert_eq!(
        kinds.len(),
        namzu_domain::diagnosis::DiagnosisKind::ALL.len(),
        "one workspace of every diagnosis: {kinds:?}"
    );
    let drifts = field(&items, "/drift/state");
    for d in ["current", "drifted", "unknown", "no-template", "unreadable"] {
        assert!(drifts.contains(d), "drift {d} missing: {drifts:?}");
    }
    let names = field(&items, "/sandboxName");
    assert!(
        !names
            .iter()
            .any(|n| n.contains("stranger") || n.contains("task") || n.contains("hermes"))
    );
    // the forbidden templates in staging: one warning line, and the rows still listed
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("sandboxtemplates") && e.contains("staging"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn management_6_lists_exactly_the_two_workspaces() {
    let scenario = r#"
namespaces: [ns]
objects:
  - {apiVersion: extensions.agents.x-k8s.io/v1beta1, kind: SandboxTemplate, metadata: {name: ws, namespace: ns},
     spec: {podTemplate: {spec: {containers: [{name: c, image: i}]}}}}
  - {apiVersion: agents.x-k8s.io/v1beta1, kind: Sandbox, metadata: {name: sbx-7f3a, namespace: ns},
     spec: {podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: ws}}, spec: {containers: [{name: c, image: i}]}}}}
  - {apiVersion: agents.x-k8s.io/v1beta1, kind: Sandbox, metadata: {name: namzu-ws-stranger, namespace: ns},
     spec: {podTemplate: {spec: {containers: [{name: c, image: i}]}}}}
workspaces:
  - {namespace: ns, id: awake, podTemplate: &pt {metadata: {labels: {sandbox.namzu.ai/template: ws}}, spec: {containers: [{name: c, image: i}]}}, noAnnotations: true}
  - {namespace: ns, id: asleep, podTemplate: *pt, mode: Suspended, changedAt: "2026-09-10T12:00:00Z"}
"#;
    let t = start_with(scenario, |c| c.namespace = "ns".into()).await;
    let items = json(&namzu(&t, &["list", "-o", "json"]).await);
    let ids: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["asleep", "awake"]);
    let asleep = &items[0];
    assert_eq!(asleep["mode"], "Suspended");
    assert_eq!(asleep["operatingModeChangedAt"], "2026-09-10T12:00:00Z", "as stored");
    assert_eq!(asleep["template"], "ws");
    let awake = &items[1];
    assert_eq!(awake["mode"], "Running");
    assert_eq!(
        awake["operatingModeChangedAt"],
        Value::Null,
        "never defaulted to createdAt"
    );
    assert_eq!(
        awake["holderEpoch"],
        serde_json::json!({"value":0,"readable":true,"raw":null})
    );
    assert_eq!(awake["drift"]["state"], "unknown");
    // read-only: nothing but GETs
    assert!(t.sim.requests().iter().all(|r| r.method == "GET"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formats_and_headers() {
    let t = start_demo().await;
    let table = namzu(&t, &["list", "-n", "research"]).await;
    let text = out(&table);
    let header: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "WORKSPACE",
            "MODE",
            "STATE",
            "AGE",
            "MODE-CHANGED",
            "EPOCH",
            "TEMPLATE",
            "DRIFT",
            "DIAGNOSIS"
        ]
    );
    assert_eq!(text.lines().count(), 7);
    assert!(!text.contains('\x1b'), "no colour off a terminal");

    let wide = out(&namzu(&t, &["list", "-n", "research", "-o", "wide", "--no-headers"]).await);
    assert_eq!(wide.lines().count(), 6);
    let tango: Vec<&str> = wide
        .lines()
        .find(|l| l.starts_with("tango"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(tango.len(), 21);
    assert_eq!(tango[10], "namzu-ws-tango", "POD");
    assert_eq!(tango[11], "0", "RESTARTS");
    assert!(tango[14].starts_with("sha256:"), "TEMPLATE-HASH");
    // researcher has limits only: its pod asks for its 8Gi memory limit (requests defaulted
    // from limits at admission), no CPU; one 10Gi disk
    assert_eq!(&tango[15..18], ["-", "8Gi", "10Gi"], "CPU, MEM, DISK");
    assert_eq!(&tango[18..], ["-", "off", "-"], "EGRESS, PER-SANDBOX, POLICY");

    let names = out(&namzu(&t, &["list", "-n", "research", "-o", "name"]).await);
    assert_eq!(names.lines().next(), Some("sandbox.agents.x-k8s.io/namzu-ws-tango"));

    let yaml = out(&namzu(&t, &["list", "-n", "research", "-o", "yaml"]).await);
    let parsed: Value = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(
        (&parsed["kind"], parsed["items"].as_array().map(Vec::len)),
        (&Value::from("List"), Some(6))
    );

    let items = json(&namzu(&t, &["list", "-A", "-o", "json"]).await);
    let sierra = items.iter().find(|i| i["id"] == "sierra").unwrap();
    assert_eq!(
        sierra["holderEpoch"],
        serde_json::json!({"value":null,"readable":false,"raw":"latest"})
    );
    let alpha = items.iter().find(|i| i["id"] == "alpha").unwrap();
    assert_eq!(
        alpha["holderEpoch"],
        serde_json::json!({"value":7,"readable":true,"raw":"7"})
    );
    for key in [
        "id",
        "namespace",
        "sandboxName",
        "uid",
        "mode",
        "state",
        "diagnosis",
        "createdAt",
        "operatingModeChangedAt",
        "holderEpoch",
        "template",
        "drift",
        "pod",
        "pvcs",
    ] {
        assert!(alpha.get(key).is_some(), "{key}");
    }
    assert_eq!(alpha["drift"]["stored"], alpha["drift"]["current"]);
    assert_eq!(alpha["pod"]["phase"], "Running");
    assert_eq!(alpha["pvcs"][0]["name"], "workspace-disk-namzu-ws-alpha");
    let xray = items.iter().find(|i| i["id"] == "xray").unwrap();
    assert_eq!(xray["drift"]["state"], "unreadable");
    let table = out(&namzu(&t, &["list", "-n", "staging"]).await);
    assert!(
        table.lines().nth(1).unwrap().split_whitespace().any(|c| c == "?"),
        "forbidden shows ?: {table}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_and_sorting() {
    let t = start_demo().await;
    let ids = |o: &std::process::Output| {
        json(o)
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let suspended = ids(&namzu(&t, &["list", "-A", "-o", "json", "--state", "suspended"]).await);
    assert_eq!(
        suspended,
        [
            "delta", "echo", "ember", "flint", "sierra", "wren", "uniform", "victor", "yankee"
        ]
    );
    let drifted = ids(&namzu(&t, &["list", "-A", "-o", "json", "--drift", "drifted,no-template"]).await);
    assert_eq!(
        drifted,
        [
            "bravo", "delta", "ember", "flint", "golf", "papa", "quebec", "victor", "whiskey"
        ]
    );
    let diag = ids(&namzu(
        &t,
        &["list", "-A", "-o", "json", "--diagnosis", "image-pull,crash-loop"],
    )
    .await);
    assert_eq!(diag, ["golf", "hotel"]);
    // retention: Suspended and changed-at older than 25 days (delta 60d, victor 30d); never
    // one without the annotation
    let old = ids(&namzu(&t, &["list", "-A", "-o", "json", "--suspended-for", "25d"]).await);
    assert_eq!(old, ["delta", "victor"]);
    let by_epoch = ids(&namzu(&t, &["list", "-n", "research", "-o", "json", "--sort-by", "epoch"]).await);
    assert_eq!(
        by_epoch,
        ["victor", "whiskey", "vetoed", "zephyr", "uniform", "tango"],
        "absent reads as 0, ties by name"
    );
    let by_age = ids(&namzu(&t, &["list", "-n", "research", "-o", "json", "--sort-by", "age"]).await);
    assert_eq!(
        by_age,
        ["victor", "whiskey", "uniform", "tango", "zephyr", "vetoed"],
        "oldest first"
    );
    let by_changed = ids(&namzu(
        &t,
        &["list", "-n", "research", "-o", "json", "--sort-by", "mode-changed"],
    )
    .await);
    assert_eq!(
        by_changed,
        ["whiskey", "victor", "uniform", "tango", "zephyr", "vetoed"]
    );
    let by_state = ids(&namzu(&t, &["list", "-n", "research", "-o", "json", "--sort-by", "state"]).await);
    assert_eq!(by_state, ["tango", "whiskey", "zephyr", "vetoed", "uniform", "victor"]);
    let by_drift = ids(&namzu(&t, &["list", "-n", "research", "-o", "json", "--sort-by", "drift"]).await);
    assert_eq!(by_drift, ["tango", "uniform", "vetoed", "zephyr", "victor", "whiskey"]);
    // label selector goes to the server
    t.sim
        .modify(&namzu_sim::resources::SANDBOXES, "research", "namzu-ws-tango", |o| {
            o["metadata"]["labels"] = serde_json::json!({"team":"ml"})
        });
    let labelled = ids(&namzu(&t, &["list", "-A", "-o", "json", "-l", "team=ml"]).await);
    assert_eq!(labelled, ["tango"]);
    assert!(
        t.sim
            .requests()
            .iter()
            .any(|r| r.query_param("labelSelector").as_deref() == Some("team=ml"))
    );

    for bad in [
        ["--state", "sleepy"],
        ["--drift", "old"],
        ["--diagnosis", "x"],
        ["--sort-by", "size"],
        ["--suspended-for", "30"],
        ["-o", "xml"],
    ] {
        let o = namzu(&t, &["list", bad[0], bad[1]]).await;
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", err(&o));
    }
}

fn rbac_user(rules: Vec<Rule>) -> Vec<User> {
    vec![User::with_rules("ops", "ops-token", rules)]
}

fn read_all_but(skip: &str) -> Vec<Rule> {
    [
        "sandboxes",
        "pods",
        "persistentvolumeclaims",
        "sandboxtemplates",
        "namespaces",
        "ciliumnetworkpolicies",
    ]
    .into_iter()
    .filter(|r| *r != skip)
    .map(|r| Rule::new(&["get", "list", "watch"], &["*"], &[r], &[]))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_pods_pvcs_or_templates_degrade_to_question_marks() {
    for (skip, column_check) in [
        ("pods", "/pod"),
        ("persistentvolumeclaims", "/pvcs"),
        ("sandboxtemplates", "/drift/state"),
        ("ciliumnetworkpolicies", "/egress/policies"),
    ] {
        let t = start_with(SMALL, |c| c.users = rbac_user(read_all_but(skip))).await;
        let o = namzu(&t, &["list", "-n", "agents", "-o", "json"]).await;
        let items = json(&o);
        assert_eq!(items.len(), 3, "{skip}");
        let want = if skip == "sandboxtemplates" {
            "unreadable"
        } else {
            "forbidden"
        };
        assert!(
            items.iter().all(|i| i.pointer(column_check).unwrap() == want),
            "{skip}: {items:?}"
        );
        let e = err(&o);
        assert_eq!(e.lines().count(), 1, "{skip}: {e}");
        assert!(e.contains(skip), "{skip}: {e}");
        if skip != "persistentvolumeclaims" {
            // POLICY is a wide column
            let wide = if skip == "ciliumnetworkpolicies" {
                "wide"
            } else {
                "table"
            };
            let table = out(&namzu(&t, &["list", "-n", "agents", "-o", wide]).await);
            let rows_with_question_mark = table
                .lines()
                .skip(1)
                .filter(|l| l.split_whitespace().any(|c| c == "?"))
                .count();
            assert_eq!(rows_with_question_mark, 3, "{skip}: {table}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_scoped_user_with_all_namespaces_falls_back() {
    let rules = vec![Rule::new(&["get", "list", "watch"], &["*"], &["*"], &["agents"])];
    let t = start_with(SMALL, |c| {
        c.users = rbac_user(rules);
        c.namespace = "agents".into();
    })
    .await;
    let o = namzu(&t, &["list", "-A", "-o", "json"]).await;
    let items = json(&o);
    assert_eq!(items.len(), 3);
    assert!(err(&o).contains("showing namespace agents only"), "{}", err(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_contexts_and_merging() {
    let t = start().await;
    let dir = t.dir.path();
    // two contexts in one file: the current one points nowhere, --context picks the sim
    let server = t.sim.url();
    let two = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: dead\nclusters:\n- name: sim\n  cluster: {{server: \"{server}\"}}\n- name: dead\n  cluster: {{server: \"http://127.0.0.1:1\"}}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: sim\n  context: {{cluster: sim, user: u, namespace: agents}}\n- name: dead\n  context: {{cluster: dead, user: u}}\n"
    );
    let path = dir.join("two");
    std::fs::write(&path, two).unwrap();
    let p = path.display().to_string();
    let ok = namzu_env(
        vec![
            "--kubeconfig".into(),
            p.clone(),
            "--context".into(),
            "sim".into(),
            "list".into(),
            "-o".into(),
            "name".into(),
        ],
        vec![],
    )
    .await;
    assert!(ok.status.success(), "{}", err(&ok));
    assert_eq!(out(&ok).lines().count(), 3, "namespace from the context");
    let dead = namzu_env(vec!["--kubeconfig".into(), p.clone(), "list".into()], vec![]).await;
    assert_eq!(dead.status.code(), Some(1));
    let e = err(&dead);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("cannot reach the Kubernetes API server at http://127.0.0.1:1"),
        "{e}"
    );
    let missing = namzu_env(
        vec![
            "--kubeconfig".into(),
            p.clone(),
            "--context".into(),
            "nope".into(),
            "list".into(),
        ],
        vec![],
    )
    .await;
    assert!(
        err(&missing).contains("context \"nope\" not found"),
        "{}",
        err(&missing)
    );

    // KUBECONFIG with several paths merges: the first file's current-context wins
    let first = dir.join("first");
    std::fs::write(&first, "apiVersion: v1\nkind: Config\ncurrent-context: sim\n").unwrap();
    let joined = std::env::join_paths([first.clone(), path.clone()])
        .unwrap()
        .into_string()
        .unwrap();
    let merged = namzu_env(
        vec!["list".into(), "-o".into(), "name".into()],
        vec![("KUBECONFIG".into(), joined)],
    )
    .await;
    assert!(merged.status.success(), "{}", err(&merged));
    assert_eq!(out(&merged).lines().count(), 3);

    let garbage = dir.join("garbage");
    std::fs::write(&garbage, "{{{ not yaml").unwrap();
    let bad = namzu_env(
        vec!["--kubeconfig".into(), garbage.display().to_string(), "list".into()],
        vec![],
    )
    .await;
    assert_eq!(bad.status.code(), Some(1));
    assert!(err(&bad).starts_with("error: kubeconfig:"), "{}", err(&bad));
    assert_eq!(err(&bad).lines().count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_failures_are_one_line() {
    let t = start_with(SMALL, |c| c.users = vec![User::admin("admin", "good")]).await;
    let dir = t.dir.path();
    let wrong = dir.join("wrong");
    t.sim.write_kubeconfig_for(&wrong, Some("bad"), "agents").unwrap();
    let o = namzu_env(
        vec!["--kubeconfig".into(), wrong.display().to_string(), "list".into()],
        vec![],
    )
    .await;
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("401") && err(&o).contains("re-authenticate"),
        "{}",
        err(&o)
    );

    // TLS to a server that is not speaking it: named as TLS, not as unreachable
    let https = dir.join("https");
    let text = std::fs::read_to_string(t.sim.kubeconfig())
        .unwrap()
        .replace("http://", "https://");
    std::fs::write(&https, text).unwrap();
    let o = namzu_env(
        vec!["--kubeconfig".into(), https.display().to_string(), "list".into()],
        vec![],
    )
    .await;
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("TLS with the API server at https://127.0.0.1:"),
        "{}",
        err(&o)
    );
    assert_eq!(err(&o).lines().count(), 1);

    // an exec credential plugin that fails
    let exec = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\nclusters:\n- name: x\n  cluster: {{server: \"{}\"}}\nusers:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: sh\n      args: [\"-c\", \"echo token expired >&2; exit 1\"]\n      interactiveMode: Never\ncontexts:\n- name: x\n  context: {{cluster: x, user: u}}\n",
        t.sim.url()
    );
    let path = dir.join("exec");
    std::fs::write(&path, exec).unwrap();
    let o = namzu_env(
        vec!["--kubeconfig".into(), path.display().to_string(), "list".into()],
        vec![],
    )
    .await;
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("could not get credentials"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_or_old_agent_sandbox_is_named() {
    let t = start_with("", |c| c.agent_sandbox = AgentSandbox::Missing).await;
    let o = namzu(&t, &["list", "-A"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("agent-sandbox is not installed") && err(&o).contains("agents.x-k8s.io"),
        "{}",
        err(&o)
    );
    let t = start_with("", |c| c.agent_sandbox = AgentSandbox::TooOld).await;
    let o = namzu(&t, &["list"]).await;
    assert!(
        err(&o).contains("agent-sandbox too old (needs ≥ v0.5.0)") && err(&o).contains("v1alpha1"),
        "{}",
        err(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_timeout_bounds_each_call_and_verbose_logs() {
    let t = start().await;
    t.sim.add_fault(Fault::new(Some("GET"), "/pods", FaultAction::Hang));
    let o = namzu(&t, &["list", "-n", "agents", "--request-timeout", "1s"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("timed out after 1s") && err(&o).contains("list pods"),
        "{}",
        err(&o)
    );
    t.sim.clear_faults();
    let o = namzu(&t, &["list", "-n", "agents", "-v"]).await;
    assert!(o.status.success());
    assert!(
        err(&o).lines().any(
            |l| l.starts_with("I GET /apis/agents.x-k8s.io/v1beta1/namespaces/agents/sandboxes")
                && l.contains(" 200 in ")
        ),
        "{}",
        err(&o)
    );
    assert!(
        t.sim
            .requests()
            .iter()
            .all(|r| r.user_agent.starts_with("kubectl-namzu/"))
    );
}

fn many(n: usize) -> String {
    let mut s = String::from("namespaces: [ns]\nworkspaces:\n");
    for i in 0..n {
        s.push_str(&format!(
            "  - {{namespace: ns, id: w{i}, podTemplate: {{metadata: {{labels: {{sandbox.namzu.ai/template: t{}}}}}, spec: {{containers: [{{name: c, image: i}}]}}}}}}\n",
            i % 3
        ));
    }
    s
}

/// What one pass asked for, by kind: (LIST requests, GETs by name).
fn reads(t: &TestSim, plural: &str) -> (usize, usize) {
    let requests = t.sim.requests();
    let of_kind = |r: &&namzu_sim::record::Recorded| r.method == "GET" && r.path.split('/').any(|seg| seg == plural);
    let lists = requests
        .iter()
        .filter(of_kind)
        .filter(|r| r.path.ends_with(plural))
        .count();
    let gets = requests
        .iter()
        .filter(of_kind)
        .filter(|r| !r.path.ends_with(plural))
        .count();
    (lists, gets)
}

/// One pass reads a page of each kind per 500 objects in scope, whatever else the cluster holds:
/// one workspace or two pages of them (501), with no background or more than a page of other
/// pods and claims (600 each: a read of the whole cluster would cost pages more).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_cost_the_workspaces_not_the_cluster() {
    for (n, background) in [(1usize, 0usize), (1, 600), (501, 0), (501, 600)] {
        let scenario = format!(
            "{}background: {{pods: {background}, pvcs: {background}, namespaces: 2}}\n",
            many(n)
        );
        let t = start_with(&scenario, |c| c.namespace = "ns".into()).await;
        for scope in [vec!["list", "-o", "json"], vec!["list", "-A", "-o", "json"]] {
            t.sim.clear_requests();
            let o = namzu(&t, &scope).await;
            assert_eq!(json(&o).len(), n);
            let pages = n.div_ceil(500);
            // pages = ceil(objects in scope / chunk), whatever else the cluster holds
            assert_eq!(reads(&t, "sandboxes"), (pages, 0), "{n} + {background}, {scope:?}");
            assert_eq!(reads(&t, "pods"), (pages, 0), "{n} + {background}, {scope:?}");
            assert_eq!(
                reads(&t, "persistentvolumeclaims"),
                (pages, 0),
                "{n} + {background}, {scope:?}"
            );
            assert_eq!(reads(&t, "sandboxtemplates"), (0, n.min(3)));
            for r in t.sim.requests().iter().filter(|r| r.path.ends_with("/pods")) {
                assert_eq!(
                    r.query_param("labelSelector").as_deref(),
                    Some("agents.x-k8s.io/sandbox-name-hash")
                );
                assert_eq!(r.query_param("limit").as_deref(), Some("500"));
            }
        }
    }
    // --chunk-size: 0 is one request per LIST, N pages by N
    let t = start_with(&many(120), |c| c.namespace = "ns".into()).await;
    for (chunk, pages) in [("0", 1), ("10", 12), ("120", 1), ("119", 2)] {
        t.sim.clear_requests();
        let o = namzu(&t, &["list", "-o", "json", "--chunk-size", chunk]).await;
        assert_eq!(json(&o).len(), 120);
        assert_eq!(reads(&t, "sandboxes").0, pages, "--chunk-size {chunk}");
    }
}

/// A continue token that expired mid-list (410) restarts as one full list, as kubectl's pager
/// does; the result is whole, never half a list or a duplicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_continue_token_relists_once() {
    // two pages of the default 500
    let t = start_with(&many(501), |c| c.namespace = "ns".into()).await;
    t.sim.add_fault(
        Fault::status(
            Some("GET"),
            "/sandboxes",
            410,
            "The provided continue parameter is too old",
        )
        .nth(2),
    );
    t.sim.clear_requests();
    let o = namzu(&t, &["list", "-o", "json"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let ids: std::collections::BTreeSet<String> =
        json(&o).iter().map(|w| w["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids.len(), 501);
    let lists: Vec<_> = t
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/sandboxes"))
        .collect();
    assert_eq!(lists.len(), 3, "page 1, the expired page 2, one full list");
    assert_eq!(lists[2].query_param("limit"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_and_version() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let o = namzu_env(vec!["completion".into(), shell.into()], vec![]).await;
        assert!(o.status.success() && out(&o).contains("list"), "{shell}");
    }
    let o = namzu_env(vec!["version".into()], vec![]).await;
    assert_eq!(out(&o).trim(), format!("kubectl-namzu {}", env!("CARGO_PKG_VERSION")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_through_the_kubectl_shim_protocol() {
    let t = start_demo().await;
    let o = namzu(&t, &["__complete", "su"]).await;
    assert_eq!(out(&o), "suspend\n:4\n");
    let o = namzu(&t, &["__complete", "inspect", "a"]).await;
    assert_eq!(out(&o), "alpha\n:4\n", "workspace ids of the context's namespace");
    let o = namzu_env(
        vec![
            "--kubeconfig".into(),
            "/nonexistent".into(),
            "__complete".into(),
            "delete".into(),
            "".into(),
        ],
        vec![],
    )
    .await;
    assert!(o.status.success());
    assert_eq!(out(&o), ":4\n", "no cluster: no candidates, never an error");
}

/// `-o jsonpath`, `-o custom-columns` (and their files), `--show-labels` and `-L`, as kubectl.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectls_output_dialects() {
    let t = start().await;
    let list = |args: &[&str]| {
        let mut full = vec!["-n".to_string(), "agents".into(), "list".into()];
        full.extend(args.iter().map(|s| s.to_string()));
        full
    };
    let o = namzu(
        &t,
        &list(&["-o", "jsonpath={.items[*].id}"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(out(&o), "asleep awake owned");
    let o = namzu(
        &t,
        &list(&[
            "-o",
            r#"jsonpath={range .items[?(@.mode=="Suspended")]}{.id}={.operatingModeChangedAt}{"\n"}{end}"#,
        ])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(out(&o), "asleep=2026-09-10T12:00:00.000Z\n");
    // custom columns: a missing field is <none>; from a file too
    let o = namzu(
        &t,
        &list(&["-o", "custom-columns=ID:.id,EPOCH:{.holderEpoch.value},CLAIM:.nothing"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(
        out(&o),
        "ID       EPOCH   CLAIM\nasleep   0       <none>\nawake    2       <none>\nowned    0       <none>\n"
    );
    let file = t.dir.path().join("columns.txt");
    std::fs::write(&file, "ID STATE\n.id .state\n").unwrap();
    let spec = format!("custom-columns-file={}", file.display());
    let o = namzu(
        &t,
        &list(&["-o", &spec, "--no-headers"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(out(&o).lines().next(), Some("asleep   Suspended"));
    let template = t.dir.path().join("template.txt");
    std::fs::write(&template, "{.items[0].id}").unwrap();
    let spec = format!("jsonpath-file={}", template.display());
    let o = namzu(&t, &list(&["-o", &spec]).iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(out(&o), "asleep");
    // errors as kubectl words them: one line
    for (args, code, words) in [
        (vec!["-o", "jsonpath={.items[0"], 2, "error parsing jsonpath"),
        (vec!["-o", "jsonpath"], 2, "no template given"),
        (vec!["-o", "custom-columns=ID"], 2, "expected <header>:<json-path-expr>"),
        (
            vec!["-o", "jsonpath={.nope}", "--allow-missing-template-keys=false"],
            1,
            "nope is not found",
        ),
    ] {
        let o = namzu(&t, &list(&args).iter().map(String::as_str).collect::<Vec<_>>()).await;
        assert_eq!(o.status.code(), Some(code), "{args:?}");
        assert_eq!(err(&o).trim_end().lines().count(), 1, "{}", err(&o));
        assert!(err(&o).contains(words), "{args:?}: {}", err(&o));
    }
    // labels: the Sandbox's, and the pod template's under the prefix
    let o = namzu(
        &t,
        &list(&["--show-labels", "-L", "pod-template:app", "--no-headers"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
    .await;
    let awake = out(&o).lines().find(|l| l.starts_with("awake")).unwrap().to_string();
    assert!(awake.ends_with("agent   <none>"), "{awake}");
    // inspect's schema too
    let o = namzu(
        &t,
        &[
            "-n",
            "agents",
            "inspect",
            "awake",
            "-o",
            "jsonpath={.id} {.holderEpoch.value}",
        ],
    )
    .await;
    assert_eq!(out(&o), "awake 2");
}

/// `list -o json` keeps every key it had and gains the library's 28.0.0 readings: `ready`,
/// `identity`, `missingVolumeClaims` and `namzuAnnotations` (plus `egress`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_json_gains_ready_identity_missing_claims_and_library_annotations() {
    let t = start_demo().await;
    let items = json(&namzu(&t, &["list", "-n", "agents", "-o", "json"]).await);
    let w = |id: &str| items.iter().find(|i| i["id"] == id).unwrap().clone();
    for i in &items {
        for key in [
            "id",
            "namespace",
            "sandboxName",
            "uid",
            "mode",
            "state",
            "diagnosis",
            "createdAt",
            "operatingModeChangedAt",
            "holderEpoch",
            "template",
            "drift",
            "pod",
            "pvcs",
            "ready",
            "identity",
            "missingVolumeClaims",
            "namzuAnnotations",
            "egress",
        ] {
            assert!(i.get(key).is_some(), "{key} missing in {}", i["id"]);
        }
        // STATE Running means exactly the library's ready
        assert_eq!(i["state"] == "Running", i["ready"] == true, "{}", i["id"]);
    }
    let alpha = w("alpha");
    assert_eq!(alpha["identity"]["sandboxUid"], alpha["uid"]);
    assert_eq!(alpha["identity"]["podUid"], alpha["pod"]["uid"]);
    assert_eq!(
        alpha["identity"]["volumeClaimUids"]["workspace-disk"],
        alpha["pvcs"][0]["uid"]
    );
    assert_eq!(alpha["missingVolumeClaims"], serde_json::json!([]));
    // an older generation's Ready, and a Ready=True with no pod under it
    assert_eq!(
        (w("oscar")["state"].as_str(), w("oscar")["ready"].as_bool()),
        (Some("Starting"), Some(false))
    );
    let tempest = w("tempest");
    assert_eq!(
        (tempest["ready"].as_bool(), tempest["diagnosis"]["kind"].as_str()),
        (Some(false), Some("no-live-pod"))
    );
    assert_eq!(tempest["identity"]["podUid"], Value::Null);
    // a suspended workspace has no pod uid
    assert_eq!(w("delta")["identity"]["podUid"], Value::Null);
    // a missing claim, and a claim that is a stranger's (recorded, owner named, not missing)
    assert_eq!(w("umber")["missingVolumeClaims"], serde_json::json!(["workspace-disk"]));
    let topaz = w("topaz");
    assert_eq!(topaz["missingVolumeClaims"], serde_json::json!([]));
    assert_eq!(topaz["pvcs"][0]["foreign"], true);
    assert_ne!(topaz["pvcs"][0]["owners"][0]["uid"], topaz["uid"]);
    // the library's annotations, known to the tool or not, as stored
    let vapor = w("vapor");
    assert_eq!(vapor["namzuAnnotations"]["sandbox.namzu.ai/allocation-host"], "host-7");
    assert_eq!(vapor["namzuAnnotations"]["sandbox.namzu.ai/holder-epoch"], "2");
    assert!(vapor["namzuAnnotations"].get("agents.x-k8s.io/pod-name").is_none());
    // which per-sandbox hash matched
    assert_eq!(vapor["drift"]["overlays"]["perSandboxLabel"]["hashed"], false);
    assert_eq!(w("wren")["drift"]["overlays"]["perSandboxLabel"]["hashed"], true);
    assert_eq!(alpha["drift"]["overlays"].get("perSandboxLabel"), None);
    // the controller's v1.0 reasons
    assert_eq!(w("xenon")["state"], "Error");
    assert_eq!(w("xenon")["diagnosis"]["reason"], "InvalidConfiguration");
    assert_eq!(w("yarrow")["state"], "Suspending");
    assert_eq!(w("zinc")["diagnosis"]["reason"], "EgressPolicyPending");
}
