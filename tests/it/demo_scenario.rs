//! The built-in demo scenario loads, and every stored hash is the hash of the stored template;
//! the demo fleet's clusters each have workspaces of their own, served under a context each.

use crate::support::{SMALL, bin, err, out, run_bin, stdout_lines, tool_missing};
use namzu_domain::annotations::{PER_SANDBOX_LABEL, POD_TEMPLATE_HASH};
use namzu_domain::canonical::pod_template_hash;
use namzu_domain::naming::{id_of, is_workspace};
use namzu_sim::resources::SANDBOXES;
use namzu_sim::scenario::Scenario;
use namzu_sim::{Sim, SimConfig};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[tokio::test]
async fn demo_scenario_loads_with_consistent_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let config = SimConfig::for_tests(&dir.path().join("kc"));
    let scenario = Scenario::demo(config.manual_clock.unwrap());
    let sim = Sim::start(config, &scenario).await.unwrap();
    let all = sim.list(&SANDBOXES, None);
    let workspaces: Vec<_> = all.iter().filter(|s| is_workspace(s)).collect();
    assert!(workspaces.len() >= 20, "{}", workspaces.len());
    // the pulse's pools (`pulse-<cause>`): 7 × 20 claimed Sandboxes and 7 × 2 members
    let pulse = all
        .iter()
        .filter(|s| s["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("pulse-")))
        .count();
    assert_eq!(pulse, 154);
    assert_eq!(
        all.len() - workspaces.len() - pulse,
        8,
        "three Sandboxes that are not workspaces, and the five members of staging's warm pools"
    );
    let mut namespaces: Vec<_> = workspaces
        .iter()
        .map(|w| w["metadata"]["namespace"].as_str().unwrap())
        .collect();
    namespaces.dedup();
    assert_eq!(namespaces.len(), 3);
    // a workspace with per-sandbox egress was hashed with its per-sandbox label or without it
    // (the library's choice is not visible): the demo has one of each
    let (mut with_label, mut without_label) = (0, 0);
    for w in &workspaces {
        if let Some(h) = w["metadata"]["annotations"].get(POD_TEMPLATE_HASH) {
            let stored = &w["spec"]["podTemplate"];
            let mut stripped = stored.clone();
            let per_sandbox = stripped["metadata"]["labels"]
                .as_object_mut()
                .and_then(|l| l.remove(PER_SANDBOX_LABEL))
                .is_some();
            let h = h.as_str().unwrap();
            if !per_sandbox {
                assert_eq!(h, pod_template_hash(stored), "{}", w["metadata"]["name"]);
            } else if h == pod_template_hash(stored) {
                with_label += 1;
            } else {
                assert_eq!(h, pod_template_hash(&stripped), "{}", w["metadata"]["name"]);
                without_label += 1;
            }
        }
    }
    assert_eq!((with_label, without_label), (1, 1));
    // the three annotation shapes of docs/interop.md §4 among Running workspaces
    let running: Vec<_> = workspaces
        .iter()
        .filter(|w| w["spec"]["operatingMode"] == "Running")
        .collect();
    assert!(running.iter().any(|w| {
        w["metadata"]["annotations"]
            .get("sandbox.namzu.ai/holder-epoch")
            .is_some()
    }));
    assert!(running.iter().any(|w| {
        w["metadata"]
            .get("annotations")
            .is_some_and(|a| a.get("sandbox.namzu.ai/holder-epoch").is_none())
    }));
    assert!(running.iter().any(|w| w["metadata"].get("annotations").is_none()));
}

/// The workspace ids of a scenario, as its Sandboxes' names carry them.
fn ids_of(scenario: &Scenario) -> BTreeSet<String> {
    scenario.workspaces.iter().map(|w| w.id.clone()).collect()
}

const FLEET: [&str; 3] = ["prod-eu-west", "prod-us-east", "staging"];

#[tokio::test]
async fn demo_fleet_members_have_their_own_workspaces_and_each_loads() {
    let now = namzu_sim::test_start();
    let fleet = Scenario::demo_fleet(now, 3);
    let names: Vec<&str> = fleet.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, FLEET);
    assert_eq!(
        ids_of(&fleet[0].1),
        ids_of(&Scenario::demo(now)),
        "the first is the demo"
    );
    let ids: Vec<BTreeSet<String>> = fleet.iter().map(|(_, s)| ids_of(s)).collect();
    for (i, a) in ids.iter().enumerate() {
        assert!(a.len() >= 10, "{}: {a:?}", names[i]);
        for (j, b) in ids.iter().enumerate().skip(i + 1) {
            assert!(
                a.is_disjoint(b),
                "{} and {} share {:?}",
                names[i],
                names[j],
                a.intersection(b)
            );
        }
    }
    let again: Vec<BTreeSet<String>> = Scenario::demo_fleet(now, 3).iter().map(|(_, s)| ids_of(s)).collect();
    assert_eq!(ids, again, "the same now gives the same fleet");
    let more: Vec<String> = Scenario::demo_fleet(now, 5).into_iter().map(|(name, _)| name).collect();
    assert_eq!(more[3..], ["cluster-4", "cluster-5"]);
    for (name, scenario) in &fleet {
        let dir = tempfile::tempdir().unwrap();
        let sim = Sim::start(SimConfig::for_tests(&dir.path().join("kc")), scenario)
            .await
            .unwrap_or_else(|e| panic!("{name} loads: {e}"));
        let served: BTreeSet<String> = sim
            .list(&SANDBOXES, None)
            .iter()
            .filter(|s| is_workspace(s))
            .map(|s| id_of(s["metadata"]["name"].as_str().unwrap()).unwrap().to_string())
            .collect();
        assert_eq!(served, ids_of(scenario), "{name}: every workspace is served as one");
    }
}

/// The server's stdout line by line, and its stderr in a file; killed when dropped.
struct Served {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
    stderr: PathBuf,
}

impl Served {
    fn start(args: &[&str], stderr: PathBuf) -> Served {
        let home = stderr.with_file_name("home");
        let mut child = bin(&home)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("spawn kubectl-namzu");
        let lines = stdout_lines(&mut child);
        Served { child, lines, stderr }
    }

    /// Every line up to and with the banner's last, within a bound.
    fn banner(&self) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line == "Press Ctrl-C to stop." => return seen,
                Ok(line) => seen.push(line),
                Err(e) => panic!(
                    "no banner ({e}): {seen:?}\n{}",
                    std::fs::read_to_string(&self.stderr).unwrap_or_default()
                ),
            }
        }
    }

    /// Ctrl-C, as a user stops it: exit 0.
    fn interrupt(mut self) {
        crate::support::sigint(&self.child);
        let status = self.child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "Ctrl-C ends the demo with exit 0");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `demo --serve --clusters 3`: one kubeconfig with a context per cluster, and each context
/// lists its own cluster's workspaces, none another's.
#[test]
fn demo_serve_clusters_gives_each_context_its_own_workspaces() {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("fleet.kubeconfig");
    let kc_arg = kc.to_str().unwrap();
    forget_dead_demos();
    let served = Served::start(
        &["demo", "--serve", "--clusters", "3", "--kubeconfig-out", kc_arg],
        dir.path().join("stderr"),
    );
    let banner = served.banner();
    for name in FLEET {
        assert!(
            banner
                .iter()
                .any(|l| l.trim_start().starts_with(name) && l.contains("http://127.0.0.1:")),
            "{name} and its server in the banner: {banner:#?}"
        );
    }
    assert!(banner.iter().any(|l| l.contains("--all-contexts")), "{banner:#?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kc).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "a kubeconfig is its owner's only");
    }
    let expected = Scenario::demo_fleet(namzu_sim::test_start(), 3);
    let mut listed: Vec<BTreeSet<String>> = Vec::new();
    for (name, scenario) in &expected {
        let o = run_bin(
            &["--kubeconfig", kc_arg, "list", "-A", "--context", name, "-o", "json"],
            None,
        );
        let items = crate::support::listed(&o);
        let ids: BTreeSet<String> = items.iter().map(|i| i["id"].as_str().unwrap().to_string()).collect();
        assert_eq!(ids, ids_of(scenario), "{name} lists its own workspaces");
        assert!(listed.iter().all(|other| other.is_disjoint(&ids)), "{name}");
        listed.push(ids);
    }
    kubectl_lists_the_contexts(&kc);
    let pid = served.child.id();
    served.interrupt();
    let left = scratch_of(pid);
    assert!(left.is_empty(), "the sims' own kubeconfigs are removed: {left:?}");
    assert!(kc.exists(), "the kubeconfig asked for stays");
}

/// kubectl, where it is on PATH, reads the three contexts from the fleet's kubeconfig.
fn kubectl_lists_the_contexts(kc: &Path) {
    if tool_missing("kubectl", "the fleet kubeconfig read by kubectl") {
        return;
    }
    let o = Command::new("kubectl")
        .args([
            "--kubeconfig",
            kc.to_str().unwrap(),
            "config",
            "get-contexts",
            "-o",
            "name",
        ])
        .output()
        .expect("kubectl runs");
    assert!(o.status.success(), "{}", err(&o));
    let contexts: Vec<String> = out(&o).lines().map(str::to_string).collect();
    assert_eq!(contexts, FLEET);
}

/// The demo's own scratch files in the temp directory: `kubectl-namzu-demo-<pid>` then `.` or
/// `-`, so that pid 452 never claims what a demo of pid 4521 (one killed, say) left there.
/// Remove the scratch files of demos no longer running (a test that killed its terminal outright
/// leaves them): pids are reused, and a new demo must not be blamed for a dead one's files.
fn forget_dead_demos() {
    for e in std::fs::read_dir(std::env::temp_dir()).unwrap().filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("kubectl-namzu-demo-") else {
            continue;
        };
        let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !pid.is_empty() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

fn scratch_of(pid: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("kubectl-namzu-demo-{pid}");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix(&prefix)
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('-'))
        })
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
        forget_dead_demos();
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
        let mut served = Served::start(&args, dir.path().join(format!("stderr{signal}")));
        served.banner();
        let pid = served.child.id();
        assert!(!scratch_of(pid).is_empty(), "the demo writes scratch kubeconfigs");
        if with_scenario && !tool_missing("kubectl", "the scenario's server knobs read by kubectl") {
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
        }
        std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap();
        let status = served.child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{signal} ends the demo as Ctrl-C does");
        assert!(
            scratch_of(pid).is_empty(),
            "{signal}: the scratch kubeconfigs are removed: {:?}",
            scratch_of(pid)
        );
    }
}
