//! The live inventory against the sim: the TUI's state follows watches — another client's change,
//! a delete, a re-create, a 410 resync, a dropped watch, a server that goes away and comes back,
//! a user who may not watch — and nothing is re-listed while the watches are healthy.

use crate::support::*;
use namzu_clock::NOW_ENV;
use namzu_domain::workspace::Workspace;
use namzu_engine::cluster::inventory::Scope;
use namzu_engine::cluster::live::{LiveOptions, StreamStatus};
use namzu_sim::TEST_START;
use namzu_sim::auth::{Rule, User};
use namzu_sim::resources::{PODS, SANDBOXES};
use namzu_tui::action::{Action, Effect};
use namzu_tui::app::{App, AppOptions, update};
use namzu_tui::io::Io;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

struct Live {
    app: App,
    actions: UnboundedReceiver<Action>,
    _io: Arc<Io>,
}

/// Probes and backoff fast enough for a test to see them; the protocol is the product's.
fn quick() -> LiveOptions {
    LiveOptions {
        poll_every: Duration::from_millis(200),
        probe_every: Duration::from_millis(200),
        watch_seconds: 290,
        ..Default::default()
    }
}

async fn follow(t: &TestSim, kubeconfig: &std::path::Path, all: bool) -> Live {
    let mut live = start_following(t, kubeconfig, all).await;
    live.until("the first full screen", |a| a.contexts[0].loaded_at.is_some())
        .await;
    live
}

/// The TUI's follow started, nothing applied yet.
async fn start_following(t: &TestSim, kubeconfig: &std::path::Path, all: bool) -> Live {
    let conn = connect(t, kubeconfig, None, Duration::from_secs(2)).await;
    let app = App::new(AppOptions {
        contexts: vec![context_options(&conn, Default::default())],
        several_contexts: false,
        namespace: "agents".into(),
        all_namespaces: all,
        read_only: true,
        now: t.sim.now(),
    });
    let io = Arc::new(tui_io(vec![(conn, policy(true, Default::default()))], quick()));
    let (tx, actions) = unbounded_channel();
    let follower = io.clone();
    let mut live = Live { app, actions, _io: io };
    let follow = live.app.start().remove(0);
    let Effect::Follow { scope, .. } = &follow else {
        panic!("a live app starts by following its scope");
    };
    assert_eq!(scope, &live.app.scope);
    tokio::spawn(async move { follower.perform(follow, tx).await });
    live
}

impl Live {
    /// Apply what arrives until `done` holds (bounded, generously for a loaded machine: the
    /// state on failure).
    async fn until(&mut self, what: &str, done: impl Fn(&App) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !done(&self.app) {
            match tokio::time::timeout_at(deadline, self.actions.recv()).await {
                Ok(Some(action)) => {
                    update(&mut self.app, action);
                }
                _ => panic!(
                    "never saw {what}: rows {:?}, streams {:?}, error {:?}",
                    self.app.inventory.rows().iter().map(|w| &w.id).collect::<Vec<_>>(),
                    self.app.contexts[0].streams,
                    self.app.contexts[0].refresh_error
                ),
            }
        }
    }

    fn row(&self, id: &str) -> Option<&Workspace> {
        self.app.inventory.rows().iter().map(|w| &**w).find(|w| w.id == id)
    }

    fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.app.inventory.rows().iter().map(|w| w.id.clone()).collect();
        ids.sort();
        ids
    }
}

fn epoch(w: Option<&Workspace>) -> Option<u64> {
    w.and_then(|w| w.epoch.epoch)
}

fn lists(t: &TestSim) -> usize {
    t.sim
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && !r.query.contains("watch=") && r.path.contains("sandboxes"))
        .count()
}

fn set_epoch(t: &TestSim, id: &str, epoch: &str) {
    t.sim.modify(&SANDBOXES, "agents", &format!("namzu-ws-{id}"), |o| {
        o["metadata"]["annotations"]["sandbox.namzu.ai/holder-epoch"] = serde_json::json!(epoch);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_clients_change_reaches_the_rows_without_a_relist() {
    let t = start().await;
    let mut live = follow(&t, t.sim.kubeconfig(), false).await;
    assert_eq!(live.ids(), ["asleep", "awake", "owned"]);
    let first = t.sim.requests();
    assert!(
        first.iter().any(|r| r.query.contains("sendInitialEvents=true")),
        "a streaming list where the server serves one"
    );
    t.sim.clear_requests();
    set_epoch(&t, "awake", "9");
    live.until("the new epoch", |a| {
        epoch(a.inventory.rows().iter().map(|w| &**w).find(|w| w.id == "awake")) == Some(9)
    })
    .await;
    assert_eq!(lists(&t), 0, "no LIST while the watches are healthy");
    // a pod change derives the row again too
    t.sim.modify(&PODS, "agents", "namzu-ws-awake", |p| {
        p["status"]["phase"] = serde_json::json!("Failed");
    });
    live.until("the pod's failure", |a| {
        a.inventory
            .rows()
            .iter()
            .any(|w| w.id == "awake" && w.state.as_str() == "Failed")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_recreated_and_resynced_rows_have_no_ghosts_or_twins() {
    let t = start().await;
    let mut live = follow(&t, t.sim.kubeconfig(), false).await;
    let sandbox = t.sim.get(&SANDBOXES, "agents", "namzu-ws-asleep").unwrap();
    t.sim.delete(&SANDBOXES, "agents", "namzu-ws-asleep");
    live.until("the delete", |a| a.inventory.rows().len() == 2).await;
    assert!(live.row("asleep").is_none());

    // re-created under the same name: a new uid replaces the row
    let mut again = sandbox.clone();
    for k in ["uid", "resourceVersion", "creationTimestamp"] {
        again["metadata"].as_object_mut().unwrap().remove(k);
    }
    t.sim.create(&SANDBOXES, again).unwrap();
    let old_uid = sandbox["metadata"]["uid"].as_str().unwrap().to_string();
    live.until("the new workspace", |a| {
        a.inventory
            .rows()
            .iter()
            .any(|w| w.id == "asleep" && w.uid.as_deref() != Some(old_uid.as_str()))
    })
    .await;

    // history expired while a change and a delete happen: the watch gets 410 and lists again
    t.sim.expire_watches();
    set_epoch(&t, "awake", "5");
    t.sim.delete(&SANDBOXES, "agents", "namzu-ws-owned");
    live.until("the resync", |a| {
        a.inventory.rows().len() == 2
            && epoch(a.inventory.rows().iter().map(|w| &**w).find(|w| w.id == "awake")) == Some(5)
    })
    .await;
    assert_eq!(live.ids(), ["asleep", "awake"], "no ghost, no duplicate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_watch_reconnects_by_itself() {
    let t = start().await;
    let mut live = follow(&t, t.sim.kubeconfig(), false).await;
    t.sim.close_watches();
    set_epoch(&t, "awake", "4");
    live.until("the change after the watch was cut", |a| {
        epoch(a.inventory.rows().iter().map(|w| &**w).find(|w| w.id == "awake")) == Some(4)
    })
    .await;
    assert!(
        live.app.contexts[0].streams.values().all(|s| *s == StreamStatus::Live),
        "{:?}",
        live.app.contexts[0].streams
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_goes_away_shows_reconnecting_keeps_the_rows_and_comes_back() {
    let mut t = start().await;
    let mut live = follow(&t, t.sim.kubeconfig(), false).await;
    t.sim.stop().await;
    live.until("reconnecting", |a| a.contexts[0].stale_since().is_some())
        .await;
    assert_eq!(live.ids(), ["asleep", "awake", "owned"], "the last good rows stay");
    // changed while the client could not see it
    set_epoch(&t, "awake", "6");
    t.sim.restart().await.unwrap();
    live.until("live again with the change", |a| {
        a.contexts[0].stale_since().is_none()
            && epoch(a.inventory.rows().iter().map(|w| &**w).find(|w| w.id == "awake")) == Some(6)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_server_shows_reconnecting() {
    use namzu_sim::faults::{Fault, FaultAction};
    let t = start().await;
    let mut live = follow(&t, t.sim.kubeconfig(), false).await;
    t.sim.add_fault(Fault::new(None, "/version", FaultAction::Hang));
    live.until("reconnecting", |a| a.contexts[0].stale_since().is_some())
        .await;
    assert_eq!(live.ids(), ["asleep", "awake", "owned"]);
    t.sim.clear_faults();
    live.until("live again", |a| a.contexts[0].stale_since().is_none())
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_who_may_not_watch_gets_a_relist_with_one_warning() {
    let t = start_with(SMALL, |c| {
        c.users = vec![User::with_rules(
            "lister",
            "t-lister",
            vec![
                Rule::new(&["get", "list"], &["*"], &["*"], &[]),
                Rule::new(
                    &["watch"],
                    &["*"],
                    &[
                        "pods",
                        "persistentvolumeclaims",
                        "sandboxtemplates",
                        "ciliumnetworkpolicies",
                    ],
                    &[],
                ),
            ],
        )];
    })
    .await;
    let mut live = follow(&t, t.sim.kubeconfig(), false).await;
    assert_eq!(live.ids(), ["asleep", "awake", "owned"]);
    let warnings = live.app.contexts[0].warnings.clone();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("may not watch sandboxes") && warnings[0].contains("needs RBAC watch"));
    set_epoch(&t, "awake", "3");
    live.until("the change by re-list", |a| {
        epoch(a.inventory.rows().iter().map(|w| &**w).find(|w| w.id == "awake")) == Some(3)
    })
    .await;
    assert_eq!(live.app.contexts[0].warnings.len(), 1, "the warning is said once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_streaming_lists_gets_a_list_then_a_watch() {
    let t = start().await;
    t.sim.set_watch_list(false);
    let mut live = follow(&t, t.sim.kubeconfig(), true).await;
    assert_eq!(live.ids(), ["asleep", "awake", "owned"]);
    assert!(lists(&t) >= 1, "the fallback LIST");
    set_epoch(&t, "owned", "12");
    live.until("the change", |a| {
        epoch(a.inventory.rows().iter().map(|w| &**w).find(|w| w.id == "owned")) == Some(12)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_change_recomputes_drift() {
    use namzu_domain::drift::DriftState;
    use namzu_sim::resources::TEMPLATES;
    let t = start_demo().await;
    let mut live = follow(&t, t.sim.kubeconfig(), false).await;
    let before = live.row("alpha").unwrap().drift.state;
    assert_eq!(before, DriftState::Current);
    t.sim.modify(&TEMPLATES, "agents", "coder", |o| {
        o["spec"]["podTemplate"]["spec"]["containers"][0]["image"] = serde_json::json!("ghcr.io/x/agent:2.0");
    });
    live.until("drift", |a| {
        a.inventory
            .rows()
            .iter()
            .any(|w| w.id == "alpha" && w.drift.state == DriftState::Drifted)
    })
    .await;
}

/// The real binary's `list -w` in namespace agents with `args`, and its stdout line by line.
fn list_watch(t: &TestSim, args: &[&str]) -> (std::process::Child, tokio::sync::mpsc::UnboundedReceiver<String>) {
    use std::process::Stdio;
    let mut child = bin(&t.home())
        .args(["--kubeconfig", t.sim.kubeconfig().to_str().unwrap(), "-n", "agents"])
        .args(args)
        .env(NOW_ENV, TEST_START)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = stdout_lines_async(&mut child);
    (child, lines)
}

/// The next line of a `list -w -o json` (bounded), which must be one JSON object.
async fn next_event(lines: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> serde_json::Value {
    let line = tokio::time::timeout(Duration::from_secs(10), lines.recv())
        .await
        .expect("a line in time")
        .expect("stdout open");
    serde_json::from_str(&line).expect("one JSON object per line")
}

/// `list -w -o json`: the list, then one JSON object per line per change; Ctrl-C exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_watch_prints_one_json_line_per_change_and_ctrl_c_exits_0() {
    let t = start().await;
    let (child, mut lines) = list_watch(&t, &["list", "-w", "-o", "json", "--output-watch-events"]);
    let mut next = async || next_event(&mut lines).await;
    for id in ["asleep", "awake", "owned"] {
        let event = next().await;
        assert_eq!(
            (event["type"].as_str(), event["object"]["id"].as_str()),
            (Some("ADDED"), Some(id))
        );
    }
    set_epoch(&t, "awake", "21");
    let changed = next().await;
    assert_eq!(changed["type"], "MODIFIED");
    assert_eq!(changed["object"]["id"], "awake");
    assert_eq!(changed["object"]["holderEpoch"]["value"], 21, "{changed}");
    t.sim.delete(&SANDBOXES, "agents", "namzu-ws-owned");
    // its pod may go first on its own watch (a MODIFIED row); then the workspace itself
    let deleted = loop {
        let event = next().await;
        assert_eq!(event["object"]["id"], "owned", "{event}");
        if event["type"] == "DELETED" {
            break event;
        }
    };
    assert_eq!(deleted["object"]["sandboxName"], "namzu-ws-owned");
    let status = interrupt(child).await;
    assert_eq!(status.code(), Some(0), "Ctrl-C ends a watch with exit 0");
}

/// The live mirror derives every row of the demo exactly as the one-shot inventory pass does:
/// diagnoses (foreign pod, foreign disk, foreign egress policy …), drift, readiness.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_rows_equal_the_one_shot_inventory_on_the_demo() {
    use namzu_engine::cluster::inventory::{self, Query};
    let t = start_demo().await;
    let live = follow(&t, t.sim.kubeconfig(), true).await;
    let conn = connect(&t, t.sim.kubeconfig(), None, Duration::from_secs(5)).await;
    let once = inventory::read(&conn, &Scope::All, &Query::default()).await.unwrap();
    let mut expected = once.workspaces(&Default::default(), t.sim.now());
    // the UI names each row after its context; the inventory's rows are the same otherwise
    for w in &mut expected {
        w.context = Some(conn.context.clone());
    }
    let mut rows: Vec<Workspace> = live.app.inventory.rows().iter().map(|w| (**w).clone()).collect();
    let key = |w: &Workspace| (w.namespace.clone(), w.id.clone());
    expected.sort_by_key(key);
    rows.sort_by_key(key);
    assert_eq!(rows.len(), expected.len());
    for (l, o) in rows.iter().zip(&expected) {
        assert_eq!(l, o, "{} differs", o.id);
    }
}

/// A per-sandbox policy left by an earlier workspace is diagnosed live, and its removal clears it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_egress_policy_comes_and_goes_with_the_watch() {
    use namzu_sim::resources::CILIUM_POLICIES;
    let t = start_demo().await;
    let mut live = follow(&t, t.sim.kubeconfig(), false).await;
    let diagnosis = |a: &App| {
        a.inventory
            .rows()
            .iter()
            .find(|w| w.id == "wren")
            .and_then(|w| w.diagnosis.as_ref().map(|d| d.kind.as_str().to_string()))
    };
    assert_eq!(diagnosis(&live.app).as_deref(), Some("foreign-egress-policy"));
    let foreign: Vec<String> = t
        .sim
        .list(&CILIUM_POLICIES, Some("agents"))
        .iter()
        .filter(|p| {
            p["metadata"]["ownerReferences"].as_array().is_none_or(|o| {
                !o.iter()
                    .any(|r| r["uid"] == t.sim.get(&SANDBOXES, "agents", "namzu-ws-wren").unwrap()["metadata"]["uid"])
            })
        })
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(!foreign.is_empty());
    for name in foreign {
        t.sim.delete(&CILIUM_POLICIES, "agents", &name);
    }
    live.until("the diagnosis to clear", |a| {
        diagnosis(a).as_deref() != Some("foreign-egress-policy")
    })
    .await;
}

/// A cluster without the SandboxTemplate kind (agent-sandbox without its extensions): the first
/// screen still comes, and every workspace's template reads as missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_template_kind_the_first_screen_still_comes() {
    use namzu_domain::drift::DriftState;
    use namzu_sim::faults::Fault;
    let t = start().await;
    t.sim.add_fault(Fault::status(
        Some("GET"),
        "*/sandboxtemplates",
        404,
        "the server could not find the requested resource",
    ));
    let live = follow(&t, t.sim.kubeconfig(), false).await;
    assert_eq!(live.ids(), ["asleep", "awake", "owned"]);
    assert!(
        live.app
            .inventory
            .rows()
            .iter()
            .all(|w| w.drift.state == DriftState::NoTemplate),
        "{:?}",
        live.app
            .inventory
            .rows()
            .iter()
            .map(|w| w.drift.state)
            .collect::<Vec<_>>()
    );
}

/// `list -w` with a filter behaves as a watch with a selector: a workspace that comes to match
/// is ADDED, one that stops matching is DELETED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_watch_with_a_filter_adds_and_deletes_as_rows_enter_and_leave_it() {
    let t = start().await;
    let (child, mut lines) = list_watch(
        &t,
        &["list", "-w", "-o", "json", "--output-watch-events", "--state", "Failed"],
    );
    let mut next = async || next_event(&mut lines).await;
    let phase = |p: &'static str| {
        t.sim.modify(&PODS, "agents", "namzu-ws-awake", |pod| {
            pod["status"]["phase"] = serde_json::json!(p);
        });
    };
    phase("Failed");
    let added = next().await;
    assert_eq!(
        (added["type"].as_str(), added["object"]["id"].as_str()),
        (Some("ADDED"), Some("awake"))
    );
    phase("Running");
    // the controller may move the row more than once on its way back (MODIFIED while Failed)
    loop {
        let event = next().await;
        assert_eq!(event["object"]["id"], "awake", "{event}");
        if event["type"] == "DELETED" {
            assert_ne!(event["object"]["state"], "Failed", "it left the filter: {event}");
            break;
        }
        assert_eq!(event["type"], "MODIFIED", "{event}");
    }
    let status = interrupt(child).await;
    assert_eq!(status.code(), Some(0));
}

/// `-A` for a user who may read workspaces only namespace by namespace: Sandboxes are watched in
/// each namespace, the other kinds only where workspaces are — not in every namespace there is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_namespace_fallback_watches_pods_only_where_workspaces_are() {
    let t = start_with(SMALL, |c| {
        c.users = vec![User::with_rules(
            "tenant",
            "t-tenant",
            vec![
                Rule::new(&["get", "list", "watch"], &["*"], &["*"], &["agents"]),
                Rule::new(&["list"], &[""], &["namespaces"], &[]),
                Rule::new(&["create"], &["*"], &["selfsubjectaccessreviews"], &[]),
            ],
        )];
    })
    .await;
    let live = follow(&t, t.sim.kubeconfig(), true).await;
    assert_eq!(live.ids(), ["asleep", "awake", "owned"]);
    let requests = t.sim.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.path.ends_with("/namespaces/default/sandboxes")),
        "Sandboxes in every namespace"
    );
    assert!(
        !requests.iter().any(|r| r.path.ends_with("/namespaces/default/pods")),
        "no pods where there are no workspaces"
    );
}

/// Rows on screen first (issue 34): the workspaces show as their Sandboxes arrive, before every
/// watch has its first state — marked loading, what has not arrived unknown (`?`), never
/// guessed — and in full once it has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_come_on_screen_before_the_full_state_marked_loading() {
    use namzu_domain::workspace::Observed;
    use namzu_sim::faults::{Fault, FaultAction};
    let t = start().await;
    // the pods' first state is held back (a slow server; the Sandboxes are not)
    t.sim
        .add_fault(Fault::new(Some("GET"), "/pods", FaultAction::Delay(Duration::from_secs(5))).times(1));
    let mut live = start_following(&t, t.sim.kubeconfig(), false).await;
    live.until("the workspaces before their pods", |a| a.inventory.rows().len() == 3)
        .await;
    assert!(
        live.app.contexts[0].loaded_at.is_none(),
        "the first full state is not in yet"
    );
    assert!(
        live.app
            .inventory
            .rows()
            .iter()
            .all(|w| matches!(w.pod, Observed::Forbidden)),
        "what the pods say is unknown while they load: {:?}",
        live.app.inventory.rows().iter().map(|w| &w.pod).collect::<Vec<_>>()
    );
    let screen = render(&live.app, 120, 8);
    assert!(screen.contains("loading… 3 so far"), "{screen}");
    // then the full state: the pods known, the header live
    live.until("the first full screen", |a| a.contexts[0].loaded_at.is_some())
        .await;
    assert_eq!(live.ids(), ["asleep", "awake", "owned"]);
    assert!(
        live.row("awake")
            .is_some_and(|w| matches!(w.pod, Observed::Known(Some(_)))),
        "{:?}",
        live.row("awake").map(|w| &w.pod)
    );
    assert!(render(&live.app, 120, 8).contains("● live"));
}

fn render(app: &App, w: u16, h: u16) -> String {
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    term.draw(|f| namzu_tui::view::render(f, app, namzu_tui::view::Theme { colour: false }))
        .unwrap();
    let buf = term.backend().buffer().clone();
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A cluster without Cilium: the policies' watch has nothing to watch; the header says the
/// others are live and leaves it out (it once indexed past the header's words).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_not_served_is_left_out_of_the_live_header() {
    let t = start_with(SMALL, |c| c.cilium = false).await;
    let mut live = follow(&t, t.sim.kubeconfig(), false).await;
    live.until("the policies' watch says it has nothing to watch", |a| {
        a.contexts[0].streams.values().any(|s| *s == StreamStatus::NotServed)
    })
    .await;
    let screen = render(&live.app, 200, 6);
    assert!(screen.contains("● live: pods in agents"), "{screen}");
    assert!(!screen.contains("policies"), "{screen}");
}
