//! The leaks view (`:leaks`): what `kubectl namzu leaks` lists for the contexts and namespace in
//! view, read through the same cluster and domain functions. A cursor moves over the leaks, Space
//! marks, D deletes the marked (or the one under the cursor) through `leaks --delete`'s own use
//! case (`ops::leaks`: the same plan, rules, typed count, re-check, tombstone and audit).

use super::*;
use namzu_domain::leaks::{Leak, LeakKind};
use namzu_domain::quantities::{Unit, human};

/// One context's answer: its leaks and the warnings of what it could not read, or why nothing.
pub(crate) type LeaksAnswer = Result<(Vec<Leak>, Vec<String>), String>;

#[derive(Debug, Clone, Default)]
pub struct LeaksView {
    /// Each context asked, with its scope and its answer once it came.
    pub parts: Vec<(String, Scope, Option<LeaksAnswer>)>,
    pub scroll: u16,
    /// The leak under the cursor: its place among every leak listed, in the parts' order.
    pub cursor: usize,
    /// The marked leaks: (context, namespace, name).
    pub marked: BTreeSet<(String, String, String)>,
    /// A delete waiting for its typed count.
    pub confirm: Option<LeaksConfirm>,
}

/// A delete of one context's leaks, asked: the question `ops::leaks` words, what to type.
#[derive(Debug, Clone)]
pub struct LeaksConfirm {
    pub context: String,
    pub scope: Scope,
    pub names: Vec<String>,
    pub include_detached: bool,
    pub question: String,
    pub word: String,
    pub typed: String,
}

/// Every leak listed, in order, with its context and scope.
fn listed(view: &LeaksView) -> Vec<(&str, &Scope, &Leak)> {
    view.parts
        .iter()
        .filter_map(|(c, s, a)| match a {
            Some(Ok((leaks, _))) => Some(leaks.iter().map(move |l| (c.as_str(), s, l))),
            _ => None,
        })
        .flatten()
        .collect()
}

/// A key on the leaks view: the cursor, a mark, a delete asked, its typed count.
pub(super) fn on_leaks_key(app: &mut App, command: Option<Command>, key: KeyEvent) -> Vec<Effect> {
    let now = app.now;
    let Some(Popup::Leaks(view)) = app.popups.last_mut() else {
        return Vec::new();
    };
    if let Some(confirm) = view.confirm.as_mut() {
        match (command, key.code) {
            (Some(Command::Close), _) => {
                view.confirm = None;
                app.status = "cancelled: nothing deleted".into();
            }
            (Some(Command::Choose | Command::Keep), _) | (_, KeyCode::Enter) => {
                // what was typed goes with the delete: `ops::leaks` checks it against the count
                // of what it plans then, so a selection that changed meanwhile sends nothing
                if let Some(confirm) = view.confirm.take() {
                    app.status = format!("deleting {} in {}…", confirm.names.join(", "), confirm.context);
                    return vec![Effect::DeleteLeaks {
                        context: confirm.context,
                        scope: confirm.scope,
                        names: confirm.names,
                        include_detached: confirm.include_detached,
                        typed: confirm.typed,
                    }];
                }
            }
            (_, KeyCode::Backspace) => {
                confirm.typed.pop();
            }
            (None, KeyCode::Char(c)) => confirm.typed.push(c),
            _ => {}
        }
        return Vec::new();
    }
    let count = listed(view).len();
    match command {
        Some(Command::Close) => {
            app.popups.pop();
            return Vec::new();
        }
        Some(Command::Mark) => {
            if let Some((c, _, l)) = listed(view).get(view.cursor) {
                let key = (c.to_string(), l.namespace.clone(), l.name.clone());
                if !view.marked.remove(&key) {
                    view.marked.insert(key);
                }
            }
        }
        Some(Command::Delete) => return ask_delete(app, now),
        Some(c) => view.cursor = moved(view.cursor, c, 5, count.saturating_sub(1)),
        None => {}
    }
    // the cursor's leak stays in sight (three lines per leak, after the warnings)
    if let Some(Popup::Leaks(view)) = app.popups.last() {
        let text = leaks_text(app, view);
        let line = text.lines().position(|l| l.starts_with('›')).unwrap_or(0);
        let scroll = line.saturating_sub(2) as u16;
        if let Some(Popup::Leaks(view)) = app.popups.last_mut() {
            view.scroll = scroll;
        }
    }
    Vec::new()
}

/// D: the marked leaks (else the cursor's), of one context, planned as `leaks --delete` plans
/// them; a typed count asked with `ops::leaks`'s own words.
fn ask_delete(app: &mut App, now: DateTime<Utc>) -> Vec<Effect> {
    if let Some(why) = super::replay::refused(app, Command::Delete) {
        app.status = why;
        return Vec::new();
    }
    let Some(Popup::Leaks(view)) = app.popups.last() else {
        return Vec::new();
    };
    let all = listed(view);
    let targets: Vec<(&str, &Scope, &Leak)> = if view.marked.is_empty() {
        all.get(view.cursor).copied().into_iter().collect()
    } else {
        all.iter()
            .copied()
            .filter(|(c, _, l)| {
                view.marked
                    .contains(&(c.to_string(), l.namespace.clone(), l.name.clone()))
            })
            .collect()
    };
    let Some((context, scope, _)) = targets.first().copied() else {
        app.status = "no leak to delete".into();
        return Vec::new();
    };
    if targets.iter().any(|(c, _, _)| *c != context) {
        app.status = "marks span contexts: delete one context's leaks at a time".into();
        return Vec::new();
    }
    let rules = app.context_view(context).map(|c| c.rules.clone()).unwrap_or_default();
    let request = namzu_engine::ops::leaks::Request {
        names: targets.iter().map(|(_, _, l)| l.name.clone()).collect(),
        // a detached disk marked is asked for by name
        include_detached: targets.iter().any(|(_, _, l)| l.kind == LeakKind::DetachedDisk),
        detached_after_days: namzu_domain::leaks::DETACHED_AFTER_DAYS,
        ..Default::default()
    }
    .under(&rules);
    let mut plans = Vec::new();
    for (_, _, leak) in &targets {
        match namzu_engine::ops::leaks::plan(leak, &request, now) {
            Some(p) => plans.push(p),
            None => {
                app.status = format!("{}: {} — not deleted", leak.name, leak.reason);
                return Vec::new();
            }
        }
    }
    let question = namzu_engine::ops::leaks::Question {
        context: Some(context.to_string()),
        badge: rules.badge.as_ref().map(|b| b.label.clone()),
        objects: plans.len(),
        disks: plans
            .iter()
            .filter(|p| p.target == namzu_engine::cluster::write::LeakTarget::Disk)
            .count(),
        named: plans.iter().map(namzu_engine::present::leaks::named).collect(),
    };
    let confirm = LeaksConfirm {
        context: context.to_string(),
        scope: scope.clone(),
        names: request.names.clone(),
        include_detached: request.include_detached,
        question: question.text(),
        word: question.word(),
        typed: String::new(),
    };
    app.status = format!("type \"{}\" and Enter to delete (Esc cancels)", confirm.word);
    if let Some(Popup::Leaks(view)) = app.popups.last_mut() {
        view.confirm = Some(confirm);
    }
    Vec::new()
}

/// The deletes' answer: said on the status line; the context's leaks read again.
pub(super) fn deleted(app: &mut App, context: String, scope: Scope, result: Result<String, String>) -> Vec<Effect> {
    app.status = match result {
        Ok(said) => said,
        Err(why) => format!("leaks in {context}: {why}"),
    };
    for popup in app.popups.iter_mut() {
        if let Popup::Leaks(view) = popup {
            view.marked.retain(|(c, _, _)| *c != context);
            for (c, s, answer) in view.parts.iter_mut() {
                if *c == context && *s == scope {
                    *answer = None;
                }
            }
        }
    }
    vec![Effect::Leaks { context, scope }]
}

/// Open the view: one read per context in view, in the scope it shows.
pub(super) fn open(app: &mut App) -> Vec<Effect> {
    let names = app.contexts_in_view();
    let parts: Vec<(String, Scope, Option<LeaksAnswer>)> = names
        .into_iter()
        .map(|n| {
            let scope = app.scope_in(&n);
            (n, scope, None)
        })
        .collect();
    let effects = parts
        .iter()
        .map(|(context, scope, _)| Effect::Leaks {
            context: context.clone(),
            scope: scope.clone(),
        })
        .collect();
    app.popups.push(Popup::Leaks(LeaksView {
        parts,
        ..Default::default()
    }));
    effects
}

/// A context's answer, into the view if it is still open and asked it.
pub(super) fn answered(app: &mut App, context: &str, scope: &Scope, result: LeaksAnswer) {
    for popup in app.popups.iter_mut() {
        if let Popup::Leaks(view) = popup {
            for (c, s, answer) in view.parts.iter_mut() {
                if c == context && s == scope {
                    *answer = Some(result.clone());
                }
            }
        }
    }
}

/// The view's title.
pub(crate) fn leaks_title(app: &App, view: &LeaksView) -> String {
    let scope = match view.parts.first().map(|(_, s, _)| s) {
        Some(Scope::Namespace(n))
            if view
                .parts
                .iter()
                .all(|(_, s, _)| matches!(s, Scope::Namespace(m) if m == n)) =>
        {
            format!("namespace {n}")
        }
        Some(Scope::Namespace(_)) => "each context's namespace".to_string(),
        _ => "all namespaces".to_string(),
    };
    let contexts = if app.several_contexts {
        let n = view.parts.len();
        format!(", {n} context{}", if n == 1 { "" } else { "s" })
    } else {
        String::new()
    };
    format!(" leaks ({scope}{contexts}) ")
}

/// The view's text: per leak its kind, name, leak, size and age, then the reason and the next step;
/// the last line says where deleting is done.
pub(crate) fn leaks_text(app: &App, view: &LeaksView) -> String {
    let mut out = Vec::new();
    let mut count = 0usize;
    let mut disks: i128 = 0;
    let mut pending = 0usize;
    let mut place = 0usize;
    for (context, _, answer) in &view.parts {
        let at = if app.several_contexts {
            format!("{context}/")
        } else {
            String::new()
        };
        match answer {
            None => {
                pending += 1;
                out.push(format!("{context}: reading…"));
            }
            Some(Err(e)) => out.push(format!("{context}: cannot read: {e}")),
            Some(Ok((leaks, warnings))) => {
                for w in warnings {
                    out.push(format!("{context}: {w}"));
                }
                for l in leaks {
                    let here = place == view.cursor;
                    place += 1;
                    let marked = view
                        .marked
                        .contains(&(context.clone(), l.namespace.clone(), l.name.clone()));
                    let lead = match (here, marked) {
                        (true, true) => "›✓",
                        (true, false) => "› ",
                        (false, true) => " ✓",
                        (false, false) => "  ",
                    };
                    count += usize::from(l.kind.is_leak());
                    if matches!(l.kind, LeakKind::Disk | LeakKind::DetachedDisk) {
                        disks += l.size.unwrap_or(0);
                    }
                    let size = l.size.map_or(String::new(), |s| format!("  {}", human(s, Unit::Bytes)));
                    let age = l.age(app.now).map_or(String::new(), |a| format!("  {a}"));
                    out.push(format!(
                        "{lead}{}  {at}{}/{}  {}{size}{age}",
                        l.kind.object_kind(),
                        l.namespace,
                        l.name,
                        l.kind.as_str()
                    ));
                    out.push(format!("    {}", l.reason));
                    let context = app.several_contexts.then_some(context.as_str());
                    out.push(format!("    next: {}", l.next_in(context)));
                }
            }
        }
    }
    if pending == 0 {
        let mut summary = match count {
            0 => "No leaks found.".to_string(),
            1 => "1 leak".to_string(),
            n => format!("{n} leaks"),
        };
        if disks > 0 {
            summary.push_str(&format!("; disks left behind hold {}", human(disks, Unit::Bytes)));
        }
        out.push(summary);
    }
    out.push(String::new());
    match &view.confirm {
        Some(c) => {
            out.extend(c.question.lines().map(str::to_string));
            out.push(format!("Type \"{}\" to delete them: {}", c.word, c.typed));
        }
        None => out.push(
            "Space marks, D deletes the marked (or the one under ›) as kubectl namzu leaks --delete does; kubectl namzu restore undoes it".into(),
        ),
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use namzu_domain::leaks::LeakKind;

    fn fleet() -> App {
        let context = |name: &str| ContextOptions {
            name: name.into(),
            namespace: "agents".into(),
            ..Default::default()
        };
        App::new(AppOptions {
            contexts: vec![context("a"), context("b")],
            several_contexts: true,
            namespace: "agents".into(),
            all_namespaces: false,
            read_only: false,
            now: DateTime::UNIX_EPOCH,
        })
    }

    #[test]
    fn leaks_reads_the_contexts_in_view_and_shows_their_answers() {
        let mut app = fleet();
        app.view.context = Some("b".into());
        let effects = run_command(&mut app, "leaks");
        let asked: Vec<(String, Scope)> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Leaks { context, scope } => Some((context.clone(), scope.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(asked, [("b".to_string(), Scope::Namespace("agents".into()))]);
        let Some(Popup::Leaks(view)) = app.popups.last() else {
            panic!("no leaks view: {:?}", app.popups);
        };
        assert!(leaks_text(&app, view).contains("b: reading…"));
        let leak = Leak {
            kind: LeakKind::Disk,
            namespace: "agents".into(),
            name: "workspace-disk-namzu-ws-ghost".into(),
            uid: None,
            resource_version: None,
            reason: "its Sandbox is gone".into(),
            since: None,
            size: Some((10i128 << 30) * 1000),
            next: "kubectl namzu leaks -n agents --delete".into(),
            deletable: true,
            checks: Vec::new(),
            quarantine: None,
        };
        let scope = Scope::Namespace("agents".into());
        update(
            &mut app,
            Action::Leaks {
                context: "b".into(),
                scope: scope.clone(),
                result: Ok((vec![leak], Vec::new())),
            },
        );
        // a context not asked answers nothing into the view
        update(
            &mut app,
            Action::Leaks {
                context: "a".into(),
                scope,
                result: Err("boom".into()),
            },
        );
        let Some(Popup::Leaks(view)) = app.popups.last() else {
            panic!("the view closed");
        };
        let text = leaks_text(&app, view);
        assert!(
            text.contains("PersistentVolumeClaim  b/agents/workspace-disk-namzu-ws-ghost  orphaned-disk  10Gi"),
            "{text}"
        );
        // the command pasted acts on the row's context
        assert!(
            text.contains("next: kubectl namzu --context b leaks -n agents --delete"),
            "{text}"
        );
        assert!(!text.contains("boom"), "{text}");
        assert!(text.contains("1 leak; disks left behind hold 10Gi"), "{text}");
        assert!(text.ends_with("kubectl namzu restore undoes it"), "{text}");
        assert_eq!(leaks_title(&app, view), " leaks (namespace agents, 1 context) ");
    }
}
