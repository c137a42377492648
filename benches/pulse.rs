//! `cargo bench --bench pulse`: the fleet's pulse against the sim's own record. A warm pool takes
//! `NAMZU_BENCH_STARTS` claims (default 1,000) three seconds apart, played through the sim's
//! model of agent-sandbox v1.0.3 (claim binding, replenish, pod start-ups) with five injected
//! causes of slowness (`NAMZU_BENCH_PER_CAUSE` claims each, default 15): the pool drained
//! (`pool-empty`), a stale member adopted, a slow image pull, a wait for a node, a transient
//! controller error. The sim records on every claim what happened to it and when its Sandbox
//! became Ready, to the millisecond (`sim.namzu.ai/truth-*`, never read by the tool); the real
//! binary's `pulse -o json` is held against that: its p95 within ±5 % of the true p95 (nearest
//! rank of the true latencies), and the cause it blames right for ≥ 95 % of the starts it finds
//! above p95. Prints the figures and PASS/FAIL for each target.

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
#![allow(clippy::too_many_lines)]

use namzu_sim::controller::{TRUTH_CAUSE, TRUTH_READY_AT};
use namzu_sim::resources::CLAIMS;
use namzu_sim::scenario::Scenario;
use namzu_sim::{Sim, SimConfig};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Instant;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn scenario(starts: usize, per_cause: usize, ready: &str, jitter: usize, slow_by: &str) -> String {
    format!(
        "namespaces: [team]
objects:
  - apiVersion: extensions.agents.x-k8s.io/v1beta1
    kind: SandboxTemplate
    metadata: {{name: coder, namespace: team}}
    spec: {{podTemplate: {{spec: {{containers: [{{name: agent, image: \"ghcr.io/namzu/agent:2.0\"}}]}}}}}}
  - apiVersion: extensions.agents.x-k8s.io/v1beta1
    kind: SandboxWarmPool
    metadata: {{name: coder-pool, namespace: team}}
    spec: {{replicas: 10, sandboxTemplateRef: {{name: coder}}}}
pulse:
  - {{namespace: team, pool: coder-pool, claims: {starts}, every: 3s, readyDelay: {ready}, jitter: {jitter}, slowBy: {slow_by},
      causes: {{pool-empty: {per_cause}, stale-member: {per_cause}, image-pull: {per_cause}, unschedulable: {per_cause}, controller-error: {per_cause}}}}}
"
    )
}

fn ms_of(t: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(t).unwrap().timestamp_millis()
}

fn nearest_rank(sorted: &[i64], p: usize) -> i64 {
    let rank = (p * sorted.len()).div_ceil(100).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn main() {
    let starts = env("NAMZU_BENCH_STARTS", 1000);
    let per_cause = env("NAMZU_BENCH_PER_CAUSE", 15);
    // a cold start of 20 s ± 20 % (a pool's members as long, without the spread); an injected
    // cause adds 15 s ± 50 %
    let ready = std::env::var("NAMZU_BENCH_READY").unwrap_or_else(|_| "20s".into());
    let jitter = env("NAMZU_BENCH_JITTER", 20);
    let slow_by = std::env::var("NAMZU_BENCH_SLOW_BY").unwrap_or_else(|_| "15s".into());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut config = SimConfig::for_tests(&kubeconfig);
    config.strict = false;
    config.namespace = "team".into();
    let now = config.manual_clock.unwrap();
    let scenario = Scenario::parse(&scenario(starts, per_cause, &ready, jitter, &slow_by), now)
        .expect("the bench scenario parses");
    let load = Instant::now();
    let sim = rt.block_on(Sim::start(config, &scenario)).expect("the sim starts");
    let load = load.elapsed();
    // the truth, from the sim's record on each claim
    let mut truth_ms: Vec<i64> = Vec::new();
    let mut truth_cause: BTreeMap<String, String> = BTreeMap::new();
    let mut by_cause: BTreeMap<String, usize> = BTreeMap::new();
    for c in sim.list(&CLAIMS, Some("team")) {
        let a = &c["metadata"]["annotations"];
        let name = c["metadata"]["name"].as_str().unwrap().to_string();
        let cause = a[TRUTH_CAUSE].as_str().unwrap_or("?").to_string();
        *by_cause.entry(cause.clone()).or_default() += 1;
        truth_cause.insert(name, cause);
        if let (Some(req), Some(ready)) = (
            a["agents.x-k8s.io/client-first-requested-at"].as_str(),
            a[TRUTH_READY_AT].as_str(),
        ) {
            truth_ms.push(ms_of(ready) - ms_of(req));
        }
    }
    truth_ms.sort_unstable();
    let truth_p95 = nearest_rank(&truth_ms, 95);
    let kc = kubeconfig.display().to_string();
    let run = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"))
        .args(["--kubeconfig", &kc, "pulse", "-n", "team", "-o", "json"])
        .env("KUBECTL_NAMZU_NOW", now.to_rfc3339())
        .env("HOME", dir.path())
        .output()
        .unwrap();
    let wall = run.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    let g = p[0]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["pool"] == "coder-pool")
        .unwrap();
    let measured_p95 = g["claimToReady"]["p95Ms"].as_i64().unwrap();
    let off = (measured_p95 - truth_p95) as f64 / truth_p95 as f64 * 100.0;
    let slow = g["slow"].as_array().unwrap();
    let mut right = 0;
    let mut confusion: BTreeMap<(String, String), usize> = BTreeMap::new();
    for b in slow {
        let told = b["cause"].as_str().unwrap().to_string();
        let truth = truth_cause
            .get(b["claim"].as_str().unwrap_or(""))
            .cloned()
            .unwrap_or_else(|| "?".into());
        if told == truth {
            right += 1;
        }
        *confusion.entry((truth, told)).or_default() += 1;
    }
    let accuracy = 100.0 * right as f64 / slow.len().max(1) as f64;
    println!(
        "pulse bench: {starts} starts, {per_cause} per injected cause, cold start {ready} ± {jitter}%, a cause adds {slow_by} ± 50%; sim load {load:.2?}, `pulse -n team -o json` {wall:.2?}"
    );
    println!("truth by cause (every start): {by_cause:?}");
    println!(
        "claims {}, claims/min {}, warm-hit {}%, measured p50/p95/p99 {}/{}/{} ms",
        g["claims"],
        g["claimsPerMinute"],
        g["warmHitPercent"],
        g["claimToReady"]["p50Ms"],
        measured_p95,
        g["claimToReady"]["p99Ms"]
    );
    println!(
        "p95: measured {measured_p95} ms, truth {truth_p95} ms ({} measured latencies of {}): {off:+.2}% — {}",
        g["claimToReady"]["count"],
        truth_ms.len(),
        if off.abs() <= 5.0 { "PASS (±5%)" } else { "FAIL (±5%)" }
    );
    println!(
        "blame: {right} of {} starts above p95 right ({accuracy:.1}%) — {}",
        slow.len(),
        if accuracy >= 95.0 {
            "PASS (≥95%)"
        } else {
            "FAIL (≥95%)"
        }
    );
    for ((truth, told), n) in &confusion {
        println!("  truth {truth:<16} told {told:<16} {n}");
    }
}
