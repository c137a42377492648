//! The TUI: snapshots of every view on TestBackend, key sequences through `update` against the
//! sim (the I/O effects run through the real write path), and a hung API server.

use crate::support::*;
use crate::tui_fleet::{fleet, production, quick_small};
use namzu_domain::naming::WorkspaceKey;
use namzu_domain::safety::ContextRules;
use namzu_engine::cluster::audit::AuditLog;
use namzu_engine::cluster::connect::Connection;
use namzu_engine::cluster::inventory::Scope;
use namzu_sim::faults::{Fault, FaultAction, Mutation};
use namzu_sim::resources::SANDBOXES;
use namzu_tui::action::{Action, Effect};
use namzu_tui::app::{App, AppOptions, ContextOptions, Health, update};
use namzu_tui::io::Io;
use namzu_tui::view::{self, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::unbounded_channel;

pub(crate) struct Harness {
    pub(crate) t: TestSim,
    pub(crate) io: Arc<Io>,
    pub(crate) app: App,
    /// A fleet's other contexts' sims, after `t` (the first context's).
    pub(crate) others: Vec<TestSim>,
}

/// The demo with instant transitions: a pod goes or gets ready at the controller's next look.
pub(crate) async fn quick_demo() -> TestSim {
    start_with(namzu_sim::scenario::DEMO, |c| {
        c.namespace = "agents".into();
        c.timing.grace = chrono::Duration::zero();
        c.timing.ready_delay = chrono::Duration::zero();
    })
    .await
}

pub(crate) async fn harness(t: TestSim, all: bool, read_only: bool) -> Harness {
    let conn = connect(&t, t.sim.kubeconfig(), None, Duration::from_secs(5)).await;
    let rules = ContextRules {
        read_only,
        ..Default::default()
    };
    harness_over(t, Vec::new(), vec![(conn, rules)], Vec::new(), all, read_only).await
}

/// The TUI over `contexts` (the first on `t`'s sim, the others on `others`), and contexts that
/// failed to open; several are a fleet. The first refresh has run.
pub(crate) async fn harness_over(
    t: TestSim,
    others: Vec<TestSim>,
    contexts: Vec<(Connection, ContextRules)>,
    failed: Vec<ContextOptions>,
    all: bool,
    read_only_flag: bool,
) -> Harness {
    // one audit log and one session for every context, as the TUI has
    let audit = AuditLog {
        path: Some(t.dir.path().join("audit.jsonl")),
        session: Some(Arc::new(Mutex::new(Vec::new()))),
        failure: Default::default(),
    };
    let mut options: Vec<ContextOptions> = contexts.iter().map(|(c, r)| context_options(c, r.clone())).collect();
    options.extend(failed);
    let app = App::new(AppOptions {
        several_contexts: options.len() > 1,
        contexts: options,
        namespace: contexts[0].0.namespace.clone(),
        all_namespaces: all,
        read_only: read_only_flag,
        now: t.sim.now(),
    });
    let clusters = contexts
        .into_iter()
        .map(|(conn, rules)| (conn, policy(rules.read_only, audit.clone())))
        .collect();
    let io = Arc::new(tui_io(clusters, Default::default()));
    let mut h = Harness { t, io, app, others };
    let first = h.app.start();
    h.settle(first).await;
    h
}

/// Run effects to completion, feeding their actions back through `update`. A Follow (the TUI
/// is always live) runs as the TUI runs it — the I/O task's follow of the context against the
/// sim, its reports fed back as `Action::Live` — until the context has settled: its first full
/// state is in, or every watch has said how it stands and one is reconnecting, or it failed.
/// Then that follow stops, so the screen holds still for a snapshot; after a write the harness
/// presses refresh, where the TUI's running watches would bring the change (tests/it/live.rs
/// follows changes as they come).
pub(crate) async fn settle(app: &mut App, io: &Arc<Io>, mut effects: Vec<Effect>) {
    let mut written = false;
    while !effects.is_empty() {
        let (tx, mut rx) = unbounded_channel();
        let mut follows = Vec::new();
        for e in effects.drain(..) {
            match e {
                Effect::Follow { .. } => follows.push(e),
                e => io.perform(e, tx.clone()).await,
            }
        }
        drop(tx);
        while let Some(a) = rx.recv().await {
            written |= matches!(a, Action::Done { .. } | Action::Waited { .. });
            effects.extend(update(app, a));
        }
        for follow in follows {
            effects.extend(follow_until_settled(app, io, follow).await);
        }
        if effects.is_empty() && std::mem::take(&mut written) {
            effects = app.reload();
        }
    }
}

/// One Follow, through the I/O task, until its context settles (bounded: the state on failure).
pub(crate) async fn follow_until_settled(app: &mut App, io: &Arc<Io>, follow: Effect) -> Vec<Effect> {
    let Effect::Follow {
        context,
        scope,
        generation,
    } = &follow
    else {
        return Vec::new();
    };
    let (context, scope, generation) = (context.clone(), scope.clone(), *generation);
    let (tx, mut rx) = unbounded_channel();
    let running = io.clone();
    let task = tokio::spawn(async move { running.perform(follow, tx).await });
    let mut effects = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while let Some(c) = app.context_view(&context) {
        if c.follow_generation != generation || !c.refreshing || settled_in_trouble(c, &scope) {
            break;
        }
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(a)) => effects.extend(update(app, a)),
            Ok(None) => {
                panic!("the follow of {context} ended before it settled (a Follow of this generation ran already?)")
            }
            Err(_) => panic!(
                "the follow of {context} never settled: streams {:?}, rows {}",
                c.streams,
                app.inventory.rows().len()
            ),
        }
    }
    task.abort();
    effects
}

/// Every kind's watch in the scope has said how it stands, and one is reconnecting: the first
/// full state will not come until the server answers again.
pub(crate) fn settled_in_trouble(c: &namzu_tui::app::ContextView, scope: &Scope) -> bool {
    use namzu_engine::cluster::live::StreamStatus;
    let ns = match scope {
        Scope::All => None,
        Scope::Namespace(ns) => Some(ns.as_str()),
    };
    let here = c.streams.iter().filter(|(s, _)| s.namespace.as_deref() == ns);
    here.clone().count() >= 5
        && here
            .clone()
            .any(|(_, status)| matches!(status, StreamStatus::Reconnecting { .. }))
}

impl Harness {
    /// Run effects to completion (a Follow until its context settles).
    pub(crate) async fn settle(&mut self, effects: Vec<Effect>) {
        settle(&mut self.app, &self.io, effects).await;
        self.app.now = self.t.sim.now();
    }

    pub(crate) async fn keys(&mut self, keys: &[KeyCode]) {
        for k in keys {
            let effects = update(&mut self.app, Action::Key(KeyEvent::new(*k, KeyModifiers::NONE)));
            self.settle(effects).await;
        }
    }

    pub(crate) async fn type_text(&mut self, text: &str) {
        let codes: Vec<KeyCode> = text.chars().map(KeyCode::Char).collect();
        self.keys(&codes).await;
    }

    pub(crate) fn screen(&self, w: u16, h: u16) -> String {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        term.draw(|f| view::render(f, &self.app, Theme { colour: false }))
            .unwrap();
        let buf = term.backend().buffer().clone();
        (0..h)
            .map(|y| {
                (0..w)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// No word on a popup touches its right border: every line inside ends before it, or in `…`.
pub(crate) fn assert_no_word_split(name: &str, screen: &str) {
    let rows: Vec<Vec<char>> = screen.lines().map(|l| l.chars().collect()).collect();
    let Some(top) = rows.iter().position(|r| r.contains(&'┌')) else {
        return;
    };
    let (left, right) = (
        rows[top].iter().position(|c| *c == '┌').unwrap(),
        rows[top].iter().position(|c| *c == '┐').unwrap(),
    );
    for row in &rows[top + 1..] {
        if row.get(left) == Some(&'└') {
            break;
        }
        let before_border = row.get(right - 1).copied().unwrap_or(' ');
        assert!(
            before_border == ' ' || before_border == '…',
            "{name}: text runs into the border:\n{}",
            row.iter().collect::<String>()
        );
    }
}

/// The same view at the two sizes users have: a standard 80×24 terminal and a large one.
pub(crate) fn snap_sizes(name: &str, h: &Harness) {
    for (w, rows) in [(80, 24), (200, 50)] {
        let screen = h.screen(w, rows);
        assert_no_word_split(name, &screen);
        snap(&format!("{name}_{w}x{rows}"), &screen);
    }
}

pub(crate) fn snap(name: &str, screen: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    // uids are random; every time on screen comes from the sim's manual clock, shared with the
    // tool, which starts at TEST_START whatever the day
    settings.add_filter(r"[0-9a-f]{8}-5a4d-4000-8000-[0-9a-f]{12}", "[UID]");
    settings.bind(|| insta::assert_snapshot!(name, screen));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_of_every_view() {
    let mut h = harness(start_demo().await, true, false).await;
    snap_sizes("list_all_states", &h);
    h.keys(&[KeyCode::Char('/')]).await;
    h.type_text("coder").await;
    h.keys(&[KeyCode::Enter, KeyCode::Char('o')]).await;
    snap_sizes("sort_picker", &h);
    // the picker's epoch, then the same again: reversed
    h.keys(&[KeyCode::End, KeyCode::Up, KeyCode::Up, KeyCode::Up, KeyCode::Enter])
        .await;
    assert_eq!(h.app.status, "sorted by epoch ▲");
    h.keys(&[KeyCode::Char(':')]).await;
    h.type_text("sort ep").await;
    h.keys(&[KeyCode::Enter]).await;
    assert_eq!(h.app.status, "sorted by epoch ▼");
    snap_sizes("filter_coder_sorted_by_epoch_reversed", &h);
    h.keys(&[KeyCode::Esc]).await;
    assert!(h.app.view.filter.is_empty());
    h.app.view.sort = namzu_domain::select::SortKey::Name;
    h.app.view.reverse = false;
    h.keys(&[KeyCode::Char('/')]).await;
    h.type_text("juliet").await;
    h.keys(&[KeyCode::Enter, KeyCode::Enter]).await;
    snap_sizes("detail_juliet", &h);
    h.keys(&[KeyCode::Esc, KeyCode::Char('y')]).await;
    snap_sizes("yaml_juliet", &h);
    h.keys(&[KeyCode::Esc, KeyCode::Char('?')]).await;
    snap_sizes("help", &h);
    h.keys(&[KeyCode::Esc]).await;
    for (verb, key) in [("suspend", 'S'), ("resume", 'R'), ("delete", 'D')] {
        h.keys(&[KeyCode::Char(key)]).await;
        snap_sizes(&format!("confirm_{verb}"), &h);
        h.keys(&[KeyCode::Esc]).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_of_results_errors_and_disabled_actions() {
    let mut h = harness(quick_demo().await, false, false).await;
    // bulk: mark three, suspend them all (one is already suspended)
    h.keys(&[
        KeyCode::Char(' '),
        KeyCode::Char(' '),
        KeyCode::Char(' '),
        KeyCode::Char(' '),
        KeyCode::Char('S'),
    ])
    .await;
    snap_sizes("confirm_bulk_suspend", &h);
    h.keys(&[KeyCode::Tab, KeyCode::Enter]).await;
    snap_sizes("bulk_result", &h);
    h.keys(&[KeyCode::Char('w')]).await;
    snap_sizes("what_was_sent", &h);
    h.keys(&[KeyCode::Esc]).await;
    // the API server starts failing: the last good rows stay, the watch that cannot start
    // again says since when and why on top
    h.t.sim.add_fault(Fault::status(
        Some("GET"),
        "/sandboxes",
        500,
        "etcdserver: request timed out",
    ));
    h.t.sim.advance(chrono::Duration::seconds(7));
    h.app.now = h.t.sim.now();
    h.keys(&[KeyCode::F(5)]).await;
    assert!(
        matches!(h.app.contexts[0].health(), Health::Reconnecting { ref why, .. } if why.contains("etcdserver")),
        "{:?}",
        h.app.contexts[0].health()
    );
    assert!(!h.app.inventory.rows().is_empty());
    snap_sizes("error_over_stale_data", &h);
    h.t.sim.clear_faults();

    let mut ro = harness(start_demo().await, false, true).await;
    ro.keys(&[KeyCode::Char('S')]).await;
    assert!(ro.app.popups.is_empty(), "no dialog in read-only mode");
    snap("read_only_suspend_disabled", &ro.screen(120, 8));

    // RBAC: a viewer may not patch or delete: the actions say so before anything is tried
    let viewer = vec![namzu_sim::auth::User::with_rules(
        "viewer",
        "v",
        vec![namzu_sim::auth::Rule::new(
            &["get", "list", "watch", "create"],
            &["*"],
            &["*"],
            &[],
        )],
    )];
    let t = start_with(namzu_sim::scenario::DEMO, |c| {
        c.users = viewer;
        c.namespace = "agents".into();
    })
    .await;
    let mut rbac = harness(t, false, false).await;
    assert_eq!(
        (rbac.app.contexts[0].can_patch, rbac.app.contexts[0].can_delete),
        (Some(false), Some(false))
    );
    rbac.keys(&[KeyCode::Char('D')]).await;
    assert!(rbac.app.popups.is_empty());
    snap("rbac_delete_disabled", &rbac.screen(120, 8));
    assert!(
        rbac.t
            .sim
            .requests()
            .iter()
            .all(|r| r.method == "GET" || r.path.contains("selfsubjectaccessreviews"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspend_with_take_over_from_the_list() {
    let mut h = harness(quick_demo().await, false, false).await;
    h.keys(&[KeyCode::Char('/')]).await;
    h.type_text("alpha").await;
    h.keys(&[
        KeyCode::Enter,
        KeyCode::Char('S'),
        KeyCode::Char('t'),
        KeyCode::Tab,
        KeyCode::Enter,
    ])
    .await;
    let s = h.t.sim.get(&SANDBOXES, "agents", "namzu-ws-alpha").unwrap();
    assert_eq!(s["spec"]["operatingMode"], "Suspended");
    assert_eq!(
        s["metadata"]["annotations"]["sandbox.namzu.ai/holder-epoch"], "8",
        "stored 7 + 1"
    );
    let patches: Vec<_> = h.t.sim.requests().into_iter().filter(|r| r.method == "PATCH").collect();
    assert_eq!(patches.len(), 1);
    let body = patches[0].body.clone().unwrap();
    assert_eq!(
        body[0],
        serde_json::json!({"op":"test","path":"/metadata/annotations/sandbox.namzu.ai~1holder-epoch","value":"7"})
    );
    assert_eq!(
        body[1],
        serde_json::json!({"op":"add","path":"/metadata/annotations/sandbox.namzu.ai~1holder-epoch","value":"8"})
    );
    assert_eq!(
        body[3],
        serde_json::json!({"op":"add","path":"/spec/operatingMode","value":"Suspended"})
    );
    let note = &h.app.notes[&WorkspaceKey::new(Some("namzu-sim"), "agents", "alpha")];
    assert!(note.ok, "{note:?}");
    assert_eq!(h.app.sent.len(), 1, "what was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fence_refusal_shows_and_changes_nothing() {
    let mut h = harness(start_demo().await, false, false).await;
    h.keys(&[KeyCode::Char('/')]).await;
    h.type_text("alpha").await;
    h.keys(&[KeyCode::Enter, KeyCode::Char('S')]).await;
    // the preview read epoch 7; a host takes over before the user confirms
    h.t.sim.modify(&SANDBOXES, "agents", "namzu-ws-alpha", |o| {
        o["metadata"]["annotations"]["sandbox.namzu.ai/holder-epoch"] = serde_json::json!("9")
    });
    h.keys(&[KeyCode::Tab, KeyCode::Enter]).await;
    let s = h.t.sim.get(&SANDBOXES, "agents", "namzu-ws-alpha").unwrap();
    assert_eq!(s["spec"]["operatingMode"], "Running");
    assert!(
        h.t.sim.requests().iter().all(|r| r.method != "PATCH"),
        "refused before sending"
    );
    let note = &h.app.notes[&WorkspaceKey::new(Some("namzu-sim"), "agents", "alpha")];
    assert!(!note.ok && note.text.contains("held at epoch 9"), "{note:?}");
    assert!(h.screen(160, 10).contains("refused"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_without_the_typed_id_sends_nothing() {
    let mut h = harness(start_demo().await, false, false).await;
    h.keys(&[KeyCode::Char('/')]).await;
    h.type_text("echo").await;
    h.keys(&[KeyCode::Enter, KeyCode::Char('D'), KeyCode::Tab, KeyCode::Enter])
        .await;
    assert!(h.app.status.contains("type \"echo\""), "{}", h.app.status);
    h.type_text("ech").await;
    h.keys(&[KeyCode::Enter]).await;
    assert!(h.t.sim.requests().iter().all(|r| r.method != "DELETE"));
    h.keys(&[KeyCode::Esc]).await;
    assert!(h.app.popups.is_empty());
    assert!(h.t.sim.get(&SANDBOXES, "agents", "namzu-ws-echo").is_some());
    // typed in full, the focus moves to Delete by itself: Enter sends one fenced DELETE
    h.keys(&[KeyCode::Char('D')]).await;
    h.type_text("echo").await;
    h.keys(&[KeyCode::Enter]).await;
    assert!(h.t.sim.get(&SANDBOXES, "agents", "namzu-ws-echo").is_none());
    let deletes: Vec<_> =
        h.t.sim
            .requests()
            .into_iter()
            .filter(|r| r.method == "DELETE")
            .collect();
    assert_eq!(deletes.len(), 1);
    assert!(deletes[0].body.as_ref().unwrap()["preconditions"]["resourceVersion"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_api_server_leaves_the_ui_responsive() {
    let h = harness(start_demo().await, false, false).await;
    let Harness { t, io, mut app, .. } = h;
    t.sim
        .add_fault(Fault::new(Some("GET"), "/sandboxes", FaultAction::Hang));
    let (tx, rx) = unbounded_channel();
    let keys = tx.clone();
    let before = app.view.selected;
    let driver = tokio::spawn(async move {
        let mut term = Terminal::new(TestBackend::new(100, 30)).unwrap();
        namzu_tui::event_loop(&mut term, &mut app, io, tx, rx, Theme { colour: false }, &mut |_, _| {
            Ok(String::new())
        })
        .await
        .map(|_| app)
    });
    for code in [
        KeyCode::F(5),
        KeyCode::Char('j'),
        KeyCode::Char('j'),
        KeyCode::Char('?'),
        KeyCode::Esc,
        KeyCode::Char('q'),
    ] {
        keys.send(Action::Key(KeyEvent::new(code, KeyModifiers::NONE))).unwrap();
    }
    let app = tokio::time::timeout(Duration::from_secs(5), driver)
        .await
        .expect("keys are handled while a request hangs")
        .unwrap()
        .unwrap();
    assert_eq!(app.view.selected, before + 2);
    assert!(app.contexts[0].refreshing, "the hung refresh is still out");
    drop(t);
    let _ = Mutation::BumpResourceVersion;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_switch_and_all_namespaces_toggle() {
    let mut h = harness(start_demo().await, false, false).await;
    // (32 and 41 with the demo's Expired retained, slow starter, nomad, lapsed and vetoed)
    assert_eq!(h.app.inventory.rows().len(), 32);
    assert_eq!(
        h.app.inventory.namespaces,
        ["agents", "default", "research", "staging"],
        "listed at start"
    );
    h.keys(&[KeyCode::Char('n'), KeyCode::Char('n')]).await;
    assert_eq!(
        h.app.scope,
        namzu_engine::cluster::inventory::Scope::Namespace("research".into())
    );
    assert_eq!(h.app.inventory.rows().len(), 6);
    assert_eq!(
        h.app.contexts[0].can_patch,
        Some(true),
        "access re-checked for the new namespace"
    );
    h.keys(&[KeyCode::Char('a')]).await;
    assert_eq!(h.app.inventory.rows().len(), 41);
    h.keys(&[KeyCode::Char('a')]).await;
    assert_eq!(h.app.inventory.rows().len(), 6, "back to the namespace it was in");
}

/// The TUI's resume goes through the same write path: a workspace a foreign per-sandbox policy
/// selects is refused at the confirmation's read, and nothing is sent; with that policy gone, the
/// confirmation says the host's admission fence is not re-verified here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tui_resume_into_a_foreign_policy_is_refused_and_the_fence_is_noted() {
    use namzu_sim::resources::CILIUM_POLICIES;
    let mut h = harness(quick_demo().await, false, false).await;
    h.t.sim.clear_requests();
    h.keys(&[KeyCode::Char('/')]).await;
    h.type_text("wren").await;
    h.keys(&[KeyCode::Enter, KeyCode::Char('R')]).await;
    let screen = h.screen(200, 50);
    assert!(
        screen.contains("refused: CiliumNetworkPolicy namzu-sbx-0e0e0e0e-"),
        "{screen}"
    );
    h.keys(&[KeyCode::Tab, KeyCode::Enter]).await;
    assert!(h.t.sim.requests().iter().all(|r| r.method != "PATCH"), "nothing sent");
    let note = &h.app.notes[&WorkspaceKey::new(Some("namzu-sim"), "agents", "wren")];
    assert!(!note.ok && note.text.contains("selects this workspace"), "{note:?}");
    // the earlier workspace's policy removed: the confirmation notes what the tool cannot verify
    let wren_uid = h.t.sim.get(&SANDBOXES, "agents", "namzu-ws-wren").unwrap()["metadata"]["uid"].clone();
    let foreign: Vec<String> =
        h.t.sim
            .list(&CILIUM_POLICIES, Some("agents"))
            .into_iter()
            .filter(|p| p["metadata"]["ownerReferences"][0]["name"] == "namzu-ws-wren")
            .filter(|p| p["metadata"]["ownerReferences"][0]["uid"] != wren_uid)
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
    let client = h.t.client().await;
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        client,
        "agents",
        &ar("cilium.io", "v2", "CiliumNetworkPolicy", "ciliumnetworkpolicies"),
    );
    api.delete(&foreign[0], &Default::default()).await.unwrap();
    h.keys(&[KeyCode::Char('R')]).await;
    let screen = h.screen(200, 50);
    assert!(screen.contains("wren (agents): now Suspended"), "{screen}");
    assert!(screen.contains("admission fence"), "{screen}");
    h.keys(&[KeyCode::Tab, KeyCode::Enter]).await;
    let s = h.t.sim.get(&SANDBOXES, "agents", "namzu-ws-wren").unwrap();
    assert_eq!(s["spec"]["operatingMode"], "Running");
}

/// F on a drifted Suspended row: the confirmation shows the field diff, the overlays and where
/// each came from, the epoch carried and the exact body; what is confirmed is what is sent.
/// Marked rows are refreshed together, each refused on its own; read-only disables it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_from_the_list_shows_its_diff_overlays_and_body_and_sends_exactly_that() {
    let mut h = harness(quick_demo().await, false, false).await;
    h.t.sim.clear_requests();
    h.keys(&[KeyCode::Char('/')]).await;
    h.type_text("ember").await;
    h.keys(&[KeyCode::Enter, KeyCode::Char('F')]).await;
    snap_sizes("confirm_refresh", &h);
    // the consequences first; `v` shows the epoch and the exact request
    assert!(!h.screen(200, 50).contains("→ carries"), "under the toggle");
    h.keys(&[KeyCode::Char('v')]).await;
    let screen = h.screen(200, 50);
    for words in [
        "Refresh template 1 workspace",
        "ember (agents): Suspended, stored epoch 1 → carries 1 (keeps holder epoch 1)",
        "refresh from SandboxTemplate coder: pod-template hash sha256:8eff45f844d4… → sha256:368a7e2b5d85…",
        "runtimeClassName gvisor (the hosts' overlay or the template's own: the same either way)",
        r#"spec.containers[0].image: "ghcr.io/namzu/agent:1.3.0" → "ghcr.io/namzu/agent:1.4.2""#,
        r#"{"op": "add", "path": "/spec/podTemplate""#,
        "[ Refresh template ]",
    ] {
        assert!(screen.contains(words), "{words:?} not in\n{screen}");
    }
    assert!(
        h.t.sim.requests().iter().all(|r| r.method != "PATCH"),
        "a preview sends nothing"
    );
    let key = WorkspaceKey::new(Some("namzu-sim"), "agents", "ember");
    let Some(namzu_tui::app::Popup::Confirm(c)) = h.app.popups.last() else {
        panic!("no confirmation")
    };
    let shown = match &c.previews[&key] {
        namzu_engine::cluster::write::Outcome::DryRun { request, .. } => request.body.clone(),
        other => panic!("{other:?}"),
    };
    h.keys(&[KeyCode::Tab, KeyCode::Enter]).await;
    let sent: Vec<_> = h.t.sim.requests().into_iter().filter(|r| r.method == "PATCH").collect();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].body.as_ref(), Some(&shown), "what was shown is what was sent");
    let ember = h.t.sim.get(&SANDBOXES, "agents", "namzu-ws-ember").unwrap();
    assert_eq!(
        ember["spec"]["podTemplate"]["spec"]["containers"][0]["image"],
        "ghcr.io/namzu/agent:1.4.2"
    );
    let note = &h.app.notes[&key];
    assert!(note.ok && note.text.starts_with("resumed"), "{note:?}");

    // marked rows: each previewed and refused or written on its own
    let mut h = harness(quick_demo().await, false, false).await;
    h.t.sim.clear_requests();
    let down = [KeyCode::Down; 5];
    h.keys(&down).await;
    h.keys(&[KeyCode::Char(' '), KeyCode::Char(' '), KeyCode::Char('F')])
        .await;
    let screen = h.screen(200, 50);
    assert!(screen.contains("Refresh template 2 workspaces"), "{screen}");
    assert!(
        screen.contains(r#"flint (agents): refused: SandboxTemplate builder declares the disk "build-cache", which the Sandbox lacks"#),
        "{screen}"
    );
    h.keys(&[KeyCode::Tab, KeyCode::Enter]).await;
    let sent: Vec<_> = h.t.sim.requests().into_iter().filter(|r| r.method == "PATCH").collect();
    assert_eq!(sent.len(), 1, "flint is never sent");
    assert!(sent[0].path.ends_with("/namzu-ws-ember"));
    let flint = &h.app.notes[&WorkspaceKey::new(Some("namzu-sim"), "agents", "flint")];
    assert!(!flint.ok && flint.text.contains("CEL-immutable"), "{flint:?}");

    // read-only: no dialog, the reason on the status line
    let mut ro = harness(start_demo().await, false, true).await;
    ro.keys(&[KeyCode::Char('F')]).await;
    assert!(ro.app.popups.is_empty());
    assert_eq!(
        ro.app.status,
        "resume is disabled: read-only mode (--read-only or KUBECTL_NAMZU_READ_ONLY)"
    );
}

/// `:leaks` lists what `kubectl namzu leaks` lists for the namespaces in view, each with its
/// reason and next step, read-only; `u` shows the CPU, MEM and DISK columns; a bulk confirmation
/// ends with the CLI's what-if line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaks_view_resource_columns_and_the_bulk_what_if() {
    let mut h = harness(start_demo().await, true, false).await;
    let cli: Vec<serde_json::Value> =
        serde_json::from_str(&out(&namzu(&h.t, &["leaks", "-A", "-o", "json"]).await)).unwrap();
    assert!(cli.len() > 2, "{cli:#?}");
    h.t.sim.clear_requests();
    h.keys(&[KeyCode::Char(':')]).await;
    h.type_text("leaks").await;
    h.keys(&[KeyCode::Enter]).await;
    let screen = h.screen(200, 120);
    for leak in &cli {
        let line = format!(
            "{}  {}/{}  {}",
            leak["kind"].as_str().unwrap(),
            leak["namespace"].as_str().unwrap(),
            leak["name"].as_str().unwrap(),
            leak["leak"].as_str().unwrap()
        );
        assert!(screen.contains(&line), "{line}\n{screen}");
        assert!(
            screen.contains(&format!("next: {}", leak["next"].as_str().unwrap())),
            "{screen}"
        );
    }
    assert!(
        screen.contains("Space marks, D deletes the marked (or the one under ›) as kubectl namzu leaks --delete does"),
        "{screen}"
    );
    snap("leaks_view", &h.screen(120, 40));
    // it scrolls as the other popups do, and closes
    h.keys(&[KeyCode::Char('G')]).await;
    h.keys(&[KeyCode::Esc]).await;
    assert!(h.app.popups.is_empty());
    // nothing was written: LISTs only
    let sent: Vec<String> =
        h.t.sim
            .requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
    assert!(sent.iter().all(|r| r.starts_with("GET ")), "{sent:?}");

    // u: the CPU, MEM and DISK columns, and back
    let header = |h: &Harness| h.screen(200, 10).lines().nth(3).unwrap_or_default().to_string();
    assert!(!header(&h).contains(" CPU"), "{}", header(&h));
    h.keys(&[KeyCode::Char('u')]).await;
    let on = h.screen(200, 30);
    assert!(
        on.contains(" CPU") && on.contains(" MEM") && on.contains(" DISK"),
        "{on}"
    );
    assert!(on.contains("250m") && on.contains("10Gi"), "{on}");
    snap("resource_columns", &h.screen(140, 16));
    h.keys(&[KeyCode::Char('u')]).await;
    assert!(!header(&h).contains(" CPU"), "{}", header(&h));

    // a bulk suspend's confirmation ends with what the CLI's bulk dry run says it would free
    let o = namzu(&h.t, &["suspend", "-n", "agents", "--state", "Running", "--dry-run"]).await;
    let what_if = out(&o).lines().last().unwrap_or_default().to_string();
    assert!(what_if.starts_with("would free "), "{}", out(&o));
    h.keys(&[KeyCode::Char('/')]).await;
    h.type_text("ns:agents state:Running").await;
    h.keys(&[KeyCode::Enter]).await;
    let running = h.app.visible().len();
    assert!(running > 1);
    for _ in 0..running {
        h.keys(&[KeyCode::Char(' ')]).await;
    }
    h.keys(&[KeyCode::Char('S')]).await;
    let screen = h.screen(220, 120);
    assert!(screen.contains(&what_if), "{what_if}\n{screen}");
    snap("confirm_bulk_suspend_what_if", &h.screen(120, 40));
}

/// The shell (`s`) is a write for the safety rules, as `exec` is: refused where the context is
/// read-only; where it asks for typed ids, opened only once the row's id is typed (`:shell ID`,
/// which `s` opens), and a wrong id opens nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shell_is_a_write_for_the_safety_rules() {
    let mut ro = harness(quick_small().await, true, true).await;
    ro.filter("awake").await;
    ro.keys(&[KeyCode::Char('s')]).await;
    assert!(ro.app.shell.is_none());
    assert!(
        ro.app
            .status
            .starts_with("shell is disabled: read-only mode (--read-only"),
        "{}",
        ro.app.status
    );

    let mut h = fleet(production(), Default::default(), Vec::new()).await;
    h.filter("ctx:prod* awake").await;
    assert_eq!(h.selected_context(), "prod-eu-west");
    h.keys(&[KeyCode::Char('s')]).await;
    assert!(h.app.shell.is_none());
    assert!(
        h.app.status.contains("asks for the id typed (confirm: typed)"),
        "{}",
        h.app.status
    );
    assert_eq!(h.app.view.command.as_deref(), Some("shell "));
    h.type_text("asleep").await;
    h.keys(&[KeyCode::Enter]).await;
    assert!(h.app.shell.is_none());
    assert!(h.app.status.contains("typed \"asleep\", not awake"), "{}", h.app.status);
    h.keys(&[KeyCode::Char(':')]).await;
    h.type_text("shell awake").await;
    h.keys(&[KeyCode::Enter]).await;
    let argv = h.app.shell.clone().expect("the shell opens once the id is typed");
    assert!(argv.contains(&"namzu-ws-awake".to_string()), "{argv:?}");
    // staging asks nothing
    h.app.shell = None;
    h.keys(&[KeyCode::Char(':')]).await;
    h.type_text("filter ctx:stag* awake").await;
    h.keys(&[KeyCode::Enter]).await;
    h.keys(&[KeyCode::Char('s')]).await;
    assert!(h.app.shell.is_some(), "{}", h.app.status);
}

/// While a shell has the terminal the UI goes on applying what arrives (watch events replace
/// their rows), instead of queueing every event until the shell ends: a refresh sent during the
/// shell reaches the server before the shell ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_arrives_while_a_shell_runs_is_applied_not_queued() {
    let mut h = harness(start_demo().await, false, false).await;
    h.filter("alpha").await;
    let Harness { t, io, mut app, .. } = h;
    let (tx, rx) = unbounded_channel();
    let keys = tx.clone();
    let probe = tx.clone();
    let key = |code| Action::Key(KeyEvent::new(code, KeyModifiers::NONE));
    let driver = tokio::spawn(async move {
        let sim = &t.sim;
        let mut term = Terminal::new(TestBackend::new(100, 30)).unwrap();
        let mut shell = move |_: &[String], _: &str| {
            // the shell is open: the detail pane is asked for (no watch reads the one Sandbox by
            // name); the read reaches the server only if the key is applied
            let detail_reads = || {
                sim.requests()
                    .iter()
                    .filter(|r| r.method == "GET" && r.path.ends_with("/sandboxes/namzu-ws-alpha"))
                    .count()
            };
            let before = detail_reads();
            probe.send(key(KeyCode::Enter)).unwrap();
            let ended = if holds_within(Duration::from_secs(10), || detail_reads() > before) {
                "applied during the shell"
            } else {
                "queued until the shell ended"
            };
            // the detail pane closed, the UI quits
            probe.send(key(KeyCode::Esc)).unwrap();
            probe.send(key(KeyCode::Char('q'))).unwrap();
            Ok(ended.to_string())
        };
        namzu_tui::event_loop(&mut term, &mut app, io, tx, rx, Theme { colour: false }, &mut shell)
            .await
            .map(|_| app)
    });
    keys.send(key(KeyCode::Char('s'))).unwrap();
    let app = tokio::time::timeout(Duration::from_secs(30), driver)
        .await
        .expect("the shell ends and the UI quits")
        .unwrap()
        .unwrap();
    assert_eq!(app.status, "applied during the shell");
}

/// The leaks view deletes through `leaks --delete`'s own use case: the cursor's leak (or the
/// marked ones), the same plan and rules, a typed count, the re-check, the tombstone; a look-alike
/// in use is refused with its reason, a wrong count sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leaks_view_deletes_through_the_same_use_case() {
    let mut h = harness(start_demo().await, true, false).await;
    h.keys(&[KeyCode::Char(':')]).await;
    h.type_text("leaks").await;
    h.keys(&[KeyCode::Enter]).await;
    // the first leak listed is the ghost's orphaned disk: under the cursor
    assert!(
        h.screen(200, 60)
            .contains("› PersistentVolumeClaim  agents/workspace-disk-namzu-ws-ghost"),
        "{}",
        h.screen(200, 60)
    );
    h.keys(&[KeyCode::Char('D')]).await;
    assert!(h.app.status.contains("type \"delete 1\""), "{}", h.app.status);
    assert!(
        h.screen(200, 60)
            .contains("1 disk in context namzu-sim would be deleted"),
        "{}",
        h.screen(200, 60)
    );
    // a wrong count: nothing sent
    h.t.sim.clear_requests();
    h.type_text("delete 2").await;
    h.keys(&[KeyCode::Enter]).await;
    assert!(
        h.t.sim.requests().iter().all(|r| r.method != "DELETE"),
        "{}",
        h.app.status
    );
    assert!(h.app.status.contains("cancelled"), "{}", h.app.status);
    assert!(
        h.t.sim
            .get(&namzu_sim::resources::PVCS, "agents", "workspace-disk-namzu-ws-ghost")
            .is_some()
    );
    // the right count: deleted, re-checked and tombstoned as the CLI does
    h.keys(&[KeyCode::Char('D')]).await;
    h.type_text("delete 1").await;
    h.keys(&[KeyCode::Enter]).await;
    assert!(h.app.status.contains("deleted"), "{}", h.app.status);
    assert!(
        h.t.sim
            .get(&namzu_sim::resources::PVCS, "agents", "workspace-disk-namzu-ws-ghost")
            .is_none()
    );
    let stones = std::fs::read_dir(h.t.dir.path().join("tombstones")).unwrap().count();
    assert_eq!(stones, 1, "a tombstone for restore");
    // a look-alike in use under the cursor: refused with its reason, nothing asked
    let screen = h.screen(200, 80);
    let lines: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains("  agents/") || l.contains("  research/") || l.contains("  staging/"))
        .collect();
    let in_use = lines
        .iter()
        .position(|l| l.contains(" in-use"))
        .expect("wren's policy is listed in use");
    for _ in 0..in_use {
        h.keys(&[KeyCode::Down]).await;
    }
    h.keys(&[KeyCode::Char('D')]).await;
    assert!(
        h.app.status.contains("in use") && h.app.status.contains("not deleted"),
        "{}",
        h.app.status
    );
}

/// `Y` copies the row's next-step command — named for its context, so a paste acts on that
/// cluster — else its id; the status says what was copied (OSC 52).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn y_copies_the_rows_command_with_its_context() {
    let mut h = harness(start_demo().await, false, false).await;
    h.filter("juliet").await;
    h.keys(&[KeyCode::Char('Y')]).await;
    assert!(
        h.app
            .status
            .contains("kubectl delete pod namzu-ws-juliet --grace-period=0 --force -n agents --context namzu-sim"),
        "{}",
        h.app.status
    );
    h.keys(&[KeyCode::Char(':')]).await;
    h.type_text("filter alpha").await;
    h.keys(&[KeyCode::Enter]).await;
    h.keys(&[KeyCode::Char('Y')]).await;
    assert!(
        h.app.status.ends_with(": alpha"),
        "no command: the id ({})",
        h.app.status
    );
}

/// `f` forwards a free local port to the row's own pod in the background: the status line says
/// where it listens and which pod answers; a connection there is answered by the workspace's
/// pod; the forward stops when the TUI quits (its I/O goes). Read-only refuses it, as `s`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f_forwards_a_port_to_the_rows_own_pod_until_the_tui_quits() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut ro = harness(quick_demo().await, false, true).await;
    ro.filter("alpha").await;
    ro.keys(&[KeyCode::Char('f')]).await;
    assert!(
        ro.app
            .status
            .starts_with("port-forward is disabled: read-only mode (--read-only"),
        "{}",
        ro.app.status
    );

    let mut h = harness(quick_demo().await, false, false).await;
    h.filter("alpha").await;
    let effects = update(
        &mut h.app,
        Action::Key(KeyEvent::new(KeyCode::Char('f'), KeyModifiers::NONE)),
    );
    assert!(
        matches!(effects.as_slice(), [Effect::Forward(k)] if k.id == "alpha"),
        "{effects:?}"
    );
    let (tx, mut rx) = unbounded_channel();
    for e in effects {
        h.io.perform(e, tx.clone()).await;
    }
    let mut news = async || match tokio::time::timeout(Duration::from_secs(20), rx.recv()).await {
        Ok(Some(Action::Forwarding(line))) => line,
        other => panic!("no news of the forward: {other:?}"),
    };
    let first = news().await;
    update(&mut h.app, Action::Forwarding(first.clone()));
    assert!(
        h.app.status.starts_with("alpha: forwarding 127.0.0.1:"),
        "{}",
        h.app.status
    );
    let local = first
        .strip_prefix("alpha: forwarding ")
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .to_string();
    let mut s = tokio::net::TcpStream::connect(&local).await.unwrap();
    s.write_all(b"who\n").await.unwrap();
    let mut line = String::new();
    tokio::io::BufReader::new(&mut s).read_line(&mut line).await.unwrap();
    let pod =
        h.t.sim
            .get(&namzu_sim::resources::PODS, "agents", "namzu-ws-alpha")
            .unwrap();
    let uid = pod["metadata"]["uid"].as_str().unwrap();
    assert_eq!(line, format!("pod namzu-ws-alpha uid {uid}\n"));
    let target = news().await;
    assert!(
        target.starts_with(&format!(
            "alpha: forwarding {local} → pod namzu-ws-alpha (uid {uid}) port 8080"
        )),
        "{target}"
    );
    // the UI quits: its I/O goes, and the forward with it
    drop(s);
    let Harness { io, .. } = h;
    drop(io);
    let start = std::time::Instant::now();
    while tokio::net::TcpStream::connect(&local).await.is_ok() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the forward outlived the TUI"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
