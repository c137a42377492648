//! `cargo bench --bench tui`: the UI's own cost on a 200×50 TestBackend, the cluster left out —
//! loading the rows as the follows deliver them (one context, and `NAMZU_BENCH_CONTEXTS`
//! contexts, default 3), then a frame's time for moving, typing a filter, changing the sort,
//! opening a row and watch churn. `NAMZU_BENCH_WORKSPACES` rows per context (default 10,000).
//! Prints numbers; asserts only the row counts.

// a bench prints its figures and stops at the first thing that is not as set up
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
// a bench is one scenario read top to bottom: its setup and measures stay in one function
#![allow(clippy::too_many_lines)]

use namzu_domain::drift::{OverlayFlags, TemplateRead};
use namzu_domain::pod::Index;
use namzu_domain::workspace::{Inputs, Observed, derive};
use namzu_engine::cluster::live::LiveEvent;
use namzu_tui::action::Action;
use namzu_tui::app::{App, AppOptions, ContextOptions, update};
use namzu_tui::view::{self, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};
use std::time::Instant;

const WORKSPACES: usize = 10_000;
const FRAMES: usize = 300;

fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4
}

fn sandbox(i: usize) -> Value {
    json!({"metadata":{"name":format!("namzu-ws-w{i:05}"),"namespace":format!("ns-{}", i % 7),"uid":format!("uid-{i}"),
        "creationTimestamp":"2026-10-01T00:00:00Z","resourceVersion":"1",
        "annotations":{"sandbox.namzu.ai/holder-epoch":(i % 9).to_string(),"sandbox.namzu.ai/operating-mode-changed-at":"2026-11-01T00:00:00.000Z"}},
        "spec":{"operatingMode": if i.is_multiple_of(3) {"Suspended"} else {"Running"},
            "podTemplate":{"metadata":{"labels":{"sandbox.namzu.ai/template":"coder"}},"spec":{"containers":[{"name":"a","image":"x"}]}}},
        "status":{"conditions":[{"type":"Ready","status":"True","reason":"DependenciesReady"}]}})
}

/// One watch-event frame of the event loop: apply what arrived, settle the cursor, draw.
fn frame(app: &mut App, terminal: &mut Terminal<TestBackend>, theme: Theme, actions: Vec<Action>) {
    for a in actions {
        update(app, a);
    }
    app.settle();
    terminal.draw(|f| view::render(f, app, theme)).unwrap();
}

fn live_action(app: &App, context: &str, event: LiveEvent) -> Action {
    let c = app.contexts.iter().find(|c| c.name == context).unwrap();
    Action::Live {
        context: context.into(),
        scope: namzu_engine::cluster::inventory::Scope::All,
        generation: c.follow_generation,
        event,
    }
}

fn key(c: KeyCode) -> Action {
    Action::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

/// Median and p95 of `times`.
fn spread(mut times: Vec<std::time::Duration>) -> (std::time::Duration, std::time::Duration) {
    times.sort();
    (
        times[times.len() / 2],
        times[(times.len() * 95 / 100).min(times.len() - 1)],
    )
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn app_of(contexts: &[String], now: chrono::DateTime<chrono::Utc>) -> App {
    let mut app = App::new(AppOptions {
        contexts: contexts
            .iter()
            .map(|name| ContextOptions {
                name: name.clone(),
                server: format!("https://{name}"),
                ..Default::default()
            })
            .collect(),
        several_contexts: contexts.len() > 1,
        namespace: "ns-0".into(),
        all_namespaces: true,
        read_only: false,
        now,
    });
    app.start();
    app
}

/// Load `per_context` rows into each context as the follows deliver them — provisional rows a
/// page (500) at a time, interleaved across the contexts, then each one's full state — one
/// frame per event (events slower than frames: the worst case). The wall of the whole load.
fn load(
    contexts: &[String],
    rows: &[namzu_domain::workspace::Workspace],
    now: chrono::DateTime<chrono::Utc>,
) -> (App, std::time::Duration) {
    let mut app = app_of(contexts, now);
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).unwrap();
    let theme = Theme { colour: true };
    let upserts = |page: &[namzu_domain::workspace::Workspace]| -> Vec<namzu_domain::mirror::RowChange> {
        page.iter()
            .map(|w| namzu_domain::mirror::RowChange::Upsert(Box::new(w.clone())))
            .collect()
    };
    let start = Instant::now();
    for page in rows.chunks(500) {
        for c in contexts {
            let a = live_action(&app, c, LiveEvent::Provisional(upserts(page)));
            frame(&mut app, &mut terminal, theme, vec![a]);
        }
    }
    for c in contexts {
        let a = live_action(&app, c, LiveEvent::Rows(upserts(rows)));
        let b = live_action(&app, c, LiveEvent::Synced { namespaces: Vec::new() });
        frame(&mut app, &mut terminal, theme, vec![a]);
        frame(&mut app, &mut terminal, theme, vec![b]);
    }
    (app, start.elapsed())
}

fn main() {
    let workspaces = env_usize("NAMZU_BENCH_WORKSPACES", WORKSPACES);
    let fleet = env_usize("NAMZU_BENCH_CONTEXTS", 3);
    let now = namzu_clock::Clock::System.now();
    let before = rss_kib();
    let empty: Vec<Value> = Vec::new();
    let index = Index::new(&empty);
    let flags = OverlayFlags::default();
    // each Sandbox is dropped as soon as its row is derived: the growth is the rows themselves
    let rows: Vec<_> = (0..workspaces)
        .map(|i| {
            let s = sandbox(i);
            derive(&Inputs {
                sandbox: &s,
                pods: Observed::Known(&index),
                pvcs: Observed::Known(&index),
                template: TemplateRead::NotFound,
                policies: namzu_domain::egress::PolicyRead::NotServed,
                flags: &flags,
                now,
            })
        })
        .collect();
    let held = rss_kib().saturating_sub(before);
    println!(
        "{workspaces} derived rows: about {:.1} MiB (RSS growth), {} bytes a row inline",
        held as f64 / 1024.0,
        std::mem::size_of::<namzu_domain::workspace::Workspace>()
    );

    // the load, one context and a fleet of the same rows in each
    let one = vec!["ctx".to_string()];
    let (mut app, alone) = load(&one, &rows, now);
    assert_eq!(app.inventory.rows().len(), workspaces);
    let many: Vec<String> = (0..fleet).map(|i| format!("ctx-{i}")).collect();
    let (fleet_app, together) = load(&many, &rows, now);
    assert_eq!(fleet_app.inventory.rows().len(), workspaces * fleet);
    drop(fleet_app);
    println!(
        "loading {workspaces} rows as the follow delivers them, a frame per event: one context {alone:.2?}; {fleet} contexts {together:.2?} ({:.2}× one)",
        together.as_secs_f64() / alone.as_secs_f64()
    );

    let mut terminal = Terminal::new(TestBackend::new(200, 50)).unwrap();
    let theme = Theme { colour: true };
    let mut timed = |app: &mut App, actions: Vec<Action>| {
        let start = Instant::now();
        frame(app, &mut terminal, theme, actions);
        start.elapsed()
    };
    let keys = [KeyCode::Down, KeyCode::Down, KeyCode::PageDown, KeyCode::Up];
    let times: Vec<_> = (0..FRAMES)
        .map(|i| timed(&mut app, vec![key(keys[i % keys.len()])]))
        .collect();
    let (median, p95) = spread(times);
    println!("moving and paging, update + render per frame at {workspaces}: median {median:.2?}, p95 {p95:.2?}");

    // a typed filter: `/`, then each key a frame, then Enter; then cleared the same way
    let mut times = Vec::new();
    for round in 0..10 {
        timed(&mut app, vec![key(KeyCode::Char('/'))]);
        for c in format!("w{:04}", round * 7 + 1).chars() {
            times.push(timed(&mut app, vec![key(KeyCode::Char(c))]));
        }
        timed(&mut app, vec![key(KeyCode::Enter)]);
        timed(&mut app, vec![key(KeyCode::Char('/'))]);
        for _ in 0..5 {
            times.push(timed(&mut app, vec![key(KeyCode::Backspace)]));
        }
        timed(&mut app, vec![key(KeyCode::Enter)]);
    }
    let (median, p95) = spread(times);
    println!("typing a filter, a key's frame at {workspaces}: median {median:.2?}, p95 {p95:.2?}");

    let times: Vec<_> = (0..20)
        .map(|_| timed(&mut app, vec![key(KeyCode::Char('O'))]))
        .collect();
    let (median, p95) = spread(times);
    println!("changing the sort (O: reversed), its frame at {workspaces}: median {median:.2?}, p95 {p95:.2?}");

    let times: Vec<_> = (0..20)
        .map(|_| {
            let t = timed(&mut app, vec![key(KeyCode::Enter)]);
            timed(&mut app, vec![key(KeyCode::Esc)]);
            t
        })
        .collect();
    let (median, p95) = spread(times);
    println!("opening a row (Enter), its frame at {workspaces}: median {median:.2?}, p95 {p95:.2?}");

    // churn: 100 watch events a second at 60 frames a second is about two changed rows a frame
    let churn_rows: Vec<_> = rows.iter().step_by(37).cloned().collect();
    let times: Vec<_> = (0..FRAMES)
        .map(|i| {
            let changes = (0..2)
                .map(|j| {
                    let mut w = churn_rows[(i * 2 + j) % churn_rows.len()].clone();
                    w.epoch.epoch = Some((i % 50) as u64);
                    namzu_domain::mirror::RowChange::Upsert(Box::new(w))
                })
                .collect();
            let a = live_action(&app, "ctx", LiveEvent::Rows(changes));
            timed(&mut app, vec![a])
        })
        .collect();
    let (median, p95) = spread(times);
    println!("two changed rows a frame at {workspaces}: median {median:.2?}, p95 {p95:.2?}");
}
