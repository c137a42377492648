//! `cargo bench --bench tui`: update + render per frame with 10,000 workspaces on a 200×50
//! TestBackend, and the memory the inventory holds. Prints numbers; asserts nothing.

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

fn main() {
    let now = namzu_clock::Clock::System.now();
    let before = rss_kib();
    let empty: Vec<Value> = Vec::new();
    let index = Index::new(&empty);
    let flags = OverlayFlags::default();
    // each Sandbox is dropped as soon as its row is derived: the growth is the rows themselves
    let rows: Vec<_> = (0..WORKSPACES)
        .map(|i| {
            let s = sandbox(i);
            let mut w = derive(&Inputs {
                sandbox: &s,
                pods: Observed::Known(&index),
                pvcs: Observed::Known(&index),
                template: TemplateRead::NotFound,
                policies: namzu_domain::egress::PolicyRead::NotServed,
                flags: &flags,
                now,
            });
            // as the UI names every row: after its context, which the watch events carry
            w.context = Some("ctx".into());
            w
        })
        .collect();
    let mut app = App::new(AppOptions {
        contexts: vec![ContextOptions {
            name: "ctx".into(),
            server: "https://cluster".into(),
            ..Default::default()
        }],
        several_contexts: false,
        namespace: "ns-0".into(),
        all_namespaces: true,
        read_only: false,
        now,
    });
    let churn_rows: Vec<_> = rows.iter().step_by(37).cloned().collect();
    // the rows arrive as a follow yields them: its first full state, then its changes
    let scope = namzu_engine::cluster::inventory::Scope::All;
    let live = |app: &mut App, event| {
        let action = Action::Live {
            context: "ctx".into(),
            scope: scope.clone(),
            generation: app.contexts[0].follow_generation,
            event,
        };
        update(app, action);
    };
    app.start();
    let upserts = rows
        .into_iter()
        .map(|w| namzu_domain::mirror::RowChange::Upsert(Box::new(w)))
        .collect();
    live(&mut app, LiveEvent::Rows(upserts));
    live(&mut app, LiveEvent::Synced { namespaces: Vec::new() });
    assert_eq!(app.inventory.rows().len(), WORKSPACES);
    let held = rss_kib().saturating_sub(before);
    println!(
        "inventory of {WORKSPACES} workspaces held by the UI: about {:.1} MiB (RSS growth)",
        held as f64 / 1024.0
    );

    let mut terminal = Terminal::new(TestBackend::new(200, 50)).unwrap();
    let theme = Theme { colour: true };
    let keys = [KeyCode::Down, KeyCode::Down, KeyCode::PageDown, KeyCode::Up];
    let mut times = Vec::with_capacity(FRAMES);
    for i in 0..FRAMES {
        let start = Instant::now();
        update(
            &mut app,
            Action::Key(KeyEvent::new(keys[i % keys.len()], KeyModifiers::NONE)),
        );
        terminal.draw(|f| view::render(f, &app, theme)).unwrap();
        times.push(start.elapsed());
    }
    times.sort();
    let median = times[FRAMES / 2];
    let p95 = times[FRAMES * 95 / 100];
    println!(
        "update + render per frame at {WORKSPACES} workspaces: median {median:.2?}, p95 {p95:.2?} over {FRAMES} frames (target: well under 16 ms)"
    );
    // churn: 100 watch events a second at 60 frames a second is about two changed rows a frame,
    // applied as the event loop does (all that arrived, then one draw)
    let mut times = Vec::with_capacity(FRAMES);
    for i in 0..FRAMES {
        let changes = (0..2)
            .map(|j| {
                let mut w = churn_rows[(i * 2 + j) % churn_rows.len()].clone();
                w.epoch.epoch = Some((i % 50) as u64);
                namzu_domain::mirror::RowChange::Upsert(Box::new(w))
            })
            .collect();
        let start = Instant::now();
        live(&mut app, LiveEvent::Rows(changes));
        terminal.draw(|f| view::render(f, &app, theme)).unwrap();
        times.push(start.elapsed());
    }
    times.sort();
    println!(
        "update + render per frame at {WORKSPACES} workspaces with 100 watch events/s arriving: median {:.2?}, p95 {:.2?} (target ≤ 2 ms)",
        times[FRAMES / 2],
        times[FRAMES * 95 / 100]
    );
    // the filter re-evaluates every row on each frame too
    app.view.filter = "w0".into();
    let start = Instant::now();
    for _ in 0..50 {
        terminal.draw(|f| view::render(f, &app, theme)).unwrap();
    }
    println!(
        "render with a live filter over {WORKSPACES} rows: {:.2?} per frame",
        start.elapsed() / 50
    );
}
