//! Hostile inputs and faults, through the real binary: a namespace that would rewrite a URL,
//! answers that are not what was asked for, a closed pipe and a signal in the middle of a bulk
//! write, out-of-range durations, escape sequences in cluster data, an unusable audit log. Each
//! ends in one clear line and a documented exit code — never a panic, never a write elsewhere.

use crate::support::*;
use namzu_sim::controller::Knobs;
use namzu_sim::faults::{Fault, FaultAction, Mutation};
use namzu_sim::resources::SANDBOXES;
use serde_json::Value;
use std::process::{Output, Stdio};

const HOSTILE_NS: &str = "research/sandboxes/namzu-ws-tango?x=";

/// stderr is exactly one line (and no panic text).
fn one_line(o: &Output) -> String {
    let e = err(o);
    assert_eq!(e.trim_end().lines().count(), 1, "one line on stderr, got:\n{e}");
    assert!(!e.contains("panicked"), "{e}");
    e
}

/// The sim answers `method path` with exactly `body` (200), as a hostile server or proxy would.
fn answer_with(t: &TestSim, method: &str, path: &str, body: String) {
    t.sim
        .add_fault(Fault::new(Some(method), path, FaultAction::Raw { code: 200, body }));
}

fn patches(t: &TestSim) -> usize {
    t.sim.requests().iter().filter(|r| r.method == "PATCH").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_that_would_rewrite_the_url_never_reaches_one() {
    let t = start_demo().await;
    t.sim.clear_requests();
    // from the flag: refused as kubectl refuses it, before any request
    for ns in [HOSTILE_NS, "", "a/b", "..", "Research", "a?b"] {
        let o = run_audited(&t, &["-n", ns, "suspend", "alpha"]).await;
        assert_eq!(o.status.code(), Some(2), "{ns:?}");
        assert!(one_line(&o).contains("invalid namespace"), "{ns:?}: {}", err(&o));
    }
    // from the kubeconfig's context
    let kubeconfig = t.dir.path().join("hostile.kubeconfig");
    t.sim.write_kubeconfig_for(&kubeconfig, None, HOSTILE_NS).unwrap();
    let path = kubeconfig.display().to_string();
    for verb in [vec!["suspend", "alpha"], vec!["list"], vec!["inspect", "alpha"]] {
        let mut args = vec!["--kubeconfig", &path];
        args.extend(verb);
        let o = namzu_env(args.iter().map(|s| s.to_string()).collect(), vec![audit_env(&t)]).await;
        assert_eq!(o.status.code(), Some(1));
        assert!(one_line(&o).contains("invalid namespace"), "{}", err(&o));
    }
    assert!(t.sim.requests().is_empty(), "{:?}", t.sim.requests());
    // a name cannot be looked for in every namespace
    let o = run_audited(&t, &["-A", "suspend", "alpha"]).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(one_line(&o).contains("across all namespaces"));
    assert_eq!(
        t.sim.get(&SANDBOXES, "research", "namzu-ws-tango").unwrap()["spec"]["operatingMode"],
        "Running"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_are_not_what_was_asked_for_are_errors() {
    let t = start().await;
    // a list whose items are not objects: one line from every verb that lists, no panic
    let list = r#"{"kind":"SandboxList","apiVersion":"agents.x-k8s.io/v1beta1","metadata":{},"items":["x",7,{"metadata":{"name":"namzu-ws-a","namespace":"agents"}}]}"#;
    answer_with(&t, "GET", "/namespaces/agents/sandboxes", list.into());
    for args in [
        vec!["-n", "agents", "list"],
        vec!["-n", "agents", "capacity"],
        vec!["-n", "agents", "drift"],
        vec!["-n", "agents", "suspend", "--all"],
        vec!["-n", "agents", "inspect", "awake"],
    ] {
        let o = run_audited(&t, &args).await;
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", err(&o));
        assert!(one_line(&o).contains("answered"), "{args:?}: {}", err(&o));
    }
    let o = run_audited(&t, &["-n", "agents", "doctor"]).await;
    assert!(
        !err(&o).contains("panicked") && o.status.code() != Some(101),
        "{}",
        err(&o)
    );
    assert_eq!(patches(&t), 0);
    t.sim.clear_faults();

    // a list that always hands back the same continue token ends in one line, not a loop
    let endless =
        r#"{"kind":"SandboxList","apiVersion":"agents.x-k8s.io/v1beta1","metadata":{"continue":"x"},"items":[]}"#;
    answer_with(&t, "GET", "/namespaces/agents/sandboxes", endless.into());
    let o = run_audited(&t, &["-n", "agents", "list"]).await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(
        one_line(&o).contains("continue token it had handed out before"),
        "{}",
        err(&o)
    );
    t.sim.clear_faults();

    // a GET answered with another object: the write path stops before the fence, nothing sent
    let other = serde_json::to_string(&t.sim.get(&SANDBOXES, "agents", "namzu-ws-asleep").unwrap()).unwrap();
    answer_with(&t, "GET", "/sandboxes/namzu-ws-awake", other.clone());
    let o = run_audited(&t, &["-n", "agents", "suspend", "awake"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("answered with Sandbox agents.x-k8s.io/v1beta1 agents/namzu-ws-asleep"),
        "{}",
        err(&o)
    );
    assert_eq!(patches(&t), 0);
    t.sim.clear_faults();

    // a PATCH answered with another object is not reported as applied
    answer_with(&t, "PATCH", "/sandboxes/namzu-ws-awake", other);
    let o = run_audited(&t, &["-n", "agents", "suspend", "awake"]).await;
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(!out(&o).contains("suspended ("), "{}", out(&o));
    t.sim.clear_faults();

    // doctor: an access review that fails is "could not ask", not "you may not"
    t.sim.add_fault(Fault::status(
        Some("POST"),
        "selfsubjectaccessreviews",
        500,
        "etcdserver: leader changed",
    ));
    let o = run_audited(&t, &["-n", "agents", "doctor"]).await;
    assert!(out(&o).contains("? list: could not ask whether you may"), "{}", out(&o));
    assert!(!out(&o).contains("you may not"), "{}", out(&o));
    t.sim.clear_faults();

    // doctor: a /version that is not one is not "cannot be reached"
    answer_with(&t, "GET", "/version", "[1,2".into());
    let o = run_audited(&t, &["doctor"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert!(
        one_line(&o).contains("did not answer /version as a Kubernetes API server does"),
        "{}",
        err(&o)
    );
}

/// Run the binary with its stdout a pipe whose reader has already gone (as `| head -0` leaves it).
pub(crate) async fn run_into_closed_pipe(t: &TestSim, args: &[&str]) -> Output {
    let mut full = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
    full.extend(args.iter().map(|s| s.to_string()));
    let mut command = t.bin();
    tokio::task::spawn_blocking(move || {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let child = command
            .args(&full)
            .stdout(writer)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        child.wait_with_output().expect("wait")
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_pipe_stops_a_bulk_write_between_workspaces_and_says_which() {
    let t = start_demo().await;
    let running = running_ids(&t, "agents");
    assert!(running.len() > 2);
    t.sim.clear_requests();
    // one at a time: the first write completes, its line cannot be printed, none starts after it
    let suspend_all = |parallel| {
        [
            "-n",
            "agents",
            "suspend",
            "--state",
            "Running,Starting,Failed,Error",
            "--parallel",
            parallel,
        ]
    };
    let o = run_into_closed_pipe(&t, &suspend_all("1")).await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    // the first workspace's write completes; its line cannot be printed; no other write starts
    assert_eq!(patches(&t), 1, "{}", err(&o));
    assert!(
        err(&o).contains("stopped (stdout was closed) after 1 of"),
        "{}",
        err(&o)
    );
    assert!(err(&o).contains("not started: "), "{}", err(&o));
    let stop = audit_entries(&t)
        .into_iter()
        .find(|e| e["outcome"] == "stopped")
        .expect("a stop entry");
    assert_eq!(stop["done"].as_array().unwrap().len(), 1);
    assert!(!stop["notStarted"].as_array().unwrap().is_empty());
    // in parallel: the writes in flight finish, none starts after the pipe is found closed
    let t = start_demo().await;
    t.sim.clear_requests();
    let o = run_into_closed_pipe(&t, &suspend_all("3")).await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let sent = patches(&t);
    assert!((1..=3).contains(&sent), "at most the 3 in flight: {sent}");
    assert!(
        err(&o).contains(&format!("stopped (stdout was closed) after {sent} of")),
        "{}",
        err(&o)
    );
    // reads end quietly too: no panic, no error
    for args in [
        vec!["-n", "agents", "list"],
        vec!["doctor"],
        vec!["-n", "agents", "delete", "--all", "--dry-run"],
    ] {
        let o = run_into_closed_pipe(&t, &args).await;
        assert!(!err(&o).contains("panicked"), "{args:?}: {}", err(&o));
        assert_ne!(o.status.code(), Some(101));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_during_a_bulk_write_finishes_the_write_in_flight_and_starts_no_other() {
    let t = start_demo().await;
    // the first PATCH takes a while: the signal lands while it is in flight
    t.sim.add_fault(
        Fault::new(
            Some("PATCH"),
            "/sandboxes/",
            FaultAction::Delay(std::time::Duration::from_millis(800)),
        )
        .nth(1),
    );
    t.sim.clear_requests();
    let mut full = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
    full.extend(
        [
            "-n",
            "agents",
            "suspend",
            "--state",
            "Running,Starting",
            "--parallel",
            "1",
        ]
        .map(String::from),
    );
    let child = t
        .bin()
        .args(&full)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // wait (bounded) for the first workspace's fresh read: the write is under way
    until("a write started", std::time::Duration::from_secs(20), || {
        t.sim
            .requests()
            .iter()
            .any(|r| r.method == "GET" && r.path.contains("/sandboxes/namzu-ws-"))
    })
    .await;
    sigint(&child);
    let o = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("stopped (interrupted) after 1 of"), "{}", err(&o));
    let landed: Vec<_> = t.sim.requests().into_iter().filter(|r| r.method == "PATCH").collect();
    assert_eq!(landed.len(), 1, "the write in flight finished, no other started");
    assert_eq!(landed[0].status, 200);
    let entries = audit_entries(&t);
    assert_eq!(entries.iter().filter(|e| e["outcome"] == "applied").count(), 1);
    assert!(
        entries
            .iter()
            .any(|e| e["outcome"] == "stopped" && e["reason"] == "interrupted")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_flags_are_one_line_and_exit_2() {
    let t = start().await;
    for args in [
        vec!["list", "--suspended-for", "99999999999w"],
        vec!["list", "--request-timeout", "9999999999999h"],
        vec!["suspend", "awake", "--wait", "--timeout", "99999999999999999999s"],
        vec!["tui", "--refresh-interval", "9999999999999h"],
        vec!["suspend", "awake", "--epoch", " 7"],
        vec!["suspend", "awake", "--epoch", "07"],
        vec!["suspend", "awake", "--epoch", "7 "],
        vec!["capacity", "-o", "name"],
        vec!["suspend", "awake", "-o", "name"],
        vec!["suspend", "awake", "--parallel", "0"],
        vec!["list", "--stat"],
    ] {
        let o = run_audited(&t, &args).await;
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        one_line(&o);
    }
    assert_eq!(patches(&t), 0);
    // an empty switch in the environment is unset, as a shell reads `VAR=`
    let mut full = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
    full.extend(["-n", "agents", "list"].map(String::from));
    let o = namzu_env(full, vec![("KUBECTL_NAMZU_READ_ONLY".into(), String::new())]).await;
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_choices_follow_kubectl() {
    let t = start().await;
    let k = t.sim.kubeconfig().display().to_string();
    // a user or cluster that the kubeconfig lacks is an error, never a run without credentials
    for (flag, word) in [("--user", "auth info"), ("--cluster", "cluster")] {
        let o = namzu_env(
            vec![
                "--kubeconfig".into(),
                k.clone(),
                flag.into(),
                "nope".into(),
                "list".into(),
            ],
            vec![],
        )
        .await;
        assert_eq!(o.status.code(), Some(1));
        assert!(
            one_line(&o).contains(&format!("{word} \"nope\" does not exist")),
            "{}",
            err(&o)
        );
    }
    // KUBECONFIG: a missing file in the list is skipped, as kubectl skips it
    let list = std::env::join_paths(["/nonexistent/kubeconfig", k.as_str()]).unwrap();
    let o = namzu_env(
        vec!["-n".into(), "agents".into(), "list".into(), "-o".into(), "name".into()],
        vec![("KUBECONFIG".into(), list.to_string_lossy().into_owned())],
    )
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("namzu-ws-awake"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_text_cannot_drive_the_terminal_and_yaml_keeps_strings() {
    let scenario = r#"
namespaces: [agents]
workspaces:
  - namespace: agents
    id: odd
    podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: "coder\u001b[2J"}}, spec: {containers: [{name: c, image: i}]}}
    annotations: {example.com/note: "no", example.com/when: "2026-01-01", example.com/evil: "\u001b]0;pwned\u0007line\nbreak"}
"#;
    let t = start_with(scenario, |c| c.namespace = "agents".into()).await;
    for args in [vec!["list"], vec!["list", "-o", "wide"], vec!["inspect", "odd"]] {
        let o = run_audited(&t, &args).await;
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", err(&o));
        assert!(
            !out(&o).contains('\u{1b}'),
            "{args:?}: raw escape reached the terminal:\n{}",
            out(&o)
        );
        assert!(out(&o).contains(r"coder\u{1b}[2J"), "{args:?}: {}", out(&o));
    }
    // -o yaml: every string stays a string for a YAML 1.1 reader too (dates, times, `no`)
    for verb in [vec!["list"], vec!["inspect", "odd"]] {
        let yaml = out(&run_audited(&t, &[verb.clone(), vec!["-o", "yaml"]].concat()).await);
        let json = out(&run_audited(&t, &[verb.clone(), vec!["-o", "json"]].concat()).await);
        assert!(!yaml.contains(": 2026-") && !yaml.contains(": no\n"), "{yaml}");
        let from_yaml: Value = serde_saphyr::from_str(&yaml).unwrap();
        let from_json: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(from_yaml, from_json, "-o yaml and -o json carry the same data");
    }
    let yaml = out(&run_audited(&t, &["inspect", "odd", "-o", "yaml"]).await);
    assert!(yaml.contains(r#"createdAt: "2026-11-29T12:00:00Z""#), "{yaml}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_is_private_and_a_write_it_cannot_record_is_not_sent() {
    use std::os::unix::fs::PermissionsExt;
    let t = start().await;
    let dir = t.dir.path().join("state/kubectl-namzu");
    let log = dir.join("audit.jsonl");
    let mut full = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
    full.extend(
        [
            "-n",
            "agents",
            "suspend",
            "awake",
            "--audit-log",
            &log.display().to_string(),
        ]
        .map(String::from),
    );
    let o = namzu_env(full, vec![]).await;
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(std::fs::metadata(&log).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(
        std::fs::metadata(t.sim.kubeconfig()).unwrap().permissions().mode() & 0o777,
        0o600,
        "the sim's kubeconfig holds a token"
    );
    // an audit log that cannot be written: refused before anything is sent
    t.sim.clear_requests();
    for bad in ["/dev/full", t.dir.path().to_str().unwrap()] {
        let mut full = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
        full.extend(["-n", "agents", "resume", "awake", "--audit-log", bad].map(String::from));
        let o = namzu_env(full, vec![]).await;
        assert_eq!(o.status.code(), Some(1), "{bad}");
        assert!(
            one_line(&o).contains("cannot record writes in the audit log"),
            "{}",
            err(&o)
        );
    }
    assert!(t.sim.requests().is_empty(), "nothing sent");
    // --no-audit writes, unrecorded, by choice
    let mut full = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
    full.extend(
        [
            "-n",
            "agents",
            "resume",
            "awake",
            "--no-audit",
            "--audit-log",
            "/dev/full",
        ]
        .map(String::from),
    );
    let o = namzu_env(full, vec![]).await;
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    // torn, foreign and non-UTF-8 lines do not hide the good ones
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(b"{\"verb\":\"suspend\",\"outc\n\xff\xfe\n{\"hello\":1}\n");
    std::fs::write(&log, bytes).unwrap();
    let o = namzu_env(
        vec![
            "audit".into(),
            "-o".into(),
            "json".into(),
            "--audit-log".into(),
            log.display().to_string(),
        ],
        vec![],
    )
    .await;
    assert_eq!(o.status.code(), Some(0));
    let entries: Vec<Value> = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(entries.len(), 1);
    assert!(one_line(&o).contains("3 lines"), "{}", err(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_summary_says_matches_what_happened() {
    // a take-over that lost the race to another host's take-over (the re-read finds the mode
    // there and the epoch it would carry already stored): not performed, so not exit 0
    let t = start().await;
    t.sim.add_fault(
        Fault::new(
            Some("PATCH"),
            "/sandboxes/namzu-ws-awake",
            FaultAction::Mutate(Mutation::MergePatch(serde_json::json!({
                "metadata": {"annotations": {"sandbox.namzu.ai/holder-epoch": "3"}},
                "spec": {"operatingMode": "Suspended"}
            }))),
        )
        .nth(1),
    );
    let o = run_audited(&t, &["-n", "agents", "suspend", "awake", "--take-over"]).await;
    assert_eq!(o.status.code(), Some(3), "{}", out(&o));
    assert!(
        err(&o).contains("the take-over was NOT performed (holder epoch 3 stays)"),
        "{}",
        err(&o)
    );
    let last = audit_entries(&t).pop().unwrap();
    assert_eq!(last["outcome"], "unchanged", "the audit says how it ended: {last}");
    t.sim.clear_faults();
    let o = run_audited(&t, &["-n", "agents", "resume", "awake"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));

    // a landed write whose wait timed out: "not confirmed", never "not resumed"
    let t = start().await;
    t.sim.set_knobs(
        "agents",
        "namzu-ws-asleep",
        Knobs {
            unschedulable: Some("0/3 nodes are available".into()),
            ..Default::default()
        },
    );
    let o = run_audited(
        &t,
        &["-n", "agents", "resume", "asleep", "awake", "--wait", "--timeout", "1s"],
    )
    .await;
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    assert!(
        err(&o).contains("1 of 2 workspaces were resumed but the transition was not confirmed"),
        "{}",
        err(&o)
    );
    assert!(!err(&o).contains("were not resumed"), "{}", err(&o));
    assert!(
        out(&o).contains("awake: already running: nothing sent; confirmed"),
        "{}",
        out(&o)
    );

    // suspend --wait of a workspace still suspending waits for the pod, then times out (exit 5)
    stuck_terminating(&t, "agents", "namzu-ws-awake");
    let o = run_audited(&t, &["-n", "agents", "suspend", "awake", "--epoch", "3"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let o = run_audited(&t, &["-n", "agents", "suspend", "awake", "--wait", "--timeout", "1s"]).await;
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    assert!(err(&o).contains("still waiting for pod namzu-ws-awake"), "{}", err(&o));
}

/// The binary, from a plain thread (a property test's body), with the test clock.
fn run_blocking(kubeconfig: &str, args: &[impl AsRef<std::ffi::OsStr>]) -> Output {
    let home = tempfile::tempdir().unwrap();
    bin(home.path())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env(namzu_clock::NOW_ENV, namzu_sim::TEST_START)
        .output()
        .unwrap()
}

/// Percent-decoding of one path segment, as a server reads it.
fn decode(segment: &str) -> String {
    let b = segment.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(n) = u8::from_str_radix(&segment[i + 1..i + 3], 16)
        {
            out.push(n);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Strings a careless or hostile user could pass: valid names, path and query syntax, anything.
fn arbitrary_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        "[a-z0-9]{1,10}",
        "[a-z0-9/?#%.&= ,!()~-]{0,16}",
        "\\PC{0,12}",
        "[0-9]{1,25}[smhdwx ]{0,2}",
        Just("research/sandboxes/namzu-ws-tango?x=".to_string()),
        Just("..".to_string()),
        Just("a%2Fb".to_string()),
    ]
}

/// Every flag that reaches a request, fed arbitrary text: exit 2 with one line, or requests whose
/// paths and parameters decode to exactly what was asked for; never a panic.
#[test]
fn arbitrary_flag_values_never_reach_a_request_as_anything_but_themselves() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let t = runtime.block_on(start_demo());
    let kubeconfig = t.sim.kubeconfig().display().to_string();
    let mut runner = TestRunner::new(Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    });
    let flags = ["namespace", "id", "epoch", "selector", "duration", "timeout"];
    runner
        .run(&(0..flags.len(), arbitrary_text()), |(which, text)| {
            let flag = flags[which];
            let args: Vec<String> = match flag {
                "namespace" => vec!["-n", &text, "list"],
                "id" => vec!["-n", "agents", "suspend", &text, "--dry-run"],
                "epoch" => vec!["-n", "agents", "suspend", "alpha", "--dry-run", "--epoch", &text],
                "selector" => vec!["-n", "agents", "list", "-l", &text],
                "duration" => vec!["-n", "agents", "list", "--suspended-for", &text],
                _ => vec![
                    "-n",
                    "agents",
                    "resume",
                    "alpha",
                    "--dry-run",
                    "--wait",
                    "--timeout",
                    &text,
                ],
            }
            .into_iter()
            .map(String::from)
            .collect();
            t.sim.clear_requests();
            let o = run_blocking(&kubeconfig, &args);
            let e = err(&o);
            prop_assert!(
                !e.contains("panicked") && o.status.code() != Some(101),
                "{flag} {text:?}: {e}"
            );
            if o.status.code() != Some(0) {
                prop_assert_eq!(e.trim_end().lines().count(), 1, "{} {:?}: {}", flag, text, e);
            }
            if o.status.code() == Some(2) {
                prop_assert!(
                    t.sim.requests().is_empty(),
                    "{flag} {text:?}: a usage error sent requests"
                );
            }
            for r in t.sim.requests() {
                let segments: Vec<String> = r.path.split('/').map(decode).collect();
                if let Some(i) = segments.iter().position(|s| s == "namespaces")
                    && i + 1 < segments.len()
                {
                    let expected = if flag == "namespace" { text.as_str() } else { "agents" };
                    prop_assert_eq!(&segments[i + 1], expected, "{} {:?}: {}", flag, text, r.path);
                }
                if flag == "id" && r.path.contains("/sandboxes/") {
                    prop_assert_eq!(segments.last().unwrap(), &format!("namzu-ws-{text}"), "{}", r.path);
                    prop_assert_eq!(segments.len(), 8, "{}", r.path);
                }
                if flag == "selector" && r.path.ends_with("/sandboxes") {
                    prop_assert_eq!(r.query_param("labelSelector"), Some(text.clone()), "{}", r.query);
                }
                prop_assert!(
                    r.method == "GET",
                    "{flag} {text:?}: a dry run or a read sent {}",
                    r.method
                );
            }
            Ok(())
        })
        .unwrap();
}

/// Any JSON: every type, huge numbers, control characters, deep nesting.
fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        Just(serde_json::json!(1e308)),
        Just(serde_json::json!(-0.5)),
        "\\PC{0,10}".prop_map(Value::String),
        "[\\x00-\\x1f]{0,3}".prop_map(Value::String),
        Just(Value::String("9007199254740993".into())),
        Just(Value::String("2026-13-45T99:00:00Z".into())),
    ];
    leaf.prop_recursive(6, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The fields the derivation reads (and the ones around them), as JSON pointers.
const READ_FIELDS: &[&str] = &[
    "/metadata",
    "/metadata/name",
    "/metadata/uid",
    "/metadata/creationTimestamp",
    "/metadata/deletionTimestamp",
    "/metadata/generation",
    "/metadata/resourceVersion",
    "/metadata/labels",
    "/metadata/annotations",
    "/metadata/annotations/sandbox.namzu.ai~1holder-epoch",
    "/metadata/annotations/sandbox.namzu.ai~1operating-mode-changed-at",
    "/metadata/annotations/sandbox.namzu.ai~1pod-template-hash",
    "/metadata/ownerReferences",
    "/spec",
    "/spec/operatingMode",
    "/spec/shutdownTime",
    "/spec/podTemplate",
    "/spec/podTemplate/metadata/labels",
    "/spec/podTemplate/metadata/labels/sandbox.namzu.ai~1template",
    "/spec/podTemplate/spec",
    "/spec/volumeClaimTemplates",
    "/status",
    "/status/conditions",
    "/status/observedGeneration",
    "/status/replicas",
];

/// Set `pointer` to `value`, making (or replacing) whatever lies on the way.
fn set_at(doc: &mut Value, pointer: &str, value: Value) {
    let mut at = doc;
    let keys: Vec<String> = pointer[1..]
        .split('/')
        .map(|k| k.replace("~1", "/").replace("~0", "~"))
        .collect();
    for (i, key) in keys.iter().enumerate() {
        if !at.is_object() {
            *at = Value::Object(Default::default());
        }
        let map = at.as_object_mut().unwrap();
        if i == keys.len() - 1 {
            map.insert(key.clone(), value);
            return;
        }
        at = map.entry(key.clone()).or_insert(Value::Null);
    }
}

/// Arbitrary JSON at every field the derivation reads, served as a LIST and as a GET, through
/// `list`, `inspect`, and the TUI's follow (as a streaming list), detail, update and render: one error line or a degraded
/// row, never a panic.
#[test]
fn arbitrary_answers_degrade_or_fail_in_one_line_never_panic() {
    use namzu_domain::naming::WorkspaceKey;
    use namzu_tui::action::Effect;
    use namzu_tui::app::{App, AppOptions};
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let t = runtime.block_on(start_demo());
    let base = t.sim.get(&SANDBOXES, "agents", "namzu-ws-alpha").unwrap();
    let kubeconfig = t.sim.kubeconfig().display().to_string();
    let conn = runtime.block_on(connect(&t, t.sim.kubeconfig(), None, std::time::Duration::from_secs(5)));
    let context = context_options(&conn, Default::default());
    let mut runner = TestRunner::new(Config {
        cases: 32,
        failure_persistence: None,
        ..Config::default()
    });
    let edits = prop::collection::vec((0..READ_FIELDS.len(), any_json()), 1..5);
    let extra = prop_oneof![Just(None), any_json().prop_map(Some)];
    runner
        .run(&(edits, extra), |(edits, extra)| {
            let mut object = base.clone();
            for (field, value) in edits {
                set_at(&mut object, READ_FIELDS[field], value);
            }
            let mut items = vec![object.clone()];
            items.extend(extra);
            let list = serde_json::json!({"kind": "SandboxList", "apiVersion": "agents.x-k8s.io/v1beta1",
                "metadata": {"resourceVersion": "1"}, "items": items});
            t.sim.clear_faults();
            answer_with(&t, "GET", "/namespaces/agents/sandboxes", list.to_string());
            answer_with(&t, "GET", "/sandboxes/namzu-ws-alpha", object.to_string());
            for args in [
                vec!["list", "-o", "wide"],
                vec!["list", "-o", "json"],
                vec!["inspect", "alpha"],
            ] {
                let o = run_blocking(&kubeconfig, &[vec!["-n", "agents"], args.clone()].concat());
                let e = err(&o);
                prop_assert!(
                    !e.contains("panicked") && o.status.code() != Some(101),
                    "{args:?}: {e}\n{object}"
                );
                prop_assert!(matches!(o.status.code(), Some(0 | 1)), "{args:?}: {e}");
                if o.status.code() == Some(1) {
                    prop_assert_eq!(e.trim_end().lines().count(), 1, "{:?}: {}", args, e);
                }
            }
            // the TUI: its follow reads these objects as a streaming list (the watch's events,
            // then the initial-events-end bookmark) until the context settles; a detail, update
            // and render at two sizes
            t.sim.clear_faults();
            answer_with(&t, "GET", "/sandboxes/namzu-ws-alpha", object.to_string());
            let mut events: String = items
                .iter()
                .map(|o| format!("{}\n", serde_json::json!({"type": "ADDED", "object": o})))
                .collect();
            events.push_str(&format!(
                "{}\n",
                serde_json::json!({"type": "BOOKMARK", "object": {"kind": "Sandbox", "apiVersion": "agents.x-k8s.io/v1beta1",
                    "metadata": {"resourceVersion": "1", "annotations": {"k8s.io/initial-events-end": "true"}}}})
            ));
            // once; the watch it resumes then waits (a quiet server)
            t.sim.add_fault(
                Fault::new(
                    Some("GET"),
                    "/namespaces/agents/sandboxes",
                    FaultAction::Raw { code: 200, body: events },
                )
                .times(1),
            );
            t.sim
                .add_fault(Fault::new(Some("GET"), "/namespaces/agents/sandboxes", FaultAction::Hang));
            let mut app = App::new(AppOptions {
                contexts: vec![context.clone()],
                several_contexts: false,
                namespace: "agents".into(),
                all_namespaces: false,
                read_only: true,
                now: t.sim.now(),
            });
            let name = context.name.clone();
            // an I/O of its own: each case's app follows from generation 1
            let io = std::sync::Arc::new(tui_io(
                vec![(conn.clone(), policy(true, Default::default()))],
                Default::default(),
            ));
            runtime.block_on(async {
                let mut effects = app.start();
                effects.push(Effect::Detail(WorkspaceKey::new(Some(&name), "agents", "alpha")));
                crate::tui::settle(&mut app, &io, effects).await;
            });
            for (w, h) in [(80, 24), (200, 50)] {
                let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
                term.draw(|f| {
                    namzu_tui::view::render(f, &app, namzu_tui::view::Theme { colour: true })
                })
                .unwrap();
            }
            Ok(())
        })
        .unwrap();
}

/// The reviewer's reproductions, each as it was found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selections_names_and_non_workspaces_are_refused_before_anything_is_sent() {
    let scenario = crate::support::SMALL.replacen(
        "objects:\n",
        "objects:\n  - {apiVersion: agents.x-k8s.io/v1beta1, kind: Sandbox, metadata: {name: namzu-ws-stranger, namespace: agents}, spec: {podTemplate: {spec: {containers: [{name: c, image: i}]}}}}\n",
        1,
    );
    let t = start_with(&scenario, |c| c.namespace = "agents".into()).await;
    t.sim.clear_requests();
    // an empty selector (an unset shell variable) selects nothing and is refused
    for sel in ["", " ", ",", "a=b,,c=d"] {
        let o = run_audited(&t, &["suspend", "-l", sel]).await;
        assert_eq!(o.status.code(), Some(2), "-l {sel:?}: {}", err(&o));
        one_line(&o);
    }
    // a name with -A, on every verb that takes one
    for args in [
        vec!["-A", "inspect", "awake"],
        vec!["-A", "drift", "awake"],
        vec!["-A", "delete", "awake", "--yes"],
    ] {
        let o = run_audited(&t, &args).await;
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(one_line(&o).contains("across all namespaces"));
    }
    assert!(t.sim.requests().is_empty(), "{:?}", t.sim.requests());
    // a Sandbox under the prefix without the library's label is no workspace: never written
    for verb in ["suspend", "delete"] {
        let o = run_audited(
            &t,
            &[verb, "stranger", "--yes"]
                .iter()
                .copied()
                .filter(|a| verb == "delete" || *a != "--yes")
                .collect::<Vec<_>>(),
        )
        .await;
        assert_eq!(o.status.code(), Some(3), "{verb}: {}", err(&o));
        assert!(one_line(&o).contains("is not a workspace"), "{}", err(&o));
    }
    assert_eq!(patches(&t), 0);
    assert!(t.sim.get(&SANDBOXES, "agents", "namzu-ws-stranger").is_some());
}

/// A write whose answer never came is looked at, not guessed: landed is applied, else an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_is_read_back_before_it_is_reported() {
    let t = start().await;
    t.sim
        .add_fault(Fault::new(Some("PATCH"), "/sandboxes/namzu-ws-awake", FaultAction::Lost).nth(1));
    let o = run_audited(&t, &["-n", "agents", "suspend", "awake", "awake"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("awake: suspended"), "{}", out(&o));
    assert_eq!(patches(&t), 1, "the id given twice is written once");
    let last = audit_entries(&t).pop().unwrap();
    assert_eq!(last["outcome"], "applied", "{last}");
}

/// Output that cannot be written is an error, never a panic and never exit 0 with half of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unwritable_stdout_or_stderr_is_an_exit_code_not_a_panic() {
    let t = start().await;
    let kubeconfig = t.sim.kubeconfig().display().to_string();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let o = t
        .bin()
        .args(["--kubeconfig", &kubeconfig, "-n", "agents", "list", "-o", "json"])
        .stdout(full.try_clone().unwrap())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(one_line(&o).contains("cannot write to stdout"), "{}", err(&o));
    for args in [vec!["list", "-n", "BAD"], vec!["-n", "agents", "inspect", "nobody"]] {
        let o = t
            .bin()
            .args(["--kubeconfig", &kubeconfig])
            .args(&args)
            .stderr(full.try_clone().unwrap())
            .output()
            .unwrap();
        assert!(matches!(o.status.code(), Some(1 | 2 | 4)), "{args:?}: {:?}", o.status);
    }
}

/// An audit log that stops taking entries mid-way stops a bulk write there (a file-size limit
/// makes every append fail after `ready` opened the log).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_log_that_fails_mid_way_stops_a_bulk_write() {
    let t = start_demo().await;
    let log = t.dir.path().join("full.jsonl");
    std::fs::write(&log, "x".repeat(1024)).unwrap();
    t.sim.clear_requests();
    let script = format!(
        "trap '' XFSZ; ulimit -f 1; exec {} --kubeconfig {} -n agents suspend --state Running --parallel 1 --audit-log {}",
        bin_line(&t.home(), &[now_env(&t)]),
        t.sim.kubeconfig().display(),
        log.display()
    );
    let o =
        tokio::task::spawn_blocking(move || std::process::Command::new("sh").args(["-c", &script]).output().unwrap())
            .await
            .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    // write-ahead: the first write's intent could not be appended, so not even it was sent
    assert_eq!(patches(&t), 0, "nothing sent that the log could not record first");
    assert!(
        err(&o).contains("stopped (the audit log stopped taking entries) after 1 of"),
        "{}",
        err(&o)
    );
}
