//! The `:` command line: its completions and what each command does.

use super::*;

/// The command line's commands, for completion.
pub(super) const COMMANDS: [&str; 20] = [
    "ns", "ctx", "all", "sort", "filter", "problems", "logs", "shell", "history", "detail", "yaml", "sent", "help",
    "reverse", "refresh", "leaks", "pulse", "at", "q", "quit",
];

/// The words the command line's `word`-th word may be, given the first.
pub(super) fn completions(app: &App, first: &str) -> Vec<String> {
    match first {
        "ns" | "namespace" => std::iter::once("all".to_string())
            .chain(app.inventory.namespaces.iter().cloned())
            .collect(),
        "ctx" | "context" if !app.several_contexts => context_names(app),
        "ctx" | "context" => std::iter::once("all".to_string())
            .chain(app.contexts.iter().map(|c| c.name.clone()))
            .collect(),
        "sort" => SORTS.iter().map(|(n, _, _)| n.to_string()).collect(),
        _ => Vec::new(),
    }
}

pub(super) fn on_command_key(app: &mut App, command: Option<Command>, key: KeyEvent) -> Vec<Effect> {
    let Some(line) = app.view.command.as_mut() else {
        return Vec::new();
    };
    match (command, key.code) {
        (Some(Command::ClearFilter), _) => {
            app.view.command = None;
            app.status = "cancelled".into();
        }
        (Some(Command::Complete), _) => {
            let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
            let ends_in_space = line.ends_with(' ');
            let (first, partial) = match (words.as_slice(), ends_in_space) {
                ([], _) => (None, String::new()),
                ([one], false) => (None, one.clone()),
                ([one], true) => (Some(one.clone()), String::new()),
                ([one, .., last], false) => (Some(one.clone()), last.clone()),
                ([one, ..], true) => (Some(one.clone()), String::new()),
            };
            let candidates: Vec<String> = match &first {
                None => COMMANDS.iter().map(|c| c.to_string()).collect(),
                Some(f) => completions(app, f),
            };
            let fitting: Vec<&String> = candidates.iter().filter(|c| c.starts_with(&partial)).collect();
            let chosen = match fitting.as_slice() {
                [one] => Some((*one).clone()),
                [] => best(&partial, &candidates).cloned(),
                many => {
                    app.status = many.iter().map(|c| c.as_str()).collect::<Vec<_>>().join("  ");
                    None
                }
            };
            if let Some(word) = chosen {
                let line = app.view.command.get_or_insert_with(String::new);
                let keep = line.len() - if ends_in_space { 0 } else { partial.len() };
                line.truncate(keep);
                line.push_str(&word);
                line.push(' ');
            }
        }
        (Some(Command::Keep), _) => {
            let text = app.view.command.take().unwrap_or_default();
            return run_command(app, text.trim());
        }
        // a backspace on an empty line closes it
        (_, KeyCode::Backspace) if line.pop().is_none() => app.view.command = None,
        (_, KeyCode::Char(c)) => line.push(c),
        _ => {}
    }
    Vec::new()
}

/// Run a command line: `ns NAME`, `ctx NAME`, `sort COLUMN`, `q`, …
pub(super) fn run_command(app: &mut App, text: &str) -> Vec<Effect> {
    let (first, rest) = text.split_once(' ').map_or((text, ""), |(a, b)| (a, b.trim()));
    let first = first.strip_prefix(':').unwrap_or(first);
    match first {
        "" => Vec::new(),
        "q" | "q!" | "quit" => {
            app.quit = true;
            Vec::new()
        }
        "help" | "?" => on_list_command(app, Command::Help),
        "logs" | "log" => on_list_command(app, Command::Logs),
        "shell" | "sh" => super::triage::on_shell_line(app, rest),
        "history" => on_list_command(app, Command::History),
        "detail" | "describe" => on_list_command(app, Command::Detail),
        "yaml" | "edit" => on_list_command(app, Command::Yaml),
        "sent" => on_list_command(app, Command::Sent),
        "refresh" => on_list_command(app, Command::Refresh),
        "reverse" => on_list_command(app, Command::ReverseSort),
        "problems" => on_list_command(app, Command::Problems),
        // the views read the cluster now: under a REPLAY header they would pass for then
        "leaks" | "pulse" if app.replay.is_some() => {
            app.status = format!("replaying: :{first} reads the cluster now, not then; :at now returns to live");
            Vec::new()
        }
        "leaks" => super::leaks::open(app),
        "pulse" => super::pulse::open(app, rest),
        "filter" | "f" => {
            app.set_filter(rest);
            Vec::new()
        }
        "all" => {
            app.view.command = None;
            if app.scope == Scope::All {
                Vec::new()
            } else {
                app.switch_scope(Scope::All)
            }
        }
        "ns" | "namespace" => namespace_command(app, rest),
        "ctx" | "context" if app.replay.is_some() => {
            app.status = super::replay::refuses_scope(app).unwrap_or_default();
            Vec::new()
        }
        "ctx" | "context" => context_command(app, rest),
        "at" => super::replay::on_at(app, rest),
        "sort" => {
            match SORTS.iter().find(|(n, _, _)| *n == rest).or_else(|| {
                let names: Vec<String> = SORTS.iter().map(|(n, _, _)| n.to_string()).collect();
                best(rest, &names).and_then(|b| SORTS.iter().find(|(n, _, _)| n == b))
            }) {
                Some((_, key, _)) => set_sort(app, *key),
                None => app.status = format!("no column {rest:?} to sort by"),
            }
            Vec::new()
        }
        other => {
            app.status = format!("no command {other:?} · Tab completes · ? for help");
            Vec::new()
        }
    }
}

/// The best of the completions of `what` for `rest`.
fn pick(app: &App, what: &str, rest: &str) -> Option<String> {
    let choices = completions(app, what);
    best(rest, &choices).cloned()
}

/// `ns [NAME]`: the namespaces known, or switch to one (`all`: every namespace).
fn namespace_command(app: &mut App, rest: &str) -> Vec<Effect> {
    if rest.is_empty() {
        app.status = format!("namespaces: {}", app.inventory.namespaces.join("  "));
        return Vec::new();
    }
    match pick(app, "ns", rest) {
        Some(all) if all == "all" => app.switch_scope(Scope::All),
        Some(ns) => {
            app.home_namespace = ns.clone();
            app.own_namespaces = false;
            app.switch_scope(Scope::Namespace(ns))
        }
        // a namespace not listed (RBAC may hide the list): asked for by its exact name
        None if validate_namespace(rest).is_ok() => {
            app.home_namespace = rest.to_string();
            app.own_namespaces = false;
            app.switch_scope(Scope::Namespace(rest.to_string()))
        }
        None => {
            app.status = format!("no namespace {rest:?}");
            Vec::new()
        }
    }
}

/// `ctx [NAME]`: switch the kubeconfig's context (one open), or show one context's rows
/// (several open).
fn context_command(app: &mut App, rest: &str) -> Vec<Effect> {
    if !app.several_contexts && !app.kube_contexts.is_empty() {
        if rest.is_empty() {
            return on_list_command(app, Command::Contexts);
        }
        return match pick(app, "ctx", rest) {
            Some(name) => pick_context(app, Some(name)),
            None => {
                app.status = format!("no context {rest:?} in the kubeconfig");
                Vec::new()
            }
        };
    }
    if !app.several_contexts {
        let here = app.contexts.first().map(|c| c.name.clone()).unwrap_or_default();
        app.status = if rest.is_empty() || rest == here {
            format!("context {here}: the only one in this session")
        } else {
            format!(
                "this session reads context {here} only: open {rest} with --context {rest} (or several with --context {here},{rest})"
            )
        };
        return Vec::new();
    }
    let chosen = if rest.is_empty() { None } else { pick(app, "ctx", rest) };
    match chosen {
        None if rest.is_empty() => on_list_command(app, Command::Contexts),
        None => {
            app.status = format!("no context {rest:?} in this session");
            Vec::new()
        }
        Some(name) => {
            let context = (name != "all").then_some(name);
            show_context(app, context);
            Vec::new()
        }
    }
}

/// Show only `context`'s rows, or every context's.
pub(super) fn show_context(app: &mut App, context: Option<String>) {
    app.status = match &context {
        Some(c) => format!("showing context {c} only (c: pick another)"),
        None => "showing every context".into(),
    };
    // marks of rows no longer shown would be acted on unseen: they go
    if let Some(c) = &context {
        app.view.marks.retain(|k| k.context_name() == c.as_str());
    }
    app.view.context = context;
    app.view.unpin();
    app.view.selected = 0;
    app.clamp();
}
