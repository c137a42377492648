//! `update` alone: keys and answers in, state and effects out; no server, no terminal.

use super::*;
use namzu_domain::drift::{OverlayFlags, TemplateRead};
use namzu_domain::fence::{Change, EpochChoice, EpochUse};
use namzu_domain::patch::Mode;
use namzu_domain::workspace::{Inputs, Observed, derive};
use namzu_engine::cluster::write::Request;
use ratatui::crossterm::event::KeyModifiers;
use serde_json::json;

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-29T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

pub(super) fn row(id: &str, mode: &str) -> Workspace {
    let sandbox = json!({"metadata": {"name": format!("namzu-ws-{id}"), "namespace": "ns", "uid": format!("uid-{id}")},
        "spec": {"operatingMode": mode, "podTemplate": {"metadata": {"labels": {"sandbox.namzu.ai/template": "t"}}}}});
    derive(&Inputs {
        sandbox: &sandbox,
        pods: Observed::Forbidden,
        pvcs: Observed::Forbidden,
        policies: namzu_domain::egress::PolicyRead::NotServed,
        template: TemplateRead::NotFound,
        flags: &OverlayFlags::default(),
        now: now(),
    })
}

/// One context `name` in namespace `ns`, as `App::new` opens it (nothing read yet).
pub(super) fn one_context(name: &str, ns: &str, now: DateTime<Utc>) -> App {
    App::new(AppOptions {
        contexts: vec![ContextOptions {
            name: name.into(),
            namespace: ns.into(),
            ..Default::default()
        }],
        several_contexts: false,
        namespace: ns.into(),
        all_namespaces: false,
        read_only: false,
        now,
    })
}

fn app(read_only: bool) -> App {
    let mut app = App::new(AppOptions {
        contexts: vec![ContextOptions {
            name: "ctx".into(),
            server: "https://x".into(),
            ..Default::default()
        }],
        several_contexts: false,
        namespace: "ns".into(),
        all_namespaces: false,
        read_only,
        now: now(),
    });
    let effects = app.start();
    assert_eq!(effects.len(), 2, "the first follow and the access check");
    let rows = ["alpha", "bravo", "charlie"]
        .map(|id| RowChange::Upsert(Box::new(row(id, if id == "charlie" { "Suspended" } else { "Running" }))));
    live(&mut app, LiveEvent::Rows(rows.into()));
    live(
        &mut app,
        LiveEvent::Synced {
            namespaces: vec!["ns".into(), "other".into()],
        },
    );
    app
}

/// What the context's current follow reports, and the frame drawn after it.
fn live(app: &mut App, event: LiveEvent) -> Vec<Effect> {
    let action = Action::Live {
        context: "ctx".into(),
        scope: app.scope.clone(),
        generation: app.contexts[0].follow_generation,
        event,
    };
    let effects = update(app, action);
    app.settle();
    effects
}

fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
    update(app, Action::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn dry_run(id: &str) -> Outcome {
    Outcome::DryRun {
        request: Request {
            method: "PATCH",
            path: format!("/x/namzu-ws-{id}"),
            content_type: "application/json-patch+json",
            body: json!([]),
        },
        epoch: EpochUse {
            carried: 4,
            stored: Some(4),
            raw: Some("4".into()),
            unfenced: false,
        },
        change: Change::ModeChange,
        mode: Mode::Running,
        uid: Some(format!("uid-{id}")),
        per_sandbox_egress: false,
        refresh: None,
    }
}

/// The fresh read of `id` arrives for the open confirmation.
fn previewed(app: &mut App, id: &str) {
    let outcome = dry_run(id);
    let key = WorkspaceKey::new(Some("ctx"), "ns", id);
    update(
        app,
        Action::Preview {
            key,
            take_over: false,
            outcome,
        },
    );
}

#[test]
fn moving_marking_and_filtering() {
    let mut app = app(false);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char(' '));
    assert_eq!(
        app.view.marks.iter().map(|k| k.id.as_str()).collect::<Vec<_>>(),
        ["bravo"]
    );
    assert_eq!(app.view.selected, 2, "marking moves down");
    press(&mut app, KeyCode::Char('/'));
    for c in "char".chars() {
        press(&mut app, KeyCode::Char(c));
    }
    press(&mut app, KeyCode::Enter);
    assert_eq!((app.view.filter.as_str(), app.visible().len()), ("char", 1));
    press(&mut app, KeyCode::Esc);
    assert!(app.view.filter.is_empty());
}

#[test]
fn a_confirmed_suspend_carries_the_previewed_epoch_and_uid() {
    let mut app = app(false);
    let effects = press(&mut app, KeyCode::Char('S'));
    let [
        Effect::Preview {
            plan, take_over: false, ..
        },
    ] = effects.as_slice()
    else {
        panic!("{effects:?}")
    };
    assert!(plan.dry_run && plan.id.as_str() == "alpha");
    previewed(&mut app, "alpha");
    // focus starts on Cancel: Enter closes, nothing sent
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    assert!(app.popups.is_empty());
    press(&mut app, KeyCode::Char('S'));
    previewed(&mut app, "alpha");
    press(&mut app, KeyCode::Tab);
    let effects = press(&mut app, KeyCode::Enter);
    let [Effect::Writes { writes, wait: true, .. }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    let [(_, plan)] = writes.as_slice() else {
        panic!("{writes:?}")
    };
    assert_eq!(plan.epoch, EpochChoice::Explicit(4));
    assert_eq!(plan.expected_uid.as_deref(), Some("uid-alpha"));
    assert!(!plan.dry_run && app.popups.is_empty());
}

#[test]
fn a_delete_needs_the_id_typed_and_take_over_rereads() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char('D'));
    press(&mut app, KeyCode::Tab);
    assert!(
        press(&mut app, KeyCode::Enter).is_empty(),
        "nothing typed: nothing sent"
    );
    assert!(app.status.contains("type \"alpha\""), "{}", app.status);
    let effects = update(
        &mut app,
        Action::Key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL)),
    );
    assert!(matches!(effects.as_slice(), [Effect::Preview { take_over: true, .. }]));
    let Some(Popup::Confirm(c)) = app.popups.last() else {
        panic!()
    };
    assert!(c.take_over && c.typed.is_empty(), "Ctrl-T is not typed");
}

#[test]
fn read_only_and_rbac_disable_actions_with_the_reason() {
    let mut app = app(true);
    assert!(press(&mut app, KeyCode::Char('S')).is_empty());
    assert!(
        app.popups.is_empty() && app.status.contains("read-only"),
        "{}",
        app.status
    );
    let mut app = super::tests::app(false);
    let scope = app.scope.clone();
    update(
        &mut app,
        Action::Access {
            context: "ctx".into(),
            scope,
            patch: Some(true),
            delete: Some(false),
            namespaces: vec!["bad/ns".into(), "third".into()],
        },
    );
    assert!(press(&mut app, KeyCode::Char('D')).is_empty());
    assert!(app.status.contains("RBAC does not let you delete"), "{}", app.status);
    assert_eq!(
        app.inventory.namespaces,
        ["ns", "other", "third"],
        "an invalid namespace is never offered"
    );
}

#[test]
fn refreshes_and_failures_keep_the_last_good_rows() {
    let mut app = app(false);
    // the refresh key follows again, once at a time
    assert_eq!(press(&mut app, KeyCode::F(5)).len(), 1);
    assert!(press(&mut app, KeyCode::F(5)).is_empty(), "one refresh at a time");
    live(&mut app, LiveEvent::Failed("etcd timed out".into()));
    assert_eq!(app.inventory.rows().len(), 3);
    assert_eq!(app.contexts[0].refresh_error.as_deref(), Some("etcd timed out"));
    // switching namespace re-lists there and asks for access again
    let effects = press(&mut app, KeyCode::Char('n'));
    assert_eq!(app.scope, Scope::Namespace("other".into()));
    assert_eq!(effects.len(), 2);
}

/// Rows changed in place or added between frames mend the cached order; it is always the
/// order a full sort gives, under a filter and reversed too.
#[test]
fn a_mended_order_is_the_sorted_order() {
    let mut app = app(false);
    let ids: Vec<String> = (0..40).map(|i| format!("w{i:02}")).collect();
    app.inventory.replace(
        ids.iter()
            .map(|id| row(id, if id.ends_with('3') { "Suspended" } else { "Running" }))
            .collect(),
    );
    app.view.sort = SortKey::Epoch;
    for step in 0..60u64 {
        app.view.reverse = step % 7 == 0;
        app.view.filter = if step % 5 == 0 { "w1".into() } else { String::new() };
        app.visible();
        let mut w = app.inventory.rows()[(step * 13 % 40) as usize].clone();
        w.epoch.epoch = Some(step * 7 % 11);
        // every third step a new row arrives as well
        let mut changes = vec![RowChange::Upsert(w.clone())];
        if step % 3 == 0 {
            w.id = format!("w1{step:02}x");
            changes.push(RowChange::Upsert(w.clone()));
        }
        // and every tenth a page of them (merged into the order rather than placed one by one)
        if step % 10 == 0 {
            for k in 0..40u64 {
                w.id = format!("w{}{step:02}p{k:02}", k % 3);
                w.epoch.epoch = Some(k % 11);
                changes.push(RowChange::Upsert(w.clone()));
            }
        }
        let (scope, generation) = (app.scope.clone(), app.contexts[0].follow_generation);
        update(
            &mut app,
            Action::Live {
                context: "ctx".into(),
                scope,
                generation,
                event: LiveEvent::Rows(changes),
            },
        );
        let mended: Vec<String> = app.visible().iter().map(|w| w.id.clone()).collect();
        let sorted: Vec<String> = app
            .order_rows()
            .iter()
            .map(|&i| app.inventory.rows()[i].id.clone())
            .collect();
        assert_eq!(mended, sorted, "step {step}");
    }
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
}

#[test]
fn the_command_line_completes_and_switches_namespace_by_a_fuzzy_name() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char(':'));
    typed(&mut app, "n");
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.view.command.as_deref(), Some("ns "));
    typed(&mut app, "oth");
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.view.command.as_deref(), Some("ns other "));
    let effects = press(&mut app, KeyCode::Enter);
    assert_eq!(app.scope, Scope::Namespace("other".into()));
    assert_eq!(effects.len(), 2, "re-read there, and the access check");
    assert!(app.view.command.is_none());
    press(&mut app, KeyCode::Char(':'));
    typed(&mut app, "bogus");
    press(&mut app, KeyCode::Enter);
    assert!(app.status.starts_with("no command \"bogus\""), "{}", app.status);
    press(&mut app, KeyCode::Char(':'));
    typed(&mut app, "ctx elsewhere");
    press(&mut app, KeyCode::Enter);
    assert!(app.status.contains("--context elsewhere"), "{}", app.status);
    press(&mut app, KeyCode::Char(':'));
    typed(&mut app, "q");
    press(&mut app, KeyCode::Enter);
    assert!(app.quit);
}

#[test]
fn unbound_keys_say_so_and_status_lines_expire() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char('x'));
    assert_eq!(app.status, "no action on x · ? for help");
    update(&mut app, Action::Tick(now()));
    update(&mut app, Action::Tick(now() + chrono::TimeDelta::seconds(5)));
    assert!(!app.status.is_empty(), "not yet");
    update(&mut app, Action::Tick(now() + chrono::TimeDelta::seconds(10)));
    assert!(app.status.is_empty(), "expired");
}

#[test]
fn sorting_picks_a_column_and_the_same_again_reverses() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char('o'));
    assert!(matches!(app.popups.last(), Some(Popup::Sort { selected: 0 })));
    press(&mut app, KeyCode::End);
    press(&mut app, KeyCode::Enter);
    assert_eq!((app.view.sort, app.view.reverse), (SortKey::Diagnosis, false));
    press(&mut app, KeyCode::Char('o'));
    press(&mut app, KeyCode::Enter);
    assert_eq!((app.view.sort, app.view.reverse), (SortKey::Diagnosis, true));
    assert_eq!(app.status, "sorted by diagnosis ▼");
}

#[test]
fn the_filter_takes_field_terms_and_negation() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char('/'));
    typed(&mut app, "mode:susp");
    press(&mut app, KeyCode::Enter);
    let ids = |app: &App| app.visible().iter().map(|w| w.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&app), ["charlie"]);
    app.view.filter = "!mode:susp".into();
    assert_eq!(ids(&app), ["alpha", "bravo"]);
    app.view.filter = "state:bogus".into();
    assert!(ids(&app).is_empty() && app.query().is_err());
}

#[test]
fn a_typed_confirmation_moves_the_focus_when_the_id_is_whole_and_escape_says_cancelled() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char('D'));
    typed(&mut app, "alph");
    let focus = |app: &App| match app.popups.last() {
        Some(Popup::Confirm(c)) => Some(c.focus),
        _ => None,
    };
    assert_eq!(focus(&app), Some(Focus::Cancel));
    typed(&mut app, "a");
    assert_eq!(focus(&app), Some(Focus::Confirm));
    press(&mut app, KeyCode::Esc);
    assert!(app.popups.is_empty());
    assert_eq!(app.status, "cancelled");
}

#[test]
fn popups_close_with_esc_and_ctrl_c_quits_from_anywhere() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char('?'));
    assert!(matches!(app.popups.last(), Some(Popup::Help { .. })));
    press(&mut app, KeyCode::Esc);
    assert!(app.popups.is_empty());
    press(&mut app, KeyCode::Char('w'));
    update(
        &mut app,
        Action::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
    );
    assert!(app.quit);
}

#[test]
fn the_context_picker_narrows_as_letters_are_typed_and_enter_opens_the_best() {
    let mut app = app(false);
    app.kube_contexts = ["ctx", "kind-staging", "prod-eu", "kind-prod"]
        .map(String::from)
        .to_vec();
    press(&mut app, KeyCode::Char('c'));
    assert!(matches!(app.popups.last(), Some(Popup::Contexts { choices, selected: 1 }) if choices.len() == 4));
    // letters type (j, k, g, q included): they do not move or close
    typed(&mut app, "prod");
    let Some(Popup::Contexts { choices, selected }) = app.popups.last() else {
        panic!("the picker stays open: {:?}", app.popups.last())
    };
    assert_eq!(
        (choices.clone(), *selected),
        (vec!["prod-eu".to_string(), "kind-prod".into()], 1)
    );
    // arrows move; Backspace widens again
    press(&mut app, KeyCode::Down);
    assert!(matches!(app.popups.last(), Some(Popup::Contexts { selected: 2, .. })));
    press(&mut app, KeyCode::Backspace);
    assert_eq!(app.picker.0, "pro");
    let effects = press(&mut app, KeyCode::Enter);
    assert!(app.popups.is_empty());
    assert!(
        matches!(effects.as_slice(), [Effect::OpenContext { context, replacing }] if context == "prod-eu" && replacing == "ctx"),
        "{effects:?}"
    );
    // the answer replaces the context shown, with the rules it was opened under
    let effects = update(
        &mut app,
        Action::ContextOpened {
            context: "prod-eu".into(),
            result: Ok(ContextOptions {
                name: "prod-eu".into(),
                namespace: "team".into(),
                rules: ContextRules {
                    read_only: true,
                    ..Default::default()
                },
                ..Default::default()
            }),
        },
    );
    assert_eq!(app.contexts.len(), 1);
    assert_eq!(app.contexts[0].name, "prod-eu");
    assert!(app.contexts[0].read_only.is_some());
    assert_eq!(app.scope, Scope::Namespace("team".into()));
    assert!(app.inventory.rows().is_empty(), "the context left's rows go");
    assert!(matches!(effects.first(), Some(Effect::Follow { context, .. }) if context == "prod-eu"));
    // a failure keeps the context shown
    update(
        &mut app,
        Action::ContextOpened {
            context: "kind-prod".into(),
            result: Err("connection refused".into()),
        },
    );
    assert_eq!(
        app.status,
        "cannot open context kind-prod: connection refused; still on prod-eu"
    );
    // `:ctx` completes over the kubeconfig's contexts
    press(&mut app, KeyCode::Char(':'));
    typed(&mut app, "ctx kind-s");
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.view.command.as_deref(), Some("ctx kind-staging "));
}

#[test]
fn the_epoch_and_request_show_under_a_toggle() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char('S'));
    let shown = |app: &App| match app.popups.last() {
        Some(Popup::Confirm(c)) => (c.show_request, c.typed.clone()),
        other => panic!("{other:?}"),
    };
    assert_eq!(shown(&app), (false, String::new()), "the consequences first");
    press(&mut app, KeyCode::Char('v'));
    assert!(shown(&app).0);
    press(&mut app, KeyCode::Char('v'));
    assert!(!shown(&app).0);
    press(&mut app, KeyCode::Esc);
    // in a typed confirmation `v` is typed; Ctrl-V toggles
    press(&mut app, KeyCode::Char('D'));
    press(&mut app, KeyCode::Char('v'));
    assert_eq!(shown(&app), (false, "v".to_string()));
    update(
        &mut app,
        Action::Key(KeyEvent::new(KeyCode::Char('v'), KeyModifiers::CONTROL)),
    );
    assert_eq!(shown(&app), (true, "v".to_string()));
}

/// A follow's provisional rows fill the screen before its first full state: new workspaces
/// show at once; a row an earlier full state showed keeps what it showed until this one's.
#[test]
fn provisional_rows_add_the_new_and_leave_the_known_until_the_full_state() {
    let mut app = app(false);
    assert_eq!(press(&mut app, KeyCode::F(5)).len(), 1, "the refresh follows again");
    let early = ["alpha", "delta"].map(|id| RowChange::Upsert(Box::new(row(id, "Suspended"))));
    live(&mut app, LiveEvent::Provisional(early.into()));
    let mode = |app: &App, id: &str| {
        app.inventory
            .rows()
            .iter()
            .find(|w| w.id == id)
            .map(|w| format!("{:?}", w.mode))
    };
    assert_eq!(app.inventory.rows().len(), 4, "delta is on screen");
    assert_eq!(
        mode(&app, "alpha").as_deref(),
        Some("Running"),
        "alpha as the full state showed it"
    );
    let full = ["alpha", "bravo", "charlie", "delta"].map(|id| RowChange::Upsert(Box::new(row(id, "Suspended"))));
    live(&mut app, LiveEvent::Rows(full.into()));
    live(&mut app, LiveEvent::Synced { namespaces: Vec::new() });
    assert_eq!(mode(&app, "alpha").as_deref(), Some("Suspended"));
}

#[test]
fn zero_shows_every_namespace_as_k9s_does_and_says_when_it_already_does() {
    let mut app = app(false);
    assert_eq!(app.scope, Scope::Namespace("ns".into()));
    press(&mut app, KeyCode::Char('0'));
    assert_eq!(app.scope, Scope::All);
    press(&mut app, KeyCode::Char('0'));
    assert_eq!(app.scope, Scope::All, "0 never toggles back");
    assert!(
        app.status.contains("every namespace is shown already"),
        "{}",
        app.status
    );
    press(&mut app, KeyCode::Char('a'));
    assert_eq!(
        app.scope,
        Scope::Namespace("ns".into()),
        "a toggles back to the home namespace"
    );
}

#[test]
fn f_on_a_running_row_says_suspend_first_and_opens_nothing() {
    let mut app = app(false);
    // alpha is Running: a refresh would be refused after the typing
    assert!(press(&mut app, KeyCode::Char('F')).is_empty());
    assert!(app.popups.is_empty());
    assert!(app.status.contains("S, then F"), "{}", app.status);
}

#[test]
fn l_on_marked_rows_opens_one_pane_over_all_of_them_each_line_after_its_workspace() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Char(' '));
    let effects = press(&mut app, KeyCode::Char('l'));
    let [
        Effect::LogsOf {
            keys,
            previous: false,
            stream,
        },
    ] = effects.as_slice()
    else {
        panic!("one stream of the marked rows: {effects:?}")
    };
    let ids: Vec<&str> = keys.iter().map(|k| k.id.as_str()).collect();
    assert_eq!(ids, ["alpha", "bravo"]);
    let stream = *stream;
    for from in [0, 1] {
        let source = "pod p".to_string();
        update(&mut app, Action::LogOpened { stream, from, source });
    }
    update(
        &mut app,
        Action::LogLines {
            stream,
            from: 1,
            lines: vec!["b says".into()],
        },
    );
    update(
        &mut app,
        Action::LogLines {
            stream,
            from: 0,
            lines: vec!["a says".into()],
        },
    );
    update(
        &mut app,
        Action::LogEnded {
            stream,
            from: 0,
            text: "pod gone".into(),
            failed: false,
        },
    );
    let Some(Popup::Logs(pane)) = app.popups.last() else {
        panic!("the pane")
    };
    assert_eq!(
        pane.text(),
        "--- alpha: pod p ---\n--- bravo: pod p ---\nbravo b says\nalpha a says\n--- alpha: ended: pod gone ---\n"
    );
    assert_eq!(pane.state, crate::logs::LogState::Streaming, "bravo still streams");
    update(
        &mut app,
        Action::LogEnded {
            stream,
            from: 1,
            text: "x".into(),
            failed: true,
        },
    );
    let Some(Popup::Logs(pane)) = app.popups.last() else {
        panic!("the pane")
    };
    assert!(
        matches!(pane.state, crate::logs::LogState::Ended(_)),
        "{:?}",
        pane.state
    );
}

#[test]
fn a_shell_refused_stays_until_dismissed_and_a_shell_has_its_banner() {
    let mut app = app(false);
    let key = app.selected_key().unwrap();
    update(
        &mut app,
        Action::ShellReady {
            key: key.clone(),
            result: Err("container agent is not running".into()),
        },
    );
    update(&mut app, Action::Tick(now() + chrono::TimeDelta::seconds(60)));
    let Some(Popup::Message { text, .. }) = app.popups.last() else {
        panic!("the refusal stays: {:?}", app.popups)
    };
    assert_eq!(text, "alpha: container agent is not running");
    press(&mut app, KeyCode::Esc);
    assert!(app.popups.is_empty());
    let target = crate::action::ShellTarget {
        argv: vec!["exec".into()],
        pod: "namzu-ws-alpha".into(),
        container: "agent".into(),
    };
    update(
        &mut app,
        Action::ShellReady {
            key,
            result: Ok(target),
        },
    );
    assert_eq!(app.shell.as_deref(), Some(&["exec".to_string()][..]));
    assert!(
        app.shell_banner.contains("context ctx") && app.shell_banner.contains("pod namzu-ws-alpha · container agent"),
        "{}",
        app.shell_banner
    );
    update(
        &mut app,
        Action::ShellEnded(Err("error: unable to upgrade connection".into())),
    );
    assert!(matches!(app.popups.last(), Some(Popup::Message { title, .. }) if title == "kubectl exec refused"));
}

#[test]
fn a_row_written_keeps_its_place_and_the_cursor_until_the_sort_or_filter_changes() {
    let mut app = app(false);
    app.view.sort = SortKey::Mode;
    app.view.touched = true;
    let ids = |app: &App| app.visible().iter().map(|w| w.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&app), ["alpha", "bravo", "charlie"]);
    let alpha = app.selected_key().unwrap();
    // the confirmation's submit pins the rows it acts on
    app.view.pinned.insert(alpha.clone());
    app.view.places = vec![(0, alpha.clone())];
    app.view.pins += 1;
    assert_eq!(ids(&app), ["alpha", "bravo", "charlie"]);
    live(
        &mut app,
        LiveEvent::Rows(vec![RowChange::Upsert(Box::new(row("alpha", "Suspended")))]),
    );
    assert_eq!(ids(&app), ["alpha", "bravo", "charlie"], "alpha stays where it was");
    assert_eq!(app.selected_key(), Some(alpha.clone()));
    // a row added (the order computed anew): alpha still where it was
    live(
        &mut app,
        LiveEvent::Rows(vec![RowChange::Upsert(Box::new(row("delta", "Running")))]),
    );
    assert_eq!(ids(&app), ["alpha", "bravo", "delta", "charlie"]);
    // a row that sorts first goes after the pinned row, never in front of it (alpha is out of
    // its sort place: nothing is placed against it)
    live(
        &mut app,
        LiveEvent::Rows(vec![RowChange::Upsert(Box::new(row("aaa", "Running")))]),
    );
    assert_eq!(ids(&app), ["alpha", "aaa", "bravo", "delta", "charlie"]);
    // another sort: every row where it sorts
    app.view.sort = SortKey::Name;
    app.view.sort = SortKey::Mode;
    app.view.unpin();
    assert_eq!(ids(&app), ["aaa", "bravo", "delta", "alpha", "charlie"]);
}

#[test]
fn the_footer_hints_the_keys_that_apply_and_h_and_w_at_200_columns() {
    let mut app = app(false);
    let running = footer_keys(&app, 200);
    assert!(
        running.contains("S suspend · D delete") && !running.contains("R resume"),
        "{running}"
    );
    assert!(
        running.contains("h history") && !running.contains("w sent"),
        "nothing sent yet: {running}"
    );
    app.sent.push(json!({"verb": "suspend"}));
    let sent = footer_keys(&app, 200);
    assert!(sent.contains("h history") && sent.contains("w sent"), "{sent}");
    assert!(sent.chars().count() <= 200);
    // charlie is Suspended: R and F, not S
    press(&mut app, KeyCode::Char('G'));
    let suspended = footer_keys(&app, 200);
    assert!(
        suspended.contains("R resume · D delete") && !suspended.contains("S suspend"),
        "{suspended}"
    );
    assert!(footer_keys(&app, 400).contains("F refresh"), "{suspended}");
}

/// A burst of watch events between two frames — rows added before the cursor's row, one event
/// each — moves nothing under the user: at the frame the cursor is on the row it was on.
#[test]
fn a_burst_of_watch_events_keeps_the_cursor_on_its_row_at_the_frame() {
    let mut app = app(false);
    let rows: Vec<Workspace> = (0..50).map(|i| row(&format!("w5{i:02}"), "Running")).collect();
    live(
        &mut app,
        LiveEvent::Rows(rows.into_iter().map(|w| RowChange::Upsert(Box::new(w))).collect()),
    );
    app.view.touched = true;
    app.view.selected = 10;
    let on = app.selected_key().expect("a row under the cursor");
    for i in 0..200 {
        let w = row(&format!("w0{i:03}"), "Running");
        let action = Action::Live {
            context: "ctx".into(),
            scope: app.scope.clone(),
            generation: app.contexts[0].follow_generation,
            event: LiveEvent::Rows(vec![RowChange::Upsert(Box::new(w))]),
        };
        update(&mut app, action);
    }
    app.settle();
    assert_eq!(app.selected_key(), Some(on));
    assert_eq!(app.view.selected, 210);
}
