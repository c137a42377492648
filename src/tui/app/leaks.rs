//! The leaks view (`:leaks`): what `kubectl namzu leaks` lists for the contexts and namespace in
//! view, read through the same cluster and domain functions. Read-only: deleting stays the CLI's
//! `leaks --delete`.

use super::*;
use crate::domain::leaks::{Leak, LeakKind};
use crate::domain::resources::{Unit, human};

/// One context's answer: its leaks and the warnings of what it could not read, or why nothing.
pub type LeaksAnswer = Result<(Vec<Leak>, Vec<String>), String>;

#[derive(Debug, Clone)]
pub struct LeaksView {
    /// Each context asked, with its scope and its answer once it came.
    pub parts: Vec<(String, Scope, Option<LeaksAnswer>)>,
    pub scroll: u16,
}

/// Open the view: one read per context in view, in the scope it shows.
pub(super) fn open(app: &mut App) -> Vec<Effect> {
    let names: Vec<String> = app
        .contexts
        .iter()
        .filter(|c| c.open_error.is_none())
        .map(|c| c.name.clone())
        .filter(|n| app.view.context.as_ref().is_none_or(|v| v == n))
        .collect();
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
    app.popups.push(Popup::Leaks(LeaksView { parts, scroll: 0 }));
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
pub fn leaks_title(app: &App, view: &LeaksView) -> String {
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
pub fn leaks_text(app: &App, view: &LeaksView) -> String {
    let mut out = Vec::new();
    let mut count = 0usize;
    let mut disks: i128 = 0;
    let mut pending = 0usize;
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
                    count += usize::from(l.kind.is_leak());
                    if matches!(l.kind, LeakKind::Disk | LeakKind::DetachedDisk) {
                        disks += l.size.unwrap_or(0);
                    }
                    let size = l.size.map_or(String::new(), |s| format!("  {}", human(s, Unit::Bytes)));
                    let age = l.age(app.now).map_or(String::new(), |a| format!("  {a}"));
                    out.push(format!(
                        "{}  {at}{}/{}  {}{size}{age}",
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
    let context = if app.several_contexts { " --context NAME" } else { "" };
    out.push(format!(
        "read-only: delete with kubectl namzu leaks --delete{context} (-n NAMESPACE or -A)"
    ));
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::leaks::LeakKind;

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
    fn leaks_reads_the_contexts_in_view_and_shows_their_answers_read_only() {
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
        assert!(
            text.ends_with("read-only: delete with kubectl namzu leaks --delete --context NAME (-n NAMESPACE or -A)"),
            "{text}"
        );
        assert_eq!(leaks_title(&app, view), " leaks (namespace agents, 1 context) ");
    }
}
