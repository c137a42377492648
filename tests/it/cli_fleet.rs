//! Several contexts at once through the real binary: three sims in one kubeconfig, each row
//! labelled with its context, a cluster that is down costing its rows only, writes fenced on
//! each row's own cluster, and the per-context safety rules of the config file.

use crate::support::*;
use namzu_sim::record::Recorded;
use namzu_sim::write_fleet_kubeconfig;
use serde_json::Value;
use std::path::PathBuf;

/// A running `desk` at holder epoch `epoch`, a second running `spare`, a suspended `idle`.
fn scenario(epoch: u32) -> String {
    format!(
        r#"
namespaces: [agents]
workspaces:
  - namespace: agents
    id: desk
    podTemplate: &pt
      metadata: {{labels: {{sandbox.namzu.ai/template: coder}}}}
      spec: {{containers: [{{name: agent, image: "ghcr.io/x/agent:1.2"}}]}}
    epoch: "{epoch}"
  - namespace: agents
    id: spare
    podTemplate: *pt
    labels: {{tier: spare}}
  - namespace: agents
    id: idle
    podTemplate: *pt
    mode: Suspended
"#
    )
}

/// Three clusters named a, b and c (desk at epochs 2, 7 and 9), in one kubeconfig.
struct Fleet {
    sims: Vec<TestSim>,
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
}

const NAMES: [&str; 3] = ["a", "b", "c"];

impl Fleet {
    async fn start() -> Fleet {
        let mut sims = Vec::new();
        for epoch in [2, 7, 9] {
            sims.push(start_with(&scenario(epoch), |c| c.namespace = "agents".into()).await);
        }
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("fleet.kubeconfig");
        let members: Vec<(&str, &namzu_sim::Sim)> = NAMES.iter().copied().zip(sims.iter().map(|t| &t.sim)).collect();
        write_fleet_kubeconfig(&kubeconfig, &members).unwrap();
        Fleet { sims, kubeconfig, dir }
    }

    /// Run the binary on the fleet's kubeconfig, with `config` (YAML) as its rules file.
    async fn run(&self, config: Option<&str>, args: &[&str]) -> std::process::Output {
        self.run_env(config, args, Vec::new()).await
    }

    /// [`Fleet::run`] with more environment.
    async fn run_env(&self, config: Option<&str>, args: &[&str], env: Vec<(&str, &str)>) -> std::process::Output {
        let rules = self.dir.path().join("config.yaml");
        std::fs::write(&rules, config.unwrap_or("")).unwrap();
        let mut full = vec![
            "--kubeconfig".to_string(),
            self.kubeconfig.display().to_string(),
            "--config".into(),
            rules.display().to_string(),
        ];
        full.extend(args.iter().map(|s| s.to_string()));
        let audit = self.dir.path().join("audit.jsonl").display().to_string();
        let mut env: Vec<(String, String)> = env.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        env.push(("KUBECTL_NAMZU_AUDIT_LOG".into(), audit));
        namzu_env(full, env).await
    }

    fn writes(&self, i: usize) -> Vec<Recorded> {
        self.sims[i]
            .sim
            .requests()
            .into_iter()
            .filter(|r| r.method == "PATCH" || r.method == "DELETE")
            .collect()
    }

    fn audit(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn json(o: &std::process::Output) -> Vec<Value> {
    // list's rows (kubectl's List, whatever the exit code: a context left out fails it) or
    // another verb's array (a write's reports, capacity's rows)
    let v = serde_json::from_slice::<Value>(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", out(o)));
    let rows = if v["kind"] == "List" { &v["items"] } else { &v };
    rows.as_array().unwrap_or_else(|| panic!("rows: {v}")).clone()
}

/// (context, id) of each listed workspace.
fn labelled(items: &[Value]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|w| {
            (
                w["context"].as_str().unwrap_or("").to_string(),
                w["id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn all_contexts_lists_every_cluster_and_labels_each_row() {
    let fleet = Fleet::start().await;
    let o = fleet.run(None, &["list", "-A", "--all-contexts", "-o", "json"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let items = json(&o);
    let mut expected = Vec::new();
    for c in NAMES {
        for id in ["desk", "idle", "spare"] {
            expected.push((c.to_string(), id.to_string()));
        }
    }
    assert_eq!(labelled(&items), expected, "grouped by context, then namespace and id");
    let first_key = items[0].as_object().unwrap().keys().next().unwrap().clone();
    assert_eq!(first_key, "context", "the context leads each object");
    let epochs: Vec<&Value> = items
        .iter()
        .filter(|w| w["id"] == "desk")
        .map(|w| &w["holderEpoch"]["value"])
        .collect();
    assert_eq!(epochs, [2, 7, 9], "each row is its own cluster's");

    // the table: CONTEXT first, every row labelled
    let o = fleet.run(None, &["list", "--context", "a,c"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("CONTEXT "), "{text}");
    let contexts: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(contexts, ["a", "a", "a", "c", "c", "c"], "{text}");

    // one context: exactly as without the feature
    let o = fleet.run(None, &["list", "--context", "b", "-o", "json"]).await;
    let items = json(&o);
    assert!(items.iter().all(|w| w.get("context").is_none()), "{}", out(&o));
    assert_eq!(
        items.iter().find(|w| w["id"] == "desk").unwrap()["holderEpoch"]["value"],
        7
    );
    let o = fleet.run(None, &["list", "--context", "b"]).await;
    assert!(out(&o).starts_with("WORKSPACE "), "{}", out(&o));
}

#[tokio::test]
async fn a_cluster_that_is_down_costs_one_warning_and_its_rows_and_exit_1() {
    let mut fleet = Fleet::start().await;
    fleet.sims[1].sim.stop().await;
    let o = fleet
        .run(
            None,
            &["list", "-A", "--all-contexts", "-o", "json", "--request-timeout", "5s"],
        )
        .await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let stderr = err(&o);
    let warnings: Vec<&str> = stderr.lines().collect();
    assert_eq!(warnings.len(), 1, "one line for the context that failed: {warnings:?}");
    assert!(warnings[0].starts_with("warning: context \"b\": "), "{}", warnings[0]);
    let contexts: std::collections::BTreeSet<String> = labelled(&json(&o)).into_iter().map(|(c, _)| c).collect();
    assert_eq!(
        contexts,
        ["a".to_string(), "c".to_string()].into(),
        "the others are listed"
    );

    // a context the kubeconfig does not have is the same kind of failure
    fleet.sims[1].sim.restart().await.unwrap();
    let o = fleet.run(None, &["list", "--context", "a,nowhere", "-o", "json"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("context \"nowhere\""), "{}", err(&o));
    assert_eq!(json(&o).len(), 3);
}

#[tokio::test]
async fn a_bulk_suspend_across_contexts_fences_each_row_on_its_own_cluster() {
    let fleet = Fleet::start().await;
    let o = fleet
        .run(
            None,
            &["suspend", "--context", "a,b", "-l", "tier!=spare", "--state", "Running"],
        )
        .await;
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    for (i, epoch) in [(0, "2"), (1, "7")] {
        let writes = fleet.writes(i);
        assert_eq!(writes.len(), 1, "one write on {}: {writes:?}", NAMES[i]);
        let w = &writes[0];
        assert_eq!(w.method, "PATCH");
        assert!(
            w.path.ends_with("/namespaces/agents/sandboxes/namzu-ws-desk"),
            "{}",
            w.path
        );
        let ops = w.body.as_ref().unwrap().as_array().unwrap();
        assert_eq!(ops[0]["op"], "test", "the fence leads");
        let fence = ops
            .iter()
            .find(|op| op["op"] == "test" && op["path"] == "/metadata/annotations/sandbox.namzu.ai~1holder-epoch")
            .unwrap_or_else(|| panic!("{ops:?}"));
        assert_eq!(fence["value"], epoch, "fenced on {}'s own epoch", NAMES[i]);
    }
    assert!(fleet.writes(2).is_empty(), "c was not selected");
    // the summary names each row's context and tallies per context
    let text = out(&o);
    assert!(text.contains("CONTEXT"), "{text}");
    assert!(text.contains("a: 1 applied") && text.contains("b: 1 applied"), "{text}");
    // the audit log says which cluster each write went to
    let contexts: Vec<String> = fleet
        .audit()
        .iter()
        .filter(|e| e["verb"] == "suspend" && e["outcome"] != "intent")
        .map(|e| e["context"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = contexts.clone();
    sorted.sort();
    assert_eq!(sorted, ["a", "b"], "{contexts:?}");
    // `audit` labels the writes of several clusters, and picks one's
    let o = fleet.run(None, &["audit"]).await;
    assert!(out(&o).starts_with("CONTEXT "), "{}", out(&o));
    let o = fleet.run(None, &["audit", "--context", "b", "-o", "json"]).await;
    let entries = json(&o);
    assert!(
        !entries.is_empty() && entries.iter().all(|e| e["context"] == "b"),
        "{entries:?}"
    );
}

const RULES: &str = r#"
contexts:
  - context: "*"
    maxBulk: 50
  - context: b
    readOnly: true
    label: PROD
    colour: red
"#;

#[tokio::test]
async fn a_read_only_rule_blocks_writes_in_its_context_only() {
    let fleet = Fleet::start().await;
    let o = fleet
        .run(
            Some(RULES),
            &["suspend", "--all-contexts", "-l", "tier!=spare", "--state", "Running"],
        )
        .await;
    assert_eq!(o.status.code(), Some(1), "{}\n{}", out(&o), err(&o));
    assert!(fleet.writes(1).is_empty(), "b is read-only: nothing sent there");
    assert_eq!(fleet.writes(0).len(), 1);
    assert_eq!(fleet.writes(2).len(), 1);
    let e = err(&o);
    assert!(e.contains("context \"b\"") && e.contains("read-only"), "{e}");
    // the badge marks the context's rows
    let o = fleet.run(Some(RULES), &["list", "--all-contexts"]).await;
    assert!(out(&o).contains("b [PROD]"), "{}", out(&o));
    // no environment variable lifts a rule: =0 only leaves read-only unset
    let suspend_b = ["suspend", "--context", "b", "-l", "tier!=spare", "--state", "Running"];
    let o = fleet
        .run_env(Some(RULES), &suspend_b, vec![("KUBECTL_NAMZU_READ_ONLY", "false")])
        .await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(fleet.writes(1).is_empty());
    // --write does, for the one context named, this command only
    let o = fleet
        .run(
            Some(RULES),
            &["suspend", "--all-contexts", "--write", "--state", "Running"],
        )
        .await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let with_write: Vec<&str> = suspend_b.iter().copied().chain(["--write"]).collect();
    let o = fleet.run(Some(RULES), &with_write).await;
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(fleet.writes(1).len(), 1);
    // another cluster under b's name would write under b's rules: refused while there are rules
    let o = fleet
        .run(Some(RULES), &["suspend", "--context", "a", "--cluster", "b", "desk"])
        .await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("--cluster"), "{}", err(&o));
}

#[tokio::test]
async fn a_max_bulk_rule_refuses_an_oversized_bulk_with_nothing_sent() {
    let fleet = Fleet::start().await;
    let rules = "contexts:\n  - context: c\n    maxBulk: 1\n";
    let o = fleet
        .run(Some(rules), &["suspend", "--all-contexts", "--state", "Running"])
        .await;
    assert_eq!(o.status.code(), Some(2), "{}\n{}", out(&o), err(&o));
    assert!(err(&o).contains("maxBulk of 1"), "{}", err(&o));
    for (i, name) in NAMES.iter().enumerate() {
        assert!(fleet.writes(i).is_empty(), "nothing sent to {name}");
    }
    // ids named count as a selection does
    let o = fleet
        .run(Some(rules), &["suspend", "--context", "c", "desk", "spare", "--yes"])
        .await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(fleet.writes(2).is_empty());
    // one named workspace is not a bulk write; --max-bulk overrides the rule
    let o = fleet
        .run(
            Some(rules),
            &["suspend", "--context", "c", "--max-bulk", "5", "--state", "Running"],
        )
        .await;
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(fleet.writes(2).len(), 2);
}

#[tokio::test]
async fn typed_confirmation_rules_and_config_view() {
    let fleet = Fleet::start().await;
    let rules = "contexts:\n  - context: \"a*\"\n    confirm: typed\n    label: PROD\n    colour: red\n";
    // stdin is not a terminal: a context that asks for typed ids needs --yes, even to suspend
    let o = fleet.run(Some(rules), &["suspend", "--context", "a", "desk"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("confirm: typed"), "{}", err(&o));
    assert!(fleet.writes(0).is_empty());
    let o = fleet
        .run(Some(rules), &["suspend", "--context", "a", "desk", "--yes"])
        .await;
    assert!(o.status.success(), "{}", err(&o));

    let o = fleet.run(Some(rules), &["config", "view", "-o", "json"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let view: Value = serde_json::from_slice(&o.stdout).unwrap();
    let a = &view["contexts"][0];
    assert_eq!(
        (
            a["context"].as_str(),
            a["confirm"].as_str(),
            a["label"].as_str(),
            a["colour"].as_str()
        ),
        (Some("a"), Some("typed"), Some("PROD"), Some("red"))
    );
    assert_eq!(view["contexts"][1]["confirm"], "default");
    assert_eq!(
        view["contexts"].as_array().unwrap().len(),
        3,
        "every context of the kubeconfig"
    );
    let o = fleet
        .run(Some(rules), &["config", "view", "--context", "b", "--confirm", "typed"])
        .await;
    assert!(
        out(&o).lines().any(|l| l.starts_with("b ") && l.contains("typed")),
        "{}",
        out(&o)
    );

    // a bad file: one line, exit 2, nothing read or written
    let o = fleet
        .run(
            Some("contexts:\n  - context: a\n    readonly: true\n"),
            &["list", "--all-contexts"],
        )
        .await;
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
    assert!(err(&o).contains("unknown field `readonly`"), "{}", err(&o));
}

/// A flag may tighten every context's rules but loosen only the one context it is given with:
/// across contexts `--confirm default` or a larger `--max-bulk` is one line, exit 2, nothing sent.
#[tokio::test]
async fn a_flag_loosens_only_the_one_context_it_is_given_with() {
    let fleet = Fleet::start().await;
    let rules = "contexts:\n  - context: b\n    confirm: typed\n    maxBulk: 1\n";
    for loosening in [["--confirm", "default"], ["--max-bulk", "100"]] {
        let mut args = vec!["suspend", "--all-contexts", "--state", "Running"];
        args.extend(loosening);
        let o = fleet.run(Some(rules), &args).await;
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
        assert!(
            err(&o).contains(&format!("{} would loosen context \"b\"", loosening.join(" ")))
                && err(&o).contains("--context b"),
            "{}",
            err(&o)
        );
        for (i, name) in NAMES.iter().enumerate() {
            assert!(fleet.writes(i).is_empty(), "nothing sent to {name}");
        }
    }
    // --yes answers a typed confirmation: across contexts it may not answer b's
    let o = fleet
        .run(
            Some(rules),
            &["suspend", "--all-contexts", "--state", "Running", "--yes"],
        )
        .await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("--yes would answer context \"b\"'s typed confirmation"),
        "{}",
        err(&o)
    );
    assert!((0..3).all(|i| fleet.writes(i).is_empty()));
    // tightening holds everywhere: typed confirmation on a pipe needs --yes, in every context
    let o = fleet
        .run(
            Some(rules),
            &[
                "suspend",
                "--all-contexts",
                "--confirm",
                "typed",
                "--max-bulk",
                "1",
                "desk",
            ],
        )
        .await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!((0..3).all(|i| fleet.writes(i).is_empty()));
    // given with its context, a flag loosens that one
    let o = fleet
        .run(
            Some(rules),
            &[
                "suspend",
                "--context",
                "b",
                "--confirm",
                "default",
                "--max-bulk",
                "5",
                "--state",
                "Running",
            ],
        )
        .await;
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(fleet.writes(1).len(), 2);
    // `config view` shows each context's rules as they hold with the flags: b's unlifted
    let o = fleet
        .run(
            Some(rules),
            &[
                "config",
                "view",
                "--context",
                "a,b",
                "--confirm",
                "default",
                "-o",
                "json",
            ],
        )
        .await;
    let view: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(view["contexts"][1]["confirm"], "typed", "{view}");
    assert_eq!(view["contexts"][1]["flagsNotApplied"][0], "--confirm default");
}

#[tokio::test]
async fn verbs_of_one_workspace_refuse_several_contexts() {
    let fleet = Fleet::start().await;
    for args in [
        vec!["inspect", "desk", "--all-contexts"],
        vec!["drift", "--context", "a,b"],
        vec!["reconcile", "desk", "--uid", "x", "--context", "a,c"],
    ] {
        let o = fleet.run(None, &args).await;
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert!(err(&o).contains("one context"), "{}", err(&o));
    }
    // `-o name` across contexts would lose each row's context: refused with the form to use
    let o = fleet.run(None, &["list", "--all-contexts", "-o", "name"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("drops the namespace and context") && err(&o).contains("CONTEXT:.context"),
        "{}",
        err(&o)
    );
    // the same context twice is one context
    let o = fleet.run(None, &["list", "--context", "b,b", "-o", "json"]).await;
    assert!(json(&o).iter().all(|w| w.get("context").is_none()), "{}", out(&o));
}

#[tokio::test]
async fn capacity_and_doctor_span_contexts() {
    let fleet = Fleet::start().await;
    let o = fleet.run(None, &["capacity", "--all-contexts", "-o", "json"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let rows = json(&o);
    let contexts: Vec<&str> = rows.iter().map(|r| r["context"].as_str().unwrap()).collect();
    assert_eq!(contexts, NAMES);
    let o = fleet.run(None, &["doctor", "--context", "a,c"]).await;
    let text = out(&o);
    assert!(text.contains("Context a:") && text.contains("Context c:"), "{text}");
}

#[tokio::test]
async fn the_tui_with_no_context_reachable_is_one_line_in_the_normal_terminal() {
    let mut fleet = Fleet::start().await;
    for t in &mut fleet.sims {
        t.sim.stop().await;
    }
    let o = fleet
        .run(None, &["tui", "--all-contexts", "--request-timeout", "5s"])
        .await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("no context could be reached (a: "), "{e}");
}

/// A fleet write whose only failures are fence refusals (3) while a context was left out exits 1
/// (the left-out context's code is not masked), and the closing line counts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_left_out_context_is_not_masked_by_a_refusal() {
    let (a, mut b) = (start().await, start().await);
    let kubeconfig = a.dir.path().join("fleet.kubeconfig");
    namzu_sim::write_fleet_kubeconfig(&kubeconfig, &[("a", &a.sim), ("b", &b.sim)]).unwrap();
    b.sim.stop().await;
    let args = [
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--all-contexts",
        "-n",
        "agents",
        "--request-timeout",
        "5s",
        "suspend",
        "--state",
        "Running",
        "--epoch",
        "1",
    ];
    let o = namzu_env(args.map(String::from).to_vec(), vec![audit_env(&a)]).await;
    let e = err(&o);
    assert!(e.contains("warning: context \"b\""), "{e}");
    assert!(e.contains("holder epoch"), "a's awake is fenced out: {e}");
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.trim_end().ends_with("1 context was left out"), "{e}");
}
