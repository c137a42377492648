//! `cargo bench --bench first_rows`: the TUI's time to its first screen of rows on a
//! production-shaped cluster (workspaces among many more pods and PVCs of unrelated apps, the
//! sim on the real clock), against kubectl's time to print `get sandboxes -A` on the same server.
//!
//! The real binary's TUI runs in a detached tmux session of a fixed size (200×50,
//! `TERM=xterm-256color`), its screen read with `tmux capture-pane -p` every few milliseconds
//! (one read every 10 ms, or back to back when a read takes longer): the first rows are the first screen showing a workspace id
//! (`wNNNNN`) in the table; the full state the first screen after that whose header no longer
//! says `loading…`. Between the two, each `loading… N so far` seen is kept: the count rising.
//! kubectl is timed to its exit, its table read from a pipe as a terminal would take it (the
//! time to its first byte is printed too). Tool and kubectl alternate run by run; each figure
//! is the median of `NAMZU_BENCH_RUNS` (default 3), after one warm-up of each.
//!
//! `NAMZU_BENCH_SHAPES=10000:50000` picks the shapes (workspaces:background pods; PVCs are a
//! fifth of the pods); `NAMZU_BENCH_HOLD=1` only serves the first shape, its kubeconfig on
//! stderr, until stopped (to profile by hand). Needs tmux and kubectl: exits 2 naming the one missing. Prints figures;
//! asserts nothing.

// a bench prints its figures and stops at the first thing that is not as set up
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
// a bench is one scenario read top to bottom: its setup and measures stay in one function
#![allow(clippy::too_many_lines)]

#[path = "support/shape.rs"]
mod shape;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The screen is read once per period (a read costs ~7 ms of wall and ~2.5 ms of CPU here).
const POLL: Duration = Duration::from_millis(10);
/// Longest wait for one run of either tool.
const GIVE_UP: Duration = Duration::from_secs(180);

/// A tmux server of the bench's own, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start() -> Tmux {
        let tmux = Tmux {
            socket: format!("namzu-first-rows-{}", std::process::id()),
        };
        // a session that only keeps the server up, so no run pays for the server's start
        tmux.cmd(&[
            "new-session",
            "-d",
            "-s",
            "keep",
            "-x",
            "200",
            "-y",
            "50",
            "sleep 100000",
        ]);
        tmux
    }

    fn cmd(&self, args: &[&str]) -> String {
        let o = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .env("TERM", "xterm-256color")
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
    }
}

/// One run of the TUI.
struct TuiRun {
    first_rows: Duration,
    /// The `loading… N so far` count on the first screen with rows.
    first_count: Option<usize>,
    full: Duration,
    /// Distinct counts seen while loading, in order.
    counts: Vec<usize>,
    reads: usize,
}

/// A workspace id of the bench scenario (`w` and five digits) on a line of the table.
fn shows_a_row(screen: &str) -> bool {
    screen.lines().skip(2).any(|l| {
        l.as_bytes()
            .windows(6)
            .any(|w| w[0] == b'w' && w[1..].iter().all(u8::is_ascii_digit))
    })
}

fn loading_count(screen: &str) -> Option<usize> {
    let at = screen.find("loading… ")? + "loading… ".len();
    screen[at..].split_whitespace().next()?.parse().ok()
}

fn run_tui(tmux: &Tmux, kubeconfig: &str, run: usize) -> TuiRun {
    let session = format!("run{run}");
    let command = format!(
        "exec {} --kubeconfig {kubeconfig} -A tui 2>/dev/null",
        env!("CARGO_BIN_EXE_kubectl-namzu")
    );
    let start = Instant::now();
    tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "200",
        "-y",
        "50",
        "-e",
        "TERM=xterm-256color",
        &command,
    ]);
    let pid = tmux.cmd(&["display-message", "-p", "-t", &session, "#{pane_pid}"]);
    let (mut first_rows, mut first_count, mut counts, mut reads) = (None, None, Vec::new(), 0);
    let full = loop {
        let read = Instant::now();
        let screen = tmux.cmd(&["capture-pane", "-p", "-t", &session]);
        let at = start.elapsed();
        reads += 1;
        let count = loading_count(&screen);
        if first_rows.is_none() && shows_a_row(&screen) {
            first_rows = Some(at);
            first_count = count;
        }
        if let Some(n) = count
            && counts.last() != Some(&n)
        {
            counts.push(n);
        }
        if first_rows.is_some() && !screen.contains("loading") {
            break at;
        }
        assert!(at < GIVE_UP, "the TUI never showed its full state:\n{screen}");
        std::thread::sleep(POLL.saturating_sub(read.elapsed()));
    };
    tmux.cmd(&["kill-session", "-t", &session]);
    // the TUI gone before the next run (its watches closed on the server)
    let proc = format!("/proc/{}", pid.trim());
    let gone = Instant::now();
    while std::path::Path::new(&proc).exists() && gone.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    TuiRun {
        first_rows: first_rows.unwrap(),
        first_count,
        full,
        counts,
        reads,
    }
}

/// kubectl's table, read from a pipe to its end: (first byte, exit).
fn run_kubectl(kubeconfig: &str, cache: &str) -> (Duration, Duration) {
    let start = Instant::now();
    let mut child = Command::new("kubectl")
        .args([
            "--kubeconfig",
            kubeconfig,
            "--cache-dir",
            cache,
            "get",
            "sandboxes.agents.x-k8s.io",
            "-A",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl runs");
    let mut out = child.stdout.take().unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut first = None;
    let mut lines = 0;
    loop {
        let n = out.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        first.get_or_insert_with(|| start.elapsed());
        lines += buf[..n].iter().filter(|b| **b == b'\n').count();
    }
    let status = child.wait().unwrap();
    let exit = start.elapsed();
    assert!(status.success() && lines > 1, "kubectl get sandboxes failed");
    (first.unwrap_or(exit), exit)
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() {
    for (tool, args) in [("tmux", "-V"), ("kubectl", "version --client")] {
        let found = Command::new(tool)
            .args(args.split(' '))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            eprintln!("first_rows: {tool} is not installed; this bench needs it");
            std::process::exit(2);
        }
    }
    let shapes = shape::shapes("10000:50000");
    let runs: usize = std::env::var("NAMZU_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|r| *r > 0)
        .unwrap_or(3);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let tmux = Tmux::start();
    println!(
        "| shape | TUI first rows (median of {runs}) | kubectl get sandboxes -A (to exit; first byte) | ratio first rows / kubectl | TUI full state | counts seen while loading |"
    );
    println!("|---|---|---|---|---|---|");
    for (workspaces, background) in shapes {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let seeded = Instant::now();
        let sim = shape::start(&rt, &kubeconfig, workspaces, background, true);
        eprintln!(
            "seeded {workspaces} workspaces, {background} other pods and {} other PVCs in {:.1?}",
            background / 5,
            seeded.elapsed()
        );
        let kc = kubeconfig.display().to_string();
        if std::env::var_os("NAMZU_BENCH_HOLD").is_some() {
            // to look at by hand (a profiler, -v): the server stays up until the bench is stopped
            eprintln!("serving; KUBECONFIG={kc}");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        let cache = dir.path().join("kube-cache").display().to_string();
        // warm-up: kubectl's discovery cache filled, the server's first answers given
        run_kubectl(&kc, &cache);
        run_tui(&tmux, &kc, 0);
        let (mut first, mut full, mut kubectl_exit, mut kubectl_first) = (vec![], vec![], vec![], vec![]);
        let mut sample = None;
        for run in 1..=runs {
            let t = run_tui(&tmux, &kc, run);
            let (byte, exit) = run_kubectl(&kc, &cache);
            eprintln!(
                "run {run}: TUI first rows {:.2?} (loading… {} so far), full state {:.2?}, {} screen reads; kubectl first byte {byte:.2?}, exit {exit:.2?}",
                t.first_rows,
                t.first_count.map_or("?".into(), |n| n.to_string()),
                t.full,
                t.reads
            );
            first.push(t.first_rows);
            full.push(t.full);
            kubectl_exit.push(exit);
            kubectl_first.push(byte);
            sample = Some(t.counts);
        }
        let (first, full, exit, byte) = (median(first), median(full), median(kubectl_exit), median(kubectl_first));
        let counts = sample.unwrap_or_default();
        let shown: Vec<String> = if counts.len() > 8 {
            let step = counts.len().div_ceil(8);
            counts
                .iter()
                .step_by(step)
                .chain(counts.last())
                .map(|n| n.to_string())
                .collect()
        } else {
            counts.iter().map(|n| n.to_string()).collect()
        };
        println!(
            "| {workspaces} workspaces + {background} other pods + {} other PVCs | {first:.2?} | {exit:.2?}; {byte:.2?} | {:.2}× | {full:.2?} ({:.2}×) | {} |",
            background / 5,
            first.as_secs_f64() / exit.as_secs_f64(),
            full.as_secs_f64() / exit.as_secs_f64(),
            if shown.is_empty() {
                "none".into()
            } else {
                shown.join(" → ")
            }
        );
        drop(sim);
    }
}
