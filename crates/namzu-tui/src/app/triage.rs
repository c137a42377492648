//! Triage without leaving the UI: the log pane (`l`), a shell (`s`) and the history (`h`) of the
//! row under the cursor. What `update` does with their keys and answers; the pane itself is
//! `tui/logs.rs`, the I/O `tui/io.rs` (through the same cluster functions as `kubectl namzu logs`,
//! `exec` and `history`).

use super::{App, Popup};
use crate::action::{Action, Effect};
use crate::keys::Command;
use crate::logs::{self, Line, LogPane, LogState};
use namzu_domain::naming::WorkspaceKey;
use namzu_engine::ops::write::rules::{self, ExecGate};
use ratatui::crossterm::event::KeyEvent;

/// A list key of triage: open the pane, ask for the shell, open the history.
pub(crate) fn on_list_command(app: &mut App, command: Command) -> Vec<Effect> {
    if command == Command::Logs && !app.view.marks.is_empty() {
        return logs_of_marked(app);
    }
    let Some(key) = app.selected_key() else {
        app.status = "no row selected".into();
        return Vec::new();
    };
    match command {
        Command::Logs => {
            app.log_streams += 1;
            let pane = LogPane::new(key, app.log_streams);
            let open = pane.open();
            app.popups.push(Popup::Logs(Box::new(pane)));
            vec![open]
        }
        Command::History => {
            app.popups.push(Popup::History {
                key: key.clone(),
                text: None,
                scroll: 0,
            });
            vec![Effect::History(key)]
        }
        Command::Shell => shell(app, key, None),
        Command::Forward => forward(app, key),
        _ => Vec::new(),
    }
}

/// `l` on marked rows: one pane over every marked workspace, each line after its workspace
/// (its id; its namespace too across namespaces, its context across several).
fn logs_of_marked(app: &mut App) -> Vec<Effect> {
    let all_namespaces = matches!(app.scope, namzu_engine::cluster::inventory::Scope::All) || app.mixed_namespaces();
    let keys: Vec<(WorkspaceKey, String)> = app
        .view
        .marks
        .iter()
        .map(|k| {
            let label = if all_namespaces {
                k.qualified(app.several_contexts)
            } else {
                k.who(app.several_contexts)
            };
            (k.clone(), label)
        })
        .collect();
    app.log_streams += 1;
    let Some(pane) = LogPane::of_several(keys, app.log_streams) else {
        return Vec::new();
    };
    let open = pane.open();
    app.popups.push(Popup::Logs(Box::new(pane)));
    vec![open]
}

/// `:shell [ID]`: a shell in the selected row's pod, `typed` the id the user typed after it.
pub(crate) fn on_shell_line(app: &mut App, typed: &str) -> Vec<Effect> {
    let Some(key) = app.selected_key() else {
        app.status = "no row selected".into();
        return Vec::new();
    };
    shell(app, key, (!typed.is_empty()).then_some(typed))
}

/// A shell in `key`'s pod, under its context's rules for a write (`ops::write::rules`): refused
/// where the context is read-only; where it asks for typed ids, the id typed on the command line
/// (`:shell ID`) confirms it, and `s` opens that line for it.
fn shell(app: &mut App, key: WorkspaceKey, typed: Option<&str>) -> Vec<Effect> {
    let who = key.who(app.several_contexts);
    if let Some(typed) = typed.filter(|t| *t != key.id) {
        app.status = format!("typed {typed:?}, not {}: no shell opened in {who}", key.id);
        return Vec::new();
    }
    let Some(context) = app.context_view(key.context_name()).or(app.contexts.first()) else {
        return Vec::new();
    };
    match rules::exec_gate(&context.rules, &context.name, app.read_only_flag, typed.is_some()) {
        ExecGate::Go => {
            app.status = format!("opening a shell in {who}…");
            vec![Effect::Shell(key)]
        }
        ExecGate::Refused(why) => {
            refused(app, format!("no shell in {who}"), format!("shell is disabled: {why}"));
            Vec::new()
        }
        ExecGate::AskTyped => {
            app.status = format!(
                "context {} asks for the id typed (confirm: typed): type {} and Enter to open a shell in {who}",
                context.name, key.id
            );
            app.view.command = Some("shell ".into());
            Vec::new()
        }
    }
}

/// The I/O's words with the resume key it names (`press R to`) as the config file may have
/// moved it.
fn with_keys(app: &App, text: String) -> String {
    let resume = app.keys.key_for(Command::Resume);
    if resume == "R" {
        return text;
    }
    text.replace("press R to", &format!("press {resume} to"))
}

/// A shell refused: the words stay on screen until dismissed (and are the status line too).
fn refused(app: &mut App, title: String, text: String) {
    app.status = text.lines().next().unwrap_or_default().to_string();
    app.popups.push(Popup::Message { title, text, scroll: 0 });
}

/// What the terminal says above a shell: where it runs — the workspace, pod, container,
/// namespace, and the context with its badge — and how to come back.
fn banner(app: &App, key: &WorkspaceKey, target: &crate::action::ShellTarget) -> String {
    let context = app.context_view(key.context_name()).or(app.contexts.first());
    let name = context.map_or("-", |c| c.name.as_str());
    let badge = context
        .and_then(|c| c.rules.badge.as_ref())
        .map_or(String::new(), |b| format!(" [{}]", b.label));
    format!(
        "kubectl-namzu shell · context {name}{badge} · namespace {}\n\
workspace {} · pod {} · container {} · exit (or Ctrl-D) comes back to the list",
        key.namespace, key.id, target.pod, target.container
    )
}

/// A forward to `key`'s pod, under its context's rules as a shell is (`port_forward_gate`):
/// refused where the context is read-only; where it asks for typed ids, the CLI's
/// `port-forward` asks (the TUI has no typed prompt for it).
fn forward(app: &mut App, key: WorkspaceKey) -> Vec<Effect> {
    let who = key.who(app.several_contexts);
    let Some(context) = app.context_view(key.context_name()).or(app.contexts.first()) else {
        return Vec::new();
    };
    match rules::port_forward_gate(&context.rules, &context.name, app.read_only_flag, false) {
        ExecGate::Go => {
            app.status = format!("forwarding a local port to {who}…");
            vec![Effect::Forward(key)]
        }
        ExecGate::Refused(why) => {
            app.status = format!("port-forward is disabled: {why}");
            Vec::new()
        }
        ExecGate::AskTyped => {
            app.status = format!(
                "context {} asks for the id typed (confirm: typed): run kubectl namzu port-forward {} {} --context {}",
                context.name,
                key.id,
                crate::action::FORWARD_PORT,
                context.name
            );
            Vec::new()
        }
    }
}

/// A key on the log pane on top; `None` when the pane closed (its stream stops).
pub(crate) fn on_pane_key(app: &mut App, command: Option<Command>, key: KeyEvent) -> Vec<Effect> {
    let next_stream = app.log_streams + 1;
    let stamp = app.now.format("%Y%m%dT%H%M%SZ").to_string();
    let Some(Popup::Logs(pane)) = app.popups.last_mut() else {
        return Vec::new();
    };
    match logs::on_key(pane, command, key, next_stream, &stamp) {
        logs::Reply::Stay(effects) => {
            if !effects.is_empty() {
                app.log_streams = next_stream;
            }
            effects
        }
        logs::Reply::Close => {
            let (key, stream) = (pane.key.clone(), pane.stream);
            app.popups.pop();
            vec![Effect::StopLogs { key, stream }]
        }
        logs::Reply::Save { name, text } => vec![Effect::Save {
            key: pane.key.clone(),
            name,
            text,
        }],
    }
}

/// The log pane on top, if its stream is `stream`.
fn pane_of(app: &mut App, stream: u64) -> Option<&mut LogPane> {
    app.popups.iter_mut().rev().find_map(|p| match p {
        Popup::Logs(pane) if pane.stream == stream => Some(pane.as_mut()),
        _ => None,
    })
}

/// An answer of triage's I/O.
pub(crate) fn apply(app: &mut App, action: Action) -> Vec<Effect> {
    match action {
        Action::LogOpened { stream, from, source } => {
            if let Some(pane) = pane_of(app, stream) {
                pane.state = LogState::Streaming;
                if pane.members.is_empty() {
                    pane.source = source;
                } else {
                    let label = pane.label(from).to_string();
                    pane.push([Line::Note(format!("--- {label}: {source} ---"))]);
                }
            }
        }
        Action::LogLines { stream, from, lines } => {
            if let Some(pane) = pane_of(app, stream) {
                if pane.members.is_empty() {
                    pane.push(lines.into_iter().map(Line::Log));
                } else {
                    pane.push(lines.into_iter().map(|l| Line::Of(from, l)));
                }
            }
        }
        Action::LogNote { stream, from, text } => {
            if let Some(pane) = pane_of(app, stream) {
                let text = match pane.label(from) {
                    "" => text,
                    label => format!("--- {label}: {}", text.trim_start_matches("--- ")),
                };
                pane.push([Line::Note(text)]);
            }
        }
        Action::LogEnded {
            stream,
            from,
            text,
            failed,
        } => {
            let text = with_keys(app, text);
            if let Some(pane) = pane_of(app, stream) {
                if !pane.members.is_empty() {
                    pane.member_ended(from, &text, failed);
                } else if failed {
                    pane.state = LogState::Failed(text);
                } else {
                    pane.state = LogState::Ended(text);
                }
            }
        }
        Action::History { key, result } => {
            if let Some(Popup::History { key: k, text, .. }) = app.popups.last_mut()
                && *k == key
            {
                *text = Some(result);
            }
        }
        Action::ShellReady { key, result } => match result {
            // the loop runs it: the UI steps aside, and comes back to the same row
            Ok(target) => {
                app.shell_banner = banner(app, &key, &target);
                app.shell = Some(target.argv);
            }
            Err(why) => {
                let who = key.who(app.several_contexts);
                let why = with_keys(app, why);
                refused(app, format!("no shell in {who}"), format!("{who}: {why}"));
            }
        },
        Action::ShellEnded(Ok(ended)) => app.status = ended,
        Action::ShellEnded(Err(words)) => refused(app, "kubectl exec refused".into(), words),
        Action::Forwarding(news) => app.status = news,
        Action::Saved(result) => {
            app.status = match result {
                Ok(path) => format!("saved the log to {path}"),
                Err(why) => format!("could not save the log: {why}"),
            }
        }
        _ => {}
    }
    Vec::new()
}
