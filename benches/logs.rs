//! `cargo bench --bench logs`: the log pane. How many lines a second the whole path keeps up with
//! (the sim's `pods/log` → the kube client → the bounded line reader → batches), the pane's frame
//! time (update + render on a 200×50 TestBackend) while lines stream in, and the memory it holds
//! at its bound. Prints numbers; asserts nothing.

// a bench prints its figures and stops at the first thing that is not as set up
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
// a bench is one scenario read top to bottom: its setup and measures stay in one function
#![allow(clippy::too_many_lines)]

use namzu_domain::naming::WorkspaceKey;
use namzu_engine::cluster::triage::{self, LogAsk, LogNote, LogSink};
use namzu_sim::scenario::Scenario;
use namzu_sim::{Sim, SimConfig};
use namzu_tui::action::Action;
use namzu_tui::app::{App, AppOptions, ContextOptions, Popup, update};
use namzu_tui::logs::{LogPane, RING_BYTES, RING_LINES};
use namzu_tui::view::{self, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::Instant;

/// Lines the sim serves in one log.
const SERVED: usize = 200_000;
/// Lines a batch carries into the pane (what one read hands over at a burst).
const BATCH: usize = 500;

fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4
}

fn line(i: usize) -> String {
    format!(
        "2026-12-01T10:00:00.000Z level=info msg=\"step {i} done\" task=build-{} duration_ms={} worker=agent-7 trace=0af7651916cd43dd8448eb211c80319c",
        i % 97,
        i % 1000
    )
}

struct Counting(usize);

impl LogSink for Counting {
    fn lines(&mut self, lines: Vec<String>) -> bool {
        self.0 += lines.len();
        true
    }
    fn note(&mut self, _: LogNote) {}
}

const SCENARIO: &str = r#"
namespaces: [agents]
workspaces:
  - namespace: agents
    id: chatty
    podTemplate:
      metadata: {labels: {sandbox.namzu.ai/template: coder}}
      spec: {containers: [{name: agent, image: "ghcr.io/x/agent:1"}]}
"#;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = SimConfig::for_tests(&dir.path().join("kubeconfig"));
    config.namespace = "agents".into();
    let scenario = Scenario::parse(SCENARIO, config.manual_clock.expect("manual clock")).expect("scenario");
    let sim = Sim::start(config, &scenario).await.expect("sim");
    for i in 0..SERVED {
        sim.append_log("agents", "namzu-ws-chatty", "agent", &line(i)[25..]);
    }
    let conn = namzu_engine::cluster::connect::Connection::open(&namzu_engine::cluster::connect::ConnectOptions {
        kubeconfig: Some(sim.kubeconfig().to_path_buf()),
        clock: Some(sim.clock()),
        ..Default::default()
    })
    .await
    .expect("connect");
    let pod = sim
        .get(&namzu_sim::resources::PODS, "agents", "namzu-ws-chatty")
        .expect("the pod");
    let mut times = Vec::new();
    for _ in 0..3 {
        let mut sink = Counting(0);
        let start = Instant::now();
        let ask = LogAsk {
            container: "agent".into(),
            ..Default::default()
        };
        triage::read_log(&conn, "agents", pod.clone(), ask, false, &mut sink)
            .await
            .expect("read");
        times.push((start.elapsed(), sink.0));
    }
    times.sort();
    let (median, n) = times[1];
    println!(
        "read path (sim pods/log → kube client → line reader → batches): {n} lines (the sim keeps the last 5,000 of a container) in {median:.2?}, {:.0} lines/s (median of 3)",
        n as f64 / median.as_secs_f64()
    );

    // the pane: batches arrive as the I/O task sends them, one frame drawn after each
    let mut app = App::new(AppOptions {
        contexts: vec![ContextOptions {
            name: String::new(),
            server: "https://cluster".into(),
            ..Default::default()
        }],
        several_contexts: false,
        namespace: "agents".into(),
        all_namespaces: false,
        read_only: false,
        now: sim.now(),
    });
    let stream = 1;
    app.popups.push(Popup::Logs(Box::new(LogPane::new(
        WorkspaceKey::new(None, "agents", "chatty"),
        stream,
    ))));
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).expect("terminal");
    let theme = Theme { colour: true };
    let lines: Vec<String> = (0..SERVED).map(line).collect();
    let before = rss_kib();
    let mut frames = Vec::new();
    let start = Instant::now();
    for chunk in lines.chunks(BATCH) {
        let frame = Instant::now();
        update(
            &mut app,
            Action::LogLines {
                from: 0,
                stream,
                lines: chunk.to_vec(),
            },
        );
        terminal.draw(|f| view::render(f, &app, theme)).expect("draw");
        frames.push(frame.elapsed());
    }
    let total = start.elapsed();
    frames.sort();
    println!(
        "pane: {SERVED} lines in batches of {BATCH}, a frame after each: {:.0} lines/s; frame (update + render) median {:.2?}, p95 {:.2?}, max {:.2?}",
        SERVED as f64 / total.as_secs_f64(),
        frames[frames.len() / 2],
        frames[frames.len() * 95 / 100],
        frames[frames.len() - 1]
    );
    let held = rss_kib().saturating_sub(before);
    let Some(Popup::Logs(pane)) = app.popups.last() else {
        unreachable!("the pane is on top")
    };
    println!(
        "at the bound ({RING_LINES} lines, {} MiB of text at most): {} lines held, {} dropped; RSS growth while it filled {:.1} MiB",
        RING_BYTES / 1024 / 1024,
        pane.lines().len(),
        pane.evicted,
        held as f64 / 1024.0
    );
    // the same while following at 60 frames a second: how long a frame takes with a full ring
    let mut frames = Vec::new();
    for i in 0..300 {
        let frame = Instant::now();
        update(
            &mut app,
            Action::LogLines {
                from: 0,
                stream,
                lines: vec![line(i); 50],
            },
        );
        terminal.draw(|f| view::render(f, &app, theme)).expect("draw");
        frames.push(frame.elapsed());
    }
    frames.sort();
    println!(
        "following with a full ring, 50 lines a frame (3,000 lines/s at 60 fps): frame median {:.2?}, p95 {:.2?} (budget 16 ms)",
        frames[150], frames[285]
    );
}
