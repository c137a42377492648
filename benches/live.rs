//! `cargo bench --bench live`: the live inventory (the TUI's and `list -w`'s) on a
//! production-shaped cluster — workspaces among 50,000 pods of unrelated apps — measured on the
//! real binary's `list -A -w -o json` (the same watches, mirror and rows as the TUI, without a
//! terminal): time to the first full output against `kubectl get sandboxes -A -o json`, then,
//! idle, the requests and bytes per minute the server saw (its request record and watch-byte
//! counter), the process's RSS, and the delay from another client's patch to the changed line.
//! Prints figures; asserts nothing.
//!
//! `NAMZU_BENCH_SHAPES=5000:50000,10000:50000` (workspaces:background pods),
//! `NAMZU_BENCH_IDLE_SECS` the idle window (default 60).

// a bench prints its figures and stops at the first thing that is not as set up
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
// a bench is one scenario read top to bottom: its setup and measures stay in one function
#![allow(clippy::too_many_lines)]

#[path = "support/shape.rs"]
mod shape;

use namzu_sim::resources::SANDBOXES;
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn rss_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn main() {
    let shapes = shape::shapes("5000:50000,10000:50000");
    let idle = Duration::from_secs(
        std::env::var("NAMZU_BENCH_IDLE_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(60),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "| shape | first output (ours / kubectl get -A) | idle requests/min | idle bytes/min | RSS now / peak | patch → line |"
    );
    println!("|---|---|---|---|---|---|");
    for (workspaces, background) in shapes {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let sim = shape::start(&rt, &kubeconfig, workspaces, background, true);
        let kc = kubeconfig.display().to_string();
        let kubectl_get = || {
            let start = Instant::now();
            Command::new("kubectl")
                .args([
                    "--kubeconfig",
                    &kc,
                    "get",
                    "sandboxes.agents.x-k8s.io",
                    "-A",
                    "-o",
                    "json",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .ok()
                .map(|_| start.elapsed())
        };
        // once to warm the server's caches as our run will find them, once timed
        let kubectl_first = kubectl_get().and_then(|_| kubectl_get());
        sim.clear_requests();
        let start = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"))
            .args(["--kubeconfig", &kc, "list", "-A", "-w", "-o", "json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel::<(Instant, String)>();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send((Instant::now(), line));
            }
        });
        let mut seen = 0;
        let mut first_full = Duration::ZERO;
        while seen < workspaces {
            let (at, _) = lines.recv_timeout(Duration::from_secs(120)).expect("the list arrives");
            seen += 1;
            first_full = at - start;
        }
        // idle: nothing changes on the cluster
        sim.clear_requests();
        let bytes_before = sim.watch_bytes();
        std::thread::sleep(idle);
        let requests = sim.requests();
        let idle_bytes = requests.iter().map(|r| r.bytes).sum::<u64>() + sim.watch_bytes() - bytes_before;
        let per_minute = 60.0 / idle.as_secs_f64();
        let (rss, peak) = rss_mib(child.id());
        // another client's patch, to the line that shows it
        let patched = Instant::now();
        sim.modify(&SANDBOXES, "bench-b", "namzu-ws-w00001", |o| {
            o["metadata"]["annotations"]["sandbox.namzu.ai/holder-epoch"] = serde_json::json!("4242");
        });
        let delay = loop {
            let (at, line) = lines.recv_timeout(Duration::from_secs(30)).expect("the change arrives");
            if line.contains("w00001") {
                break at - patched;
            }
        };
        let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
        let _ = child.wait();
        println!(
            "| {workspaces} workspaces + {background} other pods | {first_full:.2?} / {} | {:.1} | {:.0} B | {rss:.0} / {peak:.0} MiB | {delay:.1?} |",
            kubectl_first.map_or("kubectl missing".into(), |d| format!("{d:.2?}")),
            requests.len() as f64 * per_minute,
            idle_bytes as f64 * per_minute,
        );
    }
}
