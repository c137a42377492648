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
//!
//! Then the TUI's live pulse (`:pulse`): `NAMZU_BENCH_LIVE_CONTEXTS` sims (default 3), each of
//! `NAMZU_BENCH_LIVE_WORKSPACES` workspaces (default 10,000, the list bench's shape) with a warm
//! pool that took 1,000 claims in the hour, followed in process as the TUI follows them (the
//! engine's `ops::follow` with the pulse asked). A claim is then made in every context,
//! `NAMZU_BENCH_LIVE_ROUNDS` times (default 10), and the time from the claim to the pulse that
//! counts it is taken — the view's refresh, what the user waits for. The LISTs each sim served
//! from the first pulse on are counted (the target: none). `NAMZU_BENCH_LIVE_CONTEXTS=0` skips
//! it.

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
#![allow(clippy::too_many_lines)]

#[path = "support/shape.rs"]
#[allow(dead_code)] // the shapes' list is the list and live benches'
mod shape;

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
    drop(sim);
    let contexts = env("NAMZU_BENCH_LIVE_CONTEXTS", 3);
    if contexts > 0 {
        live(&rt, contexts);
    }
}

/// The pool and the hour of claims each context of the live part holds.
const LIVE_POOL: &str = "namespaces: [team]
objects:
  - apiVersion: extensions.agents.x-k8s.io/v1beta1
    kind: SandboxTemplate
    metadata: {name: coder, namespace: team}
    spec: {podTemplate: {spec: {containers: [{name: agent, image: \"ghcr.io/namzu/agent:2.0\"}]}}}
  - apiVersion: extensions.agents.x-k8s.io/v1beta1
    kind: SandboxWarmPool
    metadata: {name: coder-pool, namespace: team}
    spec: {replicas: 10, sandboxTemplateRef: {name: coder}}
pulse:
  - {namespace: team, pool: coder-pool, claims: 1000, every: 3s, readyDelay: 20s, jitter: 20, slowBy: 15s,
      causes: {pool-empty: 15, image-pull: 15, unschedulable: 15, controller-error: 15}}
";

/// LISTs a sim served: GETs that are not watches (nor the connection probe).
fn lists(sim: &namzu_sim::Sim) -> usize {
    sim.requests()
        .iter()
        .filter(|r| r.method == "GET" && !r.query.contains("watch=") && r.path != "/version")
        .count()
}

/// The TUI's live pulse across `contexts` sims (see the module doc).
fn live(rt: &tokio::runtime::Runtime, contexts: usize) {
    use namzu_domain::drift::OverlayFlags;
    use namzu_engine::cluster::connect::{ConnectOptions, Connection};
    use namzu_engine::cluster::inventory::{Query, Scope};
    use namzu_engine::cluster::live::{LiveEvent, LiveOptions, PulseAsk};
    use namzu_engine::ops::follow::{FollowContext, follow};
    let workspaces = env("NAMZU_BENCH_LIVE_WORKSPACES", 10_000);
    let rounds = env("NAMZU_BENCH_LIVE_ROUNDS", 10);
    let dir = tempfile::tempdir().unwrap();
    let load = Instant::now();
    // the sims on a runtime of their own, as servers in other processes are: a sim's pass under
    // its lock must not hold up the tool's tasks
    let sim_rt = tokio::runtime::Runtime::new().unwrap();
    let sims: Vec<namzu_sim::Sim> = (0..contexts)
        .map(|i| {
            let kubeconfig = dir.path().join(format!("kubeconfig-{i}"));
            shape::start_with(&sim_rt, &kubeconfig, workspaces, 0, true, LIVE_POOL)
        })
        .collect();
    let load = load.elapsed();
    let targets: Vec<FollowContext> = sims
        .iter()
        .enumerate()
        .map(|(i, sim)| {
            let conn = rt
                .block_on(Connection::open(&ConnectOptions {
                    kubeconfig: Some(sim.kubeconfig().to_path_buf()),
                    ..Default::default()
                }))
                .unwrap();
            FollowContext {
                context: Some(format!("c{i}")),
                conn,
                scope: Scope::All,
            }
        })
        .collect();
    // when each bench claim reached a watch of the bench's own (kube-rs's watcher): what the
    // tool's watch got at the same moment, the sim's own stalls before it left out
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel::<(String, String, Instant)>();
    for target in &targets {
        let resource = kube::api::ApiResource {
            group: "extensions.agents.x-k8s.io".into(),
            version: "v1beta1".into(),
            api_version: "extensions.agents.x-k8s.io/v1beta1".into(),
            kind: "SandboxClaim".into(),
            plural: "sandboxclaims".into(),
        };
        let api = kube::Api::<kube::api::DynamicObject>::namespaced_with(target.conn.client.clone(), "team", &resource);
        let (context, tx) = (target.context.clone().unwrap(), seen_tx.clone());
        rt.spawn(async move {
            use futures::StreamExt;
            let mut w = kube::runtime::watcher(api, kube::runtime::watcher::Config::default()).boxed();
            while let Some(event) = w.next().await {
                // a watch started again lists first: what it lists arrives as InitApply
                if let Ok(kube::runtime::watcher::Event::Apply(o) | kube::runtime::watcher::Event::InitApply(o)) = event
                {
                    let name = o.metadata.name.unwrap_or_default();
                    if name.starts_with("bench-claim-") && tx.send((context.clone(), name, Instant::now())).is_err() {
                        return;
                    }
                }
            }
        });
    }
    let mut arrived: BTreeMap<(String, String), Instant> = BTreeMap::new();
    let (_asks, asked) = tokio::sync::watch::channel(Some(PulseAsk {
        since: chrono::Duration::hours(1),
        asked: 1,
    }));
    let options = LiveOptions {
        pulse: Some(asked),
        ..LiveOptions::default()
    };
    let started = Instant::now();
    let _in_runtime = rt.enter();
    let mut following = follow(targets, &Query::default(), &OverlayFlags::default(), &options);
    // each context's claims counted by its newest pulse
    let mut claims: BTreeMap<String, usize> = BTreeMap::new();
    let mut synced = 0;
    let mut first_pulse = None;
    let next = |following: &mut namzu_engine::ops::follow::Following| {
        rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(120), following.next())
                .await
                .expect("a report within 2 minutes")
                .expect("the follows go on")
        })
    };
    while claims.len() < contexts {
        let f = next(&mut following);
        match f.event {
            LiveEvent::Synced { .. } => synced += 1,
            LiveEvent::Pulse { pulse, .. } => {
                claims.insert(f.context.unwrap(), pulse.groups.iter().map(|g| g.claims).sum());
            }
            LiveEvent::Failed(why) => panic!("{why}"),
            _ => {}
        }
        if claims.len() == contexts {
            first_pulse = Some(started.elapsed());
        }
    }
    let lists_at_first: Vec<usize> = sims.iter().map(lists).collect();
    // the pulses as they come, each stamped on arrival, read apart from the rounds (a sim's
    // create holds the bench's thread for its whole controller pass)
    let (pulses_tx, pulses) = std::sync::mpsc::channel::<(String, usize, Instant, std::time::Duration)>();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let reader = rt.spawn(async move {
        let mut stopped = stopped;
        loop {
            let f = tokio::select! {
                _ = &mut stopped => break,
                f = following.next() => match f {
                    Some(f) => f,
                    None => break,
                },
            };
            if let LiveEvent::Pulse { pulse, took, .. } = f.event {
                let n = pulse.groups.iter().map(|g| g.claims).sum();
                if pulses_tx
                    .send((f.context.unwrap_or_default(), n, Instant::now(), took))
                    .is_err()
                {
                    break;
                }
            }
        }
        following
    });
    let (mut waits, mut refreshes, mut computes) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        // a quiet second between rounds: each claim is the first change after one
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let mut made: BTreeMap<String, Instant> = BTreeMap::new();
        for (i, sim) in sims.iter().enumerate() {
            let claim = serde_json::json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
                "kind": "SandboxClaim",
                "metadata": {"name": format!("bench-claim-{round}"), "namespace": "team"},
                "spec": {"warmPoolRef": {"name": "coder-pool"}}});
            sim.create(&CLAIMS, claim).unwrap();
            made.insert(format!("c{i}"), Instant::now());
        }
        let mut waiting: BTreeMap<String, usize> = claims.iter().map(|(c, n)| (c.clone(), n + 1)).collect();
        while !waiting.is_empty() {
            let (context, n, at, took) = pulses
                .recv_timeout(std::time::Duration::from_secs(120))
                .expect("a pulse within 2 minutes");
            computes.push(took);
            claims.insert(context.clone(), n);
            if waiting.get(&context).is_some_and(|want| n >= *want) {
                waiting.remove(&context);
                waits.push(at.saturating_duration_since(made[&context]));
                let key = (context, format!("bench-claim-{round}"));
                while !arrived.contains_key(&key) {
                    let (c, name, t) = rt
                        .block_on(tokio::time::timeout(std::time::Duration::from_secs(120), seen.recv()))
                        .expect("the bench's watch sees the claim within 2 minutes")
                        .expect("the bench's watches go on");
                    arrived.entry((c, name)).or_insert(t);
                }
                refreshes.push(at.saturating_duration_since(arrived[&key]));
            }
        }
    }
    let _ = stop.send(());
    let following = rt.block_on(reader).unwrap();
    let lists_after: Vec<usize> = sims.iter().map(lists).collect();
    let extra: usize = lists_after.iter().zip(&lists_at_first).map(|(a, b)| a - b).sum();
    waits.sort();
    refreshes.sort();
    let median = refreshes[refreshes.len() / 2];
    let worst = refreshes[refreshes.len() - 1];
    println!(
        "live pulse: {contexts} contexts × {workspaces} workspaces (+ a pool of 10 and 1,000 claims each); sims loaded in {load:.1?}; synced {synced}, first pulse of every context after {:.2?}",
        first_pulse.unwrap()
    );
    println!(
        "claim's create returned → the pulse that counts it (0 when the pulse came first; the sim's pass under its lock after the write is in the create): median {:.2?}, worst {:.2?}",
        waits[waits.len() / 2],
        waits[waits.len() - 1]
    );
    println!(
        "claim seen by a watch → the pulse that counts it (at most a second's wait for the next refresh, then the refresh), {} claims ({rounds} rounds × {contexts}): median {median:.2?}, worst {worst:.2?}",
        refreshes.len(),
    );
    computes.sort();
    println!(
        "a refresh (the pulse computed from what the watches hold), {} of them: median {:.2?}, worst {:.2?} — {}",
        computes.len(),
        computes[computes.len() / 2],
        computes[computes.len() - 1],
        if computes[computes.len() - 1] <= std::time::Duration::from_secs(1) {
            "PASS (≤ 1 s)"
        } else {
            "FAIL (≤ 1 s)"
        }
    );
    println!(
        "LISTs from the first pulse on: {extra} (per context at the first pulse: {lists_at_first:?}) — {}",
        if extra == 0 { "PASS (0)" } else { "FAIL (0)" }
    );
    rt.block_on(following.finish());
    drop(sims);
    sim_rt.shutdown_background();
}
