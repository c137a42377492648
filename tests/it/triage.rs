//! Triage without leaving the tool, through the real binary on the sim: `logs` (kubectl's flags,
//! the workspace's own pod by identity, every reason there is nothing to read, `-f` across a
//! restart and Ctrl-C), `exec` (real kubectl against the sim's pods/exec) and `history` (one
//! timeline, the start-up waterfall, this machine's writes in it).

use crate::support::*;
use namzu_sim::faults::{Fault, FaultAction};
use namzu_sim::resources::{PODS, SANDBOXES};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;

const WORKSPACES: &str = r#"
namespaces: [agents]
workspaces:
  - namespace: agents
    id: awake
    podTemplate: &pt
      metadata: {labels: {app: agent, sandbox.namzu.ai/template: coder}}
      spec: {containers: [{name: agent, image: "ghcr.io/x/agent:1.2"}]}
    logs: {agent: ["booting", "mounted /workspace", "ready"]}
    epoch: "2"
  - namespace: agents
    id: duo
    podTemplate:
      metadata: {labels: {sandbox.namzu.ai/template: coder}}
      spec: {containers: [{name: main, image: "ghcr.io/x/a:1"}, {name: side, image: "ghcr.io/x/b:1"}]}
    logs: {main: ["from main"], side: ["from side"]}
  - namespace: agents
    id: pulling
    podTemplate: *pt
    knobs: {imagePull: ImagePullBackOff}
  - namespace: agents
    id: crashing
    podTemplate: *pt
    knobs: {crashLoop: true}
    previousLogs: {agent: ["starting", "fatal: no API key"]}
  - namespace: agents
    id: asleep
    podTemplate: *pt
    mode: Suspended
"#;

async fn sim() -> TestSim {
    start_with(WORKSPACES, |c| c.namespace = "agents".into()).await
}

fn code(o: &std::process::Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_reads_the_workspaces_own_pod_with_kubectls_flags() {
    let t = sim().await;
    let o = namzu(&t, &["logs", "awake"]).await;
    assert_eq!(
        (code(&o), out(&o).as_str()),
        (0, "booting\nmounted /workspace\nready\n"),
        "{}",
        err(&o)
    );
    // the forms `list -o name` prints are taken too
    let o = namzu(&t, &["logs", "awake", "--tail", "1"]).await;
    assert_eq!(out(&o), "ready\n");
    let o = namzu(&t, &["logs", "awake", "--tail", "2", "--timestamps"]).await;
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    for l in &lines {
        let (stamp, _) = l.split_once(' ').expect("a stamp, then the line");
        assert!(namzu_domain::timefmt::parse(stamp).is_some(), "{l}");
    }
    assert!(lines[1].ends_with(" ready"));
    let o = namzu(&t, &["logs", "awake", "--since", "1h"]).await;
    assert_eq!(out(&o).lines().count(), 3);
    // several containers: the first, saying so, as kubectl does; -c picks
    let o = namzu(&t, &["logs", "duo"]).await;
    assert_eq!(out(&o), "from main\n");
    assert!(
        err(&o).contains("Defaulted container \"main\" out of: main, side"),
        "{}",
        err(&o)
    );
    let o = namzu(&t, &["logs", "duo", "-c", "side"]).await;
    assert_eq!(out(&o), "from side\n");
    // the instance before the last restart
    let o = namzu(&t, &["logs", "crashing", "--previous"]).await;
    assert_eq!(
        (code(&o), out(&o).as_str()),
        (0, "starting\nfatal: no API key\n"),
        "{}",
        err(&o)
    );
    // exactly one request for the log, at the pod the Sandbox owns
    let logs: Vec<_> = t
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/log"))
        .map(|r| r.path)
        .collect();
    assert!(
        logs.iter()
            .all(|p| p.starts_with("/api/v1/namespaces/agents/pods/namzu-ws-")),
        "{logs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_says_why_there_is_nothing_to_read() {
    let t = sim().await;
    for (args, exit, says) in [
        (&["logs", "asleep"][..], 7, "workspace asleep is Suspended"),
        (&["logs", "asleep"][..], 7, "kubectl namzu resume asleep"),
        (&["logs", "pulling"][..], 7, "waiting: ImagePullBackOff"),
        (&["logs", "awake", "--previous"][..], 7, "has not restarted"),
        (&["logs", "duo", "-c", "nope"][..], 2, "choose one of: main, side"),
        (
            &["logs", "missing"][..],
            4,
            "workspace missing not found in namespace agents",
        ),
        (&["logs", "awake", "--tail", "-5"][..], 2, "--tail -5"),
        (&["logs", "Bad_Id"][..], 2, "Bad_Id"),
    ] {
        let o = namzu(&t, args).await;
        assert_eq!(code(&o), exit, "{args:?}: {}", err(&o));
        assert!(err(&o).contains(says), "{args:?}: {}", err(&o));
        assert_eq!(err(&o).lines().count(), 1, "one line: {}", err(&o));
        assert!(out(&o).is_empty());
    }
    // a pod under the workspace's name that its Sandbox does not own is never read
    let demo = start_demo().await;
    let o = namzu(&demo, &["logs", "november"]).await;
    assert_eq!(code(&o), 3, "{}", err(&o));
    assert!(
        err(&o).contains("is not this workspace's: it is owned by ReplicaSet"),
        "{}",
        err(&o)
    );
    assert!(!demo.sim.requests().iter().any(|r| r.path.ends_with("/log")));
}

/// The binary following a log: its stdout lines as they come, its stderr kept.
struct Following {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Following {
    fn start(t: &TestSim, args: &[&str]) -> Following {
        let mut child = t
            .bin()
            .arg("--kubeconfig")
            .arg(t.sim.kubeconfig())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let lines = stdout_lines(&mut child);
        Following { child, lines }
    }

    /// The next line printed (waiting at most 20 s: a follow that prints nothing fails).
    fn next(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(20))
            .expect("the follow printed the line")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_crosses_a_restart_and_ctrl_c_ends_it() {
    let t = sim().await;
    let f = Following::start(&t, &["logs", "awake", "-f"]);
    for want in ["booting", "mounted /workspace", "ready"] {
        assert_eq!(f.next(), want);
    }
    t.sim
        .append_log("agents", "namzu-ws-awake", "agent", "working on task 1");
    assert_eq!(f.next(), "working on task 1");
    t.sim.restart_container("agents", "namzu-ws-awake", "agent");
    // the new instance is followed: its first line comes, none of the old one again
    t.sim.append_log("agents", "namzu-ws-awake", "agent", "booting again");
    assert_eq!(f.next(), "booting again");
    let status = interrupt(f.child).await;
    assert_eq!(status.code(), Some(0), "Ctrl-C ends a follow with exit 0");
}

/// A follow's end: its exit status and what it said on stderr.
async fn ended(mut f: Following) -> (Option<i32>, String) {
    tokio::task::spawn_blocking(move || {
        let status = f.child.wait().expect("wait");
        let mut e = String::new();
        std::io::Read::read_to_string(f.child.stderr.as_mut().expect("stderr"), &mut e).expect("stderr");
        (status.code(), e)
    })
    .await
    .expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_says_when_the_pod_goes_or_is_replaced() {
    let t = sim().await;
    // the pod deleted under a Running workspace: the controller makes another, not followed
    let f = Following::start(&t, &["logs", "awake", "-f"]);
    assert_eq!(f.next(), "booting");
    t.sim.delete(&PODS, "agents", "namzu-ws-awake");
    let (code, e) = ended(f).await;
    assert!(e.contains("pod namzu-ws-awake was replaced (uid "), "{e}");
    assert!(e.contains("not followed"), "{e}");
    assert_eq!(code, Some(1), "{e}");
    // the workspace suspended: its pod goes, and the follow ends saying so
    let f = Following::start(&t, &["logs", "duo", "-c", "side", "-f"]);
    assert_eq!(f.next(), "from side");
    t.sim.modify(&SANDBOXES, "agents", "namzu-ws-duo", |o| {
        o["spec"]["operatingMode"] = serde_json::json!("Suspended")
    });
    t.sim.advance(chrono::Duration::seconds(60));
    let (code, e) = ended(f).await;
    assert!(e.contains("pod namzu-ws-duo was deleted"), "{e}");
    assert_eq!(code, Some(0), "{e}");
}

/// kubectl is on PATH (under `CI=true` it must be).
fn have_kubectl() -> bool {
    let found = Command::new("kubectl").args(["version", "--client"]).output().is_ok();
    assert!(
        found || std::env::var("CI").as_deref() != Ok("true"),
        "CI=true: kubectl must be on PATH"
    );
    if !found {
        eprintln!("SKIPPED: kubectl is not on PATH; the exec test did not run");
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_runs_kubectl_exec_in_the_workspaces_own_pod() {
    let t = sim().await;
    let o = namzu(&t, &["exec", "asleep", "--", "ls"]).await;
    assert_eq!(code(&o), 7, "{}", err(&o));
    assert!(
        err(&o).contains("resume it first: kubectl namzu resume asleep"),
        "{}",
        err(&o)
    );
    let o = namzu(&t, &["exec", "awake"]).await;
    assert_eq!(code(&o), 2);
    assert!(err(&o).contains("give the command after --"), "{}", err(&o));
    let o = namzu(&t, &["exec", "crashing", "--", "ls"]).await;
    assert_eq!(code(&o), 7);
    assert!(
        err(&o).contains("not running (waiting: CrashLoopBackOff)"),
        "{}",
        err(&o)
    );
    if !have_kubectl() {
        return;
    }
    // (an exec that printed nothing at all is run once more: see sim_triage's `kubectl_with`)
    let exec = |args: &'static [&'static str]| {
        let t = &t;
        async move {
            let o = namzu(t, args).await;
            if o.stdout.is_empty() && o.stderr.is_empty() {
                namzu(t, args).await
            } else {
                o
            }
        }
    };
    let o = exec(&["exec", "awake", "--", "hostname"]).await;
    assert_eq!((code(&o), out(&o).as_str()), (0, "namzu-ws-awake\n"), "{}", err(&o));
    let o = exec(&["exec", "duo", "-c", "side", "--", "echo", "hi", "there"]).await;
    assert_eq!(out(&o), "hi there\n", "{}", err(&o));
    // the command's exit code is exec's
    let o = namzu(&t, &["exec", "awake", "--", "sh", "-c", "exit 3"]).await;
    assert_eq!(code(&o), 3, "{}", err(&o));
    let exec: Vec<_> = t
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/exec"))
        .collect();
    assert!(!exec.is_empty());
    assert!(
        exec.iter()
            .all(|r| r.path.starts_with("/api/v1/namespaces/agents/pods/namzu-ws-")),
        "{:?}",
        exec.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_is_one_timeline_with_this_machines_writes_and_the_start_up_waterfall() {
    let t = sim().await;
    let o = run_audited(&t, &["suspend", "awake", "--yes"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let o = run_audited(&t, &["history", "awake", "-o", "json"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let h: Value = serde_json::from_str(&out(&o)).expect("json");
    let entries = h["entries"].as_array().expect("entries");
    let times: Vec<&str> = entries.iter().map(|e| e["time"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order: {times:?}");
    let has = |source: &str, text: &str| {
        entries
            .iter()
            .any(|e| e["source"] == source && (e["text"].as_str().unwrap_or("").contains(text) || e["reason"] == text))
    };
    assert!(has("audit", "suspend: applied (holder epoch 2)"), "{entries:#?}");
    assert!(has("event", "SandboxPodCreated"), "{entries:#?}");
    assert!(
        has("annotation", "mode changed to Suspended (holder epoch 2"),
        "{entries:#?}"
    );
    assert!(has("status", "created (uid"), "{entries:#?}");
    // each event once, though both event APIs serve it
    let events: Vec<&Value> = entries.iter().filter(|e| e["source"] == "event").collect();
    let mut keys: Vec<String> = events
        .iter()
        .map(|e| format!("{}{}{}", e["time"], e["reason"], e["object"]))
        .collect();
    keys.dedup();
    assert_eq!(keys.len(), events.len(), "{events:#?}");

    // a running workspace's pod: the waterfall names its legs and the slowest
    let o = run_audited(&t, &["history", "duo", "-o", "json"]).await;
    let h: Value = serde_json::from_str(&out(&o)).expect("json");
    let legs: Vec<&str> = h["startup"]["legs"]
        .as_array()
        .expect("legs")
        .iter()
        .map(|l| l["to"].as_str().unwrap())
        .collect();
    assert_eq!(
        legs,
        ["pod created", "scheduled", "image pulled", "started", "ready"],
        "{h:#}"
    );
    assert!(h["startup"]["slowest"].is_string(), "{h:#}");
    let o = run_audited(&t, &["history", "duo"]).await;
    let text = out(&o);
    assert!(text.starts_with("TIME "), "{text}");
    assert!(text.contains("Start-up of the current pod, from "), "{text}");
    assert!(text.contains("← slowest"), "{text}");
    // a suspended workspace has no waterfall, and says why
    let o = run_audited(&t, &["history", "asleep"]).await;
    assert!(out(&o).contains("Start-up: no pod"), "{}", out(&o));
    let o = run_audited(&t, &["history", "missing"]).await;
    assert_eq!(code(&o), 4);
}

/// A command in a workspace's pod is a write for the safety rules: `--read-only` and a readOnly
/// rule refuse it before any pod is touched; a `confirm: typed` context asks for the id, so on
/// a pipe it needs `--yes` (exit 2 without).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_is_a_write_for_the_safety_rules() {
    let t = sim().await;
    let rules = t.dir.path().join("rules.yaml");
    let config = rules.display().to_string();
    let execs = |t: &TestSim| t.sim.requests().iter().filter(|r| r.path.ends_with("/exec")).count();
    let o = namzu(&t, &["--read-only", "exec", "awake", "--", "hostname"]).await;
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(
        err(&o).contains("read-only mode (--read-only") && err(&o).contains("no command runs there"),
        "{}",
        err(&o)
    );
    std::fs::write(&rules, "contexts:\n  - context: '*'\n    readOnly: true\n").unwrap();
    let o = namzu(&t, &["--config", &config, "exec", "awake", "--", "hostname"]).await;
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(err(&o).contains("config rule \"*\""), "{}", err(&o));
    std::fs::write(&rules, "contexts:\n  - context: '*'\n    confirm: typed\n").unwrap();
    let o = namzu(&t, &["--config", &config, "exec", "awake", "--", "hostname"]).await;
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert!(
        err(&o).contains("asks for typed ids (confirm: typed): pass --yes"),
        "{}",
        err(&o)
    );
    assert_eq!(execs(&t), 0, "no command reached a pod");
    if !have_kubectl() {
        return;
    }
    let o = namzu(&t, &["--config", &config, "exec", "awake", "--yes", "--", "hostname"]).await;
    let o = if o.stdout.is_empty() && o.stderr.is_empty() {
        namzu(&t, &["--config", &config, "exec", "awake", "--yes", "--", "hostname"]).await
    } else {
        o
    };
    assert_eq!((code(&o), out(&o).as_str()), (0, "namzu-ws-awake\n"), "{}", err(&o));
}

/// `exec` runs nothing in a pod on its way out: one being deleted, or the pod of a workspace
/// already Suspended (the library never binds either); nothing reaches pods/exec.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_refuses_a_pod_on_its_way_out() {
    let t = sim().await;
    let now = t.sim.now().to_rfc3339();
    t.sim.modify(&PODS, "agents", "namzu-ws-awake", |p| {
        p["metadata"]["deletionTimestamp"] = serde_json::json!(now)
    });
    let o = namzu(&t, &["exec", "awake", "--", "ls"]).await;
    assert_eq!(code(&o), 7, "{}", err(&o));
    assert!(err(&o).contains("pod namzu-ws-awake is being deleted"), "{}", err(&o));
    t.sim.modify(&SANDBOXES, "agents", "namzu-ws-duo", |s| {
        s["spec"]["operatingMode"] = serde_json::json!("Suspended")
    });
    let o = namzu(&t, &["exec", "duo", "--", "ls"]).await;
    assert_eq!(code(&o), 7, "{}", err(&o));
    assert!(
        err(&o).contains("workspace duo is Suspended: its pod namzu-ws-duo is on its way out"),
        "{}",
        err(&o)
    );
    assert!(t.sim.requests().iter().all(|r| !r.path.ends_with("/exec")));
}

/// L4: `logs` without `-f` is one request and is bounded as one: a body that never ends stops
/// at `--request-timeout`, after the lines that came, with one line and exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_without_follow_stop_at_the_request_timeout_on_a_body_that_never_ends() {
    let t = start().await;
    t.sim.add_fault(Fault::new(
        Some("GET"),
        "/pods/namzu-ws-awake/log",
        FaultAction::Endless {
            head: "first line\nsecond line\n".into(),
            drip: "x".into(),
        },
    ));
    let o = bounded(
        &t,
        &["logs", "awake", "--request-timeout", "1s"],
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(code(&o), 1, "stdout: {}\nstderr: {}", out(&o), err(&o));
    assert!(out(&o).starts_with("first line\nsecond line\n"), "{}", out(&o));
    let stderr = err(&o);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("timed out after 1s") && stderr.contains("pods/log namzu-ws-awake"),
        "{stderr}"
    );
    // the one request, not retried
    let reads = t
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/log"))
        .count();
    assert_eq!(reads, 1);
}

/// A line of `n` bytes with multi-byte characters across every 64 KiB boundary.
fn long_line(n: usize) -> String {
    let mut s = String::from("start ");
    while s.len() < n {
        s.push_str("€ab");
    }
    s.push_str(" end");
    s
}

/// L6: into a pipe a line over 64 KiB passes whole, as the container wrote it (as the README
/// says piped lines do), with `--timestamps` too; the lines around it are untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn piped_logs_pass_a_line_over_64_kib_whole() {
    let t = start().await;
    let long = long_line(200 * 1024);
    for line in ["before", &long, "after"] {
        t.sim.append_log("agents", "namzu-ws-awake", "agent", line);
    }
    let o = namzu(&t, &["-n", "agents", "logs", "awake"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let text = out(&o);
    assert!(!text.contains("line cut"), "not cut");
    assert!(
        text.ends_with(&format!("before\n{long}\nafter\n")),
        "{} bytes",
        text.len()
    );
    let o = namzu(&t, &["-n", "agents", "logs", "awake", "--timestamps", "--tail", "2"]).await;
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{} bytes", text.len());
    assert_eq!(lines[0].split_once(' ').map(|(_, l)| l), Some(long.as_str()));
    assert!(lines[1].ends_with(" after"));
}

/// L6: a piped follow passes a long line whole too: its first part carries the time the follow
/// asks for (stripped), its other parts none; the line after it is a line of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_piped_follow_passes_a_line_over_64_kib_whole() {
    let t = start().await;
    t.sim.append_log("agents", "namzu-ws-awake", "agent", "before");
    let mut child = t
        .bin()
        .args(agents_args(&t, &["logs", "awake", "-f"]))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = stdout_lines(&mut child);
    let next = || lines.recv_timeout(Duration::from_secs(20)).expect("a line in time");
    // (the container's own first lines come before)
    while next() != "before" {}
    let long = long_line(150 * 1024);
    t.sim.append_log("agents", "namzu-ws-awake", "agent", &long);
    t.sim.append_log("agents", "namzu-ws-awake", "agent", "after");
    let got = next();
    assert!(
        got == long,
        "{} bytes, starting {:?}",
        got.len(),
        &got[..40.min(got.len())]
    );
    assert_eq!(next(), "after");
    let status = interrupt(child).await;
    assert_eq!(status.code(), Some(0));
}

/// L6: on a terminal the same line is still cut at 64 KiB, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_on_a_terminal_still_cut_a_line_over_64_kib() {
    let t = start().await;
    let long = long_line(100 * 1024);
    t.sim.append_log("agents", "namzu-ws-awake", "agent", &long);
    let Some(screen) = tokio::task::block_in_place(|| on_a_terminal(&t, &["logs", "awake", "--tail", "1"])) else {
        return;
    };
    let line = screen.lines().next().unwrap_or_default();
    assert!(
        line.ends_with(" … [line cut at 64 KiB]"),
        "{}",
        &line[line.len().saturating_sub(80)..]
    );
    assert!(line.len() < 66 * 1024, "{}", line.len());
}
