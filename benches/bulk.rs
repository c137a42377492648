//! `cargo bench --bench bulk`: the cost of writes at scale. The sim's PATCH latency at 25 and at
//! 5,000 workspaces + 50,000 other pods (from the binary's `-v` log of each request), then a bulk
//! `suspend` of 1,000 workspaces on the large cluster at `--parallel 1` and at the default: wall
//! time and requests (from the sim's record). Then 1,000 fenced suspends with a round trip per
//! request (`NAMZU_BENCH_RTT_MS`, default 30) at `--parallel 1` and `8`: wall, the most requests
//! the server had in flight at once, the connections the client opened. Each figure is the
//! median of `NAMZU_BENCH_RUNS` runs (default 3), each on a freshly started sim;
//! `NAMZU_BENCH_ONLY=rtt` (or `local`) runs the round-trip (or the loopback) cases alone. Prints figures; asserts only that
//! every workspace was suspended.

// a bench prints its figures and stops at the first thing that is not as set up
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
// a bench is one scenario read top to bottom: its setup and measures stay in one function
#![allow(clippy::too_many_lines)]

use namzu_sim::scenario::Scenario;
use namzu_sim::{Sim, SimConfig};
use std::process::Command;
use std::time::{Duration, Instant};

fn scenario(workspaces: usize, background: usize, bulk: usize) -> String {
    let mut s = format!(
        "namespaces: [bench-a, bench-b, bench-c]\nbackground: {{pods: {background}, pvcs: {}, namespaces: 20}}\nworkspaces:\n",
        background / 5
    );
    for i in 0..workspaces {
        let ns = ["bench-a", "bench-b", "bench-c"][i % 3];
        let labels = if i < bulk { "labels: {batch: bulk}, " } else { "" };
        s.push_str(&format!(
            "  - {{namespace: {ns}, id: w{i:05}, {labels}epoch: \"{}\", podTemplate: {{metadata: {{labels: {{sandbox.namzu.ai/template: t{}}}}}, spec: {{containers: [{{name: agent, image: \"ghcr.io/x/agent:1\"}}]}}}}}}\n",
            i % 9,
            i % 5
        ));
    }
    s
}

fn start(rt: &tokio::runtime::Runtime, dir: &std::path::Path, text: &str) -> Sim {
    let mut config = SimConfig::for_tests(&dir.join("kubeconfig"));
    config.strict = true;
    let now = config.manual_clock.unwrap();
    let scenario = Scenario::parse(text, now).unwrap();
    let sim = rt.block_on(Sim::start(config, &scenario)).unwrap();
    sim.compact();
    sim
}

fn namzu(sim: &Sim, dir: &std::path::Path, args: &[&str]) -> (Duration, String) {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"))
        .arg("--kubeconfig")
        .arg(sim.kubeconfig())
        .args(args)
        .env("KUBECTL_NAMZU_AUDIT_LOG", dir.join("audit.jsonl"))
        .env(namzu_clock::NOW_ENV, namzu_sim::TEST_START)
        .output()
        .expect("runs");
    let took = start.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (took, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The median PATCH time in the `-v` log of suspending `ids` one at a time.
fn patch_latency(sim: &Sim, dir: &std::path::Path, ns: &str, ids: &[String]) -> Duration {
    let mut args = vec!["-v", "-n", ns, "suspend", "--parallel", "1"];
    args.extend(ids.iter().map(String::as_str));
    let (_, log) = namzu(sim, dir, &args);
    let mut times: Vec<u64> = log
        .lines()
        .filter(|l| l.contains(" PATCH "))
        .filter_map(|l| l.rsplit(" in ").next()?.trim_end_matches("ms").parse().ok())
        .collect();
    times.sort();
    Duration::from_millis(times.get(times.len() / 2).copied().unwrap_or(0))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// `n` workspaces in one namespace, every request answered a round trip later.
fn remote_scenario(n: usize, rtt_ms: u64) -> String {
    let mut s = format!("server: {{latency: {rtt_ms}ms}}\nnamespaces: [far]\nworkspaces:\n");
    for i in 0..n {
        s.push_str(&format!(
            "  - {{namespace: far, id: r{i:05}, epoch: \"1\", podTemplate: {{metadata: {{labels: {{sandbox.namzu.ai/template: t}}}}, spec: {{containers: [{{name: agent, image: \"ghcr.io/x/agent:1\"}}]}}}}}}\n"
        ));
    }
    s
}

fn main() {
    let runs: usize = std::env::var("NAMZU_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let rtt_ms: u64 = std::env::var("NAMZU_BENCH_RTT_MS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(30);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let only = std::env::var("NAMZU_BENCH_ONLY").unwrap_or_default();
    if only != "rtt" {
        local(&rt, dir.path(), runs);
    }
    if only != "local" {
        remote(&rt, dir.path(), runs, rtt_ms);
    }
}

/// The sim on loopback, answering at once: PATCH latency, and a bulk suspend at 55,000 objects.
fn local(rt: &tokio::runtime::Runtime, dir: &std::path::Path, runs: usize) {
    let small = start(rt, dir, namzu_sim::scenario::DEMO);
    let ids: Vec<String> = ["alpha", "bravo", "charlie", "oscar", "romeo"]
        .map(String::from)
        .to_vec();
    let at_25 = patch_latency(&small, dir, "agents", &ids);
    drop(small);

    let text = scenario(5000, 50000, 1000);
    let big = start(rt, dir, &text);
    let ids: Vec<String> = (2000..2060).step_by(3).map(|i| format!("w{i:05}")).collect();
    let at_55k = patch_latency(&big, dir, "bench-c", &ids);
    println!(
        "| sim PATCH latency (median, from -v) | 25 workspaces: {at_25:?} | 5,000 workspaces + 60,000 other objects: {at_55k:?} |"
    );
    drop(big);

    println!("| bulk suspend of 1,000 of 5,000 workspaces (+ 50,000 other pods), median of {runs} | wall | requests |");
    println!("|---|---|---|");
    for parallel in ["1", "8"] {
        let mut walls = Vec::new();
        let mut requests = 0;
        for _ in 0..runs {
            let big = start(rt, dir, &text);
            big.clear_requests();
            let (wall, _) = namzu(
                &big,
                dir,
                &["-A", "suspend", "-l", "batch=bulk", "--parallel", parallel],
            );
            walls.push(wall);
            requests = big.requests().len();
        }
        println!("| --parallel {parallel} | {:.2?} | {requests} |", median(walls));
    }
}

/// 1,000 fenced suspends, every request a round trip of `rtt_ms`.
fn remote(rt: &tokio::runtime::Runtime, dir: &std::path::Path, runs: usize, rtt_ms: u64) {
    let text = remote_scenario(1000, rtt_ms);
    println!(
        "| 1,000 fenced suspends at {rtt_ms} ms per request, median of {runs} | wall | requests | most in flight | connections |"
    );
    println!("|---|---|---|---|---|");
    let mut by_parallel = Vec::new();
    for parallel in ["1", "8"] {
        let mut walls = Vec::new();
        let (mut requests, mut peak, mut connections) = (0, 0, 0);
        for _ in 0..runs {
            let far = start(rt, dir, &text);
            far.clear_requests();
            far.reset_counters();
            let (wall, said) = namzu(
                &far,
                dir,
                &["suspend", "--all", "-n", "far", "--yes", "--parallel", parallel],
            );
            let suspended = far
                .list(&namzu_sim::resources::SANDBOXES, Some("far"))
                .iter()
                .filter(|s| s.pointer("/spec/operatingMode").and_then(|m| m.as_str()) == Some("Suspended"))
                .count();
            assert_eq!(suspended, 1000, "every workspace suspended: {said}");
            walls.push(wall);
            requests = far.requests().len();
            (peak, connections) = far.concurrency();
        }
        let wall = median(walls);
        by_parallel.push(wall);
        println!("| --parallel {parallel} | {wall:.2?} | {requests} | {peak} | {connections} |");
    }
    println!(
        "| --parallel 8 against --parallel 1 | {:.1}× faster | | | |",
        by_parallel[0].as_secs_f64() / by_parallel[1].as_secs_f64()
    );
}
