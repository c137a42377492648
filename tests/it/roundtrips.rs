//! kubectl round-trips (issue 32): `get ID…`, `--dry-run=client|server`, one meaning per exit
//! code, help with examples, completion of every value kind, the missing kubeconfig, and the
//! selectors `--running-for` and `--mode-changed-before`. Every test runs the real binary.

use crate::support::*;
use chrono::{DateTime, Utc};
use namzu_sim::resources::SANDBOXES;
use serde_json::Value;
use std::process::Output;

fn json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", err(o));
    serde_json::from_str(&out(o)).expect("JSON on stdout")
}

fn at(text: Option<&str>) -> Option<DateTime<Utc>> {
    text.and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// `__complete WORDS…`'s candidates (the `:4` directive checked and dropped).
async fn complete(t: &TestSim, words: &[&str]) -> Vec<String> {
    let mut args = vec!["__complete"];
    args.extend(words);
    let o = namzu(t, &args).await;
    assert!(o.status.success(), "{words:?}: {}", err(&o));
    let mut lines: Vec<String> = out(&o).lines().map(str::to_string).collect();
    assert_eq!(lines.pop().as_deref(), Some(":4"), "{words:?}: {}", out(&o));
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_takes_ids_in_order_and_one_id_with_o_yaml_is_the_object() {
    let t = start_demo().await;
    let o = namzu(&t, &["get", "bravo", "sandbox.agents.x-k8s.io/namzu-ws-alpha"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let table = out(&o);
    let ids: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(ids, ["bravo", "alpha"], "{}", out(&o));
    let o = namzu(&t, &["get", "alpha", "-o", "yaml"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).starts_with("id: alpha\n"),
        "the object, not a List: {}",
        out(&o)
    );
    let o = namzu(&t, &["get", "alpha", "-o", "jsonpath={.id} {.namespace}"]).await;
    assert_eq!(out(&o), "alpha agents", "{}", err(&o));
    let one = json(&namzu(&t, &["get", "namzu-ws-alpha", "-o", "json"]).await);
    assert_eq!(one["id"], "alpha");
    let several = json(&namzu(&t, &["get", "alpha", "bravo", "-o", "json"]).await);
    assert_eq!(
        several["items"].as_array().map(Vec::len),
        Some(2),
        "kubectl's List: {several}"
    );
    // the rows found are printed; each id without a workspace is named, exit 4
    let o = namzu(&t, &["get", "alpha", "nobody"]).await;
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    assert!(out(&o).contains("alpha"), "{}", out(&o));
    assert_eq!(err(&o).trim(), "error: workspace nobody not found in namespace agents");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefixed_sandbox_that_is_not_a_workspace_says_exactly_that() {
    let t = start_demo().await;
    for verb in ["get", "inspect", "drift", "history", "logs"] {
        let o = namzu(&t, &[verb, "namzu-ws-stranger"]).await;
        assert_eq!(o.status.code(), Some(4), "{verb}: {}", err(&o));
        assert_eq!(
            err(&o).trim(),
            "error: Sandbox namzu-ws-stranger in namespace agents exists but is not a workspace (no sandbox.namzu.ai/template label on its pod template)",
            "{verb}"
        );
    }
    // a write is refused by the write path, and says why
    let o = namzu(&t, &["suspend", "sandboxes/namzu-ws-stranger"]).await;
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains("namzu-ws-stranger is not a workspace"), "{}", err(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_found_is_exit_4_for_every_verb_that_names_a_workspace() {
    let t = start_demo().await;
    for args in [
        vec!["get", "nobody"],
        vec!["inspect", "nobody"],
        vec!["drift", "nobody"],
        vec!["history", "nobody"],
        vec!["logs", "nobody"],
        vec!["exec", "nobody", "--", "true"],
        vec!["suspend", "nobody"],
        vec!["resume", "nobody"],
    ] {
        let o = namzu(&t, &args).await;
        assert_eq!(o.status.code(), Some(4), "{args:?}: {}", err(&o));
        assert!(err(&o).contains("nobody"), "{args:?}: {}", err(&o));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_server_sends_dry_run_all_through_the_write_path_and_changes_nothing() {
    let t = start_demo().await;
    let before = t.sim.get(&SANDBOXES, "agents", "namzu-ws-alpha").expect("alpha");
    t.sim.clear_requests();
    let o = namzu(&t, &["suspend", "alpha", "--dry-run=server"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("dryRun=All"), "{}", out(&o));
    let patches: Vec<_> = t.sim.requests().into_iter().filter(|r| r.method == "PATCH").collect();
    assert_eq!(patches.len(), 1, "one fenced PATCH");
    assert!(patches[0].query.contains("dryRun=All"), "{:?}", patches[0].query);
    assert_eq!(patches[0].status, 200);
    // what is printed is the request as sent: its path and query, fieldManager included
    let sent = format!("{}?{}", patches[0].path, patches[0].query);
    assert!(out(&o).contains(&format!("PATCH {sent} ")), "{sent}\n{}", out(&o));
    assert!(
        sent.contains("fieldManager=kubectl-namzu") && !sent.contains("?&"),
        "{sent}"
    );
    // nothing changed: the same object, the same resourceVersion
    let after = t.sim.get(&SANDBOXES, "agents", "namzu-ws-alpha").expect("alpha");
    assert_eq!(after, before);
    // the audit log records a dry run, with the request it sent
    let audit = std::fs::read_to_string(t.dir.path().join("audit.jsonl")).expect("audit log");
    let last: Value = serde_json::from_str(audit.lines().last().expect("an entry")).expect("JSON");
    assert_eq!(last["outcome"], "dry-run", "{last}");
    assert_eq!(last["dryRun"], "All", "{last}");
    // a delete too: the DELETE carries dryRun=All and the Sandbox stays
    t.sim.clear_requests();
    let o = namzu(&t, &["delete", "echo", "--yes", "--dry-run=server"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let deletes: Vec<_> = t.sim.requests().into_iter().filter(|r| r.method == "DELETE").collect();
    assert_eq!(deletes.len(), 1);
    assert!(deletes[0].query.contains("dryRun=All"), "{:?}", deletes[0].query);
    assert!(t.sim.get(&SANDBOXES, "agents", "namzu-ws-echo").is_some());
    // a bulk server dry run says what it would do
    let running = running_ids(&t, "research");
    let o = namzu(
        &t,
        &["suspend", "-n", "research", "--state", "Running", "--dry-run=server"],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains(&format!(
            "dry run (server): would suspend {n} of {n}",
            // vetoed runs in mode Running but is not in state Running (its claim was refused)
            n = running.iter().filter(|id| *id != "vetoed").count()
        )),
        "{}",
        out(&o)
    );
    assert_eq!(running_ids(&t, "research"), running, "nothing suspended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare_dry_run_is_client_sends_nothing_and_a_summary_says_would() {
    let t = start_demo().await;
    t.sim.clear_requests();
    let o = namzu(&t, &["suspend", "alpha", "--dry-run"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("would send PATCH"), "{}", out(&o));
    assert!(
        t.sim.requests().iter().all(|r| r.method == "GET"),
        "a client dry run only reads"
    );
    let o = namzu(&t, &["suspend", "alpha", "--dry-run=bogus"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    // one of two would not be done: said as a dry run, never as "were not suspended"
    let o = namzu(&t, &["suspend", "alpha", "stranger", "--dry-run"]).await;
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(
        out(&o).contains("dry run (client): would suspend 1 of 2"),
        "{}",
        out(&o)
    );
    assert!(!err(&o).contains("were not"), "{}", err(&o));
    assert!(
        err(&o).contains("dry run: 1 of 2 workspaces would not be suspended"),
        "{}",
        err(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_list_prints_nothing_on_stdout_and_kubectls_line_on_stderr() {
    let t = start_demo().await;
    for format in ["table", "wide", "name"] {
        let o = namzu(&t, &["list", "-l", "nobody=here", "-o", format]).await;
        assert!(o.status.success(), "{}", err(&o));
        assert_eq!(out(&o), "", "{format}");
        assert_eq!(err(&o), "No resources found in agents namespace.\n", "{format}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verb_help_has_copy_pasteable_examples() {
    let t = start_demo().await;
    for verb in [
        "list",
        "inspect",
        "drift",
        "logs",
        "exec",
        "history",
        "capacity",
        "reconcile",
        "suspend",
        "resume",
        "delete",
        "config",
        "audit",
        "template-hash",
        "demo",
        "doctor",
        "rbac",
        "tui",
        "completion",
        "version",
    ] {
        let o = namzu(&t, &[verb, "--help"]).await;
        assert!(o.status.success(), "{verb}: {}", err(&o));
        let help = out(&o);
        let examples = help
            .split("Examples:")
            .nth(1)
            .unwrap_or_else(|| panic!("{verb}: {help}"));
        assert!(
            examples.contains("kubectl namzu ") || examples.contains("kubectl-namzu "),
            "{verb}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sort_by_takes_kubectls_jsonpath_form_and_jsonpath_names_the_first_missing_segment() {
    let t = start_demo().await;
    let by_key = namzu(&t, &["list", "--sort-by", "age", "-o", "name"]).await;
    for path in ["{.metadata.creationTimestamp}", ".createdAt"] {
        let by_path = namzu(&t, &["list", "--sort-by", path, "-o", "name"]).await;
        assert!(by_path.status.success(), "{path}: {}", err(&by_path));
        assert_eq!(out(&by_path), out(&by_key), "{path}");
    }
    let o = namzu(&t, &["list", "--sort-by", "{.nope}"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let o = namzu(
        &t,
        &[
            "inspect",
            "alpha",
            "-o",
            "jsonpath={.drift.nope.x}",
            "--allow-missing-template-keys=false",
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert_eq!(
        err(&o),
        "error: error executing jsonpath \"{.drift.nope.x}\": Error executing template: nope is not found\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_covers_flags_values_namespaces_contexts_and_ids() {
    let t = start_demo().await;
    // flags, the verb's and the global ones
    let flags = complete(&t, &["suspend", "--dry"]).await;
    assert_eq!(flags, ["--dry-run"]);
    assert!(complete(&t, &["list", "--"]).await.contains(&"--namespace".to_string()));
    // -o values: the printer kinds of list, the enum of the writes
    let printers = complete(&t, &["list", "-o", ""]).await;
    for p in ["table", "wide", "json", "yaml", "name", "jsonpath="] {
        assert!(printers.contains(&p.to_string()), "{printers:?}");
    }
    assert_eq!(complete(&t, &["suspend", "-o", ""]).await, ["table", "json", "yaml"]);
    assert_eq!(
        complete(&t, &["list", "--output=j"]).await,
        ["--output=json", "--output=jsonpath=", "--output=jsonpath-file="]
    );
    // --sort-by values, --state values, --dry-run values
    assert_eq!(
        complete(&t, &["list", "--sort-by", ""]).await,
        ["name", "age", "mode-changed", "epoch", "state", "drift", "diagnosis"]
    );
    assert_eq!(
        complete(&t, &["list", "--state", "Su"]).await,
        ["Suspending", "Suspended"]
    );
    assert_eq!(complete(&t, &["suspend", "--dry-run=s"]).await, ["--dry-run=server"]);
    // -n: the cluster's namespaces
    let namespaces = complete(&t, &["-n", ""]).await;
    for ns in ["agents", "research"] {
        assert!(namespaces.contains(&ns.to_string()), "{namespaces:?}");
    }
    // --context: the kubeconfig's contexts
    let contexts = complete(&t, &["list", "--context", ""]).await;
    assert!(
        !contexts.is_empty() && !contexts.iter().any(String::is_empty),
        "{contexts:?}"
    );
    // ids after every verb that takes one, in the namespace typed
    for verb in [
        "logs",
        "exec",
        "history",
        "inspect",
        "drift",
        "suspend",
        "resume",
        "delete",
        "reconcile",
        "get",
    ] {
        let ids = complete(&t, &[verb, "al"]).await;
        assert_eq!(ids, ["alpha"], "{verb}");
        let research = complete(&t, &["-n", "research", verb, ""]).await;
        assert!(
            research.contains(&"tango".to_string()) && !research.contains(&"alpha".to_string()),
            "{verb}: {research:?}"
        );
    }
    // verbs first; nothing after a verb that takes no id
    assert!(complete(&t, &["sus"]).await == ["suspend"]);
    assert!(complete(&t, &["capacity", ""]).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_kubeconfig_is_one_line_naming_the_file_and_doctor_diagnoses_it() {
    let home = tempfile::tempdir().expect("tempdir");
    let env = vec![("HOME".to_string(), home.path().display().to_string())];
    let looked_for = home.path().join(".kube").join("config");
    let o = namzu_env(vec!["list".into()], env.clone()).await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let line = err(&o);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.contains(&format!("{} does not exist", looked_for.display())),
        "{line}"
    );
    assert!(
        !line.contains(&format!("\"{}\"", looked_for.display())),
        "not double-quoted: {line}"
    );
    assert!(line.contains("kubectl namzu demo"), "{line}");
    // --kubeconfig naming a file that is not there
    let o = namzu_env(
        vec!["--kubeconfig".into(), "/nonexistent/kc".into(), "list".into()],
        env.clone(),
    )
    .await;
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("/nonexistent/kc (--kubeconfig) does not exist"),
        "{}",
        err(&o)
    );
    // doctor says what is wrong and what to do, on stdout, then its one error line
    let o = namzu_env(vec!["doctor".into()], env).await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(out(&o).contains("✗ kubeconfig"), "{}", out(&o));
    assert!(out(&o).contains(&looked_for.display().to_string()), "{}", out(&o));
    assert!(out(&o).contains("kubectl namzu demo"), "{}", out(&o));
    assert_eq!(err(&o), "error: no usable kubeconfig: nothing else can be checked\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_for_and_mode_changed_before_select_what_they_say() {
    let t = start_demo().await;
    let now = t.sim.now();
    let all = listed(&namzu(&t, &["list", "-A", "-o", "json"]).await);
    let since = |w: &Value| at(w["operatingModeChangedAt"].as_str()).or_else(|| at(w["createdAt"].as_str()));
    let ids = |o: &Output| -> Vec<String> {
        listed(o)
            .iter()
            .map(|w| w["id"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    for dur in ["1h", "1d", "30d"] {
        let bound = namzu_domain::select::parse_duration(dur).expect("duration");
        let mut want: Vec<String> = all
            .iter()
            .filter(|w| w["state"] == "Running" && since(w).is_some_and(|s| now - s > bound))
            .map(|w| w["id"].as_str().unwrap_or_default().to_string())
            .collect();
        want.sort();
        let mut got = ids(&namzu(&t, &["list", "-A", "--running-for", dur, "-o", "json"]).await);
        got.sort();
        assert_eq!(got, want, "--running-for {dur}");
    }
    let running = all.iter().filter(|w| w["state"] == "Running").count();
    let some = ids(&namzu(&t, &["list", "-A", "--running-for", "1d", "-o", "json"]).await).len();
    assert!(
        some > 0 && some < running,
        "the demo has both sides of 1d: {some} of {running}"
    );
    let cut = now - chrono::Duration::days(3);
    let mut want: Vec<String> = all
        .iter()
        .filter(|w| at(w["operatingModeChangedAt"].as_str()).is_some_and(|c| c < cut))
        .map(|w| w["id"].as_str().unwrap_or_default().to_string())
        .collect();
    want.sort();
    let mut got = ids(&namzu(
        &t,
        &["list", "-A", "--mode-changed-before", &cut.to_rfc3339(), "-o", "json"],
    )
    .await);
    got.sort();
    assert_eq!(got, want);
    assert!(!want.is_empty());
    let o = namzu(&t, &["list", "--mode-changed-before", "yesterday"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    // the write verbs select with them too
    let o = namzu(&t, &["suspend", "-A", "--running-for", "1d", "--dry-run", "-o", "json"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(json(&o).as_array().map(Vec::len), Some(some));
}
