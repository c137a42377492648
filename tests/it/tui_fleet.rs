//! The TUI over a fleet of contexts, on TestBackend through `update` against the sims: rows of
//! the same id side by side acting in their own context, each context's rules (read-only, typed
//! confirmation, maxBulk) on its rows only, and the fleet view's snapshots.

use crate::support::*;
use crate::tui::*;
use namzu_domain::naming::WorkspaceKey;
use namzu_domain::safety::ContextRules;
use namzu_sim::resources::SANDBOXES;
use namzu_tui::action::Action;
use namzu_tui::app::{ContextOptions, update};
use namzu_tui::view::{self, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::KeyCode;
use std::time::Duration;

/// SMALL with instant transitions: a suspend is confirmed at the controller's next look.
pub(crate) async fn quick_small() -> TestSim {
    start_with(SMALL, |c| {
        c.timing.grace = chrono::Duration::zero();
        c.timing.ready_delay = chrono::Duration::zero();
    })
    .await
}

/// A fleet of two clusters with the same workspaces (SMALL: agents/awake, asleep, owned in
/// each): `prod-eu-west` under `prod`'s rules, `staging` under `staging`'s, in one kubeconfig;
/// and `failed` contexts that could not be opened. Every namespace in scope.
pub(crate) async fn fleet(prod: ContextRules, staging: ContextRules, failed: Vec<ContextOptions>) -> Harness {
    let (a, b) = (quick_small().await, quick_small().await);
    let kubeconfig = a.dir.path().join("fleet.kubeconfig");
    namzu_sim::write_fleet_kubeconfig(&kubeconfig, &[("prod-eu-west", &a.sim), ("staging", &b.sim)]).unwrap();
    let timeout = Duration::from_secs(5);
    let contexts = vec![
        (connect(&a, &kubeconfig, Some("prod-eu-west"), timeout).await, prod),
        (connect(&b, &kubeconfig, Some("staging"), timeout).await, staging),
    ];
    harness_over(a, vec![b], contexts, failed, true, false).await
}

/// What the safety rules file says of production: a red PROD badge, typed confirmations.
pub(crate) fn production() -> ContextRules {
    let file = "contexts:\n  - context: 'prod-*'\n    label: PROD\n    colour: red\n    confirm: typed\n";
    namzu_domain::safety::SafetyConfig::parse(file)
        .unwrap()
        .for_context("prod-eu-west", &Default::default())
}

impl Harness {
    /// The fleet's second context's sim.
    pub(crate) fn staging(&self) -> &TestSim {
        &self.others[0]
    }

    /// Show only the rows matching `text` (the filter, typed and kept).
    pub(crate) async fn filter(&mut self, text: &str) {
        self.keys(&[KeyCode::Char('/')]).await;
        self.type_text(text).await;
        self.keys(&[KeyCode::Enter]).await;
    }

    /// The context of the row under the cursor.
    pub(crate) fn selected_context(&self) -> String {
        self.app
            .selected_key()
            .expect("a row is selected")
            .context_name()
            .to_string()
    }
}

/// The requests a sim was sent other than reads (and access reviews).
fn writes(t: &TestSim) -> Vec<String> {
    t.sim
        .requests()
        .into_iter()
        .filter(|r| r.method != "GET" && !r.path.contains("selfsubjectaccessreviews"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

fn stored_mode(t: &TestSim, id: &str) -> serde_json::Value {
    t.sim.get(&SANDBOXES, "agents", &format!("namzu-ws-{id}")).unwrap()["spec"]["operatingMode"].clone()
}

/// Two clusters' `agents/awake` are two rows; the picker shows one context's rows; a suspend of
/// staging's row is sent to staging's cluster only, and its result lands on that row alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_rows_with_the_same_id_coexist_and_act_in_their_own_context() {
    let mut h = fleet(Default::default(), Default::default(), Vec::new()).await;
    let (prod, staging) = (
        WorkspaceKey::new(Some("prod-eu-west"), "agents", "awake"),
        WorkspaceKey::new(Some("staging"), "agents", "awake"),
    );
    let keys: Vec<WorkspaceKey> = h.app.visible().iter().map(|w| namzu_tui::app::key_of(w)).collect();
    assert_eq!(keys.len(), 6, "{keys:?}");
    assert!(keys.contains(&prod) && keys.contains(&staging));
    // the picker: every context, then each; Enter on the second shows staging's rows only
    h.keys(&[KeyCode::Char('c'), KeyCode::Down, KeyCode::Down, KeyCode::Enter])
        .await;
    assert!(h.app.popups.is_empty());
    assert_eq!(h.app.view.context.as_deref(), Some("staging"));
    let shown: Vec<_> = h.app.visible().iter().map(|w| w.context.clone()).collect();
    assert_eq!(shown, vec![Some("staging".to_string()); 3]);
    assert!(h.screen(120, 12).contains("showing staging only"));
    h.filter("awake").await;
    h.staging().sim.clear_requests();
    h.t.sim.clear_requests();
    h.keys(&[KeyCode::Char('S'), KeyCode::Tab, KeyCode::Enter]).await;
    assert_eq!(
        writes(h.staging()),
        ["PATCH /apis/agents.x-k8s.io/v1beta1/namespaces/agents/sandboxes/namzu-ws-awake"]
    );
    assert!(writes(&h.t).is_empty(), "nothing sent to prod-eu-west");
    assert_eq!(stored_mode(h.staging(), "awake"), "Suspended");
    assert_eq!(stored_mode(&h.t, "awake"), "Running");
    assert!(h.app.notes[&staging].ok, "{:?}", h.app.notes);
    assert!(!h.app.notes.contains_key(&prod));
    assert!(h.app.status.starts_with("staging/awake: suspended"), "{}", h.app.status);
    h.keys(&[KeyCode::Char('w')]).await;
    assert!(
        h.screen(200, 20).contains("suspend staging:agents/awake"),
        "what was sent names the context"
    );
    h.keys(&[KeyCode::Esc]).await;
    // all contexts again
    h.keys(&[
        KeyCode::Esc,
        KeyCode::Char('c'),
        KeyCode::Up,
        KeyCode::Up,
        KeyCode::Enter,
    ])
    .await;
    assert_eq!((h.app.view.context.as_ref(), h.app.visible().len()), (None, 6));
}

/// A read-only context refuses writes on its rows, saying which context and rule; the other
/// context's rows still open their dialog; marks across both are refused whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_context_disables_writes_on_its_rows_only() {
    let file = "contexts:\n  - context: 'prod-*'\n    readOnly: true\n";
    let read_only = namzu_domain::safety::SafetyConfig::parse(file)
        .unwrap()
        .for_context("prod-eu-west", &Default::default());
    let mut h = fleet(read_only, Default::default(), Vec::new()).await;
    h.filter("awake").await;
    assert_eq!(h.selected_context(), "prod-eu-west", "name order: context first");
    for verb in ['S', 'R', 'D'] {
        h.keys(&[KeyCode::Char(verb)]).await;
        assert!(h.app.popups.is_empty(), "{verb}: no dialog");
        assert!(
            h.app
                .status
                .ends_with("is disabled: read-only mode (context \"prod-eu-west\", config rule \"prod-*\")"),
            "{}",
            h.app.status
        );
    }
    h.keys(&[KeyCode::Down]).await;
    assert_eq!(h.selected_context(), "staging");
    h.keys(&[KeyCode::Char('S')]).await;
    assert!(matches!(h.app.popups.last(), Some(namzu_tui::app::Popup::Confirm(_))));
    h.keys(&[
        KeyCode::Esc,
        KeyCode::Up,
        KeyCode::Char(' '),
        KeyCode::Char(' '),
        KeyCode::Char('S'),
    ])
    .await;
    assert_eq!(h.app.view.marks.len(), 2);
    assert!(
        h.app.popups.is_empty() && h.app.status.contains("read-only"),
        "{}",
        h.app.status
    );
    assert!(writes(&h.t).is_empty() && writes(h.staging()).is_empty());
}

/// `confirm: typed` asks for the id before a suspend in that context (not in the other), and
/// nothing is sent until it is typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_confirm_context_asks_for_the_id_before_a_suspend() {
    let mut h = fleet(production(), Default::default(), Vec::new()).await;
    h.filter("awake").await;
    h.keys(&[KeyCode::Down, KeyCode::Char('S')]).await;
    let screen = h.screen(200, 50);
    assert!(
        !screen.contains("Type \"awake\""),
        "staging asks for no typing:\n{screen}"
    );
    h.keys(&[
        KeyCode::Esc,
        KeyCode::Up,
        KeyCode::Char('S'),
        KeyCode::Tab,
        KeyCode::Enter,
    ])
    .await;
    assert_eq!(h.app.status, "type \"awake\" to confirm the suspend");
    assert!(writes(&h.t).is_empty(), "nothing sent before the id is typed");
    let screen = h.screen(200, 50);
    assert!(
        screen.contains("Context prod-eu-west asks for the id typed (confirm: typed).")
            && screen.contains("Type \"awake\" to enable Suspend: █"),
        "{screen}"
    );
    // letters are typed, `t` included; the dialog stays until the id is whole
    h.type_text("awak").await;
    h.keys(&[KeyCode::Enter]).await;
    assert!(writes(&h.t).is_empty());
    h.type_text("e").await;
    h.keys(&[KeyCode::Enter]).await;
    assert_eq!(writes(&h.t).len(), 1, "{:?}", writes(&h.t));
    assert!(writes(h.staging()).is_empty());
    assert_eq!(stored_mode(&h.t, "awake"), "Suspended");
}

/// Marking more of one context's rows than its maxBulk refuses the action before anything is
/// read or sent; within it, the marks across contexts open one dialog.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_bulk_refuses_a_context_s_marked_rows_over_it_and_sends_nothing() {
    let capped = ContextRules {
        max_bulk: Some(2),
        ..Default::default()
    };
    let mut h = fleet(capped, Default::default(), Vec::new()).await;
    h.t.sim.clear_requests();
    h.staging().sim.clear_requests();
    // prod-eu-west's three rows and one of staging's
    h.keys(&[KeyCode::Char(' '); 4]).await;
    h.keys(&[KeyCode::Char('S')]).await;
    assert!(h.app.popups.is_empty());
    assert_eq!(
        h.app.status,
        "context \"prod-eu-west\": 3 workspaces selected, more than its maxBulk of 2: nothing sent (narrow the selection, or pass --max-bulk)"
    );
    assert!(
        h.t.sim.requests().is_empty() && h.staging().sim.requests().is_empty(),
        "not even a read"
    );
    h.keys(&[KeyCode::Home, KeyCode::Char(' '), KeyCode::Char('S')]).await;
    let Some(namzu_tui::app::Popup::Confirm(c)) = h.app.popups.last() else {
        panic!("{}", h.app.status)
    };
    assert_eq!(c.targets.len(), 3, "two of prod-eu-west's and one of staging's");
}

/// The fleet view: CONTEXT first with the red PROD badge, the header's status strip with each
/// context's rows and state (listed, reconnecting, could not be opened), the picker, and a
/// typed suspend's dialog.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_of_the_fleet_view() {
    use namzu_engine::cluster::live::{LiveEvent, StreamStatus};
    let unreachable = ContextOptions {
        name: "prod-us-east".into(),
        open_error: Some("cannot reach https://10.0.0.9:6443: connection refused".into()),
        ..Default::default()
    };
    let mut h = fleet(production(), Default::default(), vec![unreachable]).await;
    // staging's watch of Sandboxes lost its server 30 s ago, as its Follow reports it
    let since = h.t.sim.now() - chrono::Duration::seconds(30);
    let event = LiveEvent::Status {
        stream: namzu_engine::cluster::live::StreamName {
            kind: namzu_domain::mirror::Kind::Sandboxes,
            namespace: None,
        },
        status: StreamStatus::Reconnecting {
            since,
            why: "connection refused".into(),
        },
    };
    let (scope, generation) = (h.app.scope.clone(), h.app.contexts[1].follow_generation);
    update(
        &mut h.app,
        Action::Live {
            context: "staging".into(),
            scope,
            generation,
            event,
        },
    );
    snap_sizes("fleet_view", &h);
    let narrow = h.screen(80, 24);
    assert!(
        narrow.lines().all(|l| l.chars().count() <= 80),
        "fits 80 columns:\n{narrow}"
    );
    // the one PROD context's cell shrinks to its badge where its name does not fit
    assert!(narrow.contains("  [PROD]         awake"), "{narrow}");
    assert_badge_is_red(&h);
    h.keys(&[KeyCode::Char('c')]).await;
    snap_sizes("fleet_context_picker", &h);
    h.keys(&[KeyCode::Esc]).await;
    h.filter("awake").await;
    h.keys(&[KeyCode::Char('S')]).await;
    snap_sizes("fleet_confirm_typed_suspend", &h);
}

/// Every `[PROD]` on screen (the header's strip, the CONTEXT column) is drawn in red.
fn assert_badge_is_red(h: &Harness) {
    let (w, rows) = (140, 20);
    let mut term = Terminal::new(TestBackend::new(w, rows)).unwrap();
    term.draw(|f| view::render(f, &h.app, Theme { colour: true })).unwrap();
    let buf = term.backend().buffer().clone();
    let mut seen = 0;
    for y in 0..rows {
        let line: Vec<String> = (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
        let text = line.concat();
        if let Some(at) = text.find("[PROD]") {
            let x = text[..at].chars().count() as u16;
            assert_eq!(buf[(x + 1, y)].fg, ratatui::style::Color::Red, "row {y}: {text}");
            seen += 1;
        }
    }
    assert!(seen >= 2, "the badge in the strip and the rows");
}
