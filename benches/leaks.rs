//! `cargo bench --bench leaks`: `leaks -A -o json` on a production-shaped cluster — workspaces
//! among many more pods and PVCs of unrelated apps, with some workspaces deleted leaving their
//! disks behind — beside `list -A -o json` on the same server: median wall time, peak RSS of the
//! process, and the bytes the server sent per pass (from the sim's request record). The leak
//! reads are narrowed (labelled PVCs only), so the other apps' 10,000 disks and 50,000 pods
//! should cost `leaks` nothing. Prints figures; asserts nothing but that the leaks are found.
//!
//! `NAMZU_BENCH_SHAPES=5000:50000` picks the shapes (workspaces:background pods; PVCs are a
//! fifth of the pods); `NAMZU_BENCH_LEAKED` how many workspaces are deleted with their disks
//! orphaned (default 50); `NAMZU_BENCH_RUNS` the runs per figure (default 5).

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
// a bench is one scenario read top to bottom: its setup and measures stay in one function
#![allow(clippy::too_many_lines)]

#[path = "support/shape.rs"]
mod shape;

use namzu_sim::Sim;
use namzu_sim::resources::{PVCS, SANDBOXES};
use std::process::Command;
use std::time::{Duration, Instant};

struct Run {
    wall: Duration,
    peak_rss_kib: i64,
    stdout: Vec<u8>,
}

/// Run `cmd` under GNU time: its wall time, its own peak RSS, its output.
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
    let out = wrapped.output().expect("command runs");
    let wall = start.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the command failed: {stderr}");
    let peak_rss_kib = stderr.lines().last().and_then(|l| l.trim().parse().ok()).unwrap_or(0);
    Run {
        wall,
        peak_rss_kib,
        stdout: out.stdout,
    }
}

struct Figures {
    wall: Duration,
    rss_mib: f64,
    bytes: u64,
    requests: usize,
    stdout: Vec<u8>,
}

fn measure(sim: &Sim, runs: usize, make: &dyn Fn() -> Command) -> Figures {
    run(&make());
    sim.clear_requests();
    let mut results: Vec<Run> = (0..runs).map(|_| run(&make())).collect();
    let record = sim.requests();
    let mut walls: Vec<Duration> = results.iter().map(|r| r.wall).collect();
    walls.sort();
    let mut rss: Vec<i64> = results.iter().map(|r| r.peak_rss_kib).collect();
    rss.sort();
    Figures {
        wall: walls[walls.len() / 2],
        rss_mib: rss[rss.len() / 2] as f64 / 1024.0,
        bytes: record.iter().map(|r| r.bytes).sum::<u64>() / runs as u64,
        requests: record.len() / runs,
        stdout: results.pop().map(|r| r.stdout).unwrap_or_default(),
    }
}

fn main() {
    let shapes = shape::shapes("5000:50000");
    let runs: usize = std::env::var("NAMZU_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let leaked: usize = std::env::var("NAMZU_BENCH_LEAKED")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(50);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("| shape | command | wall (median of {runs}) | peak RSS | bytes served per pass | requests per pass |");
    println!("|---|---|---|---|---|---|");
    for (workspaces, background) in shapes {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let sim = shape::start(&rt, &kubeconfig, workspaces, background, false);
        // deleted with orphaning: the disk loses its owner, the Sandbox goes
        let namespaces = ["bench-a", "bench-b", "bench-c"];
        for i in 0..leaked.min(workspaces) {
            let (ns, name) = (namespaces[i % 3], format!("namzu-ws-w{i:05}"));
            sim.modify(&PVCS, ns, &format!("workspace-disk-{name}"), |p| {
                p["metadata"]["ownerReferences"] = serde_json::json!([])
            });
            sim.delete(&SANDBOXES, ns, &name);
        }
        sim.compact();
        let kc = kubeconfig.display().to_string();
        let shape = format!(
            "{workspaces} workspaces + {background} other pods + {} other PVCs",
            background / 5
        );
        let row = |command: &str, f: &Figures| {
            println!(
                "| {shape} | {command} | {:.2?} | {:.0} MiB | {:.1} MB | {} |",
                f.wall,
                f.rss_mib,
                f.bytes as f64 / 1e6,
                f.requests
            )
        };
        let command = |args: &'static [&'static str]| {
            let kc = kc.clone();
            move || {
                let mut c = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"));
                c.args(["--kubeconfig", &kc]).args(args);
                c
            }
        };
        let leaks = measure(&sim, runs, &command(&["leaks", "-A", "-o", "json"]));
        let found: serde_json::Value = serde_json::from_slice(&leaks.stdout).expect("leaks -o json");
        let disks = found
            .as_array()
            .map_or(0, |a| a.iter().filter(|l| l["leak"] == "orphaned-disk").count());
        assert_eq!(disks, leaked.min(workspaces), "every orphaned disk found");
        row("kubectl-namzu leaks -A -o json", &leaks);
        let list = measure(&sim, runs, &command(&["list", "-A", "-o", "json"]));
        row("kubectl-namzu list -A -o json", &list);
        println!(
            "| {shape} | leaks ÷ list | {:.2}× | {:.2}× | {:.2}× | |",
            leaks.wall.as_secs_f64() / list.wall.as_secs_f64(),
            leaks.rss_mib / list.rss_mib,
            leaks.bytes as f64 / list.bytes as f64
        );
    }
}
