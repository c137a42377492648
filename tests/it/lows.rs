//! The leftovers of issues 26, 27 and 28, each through the real binary on the sim: the wording of
//! a failed `/version`, the library's unfenced refresh said and audited as such, the scenario's
//! server knobs, `demo --serve` cleaning up on SIGTERM/SIGHUP, the rules file named before a
//! write, and the TUI's second `q` abandoning a write in flight.

use crate::support::*;
use namzu_sim::faults::Fault;
use serde_json::Value;

const V1: &str = r#"{metadata: {labels: {app: agent, sandbox.namzu.ai/template: ws}}, spec: {terminationGracePeriodSeconds: 5, nodeSelector: {kubernetes.io/arch: amd64, pool: blue}, containers: [{name: main, image: "namzu/agent:1", volumeDevices: [{name: workspace-disk, devicePath: /dev/workspace}]}]}}"#;
const V2: &str = r#"{metadata: {labels: {app: agent, sandbox.namzu.ai/template: ws}}, spec: {terminationGracePeriodSeconds: 90, nodeSelector: {kubernetes.io/arch: amd64}, containers: [{name: main, image: "namzu/agent:2", volumeDevices: [{name: workspace-disk, devicePath: /dev/workspace}]}]}}"#;
const H1: &str = "sha256:7f3b5b2c5b7612709730dde3a89f382b803a3612244cc863752280125508e5e3";

fn refresh_scenario() -> String {
    format!(
        "namespaces: [ns]\nobjects:\n  - apiVersion: extensions.agents.x-k8s.io/v1beta1\n    kind: SandboxTemplate\n    metadata: {{name: ws, namespace: ns}}\n    spec: {{podTemplate: {V2}, volumeClaimTemplates: [{{metadata: {{name: workspace-disk}}, spec: {{accessModes: [ReadWriteOnce], volumeMode: Block}}}}]}}\nworkspaces:\n  - {{namespace: ns, id: desk, podTemplate: {V1}, mode: Suspended, hash: \"{H1}\"}}\n"
    )
}

fn audit_entries(t: &TestSim) -> Vec<Value> {
    std::fs::read_to_string(t.dir.path().join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Issue 26: a failed `GET /version` is in no namespace; a list across namespaces still says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_version_request_names_no_namespace() {
    let t = start().await;
    t.sim.add_fault(Fault::status(Some("GET"), "/version", 403, "no"));
    let o = namzu(&t, &["tui"]).await;
    assert!(!o.status.success());
    assert!(err(&o).contains("get /version"), "{}", err(&o));
    assert!(!err(&o).contains("namespaces"), "{}", err(&o));
}

/// Issue 27: a refresh of a workspace with no stored epoch carries none: the tool says so and
/// audits `epochCarried: null`, not "keeps holder epoch 0".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfenced_refresh_says_and_audits_no_holder_epoch() {
    let t = start_with(&refresh_scenario(), |c| c.namespace = "ns".into()).await;
    let o = run_audited(&t, &["resume", "desk", "--refresh-template"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let said = format!("{}{}", out(&o), err(&o));
    assert!(
        said.contains("no holder epoch (unfenced, as the library refreshes)"),
        "{said}"
    );
    assert!(!said.contains("holder epoch 0"), "{said}");
    let entries = audit_entries(&t);
    let applied: Vec<&Value> = entries.iter().filter(|e| e["outcome"] == "applied").collect();
    assert_eq!(applied.len(), 1, "{entries:?}");
    assert!(applied[0]["epochCarried"].is_null(), "{entries:?}");
    assert!(applied[0].get("epochCarried").is_some(), "{entries:?}");
}

/// `demo --serve` in the background: its stdout lines until the banner's last, then the child.
fn serve(args: &[&str], dir: &std::path::Path) -> std::process::Child {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"))
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
        .spawn()
        .expect("spawn kubectl-namzu");
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        match lines.next() {
            Some(Ok(l)) if l == "Press Ctrl-C to stop." => break,
            Some(Ok(_)) => {}
            _ => panic!(
                "no banner: {}",
                std::fs::read_to_string(dir.join("stderr")).unwrap_or_default()
            ),
        }
    }
    child
}

/// The demo's own scratch kubeconfigs in the temp directory.
fn scratch_of(pid: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("kubectl-namzu-demo-{pid}");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

fn kubectl(kc: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kc)
        .args(args)
        .output()
        .expect("kubectl runs")
}

/// Issue 28: a scenario sets the server's version and the garbage collector's delay, seen by
/// kubectl against `demo --serve --scenario`. Issue 26: SIGTERM and SIGHUP end `demo --serve` as
/// Ctrl-C does, its scratch kubeconfigs removed from the temp directory.
#[test]
fn scenario_server_knobs_and_demo_serve_cleans_up_on_sigterm_and_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(
        &scenario,
        format!("{SMALL}\nserver: {{version: \"1.20\", gcDelay: 60s}}\n"),
    )
    .unwrap();
    for (signal, with_scenario) in [("-TERM", true), ("-HUP", false)] {
        let kc = dir.path().join(format!("kc{signal}"));
        let mut args = vec!["demo", "--serve", "--port", "0"];
        if with_scenario {
            args.extend(["--scenario", scenario.to_str().unwrap()]);
        } else {
            // a fleet: a sim kubeconfig of each cluster's own in the temp dir, and the fleet's
            args.extend(["--clusters", "2"]);
        }
        let kc_arg;
        if with_scenario {
            kc_arg = kc.to_str().unwrap().to_string();
            args.extend(["--kubeconfig-out", &kc_arg]);
        }
        let mut child = serve(&args, dir.path());
        let pid = child.id();
        assert!(!scratch_of(pid).is_empty(), "the demo writes scratch kubeconfigs");
        if with_scenario
            && std::process::Command::new("kubectl")
                .arg("version")
                .arg("--client")
                .output()
                .is_ok()
        {
            let v = kubectl(&kc, &["get", "--raw", "/version"]);
            let v: Value = serde_json::from_slice(&v.stdout).expect("a /version answer");
            assert_eq!(v["minor"], "20", "{v}");
            let pod = |kc: &std::path::Path| -> Value {
                let o = kubectl(kc, &["get", "pod", "-n", "agents", "namzu-ws-awake", "-o", "json"]);
                serde_json::from_slice(&o.stdout).unwrap_or(Value::Null)
            };
            let before = pod(&kc);
            assert!(before["metadata"]["uid"].is_string(), "{before}");
            let o = kubectl(
                &kc,
                &["delete", "pod", "-n", "agents", "namzu-ws-awake", "--wait=false"],
            );
            assert!(o.status.success(), "{}", err(&o));
            // the garbage collector's delay: the bound pod stays Terminating, the same pod
            let after = pod(&kc);
            assert_eq!(after["metadata"]["uid"], before["metadata"]["uid"], "{after}");
            assert!(after["metadata"]["deletionTimestamp"].is_string(), "{after}");
        } else if with_scenario {
            eprintln!("SKIPPED: kubectl is not on PATH; the scenario's server knobs were not read by kubectl");
        }
        std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{signal} ends the demo as Ctrl-C does");
        assert!(
            scratch_of(pid).is_empty(),
            "{signal}: the scratch kubeconfigs are removed: {:?}",
            scratch_of(pid)
        );
    }
}

/// Issue 26: every write names the rules file in force in its audit entries (the intent and
/// the outcome); with no file, no `rules` key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_names_the_rules_file_in_force_in_its_audit_entries() {
    let t = start().await;
    let rules = t.dir.path().join("rules.yaml");
    std::fs::write(&rules, "contexts:\n- context: \"prod-*\"\n  readOnly: true\n").unwrap();
    let mut args = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
    args.extend(["-n", "agents", "suspend", "awake"].map(String::from));
    let o = namzu_env(
        args,
        vec![
            audit_env(&t),
            now_env(&t),
            ("KUBECTL_NAMZU_CONFIG".into(), rules.display().to_string()),
        ],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    let entries = audit_entries(&t);
    assert!(entries.len() >= 2, "an intent and an outcome: {entries:?}");
    for e in &entries {
        assert_eq!(e["rules"], rules.display().to_string(), "{e}");
    }
    let o = run_audited(&t, &["-n", "agents", "resume", "awake"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let later: Vec<Value> = audit_entries(&t).into_iter().skip(entries.len()).collect();
    assert!(!later.is_empty());
    assert!(later.iter().all(|e| e.get("rules").is_none()), "{later:?}");
}

/// A tmux server of the test's own (killed when dropped).
struct Tmux(String);

impl Tmux {
    fn cmd(&self, args: &[&str]) -> String {
        let o = std::process::Command::new("tmux")
            .args(["-L", &self.0])
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn expect(&self, text: &str) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let s = self.cmd(&["capture-pane", "-p", "-t", "lows"]);
            if s.contains(text) {
                return s;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "screen never showed {text:?}:\n{s}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.cmd(&["send-keys", "-t", "lows", k]);
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .output();
    }
}

/// Issue 26: the TUI's quit waits for a write in flight; a second `q` abandons it — exit 1 with
/// the CLI's wording, its intent left in the audit log as "outcome unknown".
#[test]
fn a_second_q_in_the_tui_abandons_a_hung_write_with_its_outcome_unknown() {
    use namzu_sim::faults::FaultAction;
    if std::process::Command::new("tmux").arg("-V").output().is_err() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true: tmux must be installed"
        );
        eprintln!("SKIPPED: tmux is not installed; the TUI's second-q test did not run");
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let t = runtime.block_on(start_demo());
    t.sim
        .add_fault(Fault::new(Some("PATCH"), "namzu-ws-alpha", FaultAction::Hang));
    let tmux = Tmux(format!("namzu-lows-{}", std::process::id()));
    let script = format!(
        "NO_COLOR=1 KUBECTL_NAMZU_AUDIT_LOG={} {} --kubeconfig {} -n agents tui; echo EXIT=$?; sleep 60",
        t.dir.path().join("audit.jsonl").display(),
        env!("CARGO_BIN_EXE_kubectl-namzu"),
        t.sim.kubeconfig().display()
    );
    tmux.cmd(&["new-session", "-d", "-s", "lows", "-x", "200", "-y", "40", &script]);
    tmux.expect("/ filter");
    tmux.keys(&["/", "alpha", "Enter"]);
    tmux.expect("filter: alpha");
    // the row and the list's own keys first: an S before the row is there selects nothing
    tmux.expect("alpha      Running");
    tmux.expect("S suspend");
    tmux.keys(&["S"]);
    // consequences first; `v` shows the epoch the write carries (its fresh read has come)
    tmux.expect("v: show the epoch");
    tmux.keys(&["v"]);
    tmux.expect("keeps holder epoch 7");
    tmux.keys(&["Tab", "Enter"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !t.sim.requests().iter().any(|r| r.method == "PATCH") {
        assert!(std::time::Instant::now() < deadline, "the PATCH never came");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    tmux.keys(&["q"]);
    tmux.expect("waiting for 1 write(s) in flight");
    tmux.keys(&["q"]);
    let done = tmux.expect("EXIT=");
    assert!(done.contains("EXIT=1"), "{done}");
    assert!(
        done.contains("quit twice: the writes in flight were abandoned"),
        "{done}"
    );
    let o = runtime.block_on(run_audited(&t, &["audit"]));
    assert!(out(&o).contains("outcome unknown"), "{}", out(&o));
}

/// Issue 26: a refresh asked on a terminal (`confirm: typed`) shows the template, the hashes and
/// the field changes as the dry run does, and is bound to them: the template changed while the
/// id was typed is refused (exit 3), nothing written.
#[test]
fn a_typed_refresh_confirmation_shows_the_diff_and_is_bound_to_it() {
    use namzu_sim::resources::{SANDBOXES, TEMPLATES};
    if std::process::Command::new("tmux").arg("-V").output().is_err() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true: tmux must be installed"
        );
        eprintln!("SKIPPED: tmux is not installed; the refresh confirmation test did not run");
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let t = runtime.block_on(start_with(&refresh_scenario(), |c| c.namespace = "ns".into()));
    let rules = t.dir.path().join("rules.yaml");
    std::fs::write(&rules, "contexts:\n- context: \"*\"\n  confirm: typed\n").unwrap();
    let tmux = Tmux(format!("namzu-lows-refresh-{}", std::process::id()));
    let script = format!(
        "NO_COLOR=1 KUBECTL_NAMZU_CONFIG={} KUBECTL_NAMZU_AUDIT_LOG={} {} --kubeconfig {} resume desk --refresh-template; echo EXIT=$?; sleep 60",
        rules.display(),
        t.dir.path().join("audit.jsonl").display(),
        env!("CARGO_BIN_EXE_kubectl-namzu"),
        t.sim.kubeconfig().display()
    );
    tmux.cmd(&["new-session", "-d", "-s", "lows", "-x", "200", "-y", "40", &script]);
    let shown = tmux.expect("Type the workspace id (desk)");
    assert!(
        shown.contains("refresh from SandboxTemplate ws: pod-template hash"),
        "{shown}"
    );
    assert!(shown.contains("field changes:"), "{shown}");
    assert!(shown.contains("namzu/agent:2"), "{shown}");
    assert!(shown.contains("no holder epoch (unfenced"), "{shown}");
    // the template changes while the user types: what was shown is no longer what would be written
    t.sim.modify(&TEMPLATES, "ns", "ws", |o| {
        o["spec"]["podTemplate"]["spec"]["containers"][0]["image"] = serde_json::json!("namzu/agent:3");
    });
    tmux.keys(&["desk", "Enter"]);
    let done = tmux.expect("EXIT=");
    assert!(done.contains("EXIT=3"), "{done}");
    assert!(done.contains("changed since it was shown"), "{done}");
    let after = t.sim.get(&SANDBOXES, "ns", "namzu-ws-desk").unwrap();
    assert_eq!(after["spec"]["operatingMode"], "Suspended");
    assert!(!t.sim.requests().iter().any(|r| r.method == "PATCH"));
    // asked again, the id typed: the refresh shown is written
    tmux.cmd(&["kill-session", "-t", "lows"]);
    tmux.cmd(&["new-session", "-d", "-s", "lows", "-x", "200", "-y", "40", &script]);
    let shown = tmux.expect("Type the workspace id (desk)");
    assert!(shown.contains("namzu/agent:3"), "{shown}");
    tmux.keys(&["desk", "Enter"]);
    let done = tmux.expect("EXIT=");
    assert!(done.contains("EXIT=0"), "{done}");
    let after = t.sim.get(&SANDBOXES, "ns", "namzu-ws-desk").unwrap();
    assert_eq!(
        after["spec"]["podTemplate"]["spec"]["containers"][0]["image"],
        "namzu/agent:3"
    );
}

/// Review of issue 29's batch: a Sandbox that cannot be read to ask its typed id fails that
/// workspace (its line, exit 1), and the batch goes on to ask the next; nothing is sent for it.
#[test]
fn a_typed_batch_goes_on_past_a_workspace_it_could_not_read() {
    use namzu_sim::resources::SANDBOXES;
    if std::process::Command::new("tmux").arg("-V").output().is_err() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true: tmux must be installed"
        );
        eprintln!("SKIPPED: tmux is not installed; the typed batch test did not run");
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let t = runtime.block_on(start());
    let rules = t.dir.path().join("rules.yaml");
    std::fs::write(&rules, "contexts:\n- context: \"*\"\n  confirm: typed\n").unwrap();
    t.sim
        .add_fault(Fault::status(Some("GET"), "/sandboxes/namzu-ws-awake", 500, "the read failed").times(1));
    let tmux = Tmux(format!("namzu-lows-unread-{}", std::process::id()));
    let script = format!(
        "NO_COLOR=1 KUBECTL_NAMZU_CONFIG={} KUBECTL_NAMZU_AUDIT_LOG={} {} --kubeconfig {} -n agents suspend awake asleep; echo EXIT=$?; sleep 60",
        rules.display(),
        t.dir.path().join("audit.jsonl").display(),
        env!("CARGO_BIN_EXE_kubectl-namzu"),
        t.sim.kubeconfig().display()
    );
    tmux.cmd(&["new-session", "-d", "-s", "lows", "-x", "200", "-y", "40", &script]);
    let shown = tmux.expect("Type the workspace id (asleep)");
    assert!(shown.contains("the read failed"), "{shown}");
    tmux.keys(&["asleep", "Enter"]);
    let done = tmux.expect("EXIT=");
    assert!(done.contains("EXIT=1"), "{done}");
    assert!(done.contains("1 of 2 workspaces were not suspended"), "{done}");
    let awake = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    assert_eq!(awake["spec"]["operatingMode"], "Running");
    assert!(!t.sim.requests().iter().any(|r| r.method == "PATCH"));
}
