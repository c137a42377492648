//! Another context: the picker (typed, fuzzy) and, in a single-context session, switching to
//! another of the kubeconfig's contexts. The context switched to replaces the one shown (the
//! session stays a single-context one: its rows, rules, badge and namespace are the new
//! context's); its connection is opened by the I/O task with the session's options.

use super::*;

/// The names the context picker and `:ctx ` offer: the session's contexts across several; the
/// kubeconfig's in a single-context session that may switch.
pub(super) fn context_names(app: &App) -> Vec<String> {
    if app.several_contexts || app.kube_contexts.is_empty() {
        app.contexts.iter().map(|c| c.name.clone()).collect()
    } else {
        app.kube_contexts.clone()
    }
}

/// The context the single-context session shows.
pub(super) fn current_context(app: &App) -> String {
    app.contexts.first().map(|c| c.name.clone()).unwrap_or_default()
}

/// `c`: the picker over [`context_names`], the one shown selected.
pub(super) fn open_picker(app: &mut App) {
    let choices = context_names(app);
    let shown = if app.several_contexts {
        app.view.context.clone()
    } else {
        Some(current_context(app))
    };
    let selected = shown
        .and_then(|picked| choices.iter().position(|c| *c == picked))
        .map_or(0, |i| i + 1);
    app.picker = (String::new(), choices.clone());
    app.status = "type to narrow the contexts · ↑↓ move · Enter picks".into();
    app.popups.push(Popup::Contexts { choices, selected });
}

/// A letter or Backspace typed into the context picker: its rows narrow to the fuzzy matches,
/// the best one selected. `false`: the key is not one it types.
pub(super) fn on_picker_type(app: &mut App, key: KeyEvent) -> bool {
    let Some(Popup::Contexts { choices, selected }) = app.popups.last_mut() else {
        return false;
    };
    let (typed, all) = &mut app.picker;
    match key.code {
        KeyCode::Char(c) if !key.modifiers.contains(ratatui::crossterm::event::KeyModifiers::CONTROL) => typed.push(c),
        KeyCode::Backspace => {
            typed.pop();
        }
        _ => return false,
    }
    *choices = namzu_domain::filter::ranked(typed, all).into_iter().cloned().collect();
    // the best match is picked by Enter; with nothing typed, "all contexts" is first
    *selected = usize::from(!typed.is_empty() && !choices.is_empty());
    app.status = if typed.is_empty() {
        "type to narrow the contexts · ↑↓ move · Enter picks".into()
    } else {
        format!("contexts matching {typed:?}: {}", choices.len())
    };
    true
}

/// The picker or `:ctx NAME` chose `context` (`None`: all contexts).
pub(super) fn pick_context(app: &mut App, context: Option<String>) -> Vec<Effect> {
    if app.several_contexts {
        show_context(app, context);
        return Vec::new();
    }
    let here = current_context(app);
    match context {
        Some(name) if name != here => {
            if let Some(why) = super::replay::refuses_scope(app) {
                app.status = why;
                return Vec::new();
            }
            if !app.kube_contexts.contains(&name) {
                app.status = format!("no context {name:?} in the kubeconfig");
                return Vec::new();
            }
            app.status = format!("opening context {name}…");
            vec![Effect::OpenContext {
                context: name,
                replacing: here,
            }]
        }
        _ => {
            app.status = format!("context {here}");
            Vec::new()
        }
    }
}

/// Another context was opened (or not): it replaces the one shown, read in its own namespace
/// (or every namespace, if every one was shown).
pub(super) fn on_context_opened(app: &mut App, context: String, result: Result<ContextOptions, String>) -> Vec<Effect> {
    let options = match result {
        Ok(o) => o,
        Err(why) => {
            app.status = format!(
                "cannot open context {context}: {why}; still on {}",
                current_context(app)
            );
            return Vec::new();
        }
    };
    // later Follows than any of the context left: the I/O task's counter only grows
    let generation = app.contexts.iter().map(|c| c.follow_generation).max().unwrap_or(0) + 1;
    let dropped = options.rules.dropped_reason(&options.name);
    let mut view = ContextView::new(options, app.read_only_flag);
    view.follow_generation = generation;
    let namespace = view.namespace.clone();
    app.contexts = vec![view];
    app.popups
        .retain(|p| matches!(p, Popup::Help { .. } | Popup::Sent { .. }));
    app.view.context = None;
    app.inventory.namespaces = vec![namespace.clone()];
    let scope = match app.scope {
        Scope::All => Scope::All,
        Scope::Namespace(_) => {
            app.home_namespace = namespace.clone();
            Scope::Namespace(namespace)
        }
    };
    let effects = app.switch_scope(scope);
    app.status = match &app.scope {
        Scope::All => format!("context {context} · all namespaces"),
        Scope::Namespace(ns) => format!("context {context} · namespace {ns}"),
    };
    // the flags given for the session's own context did not lift this one's rules: say so
    if let Some(why) = dropped {
        app.status = format!("{} · {why}", app.status);
    }
    effects
}
