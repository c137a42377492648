//! `cargo bench --bench recorder`: the flight recorder (issue 43) against the sim's ground truth.
//! The sim runs a scripted day on its manual clock (`day: {churn: N}`: N changes per workspace per
//! hour, a mode flipped with its stamp and holder epoch); the real binary records it
//! (`record -A`, its clock the sim's through `KUBECTL_NAMZU_NOW=@FILE`). At random steps the
//! live `list -A -o json` is kept as the ground truth; after the day `list -A -o json --at T`
//! answers each of those instants from the recording, and each workspace's (state, mode, holder
//! epoch, drift, diagnosis) is compared. Prints: equality %, bytes on disk (and per 10,000
//! workspaces per day), `list -A --at` wall time. Asserts nothing.
//!
//! `NAMZU_BENCH_WORKSPACES` (default 10000), `NAMZU_BENCH_HOURS` (24), `NAMZU_BENCH_STEP_MIN`
//! (10), `NAMZU_BENCH_CHURN` (1.0), `NAMZU_BENCH_INSTANTS` (100).

// a bench prints its figures and stops at the first thing that is not as set up
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
// a bench is one scenario read top to bottom: its setup and measures stay in one function
#![allow(clippy::too_many_lines)]

#[path = "support/shape.rs"]
#[allow(dead_code)] // the shapes' list is the list and live benches'
mod shape;

use namzu_sim::day::DayClock;
use namzu_sim::resources::{PODS, PVCS, SANDBOXES};
use namzu_sim::scenario::Day;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn namzu(kubeconfig: &Path, clock: &Path, store: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"));
    c.env("KUBECTL_NAMZU_NOW", format!("@{}", clock.display()))
        .env("HOME", store.parent().unwrap())
        .env("XDG_STATE_HOME", store.parent().unwrap())
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG")
        .env_remove("KUBECTL_NAMZU_CONFIG")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--recording")
        .arg(store)
        .args(args);
    c
}

/// Each workspace's (state, mode, holder epoch, drift, diagnosis), by namespace/id.
fn truth(o: &Output) -> BTreeMap<String, [String; 5]> {
    let list: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|w| {
                    let s = |v: &Value| v.to_string();
                    (
                        format!(
                            "{}/{}",
                            w["namespace"].as_str().unwrap_or(""),
                            w["id"].as_str().unwrap_or("")
                        ),
                        [
                            s(&w["state"]),
                            s(&w["mode"]),
                            s(&w["holderEpoch"]["value"]),
                            s(&w["drift"]["state"]),
                            s(&w["diagnosis"]["kind"]),
                        ],
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn du(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                du(&p)
            } else {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            }
        })
        .sum()
}

fn main() {
    let workspaces: usize = env_or("NAMZU_BENCH_WORKSPACES", 10_000);
    let hours: i64 = env_or("NAMZU_BENCH_HOURS", 24);
    let step_min: i64 = env_or("NAMZU_BENCH_STEP_MIN", 10);
    let churn: f64 = env_or("NAMZU_BENCH_CHURN", 1.0);
    let instants: usize = env_or("NAMZU_BENCH_INSTANTS", 100);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut dir = Some(tempfile::tempdir().unwrap());
    let root = dir.as_ref().unwrap().path().to_path_buf();
    // `NAMZU_BENCH_KEEP=1`: the store, kubeconfig and clock stay, to look into
    if std::env::var_os("NAMZU_BENCH_KEEP").is_some() {
        let _ = dir.take().map(tempfile::TempDir::keep);
        eprintln!("keeping {}", root.display());
    }
    let (kubeconfig, clock, store) = (root.join("kubeconfig"), root.join("now"), root.join("recordings"));
    let sim = shape::start(&rt, &kubeconfig, workspaces, 0, false);
    // written whole and renamed: a reader never sees the file half written (no time at all)
    let tick = |at: chrono::DateTime<chrono::Utc>| {
        let next = clock.with_extension("next");
        std::fs::write(&next, at.to_rfc3339()).unwrap();
        std::fs::rename(&next, &clock).unwrap();
    };
    tick(sim.now());
    let mut recorder = namzu(&kubeconfig, &clock, &store, &["record", "-A"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = {
        let stderr = recorder.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for l in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        rx
    };
    loop {
        let l = lines
            .recv_timeout(Duration::from_secs(600))
            .expect("the recorder starts");
        eprintln!("recorder: {l}");
        if l.contains("recording into") {
            break;
        }
    }
    let steps = (hours * 60 / step_min) as usize;
    // the sampled steps, spread at random (a fixed seed) over the day
    let mut rng = 0x9E3779B97F4A7C15u64;
    let mut sampled = std::collections::BTreeSet::new();
    while sampled.len() < instants.min(steps) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        sampled.insert((rng % steps as u64) as usize);
    }
    let mut day = DayClock::new(Day { churn, seed: 43 });
    let marker = sim.list(&SANDBOXES, Some("bench-a"))[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let mut samples: Vec<(String, BTreeMap<String, [String; 5]>)> = Vec::new();
    let (mut changes, started) = (0, Instant::now());
    for step in 0..steps {
        let by = chrono::Duration::minutes(step_min);
        tick(sim.now() + by);
        changes += sim.step_day(&mut day, by);
        if !sampled.contains(&step) {
            continue;
        }
        // the ground truth now; then wait until the recorder has the marker written after it
        let at = sim.now().to_rfc3339();
        let live = namzu(&kubeconfig, &clock, &store, &["list", "-A", "-o", "json"])
            .output()
            .unwrap();
        // a marker on each watch a row is derived from (the Sandbox, a pod, a disk): the clock
        // moves on only once the recording has all three at `at` — a watch that fell behind
        // (ended with 410 and re-listing) would otherwise be recorded a step late
        let mark = format!("{step}");
        let label = |o: &mut Value| {
            o["metadata"]["labels"]["bench.namzu.ai/step"] = mark.clone().into();
        };
        sim.modify(&SANDBOXES, "bench-a", &marker, label);
        let pod = sim
            .list(&PODS, Some("bench-a"))
            .first()
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_string());
        if let Some(pod) = &pod {
            sim.modify(&PODS, "bench-a", pod, label);
        }
        let disk = format!("workspace-disk-{marker}");
        sim.modify(&PVCS, "bench-a", &disk, label);
        let instant = chrono::DateTime::parse_from_rfc3339(&at)
            .unwrap()
            .with_timezone(&chrono::Utc);
        let recording = namzu_recorder::Store::open(&store, namzu_sim::SIM_CONTEXT);
        let wait = Instant::now();
        loop {
            let marked = |kind: &str, name: &str| {
                recording
                    .replay_kinds(instant, &|k| k == kind)
                    .ok()
                    .and_then(|r| {
                        let o = r.state.get(&namzu_recorder::Key {
                            kind: kind.to_string(),
                            ns: "bench-a".to_string(),
                            name: name.to_string(),
                        })?;
                        Some(o["metadata"]["labels"]["bench.namzu.ai/step"] == mark.as_str())
                    })
                    .unwrap_or(false)
            };
            if marked("Sandbox", &marker)
                && pod.as_ref().is_none_or(|p| marked("Pod", p))
                && marked("PersistentVolumeClaim", &disk)
            {
                break;
            }
            assert!(
                wait.elapsed() < Duration::from_secs(120),
                "the recorder never wrote the markers of step {step}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        // the marker's own change is in the truth at `at`'s successor, not at `at`: the sample
        // is taken before it
        samples.push((at, truth(&live)));
        eprintln!(
            "step {step}/{steps}: {changes} changes so far, {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
    let day_wall = started.elapsed();
    // stop the recorder cleanly
    let _ = Command::new("kill").args(["-INT", &recorder.id().to_string()]).status();
    let _ = recorder.wait();
    let bytes = du(&store);
    let (mut equal, mut total, mut walls) = (0usize, 0usize, Vec::new());
    for (at, expected) in &samples {
        let start = Instant::now();
        let o = namzu(&kubeconfig, &clock, &store, &["list", "-A", "-o", "json", "--at", at])
            .output()
            .unwrap();
        walls.push(start.elapsed());
        let got = truth(&o);
        let mut shown = 0;
        for (k, v) in expected {
            total += 1;
            if got.get(k) == Some(v) {
                equal += 1;
            } else if shown < 5 {
                // what differs, to look into: a few per instant
                shown += 1;
                eprintln!("{at} {k}: live {v:?}, replayed {:?}", got.get(k));
            }
        }
    }
    walls.sort();
    let median = walls.get(walls.len() / 2).copied().unwrap_or_default();
    let per_10k_day = bytes as f64 * (10_000.0 / workspaces as f64) * (24.0 / hours as f64);
    println!(
        "| workspaces | hours | churn /ws/h | changes | instants | equal | bytes on disk | per 10,000 ws per day | `list -A --at` median | day's wall |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {workspaces} | {hours} | {churn} | {changes} | {} | {:.2} % ({equal}/{total}) | {:.1} MB | {:.1} MB | {:.2} s | {:.0} s |",
        samples.len(),
        100.0 * equal as f64 / total.max(1) as f64,
        bytes as f64 / 1e6,
        per_10k_day / 1e6,
        median.as_secs_f64(),
        day_wall.as_secs_f64()
    );
}
