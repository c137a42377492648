//! Keys: what a key does on the list, in the filter and on the popup on top.

use super::*;

/// Where the keys go now: the filter being typed, the popup on top, or the list.
pub(super) fn context(app: &App) -> Context {
    if app.view.filter_editing {
        return Context::Filtering;
    }
    if app.view.command.is_some() {
        return Context::Command;
    }
    match app.popups.last() {
        None => Context::List,
        Some(Popup::Confirm(c)) if c.asks_typed => Context::ConfirmTyped,
        Some(Popup::Confirm(_)) => Context::Confirm,
        Some(Popup::Leaks(view)) if view.confirm.is_some() => Context::ConfirmTyped,
        Some(Popup::Leaks(_)) => Context::Leaks,
        Some(Popup::Pulse(_)) => Context::Pulse,
        Some(Popup::Detail { .. } | Popup::Sent { .. } | Popup::History { .. } | Popup::Message { .. }) => {
            Context::Scrolling
        }
        Some(Popup::Logs(pane)) if pane.prompt.is_some() => Context::LogSearch,
        Some(Popup::Yaml { find, .. }) if find.typing.is_some() => Context::LogSearch,
        Some(Popup::Yaml { .. }) => Context::Yaml,
        Some(Popup::Logs(_)) => Context::Logs,
        Some(Popup::Help { .. }) => Context::HelpPopup,
        Some(Popup::Contexts { .. } | Popup::Sort { .. }) => Context::Picker,
    }
}

/// The footer's key hints for what has the keys now, fitted to `width`.
pub(crate) fn footer_keys(app: &App, width: usize) -> String {
    let applies = |c: Command| applies(app, c);
    app.keys.footer(
        context(app),
        width,
        app.several_contexts || !app.kube_contexts.is_empty(),
        &applies,
    )
}

/// Whether a list key does something for the rows it would act on (the marked, else the
/// selected): the footer hints only those (`S` on a Running row, `R` on a Suspended one, `F`
/// where a refresh is taken, the row keys where there is a row, `w` once something was sent).
fn applies(app: &App, command: Command) -> bool {
    let rows: Vec<&Workspace> = if app.view.marks.is_empty() {
        app.visible().get(app.view.selected).copied().into_iter().collect()
    } else {
        app.inventory
            .rows()
            .iter()
            .filter(|w| app.view.marks.contains(&key_of(w)))
            .map(|w| &**w)
            .collect()
    };
    let suspended = |w: &&Workspace| w.mode == namzu_domain::patch::Mode::Suspended;
    match command {
        Command::Suspend => rows.iter().any(|w| !suspended(w)),
        Command::Resume => rows.iter().any(suspended),
        Command::RefreshTemplate => rows.iter().any(|w| namzu_domain::refresh::refreshes(w.mode)),
        Command::Sent => !app.sent.is_empty(),
        Command::StepBack | Command::StepForward => app.replay.is_some(),
        Command::Detail
        | Command::Yaml
        | Command::Logs
        | Command::Shell
        | Command::History
        | Command::Forward
        | Command::Delete
        | Command::Mark
        | Command::Copy => !rows.is_empty(),
        _ => true,
    }
}

pub(super) fn on_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let context = context(app);
    let command = app.keys.command_for(context, key);
    if command == Some(Command::Quit) {
        app.quit = true;
        return Vec::new();
    }
    if context == Context::Filtering {
        on_filter_key(app, command, key);
        return Vec::new();
    }
    if context == Context::Command {
        return on_command_key(app, command, key);
    }
    if matches!(context, Context::Logs | Context::LogSearch) && matches!(app.popups.last(), Some(Popup::Logs(_))) {
        return super::triage::on_pane_key(app, command, key);
    }
    if matches!(app.popups.last(), Some(Popup::Leaks(_))) {
        return super::leaks::on_leaks_key(app, command, key);
    }
    if matches!(app.popups.last(), Some(Popup::Pulse(_))) {
        return super::pulse::on_pulse_key(app, command, key);
    }
    if context == Context::Picker && command.is_none() && on_picker_type(app, key) {
        return Vec::new();
    }
    if let Some(top) = app.popups.last_mut() {
        let last = app.scroll_max.get();
        let reply = on_popup_key(top, command, key, &mut app.status, &mut app.notes, last);
        return match reply {
            PopupReply::Stay(effects) => effects,
            PopupReply::Close => {
                // the picker's typing hint goes with it
                if let Some(Popup::Contexts { .. }) = app.popups.pop() {
                    app.status.clear();
                }
                Vec::new()
            }
            PopupReply::Submit(writes) => {
                app.popups.pop();
                app.view.marks.clear();
                // the rows acted on stay where they were, even once the filter no longer fits them
                let rows: Vec<(&WorkspaceKey, &Plan)> = writes
                    .iter()
                    .flat_map(|w| match w {
                        Effect::Writes { writes, .. } => writes.iter().map(|(k, p)| (k, p)).collect(),
                        _ => Vec::new(),
                    })
                    .collect();
                app.view.pinned = rows.iter().map(|(key, _)| (*key).clone()).collect();
                let shown: Vec<WorkspaceKey> = app.visible().iter().map(|w| key_of(w)).collect();
                app.view.places = shown
                    .into_iter()
                    .enumerate()
                    .filter(|(_, k)| app.view.pinned.contains(k))
                    .collect();
                app.view.pins += 1;
                if rows.len() > 1
                    && let Some((_, plan)) = rows.first()
                {
                    app.bulk_members = rows.iter().map(|(key, _)| (*key).clone()).collect();
                    app.bulk = Some(BulkProgress {
                        verb: plan.verb,
                        total: rows.len(),
                        done: 0,
                        failed: 0,
                        started: app.now,
                    });
                }
                writes
            }
            PopupReply::PickSort(sort) => {
                app.popups.pop();
                set_sort(app, sort);
                Vec::new()
            }
            PopupReply::Pick(context) => {
                app.popups.pop();
                pick_context(app, context)
            }
            PopupReply::Quit => {
                app.quit = true;
                Vec::new()
            }
        };
    }
    match command {
        Some(c) => {
            if !matches!(c, Command::Help | Command::Quit) {
                app.view.touched = true;
            }
            on_list_command(app, c)
        }
        // a key that does nothing here says so
        None => {
            app.status = format!("no action on {} · ? for help", key_name(key));
            Vec::new()
        }
    }
}

/// A key as the status line names it.
pub(super) fn key_name(key: KeyEvent) -> String {
    let ctrl = key.modifiers.contains(ratatui::crossterm::event::KeyModifiers::CONTROL);
    let name = match key.code {
        KeyCode::Char(c) => c.to_string(),
        KeyCode::F(n) => format!("F{n}"),
        other => format!("{other:?}"),
    };
    if ctrl { format!("Ctrl-{name}") } else { name }
}

/// Sort by `sort`; the same again reverses it.
pub(super) fn set_sort(app: &mut App, sort: SortKey) {
    if app.view.sort == sort {
        app.view.reverse = !app.view.reverse;
    } else {
        app.view.sort = sort;
        app.view.reverse = false;
    }
    let (name, _) = sort_name(sort);
    let direction = if app.view.reverse { "▼" } else { "▲" };
    // ties sort by name, whose order starts with the context
    app.status = if app.several_contexts && sort != SortKey::Name {
        format!("sorted by {name} {direction}, each context's rows together within a value")
    } else {
        format!("sorted by {name} {direction}")
    };
}

pub(super) fn on_filter_key(app: &mut App, command: Option<Command>, key: KeyEvent) {
    app.view.unpin();
    match (command, key.code) {
        (Some(Command::ClearFilter), _) => {
            app.view.filter.clear();
            app.view.filter_editing = false;
        }
        (Some(Command::Keep), _) => app.view.filter_editing = false,
        (_, KeyCode::Backspace) => {
            app.view.filter.pop();
        }
        (_, KeyCode::Char(c)) => app.view.filter.push(c),
        _ => {}
    }
    app.view.selected = 0;
    app.clamp();
}

pub(super) fn on_list_command(app: &mut App, command: Command) -> Vec<Effect> {
    // while replaying, what would write or read the cluster now is refused in one line
    match super::replay::refused(app, command) {
        Some(why) => {
            app.status = why;
            Vec::new()
        }
        None => list_command(app, command),
    }
}

fn list_command(app: &mut App, command: Command) -> Vec<Effect> {
    let n = app.visible().len();
    let last = n.saturating_sub(1);
    let page = 10;
    let view = &mut app.view;
    match command {
        Command::Up | Command::Down | Command::PageUp | Command::PageDown | Command::Top | Command::Bottom => {
            view.selected = moved(view.selected, command, page, last);
        }
        Command::Filter => view.filter_editing = true,
        Command::ClearFilter => {
            view.unpin();
            view.filter.clear();
        }
        Command::NextSort => {
            let selected = SORTS.iter().position(|(_, k, _)| *k == view.sort).unwrap_or(0);
            app.popups.push(Popup::Sort { selected });
        }
        Command::ReverseSort => {
            let sort = view.sort;
            set_sort(app, sort);
        }
        Command::Problems => {
            view.unpin();
            view.problems = !view.problems;
            view.selected = 0;
            app.status = if app.view.problems {
                format!("problems only: {} (p: every row)", app.problem_count())
            } else {
                "every row".into()
            };
            app.clamp();
        }
        Command::OpenCommandLine => view.command = Some(String::new()),
        Command::Resources => {
            view.resources = !view.resources;
            app.status = if app.view.resources {
                "CPU, MEM and DISK columns shown (u: hide)".into()
            } else {
                "CPU, MEM and DISK columns hidden".into()
            };
        }
        Command::Mark => {
            if let Some(k) = app.selected_key()
                && !app.view.marks.remove(&k)
            {
                app.view.marks.insert(k);
            }
            app.view.selected = (app.view.selected + 1).min(last);
        }
        Command::AllNamespaces => {
            let scope = if app.scope == Scope::All {
                Scope::Namespace(app.home_namespace.clone())
            } else {
                Scope::All
            };
            return app.switch_scope(scope);
        }
        Command::EveryNamespace if app.scope == Scope::All => {
            app.status = "every namespace is shown already (a: back to one)".into();
        }
        Command::EveryNamespace => return app.switch_scope(Scope::All),
        Command::NextNamespace => return next_namespace(app),
        Command::Refresh => return app.reload(),
        Command::Detail => return open_object(app, false),
        // the whole Sandbox, read when asked for: the inventory keeps only what it derives from
        Command::Yaml => return open_object(app, true),
        Command::Sent => app.popups.push(Popup::Sent { scroll: 0 }),
        Command::Copy => return copy_row(app),
        Command::Contexts if !app.several_contexts && app.kube_contexts.is_empty() => {
            app.status = "one context: nothing to pick (open several with --context a,b or --all-contexts)".into()
        }
        Command::Contexts => open_picker(app),
        Command::Help => app.popups.push(Popup::Help { scroll: 0 }),
        Command::Suspend => return app.open_confirm(Verb::Suspend, false),
        Command::Resume => return app.open_confirm(Verb::Resume, false),
        Command::RefreshTemplate => return app.open_confirm(Verb::Resume, true),
        Command::Delete => return app.open_confirm(Verb::Delete, false),
        Command::Quit => app.quit = true,
        Command::StepBack | Command::StepForward => return super::replay::step(app, command == Command::StepForward),
        Command::Logs | Command::Shell | Command::History | Command::Forward => {
            return super::triage::on_list_command(app, command);
        }
        Command::Close
        | Command::SwitchFocus
        | Command::Choose
        | Command::TakeOver
        | Command::ShowRequest
        | Command::Keep
        | Command::Follow
        | Command::Wrap
        | Command::NextMatch
        | Command::FilterLines
        | Command::Timestamps
        | Command::PrevMatch
        | Command::Previous
        | Command::Complete
        | Command::Save => {}
    }
    Vec::new()
}

/// The next namespace the inventory knows, read in every context.
fn next_namespace(app: &mut App) -> Vec<Effect> {
    let namespaces = &app.inventory.namespaces;
    let current = match &app.scope {
        Scope::Namespace(ns) => namespaces.iter().position(|n| n == ns),
        Scope::All => None,
    };
    let next = current.map_or(0, |i| (i + 1) % namespaces.len());
    let ns = namespaces[next].clone();
    app.home_namespace = ns.clone();
    // a namespace picked is read in every context
    app.own_namespaces = false;
    app.switch_scope(Scope::Namespace(ns))
}

/// The selected row's detail (or its whole Sandbox as YAML), read when asked for.
fn open_object(app: &mut App, yaml: bool) -> Vec<Effect> {
    let Some(key) = app.selected_key() else {
        return Vec::new();
    };
    if yaml {
        app.popups.push(Popup::Yaml {
            key: key.clone(),
            text: None,
            scroll: 0,
            find: Default::default(),
        });
        vec![Effect::Yaml(key)]
    } else {
        app.popups.push(Popup::Detail {
            key: key.clone(),
            text: None,
            scroll: 0,
        });
        // while replaying, the detail as recorded then
        match &app.replay {
            Some(r) => vec![Effect::DetailAt {
                key,
                instant: r.instant,
            }],
            None => vec![Effect::Detail(key)],
        }
    }
}

/// A key on the popup on top.
pub(super) fn on_popup_key(
    top: &mut Popup,
    command: Option<Command>,
    key: KeyEvent,
    status: &mut String,
    notes: &mut BTreeMap<WorkspaceKey, RowNote>,
    scroll_last: u16,
) -> PopupReply {
    if command == Some(Command::Quit) {
        return PopupReply::Quit;
    }
    // the YAML view's search takes its keys first (its prompt takes every key), then the scroll
    if let Popup::Yaml {
        text: Some(Ok(text)),
        scroll,
        find,
        ..
    } = top
        && find.on_key(text, scroll, command, key)
    {
        return PopupReply::Stay(Vec::new());
    }
    match top {
        Popup::Confirm(c) => on_confirm_key(c, command, key, status, notes),
        Popup::Contexts { choices, selected } => match command {
            Some(Command::Close) => PopupReply::Close,
            Some(Command::Choose) => PopupReply::Pick(selected.checked_sub(1).map(|i| choices[i].clone())),
            // a page moves to the first or the last: the picker is one screen
            Some(c) => {
                *selected = moved(*selected, c, choices.len(), choices.len());
                PopupReply::Stay(Vec::new())
            }
            None => PopupReply::Stay(Vec::new()),
        },
        Popup::Sort { selected } => match command {
            Some(Command::Close) => PopupReply::Close,
            Some(Command::Choose) => PopupReply::PickSort(SORTS[*selected].1),
            Some(c) => {
                *selected = moved(*selected, c, SORTS.len(), SORTS.len() - 1);
                PopupReply::Stay(Vec::new())
            }
            None => PopupReply::Stay(Vec::new()),
        },
        // the log pane takes its keys before this
        Popup::Logs(_) => PopupReply::Stay(Vec::new()),
        Popup::Detail { scroll, .. }
        | Popup::Yaml { scroll, .. }
        | Popup::Sent { scroll }
        | Popup::Help { scroll }
        | Popup::History { scroll, .. }
        | Popup::Message { scroll, .. }
        | Popup::Leaks(LeaksView { scroll, .. })
        | Popup::Pulse(PulseView { scroll, .. }) => match command {
            Some(Command::Close) => PopupReply::Close,
            // it stops at its last line (as the last frame laid it out)
            Some(c) => {
                let from = (*scroll).min(scroll_last);
                *scroll = moved(usize::from(from), c, 10, usize::from(scroll_last)) as u16;
                PopupReply::Stay(Vec::new())
            }
            None => PopupReply::Stay(Vec::new()),
        },
    }
}

/// Where a position in `0..=last` goes on a move key (a page is `page` steps); other keys leave it.
pub(super) fn moved(position: usize, command: Command, page: usize, last: usize) -> usize {
    match command {
        Command::Up => position.saturating_sub(1),
        Command::Down => position.saturating_add(1).min(last),
        Command::PageUp => position.saturating_sub(page),
        Command::PageDown => position.saturating_add(page).min(last),
        Command::Top => 0,
        Command::Bottom => last,
        _ => position,
    }
}

/// `Y`: the row's next-step command, named for its context (else its id), to the clipboard.
fn copy_row(app: &mut App) -> Vec<Effect> {
    let Some(w) = app.visible().get(app.view.selected).map(|w| (*w).clone()) else {
        app.status = "no row selected".into();
        return Vec::new();
    };
    let context = w
        .context
        .clone()
        .or_else(|| app.contexts.first().map(|c| c.name.clone()));
    let named = Workspace { context, ..w };
    let text = namzu_domain::next_step::next_step(&named)
        .and_then(|s| s.command)
        .unwrap_or_else(|| named.id.clone());
    vec![Effect::Copy(text)]
}
