//! `cargo bench --bench list`: seed the simulated cluster with 5,000 workspaces, then time the real
//! binary's `list -A -o json` and, where kubectl exists, `kubectl get sandboxes.agents.x-k8s.io -A
//! -o json` against the same server. Prints medians and their ratio; asserts nothing.

use kubectl_namzu::sim::scenario::Scenario;
use kubectl_namzu::sim::{Sim, SimConfig};
use std::process::Command;
use std::time::{Duration, Instant};

const WORKSPACES: usize = 5_000;
const RUNS: usize = 9;

fn scenario() -> String {
    let mut s = String::from("namespaces: [bench-a, bench-b, bench-c]\nworkspaces:\n");
    for i in 0..WORKSPACES {
        let ns = ["bench-a", "bench-b", "bench-c"][i % 3];
        let mode = if i % 4 == 0 { "Suspended" } else { "Running" };
        s.push_str(&format!(
            "  - {{namespace: {ns}, id: w{i:05}, mode: {mode}, epoch: \"{}\", changedAt: \"{{{{now-{}h|ms}}}}\", podTemplate: {{metadata: {{labels: {{sandbox.namzu.ai/template: t{}}}}}, spec: {{containers: [{{name: agent, image: \"ghcr.io/x/agent:1.{}\"}}]}}}}}}\n",
            i % 9,
            i % 500,
            i % 5,
            i % 3
        ));
    }
    s
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn time(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    let out = cmd.output().expect("command runs");
    let took = start.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    took
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut config = SimConfig::for_tests(&kubeconfig);
    config.strict = false;
    let now = config.manual_clock.unwrap();
    let scenario = Scenario::parse(&scenario(), now).unwrap();
    let seeded = Instant::now();
    let _sim = rt.block_on(Sim::start(config, &scenario)).unwrap();
    println!(
        "seeded {WORKSPACES} workspaces (and their pods and disks) in {:.2?}",
        seeded.elapsed()
    );
    let kc = kubeconfig.display().to_string();

    let ours = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"));
        c.args(["--kubeconfig", &kc, "list", "-A", "-o", "json"]);
        c
    };
    time(&mut ours());
    let namzu: Vec<Duration> = (0..RUNS).map(|_| time(&mut ours())).collect();
    let namzu_median = median(namzu);
    println!("kubectl-namzu list -A -o json: median {namzu_median:.2?} over {RUNS} runs");

    if Command::new("kubectl").arg("version").arg("--client").output().is_err() {
        println!("kubectl not on PATH: no comparison");
        return;
    }
    let cache = dir.path().join("kube-cache").display().to_string();
    let theirs = || {
        let mut c = Command::new("kubectl");
        c.args([
            "--kubeconfig",
            &kc,
            "--cache-dir",
            &cache,
            "get",
            "sandboxes.agents.x-k8s.io",
            "-A",
            "-o",
            "json",
        ]);
        c
    };
    time(&mut theirs());
    let kubectl: Vec<Duration> = (0..RUNS).map(|_| time(&mut theirs())).collect();
    let kubectl_median = median(kubectl);
    println!("kubectl get sandboxes.agents.x-k8s.io -A -o json: median {kubectl_median:.2?} over {RUNS} runs");
    println!(
        "ratio kubectl-namzu / kubectl: {:.2} (kubectl-namzu also lists pods and PVCs, reads templates and derives state, drift and diagnosis)",
        namzu_median.as_secs_f64() / kubectl_median.as_secs_f64()
    );
}
