//! `cargo bench --bench list`: a production-shaped cluster — workspaces among many more pods and
//! PVCs of unrelated apps, every object carrying managedFields as a real server keeps them — then
//! the real binary's `list -A -o json` against `kubectl get sandboxes.agents.x-k8s.io -A -o json`
//! on the same server: median wall time, peak RSS of each process, and the bytes the server sent
//! per pass (from the sim's request record). Prints figures; asserts nothing.
//!
//! Then a fleet: N clusters of W workspaces each in one kubeconfig, `list -A -o json
//! --all-contexts` against the same list of one of its contexts (wall, peak RSS, their ratio) —
//! on loopback, where the N simulated API servers share this machine's cores with the client,
//! and with a round trip per request (`NAMZU_BENCH_RTT_MS`, default 30; the sim's latency knob)
//! as clusters in other regions answer, each API server on its own machine. One context and the
//! fleet run in turns, so the ratio is of one run under the same load.
//!
//! `NAMZU_BENCH_SHAPES=5000:0,5000:50000` picks the shapes (workspaces:background pods; PVCs
//! are a fifth of the pods); `NAMZU_BENCH_FLEET=3:5000` the fleet (clusters:workspaces; `0` skips
//! it); `NAMZU_BENCH_RUNS` the runs per figure (default 5).

// a bench prints its figures and stops at the first thing that is not as set up
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
// a bench is one scenario read top to bottom: its setup and measures stay in one function
#![allow(clippy::too_many_lines)]

#[path = "support/shape.rs"]
mod shape;

use namzu_sim::Sim;
use std::process::Command;
use std::time::{Duration, Instant};

struct Run {
    wall: Duration,
    /// Peak RSS in KiB, from GNU time (`/usr/bin/time -f %M`); 0 where it is missing.
    peak_rss_kib: i64,
}

/// Run `cmd` to its end under GNU time: its wall time and its own peak RSS (measured in a child
/// of `time`, so this process's memory never counts).
fn run(cmd: &Command) -> Run {
    let gnu_time = std::path::Path::new("/usr/bin/time").exists();
    let mut wrapped = if gnu_time {
        let mut w = Command::new("/usr/bin/time");
        w.args(["-f", "%M"]).arg(cmd.get_program()).args(cmd.get_args());
        w
    } else {
        let mut w = Command::new(cmd.get_program());
        w.args(cmd.get_args());
        w
    };
    let start = Instant::now();
    let out = wrapped
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("command runs");
    let wall = start.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the command failed: {stderr}");
    let peak_rss_kib = stderr.lines().last().and_then(|l| l.trim().parse().ok()).unwrap_or(0);
    Run { wall, peak_rss_kib }
}

fn median<T: Ord + Copy>(mut xs: Vec<T>) -> T {
    xs.sort();
    xs[xs.len() / 2]
}

struct Figures {
    wall: Duration,
    rss_mib: f64,
    bytes: u64,
    requests: usize,
}

/// Median figures of `runs` runs (after one warm-up), the bytes and requests summed over `sims`.
fn measure(sims: &[&Sim], runs: usize, make: &dyn Fn() -> Command) -> Figures {
    run(&make());
    for sim in sims {
        sim.clear_requests();
    }
    let mut results: Vec<Run> = Vec::new();
    for _ in 0..runs {
        results.push(run(&make()));
    }
    let record: Vec<_> = sims.iter().flat_map(|s| s.requests()).collect();
    Figures {
        wall: median(results.iter().map(|r| r.wall).collect()),
        rss_mib: median(results.iter().map(|r| r.peak_rss_kib).collect()) as f64 / 1024.0,
        bytes: record.iter().map(|r| r.bytes).sum::<u64>() / runs as u64,
        requests: record.len() / runs,
    }
}

fn main() {
    let shapes = shape::shapes("5000:0,5000:50000,10000:50000");
    let runs: usize = std::env::var("NAMZU_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let have_kubectl = Command::new("kubectl").arg("version").arg("--client").output().is_ok();
    println!("| shape | tool | wall (median of {runs}) | peak RSS | bytes served per pass | requests per pass |");
    println!("|---|---|---|---|---|---|");
    for (workspaces, background) in shapes {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let seeded = Instant::now();
        let sim = shape::start(&rt, &kubeconfig, workspaces, background, false);
        eprintln!(
            "seeded {workspaces} workspaces and {background} other pods, {} other PVCs in {:.1?}",
            background / 5,
            seeded.elapsed()
        );
        let kc = kubeconfig.display().to_string();
        let shape = format!("{workspaces} workspaces + {background} other pods");
        let ours = measure(&[&sim], runs, &|| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"));
            c.args(["--kubeconfig", &kc, "list", "-A", "-o", "json"]);
            c
        });
        let row = |tool: &str, f: &Figures| {
            println!(
                "| {shape} | {tool} | {:.2?} | {:.0} MiB | {:.1} MB | {} |",
                f.wall,
                f.rss_mib,
                f.bytes as f64 / 1e6,
                f.requests
            )
        };
        row("kubectl-namzu list -A -o json", &ours);
        if !have_kubectl {
            println!("(kubectl not on PATH: no comparison)");
            continue;
        }
        let cache = dir.path().join("kube-cache").display().to_string();
        let theirs = measure(&[&sim], runs, &|| {
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
        });
        row("kubectl get sandboxes -A -o json", &theirs);
        println!(
            "| {shape} | ratio | {:.2}× | {:.2}× | {:.2}× | |",
            ours.wall.as_secs_f64() / theirs.wall.as_secs_f64(),
            ours.rss_mib / theirs.rss_mib,
            ours.bytes as f64 / theirs.bytes as f64
        );
    }
    fleet(&rt, runs);
}

/// Several clusters in one kubeconfig: the whole fleet listed at once against one of its contexts.
fn fleet(rt: &tokio::runtime::Runtime, runs: usize) {
    let spec = std::env::var("NAMZU_BENCH_FLEET").unwrap_or_else(|_| "3:5000".into());
    let Some((clusters, workspaces)) = spec
        .split_once(':')
        .and_then(|(c, w)| Some((c.parse::<usize>().ok()?, w.parse::<usize>().ok()?)))
        .filter(|(c, _)| *c > 0)
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut sims = Vec::new();
    for i in 0..clusters {
        let sim = shape::start(rt, &dir.path().join(format!("kubeconfig-{i}")), workspaces, 0, false);
        sims.push((format!("cluster-{i}"), sim));
    }
    let kubeconfig = dir.path().join("fleet.kubeconfig");
    let members: Vec<(&str, &Sim)> = sims.iter().map(|(n, s)| (n.as_str(), s)).collect();
    namzu_sim::write_fleet_kubeconfig(&kubeconfig, &members).unwrap();
    let kc = kubeconfig.display().to_string();
    let all: Vec<&Sim> = sims.iter().map(|(_, s)| s).collect();
    let list = |extra: &'static str| {
        let kc = kc.clone();
        move || {
            let mut c = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"));
            c.args(["--kubeconfig", &kc, "list", "-A", "-o", "json", extra]);
            c
        }
    };
    let rtt: u64 = std::env::var("NAMZU_BENCH_RTT_MS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(30);
    println!();
    println!("| fleet | network | command | wall (median of {runs}) | peak RSS | bytes served per pass |");
    println!("|---|---|---|---|---|---|");
    let shape = format!("{clusters} × {workspaces} workspaces");
    for delay in [0, rtt] {
        // the round trip every request takes: each API server answers this much later
        for sim in &all {
            sim.set_latency(Duration::from_millis(delay));
        }
        let network = if delay == 0 {
            "loopback".to_string()
        } else {
            format!("{delay} ms per request")
        };
        // one context and the fleet run in turns, so the machine's drift falls on both alike
        let (one, every) = measure_pair(&all, runs, &list("--context=cluster-0"), &list("--all-contexts"));
        for (what, f) in [
            ("list -A -o json --context cluster-0", &one),
            ("list -A -o json --all-contexts", &every),
        ] {
            println!(
                "| {shape} | {network} | {what} | {:.2?} | {:.0} MiB | {:.1} MB |",
                f.wall,
                f.rss_mib,
                f.bytes as f64 / 1e6
            );
        }
        println!(
            "| {shape} | {network} | ratio (fleet / one context) | {:.2}× | {:.2}× | |",
            every.wall.as_secs_f64() / one.wall.as_secs_f64(),
            every.rss_mib / one.rss_mib
        );
    }
}

/// Median figures of `runs` runs each of two commands, run in turns after one warm-up each;
/// the bytes are each command's own per pass (summed over `sims`).
fn measure_pair(sims: &[&Sim], runs: usize, a: &dyn Fn() -> Command, b: &dyn Fn() -> Command) -> (Figures, Figures) {
    run(&a());
    run(&b());
    let mut results: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
    let mut bytes = [0u64; 2];
    let mut requests = [0usize; 2];
    for _ in 0..runs {
        for (i, make) in [a, b].into_iter().enumerate() {
            for sim in sims {
                sim.clear_requests();
            }
            results[i].push(run(&make()));
            let record: Vec<_> = sims.iter().flat_map(|s| s.requests()).collect();
            bytes[i] += record.iter().map(|r| r.bytes).sum::<u64>();
            requests[i] += record.len();
        }
    }
    let [ra, rb] = results;
    let figures = |r: Vec<Run>, i: usize| Figures {
        wall: median(r.iter().map(|r| r.wall).collect()),
        rss_mib: median(r.iter().map(|r| r.peak_rss_kib).collect()) as f64 / 1024.0,
        bytes: bytes[i] / runs as u64,
        requests: requests[i] / runs,
    };
    (figures(ra, 0), figures(rb, 1))
}
