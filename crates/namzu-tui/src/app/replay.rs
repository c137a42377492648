//! Replay (`:at TIME`, issue 43): the list as the flight recorder held it at an instant, read
//! through the one inventory read (`ops::replay::rows_at`, what `list --at` reads). The live rows
//! are kept aside meanwhile — the watches go on keeping them current — and come back with
//! `:at now`. `[` and `]` step to the previous and next recorded change; the header says REPLAY,
//! the instant, how complete the recording is there, and where the instant is on a time bar.
//!
//! While replaying nothing is written and nothing of the cluster now is shown as if it were then:
//! writes, logs, shells, forwards, the history, the YAML, the leaks and pulse views and a change
//! of scope are refused with one line; Enter shows the detail as recorded then (`inspect --at`'s
//! read).

use super::*;
use namzu_engine::ops::replay::RowsAt;

#[derive(Debug, Clone)]
pub struct Replay {
    pub instant: DateTime<Utc>,
    /// The live rows, kept current by the watches while the replay is shown.
    pub live: Inventory,
    /// Each context's answer for this instant: its coverage line, or why it has none.
    pub said: BTreeMap<String, Result<String, String>>,
    /// Every instant the recordings in view changed at, oldest first.
    pub changes: Vec<DateTime<Utc>>,
}

/// What `:at` and `[` `]` refuse while replaying, and why; `None`: the command goes on.
pub(super) fn refused(app: &App, command: Command) -> Option<String> {
    app.replay.as_ref()?;
    let why = match command {
        Command::Suspend | Command::Resume | Command::RefreshTemplate | Command::Delete => {
            "replaying: nothing is written while the list shows the past"
        }
        Command::Logs | Command::Shell | Command::Forward | Command::History | Command::Yaml => {
            "replaying: that reads the cluster now, not then (Enter shows the detail as recorded)"
        }
        Command::AllNamespaces | Command::EveryNamespace | Command::NextNamespace | Command::Refresh => {
            "replaying: the scope stays while replaying"
        }
        _ => return None,
    };
    Some(format!("{why}; :at now returns to live"))
}

/// The command line's `at` (and `ns`/`ctx` while replaying): its one line when refused.
pub(super) fn refuses_scope(app: &App) -> Option<String> {
    app.replay
        .as_ref()
        .map(|_| "replaying: the scope stays while replaying; :at now returns to live".to_string())
}

/// `:at TIME`: replay at an RFC 3339 instant or one back from now (`-2h`); `:at now` ends it.
pub(super) fn on_at(app: &mut App, text: &str) -> Vec<Effect> {
    match text.trim() {
        "" => {
            app.status = "at TIME: an RFC 3339 time or one back from now (-2h, -30m); :at now returns to live".into();
            Vec::new()
        }
        "now" | "live" => end(app),
        t => match namzu_domain::select::parse_moment(t, app.now) {
            Ok(instant) => go(app, instant),
            Err(e) => {
                app.status = format!("at {e}");
                Vec::new()
            }
        },
    }
}

/// Show the recording at `instant`: the rows are emptied until each context answers.
fn go(app: &mut App, instant: DateTime<Utc>) -> Vec<Effect> {
    match &mut app.replay {
        Some(r) => {
            r.instant = instant;
            r.said.clear();
        }
        None => {
            app.replay = Some(Replay {
                instant,
                live: std::mem::take(&mut app.inventory),
                said: BTreeMap::new(),
                changes: Vec::new(),
            });
        }
    }
    app.view.unpin();
    app.view.marks.clear();
    // the visible order was computed over the other rows: it goes with them
    app.forget_order();
    app.keep_selection(|inv| inv.replace(Vec::new()));
    app.status = format!("replaying at {}…", stamp(instant));
    // the scrubber's steps are read once, with the first instant (a step reads one instant only)
    let changes = app.replay.as_ref().is_some_and(|r| r.changes.is_empty());
    app.contexts
        .iter()
        .filter(|c| c.open_error.is_none())
        .map(|c| Effect::ReplayAt {
            context: c.name.clone(),
            scope: app.scope_in(&c.name),
            instant,
            changes,
        })
        .collect()
}

/// `:at now`: the live rows again, as the watches kept them.
fn end(app: &mut App) -> Vec<Effect> {
    match app.replay.take() {
        Some(r) => {
            app.inventory = r.live;
            app.forget_order();
            app.inventory.reindex();
            app.clamp();
            app.status = "live again".into();
        }
        None => app.status = "live already".into(),
    }
    Vec::new()
}

/// `[` / `]`: the previous or next instant the recording changed at.
pub(super) fn step(app: &mut App, forward: bool) -> Vec<Effect> {
    let Some(r) = &app.replay else {
        app.status = "not replaying: :at TIME (or :at -2h) first".into();
        return Vec::new();
    };
    let next = if forward {
        r.changes.iter().find(|t| **t > r.instant)
    } else {
        r.changes.iter().rev().find(|t| **t < r.instant)
    };
    match next.copied() {
        Some(t) => go(app, t),
        None => {
            app.status = format!(
                "no recorded change {} {}",
                if forward { "after" } else { "before" },
                stamp(r.instant)
            );
            Vec::new()
        }
    }
}

/// A context's recording at an instant: its rows into the list if that is still the instant shown.
pub(super) fn answered(
    app: &mut App,
    context: &str,
    scope: &Scope,
    instant: DateTime<Utc>,
    result: Result<RowsAt, String>,
) {
    let current = *scope == app.scope_in(context);
    let Some(r) = app.replay.as_mut().filter(|r| r.instant == instant && current) else {
        return;
    };
    match result {
        Ok(at) => {
            r.said.insert(context.to_string(), Ok(at.warnings.join("; ")));
            let mut changes: BTreeSet<DateTime<Utc>> = r.changes.iter().copied().collect();
            changes.extend(at.changes);
            r.changes = changes.into_iter().collect();
            let rows = at.rows.into_iter().map(|w| RowChange::Upsert(Box::new(w))).collect();
            app.keep_selection(|inv| inv.apply(context, rows));
            app.status.clear();
        }
        Err(e) => {
            app.status = format!("{context}: {e}");
            r.said.insert(context.to_string(), Err(e));
        }
    }
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A time bar `width` wide over the recorded changes: `●` the instant, `│` a change.
pub(crate) fn time_bar(r: &Replay, width: usize) -> String {
    let (Some(first), Some(last)) = (r.changes.first(), r.changes.last()) else {
        return String::new();
    };
    let (from, to) = ((*first).min(r.instant), (*last).max(r.instant));
    let span = (to - from).num_milliseconds().max(1) as f64;
    let place =
        |t: DateTime<Utc>| (((t - from).num_milliseconds() as f64 / span) * (width - 1) as f64).round() as usize;
    let mut bar = vec!['─'; width];
    for t in &r.changes {
        bar[place(*t).min(width - 1)] = '│';
    }
    bar[place(r.instant).min(width - 1)] = '●';
    format!("├{}┤", bar.into_iter().collect::<String>())
}

/// The header's replay line: the instant, how long ago, how complete the recording is there.
pub(crate) fn replay_words(app: &App, r: &Replay) -> (String, String) {
    let ago = namzu_domain::age::human_duration((app.now - r.instant).num_seconds().max(0));
    let lead = format!(" REPLAY at {} ({ago} ago) ", stamp(r.instant));
    let said: Vec<String> = r
        .said
        .iter()
        .map(|(c, s)| match s {
            Ok(line) if app.several_contexts => format!("{c}: {line}"),
            Ok(line) => line.clone(),
            Err(e) => format!("{c}: {e}"),
        })
        .collect();
    let rest = if said.is_empty() {
        "reading the recording…".to_string()
    } else {
        said.join(" · ")
    };
    (lead, format!(" writes off · [ ] step · :at now  {rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::KeyModifiers;

    fn app() -> App {
        crate::app::tests::one_context("kind", "agents", at(3))
    }

    fn row(id: &str, mode: namzu_domain::patch::Mode) -> Workspace {
        crate::app::tests::row(id, mode.as_str())
    }

    fn at(h: i64) -> DateTime<Utc> {
        DateTime::UNIX_EPOCH + chrono::TimeDelta::hours(h)
    }

    #[test]
    fn at_shows_the_recording_steps_between_changes_refuses_writes_and_now_brings_the_live_rows_back() {
        use namzu_domain::patch::Mode::{Running, Suspended};
        let mut app = app();
        app.inventory
            .apply("kind", vec![RowChange::Upsert(Box::new(row("alpha", Running)))]);
        // the order computed over the live rows is not taken for the replay's
        assert_eq!(app.visible().len(), 1);
        let asked = run_command(&mut app, "at -2h");
        assert!(app.visible().is_empty());
        assert!(
            matches!(&asked[..], [Effect::ReplayAt { context, instant, changes: true, .. }] if context == "kind" && *instant == at(1)),
            "{asked:?}"
        );
        assert!(app.inventory.rows().is_empty(), "the live rows are kept aside");
        let answer = |app: &mut App, instant, mode| {
            update(
                app,
                Action::Replayed {
                    context: "kind".into(),
                    scope: Scope::Namespace("agents".into()),
                    instant,
                    result: Ok(RowsAt {
                        rows: vec![row("alpha", mode)],
                        warnings: vec!["replay at … recorded from …".into()],
                        changes: vec![at(0), at(1), at(2)],
                    }),
                },
            )
        };
        answer(&mut app, at(1), Suspended);
        assert_eq!(app.inventory.rows()[0].mode, Suspended);
        let r = app.replay.as_ref().unwrap();
        assert!(
            replay_words(&app, r)
                .0
                .contains("REPLAY at 1970-01-01T01:00:00Z (120m ago)")
        );
        assert_eq!(time_bar(r, 5), "├│─●─│┤");
        // a write is refused, in one line
        let refused = update(
            &mut app,
            Action::Key(KeyEvent::new(KeyCode::Char('S'), KeyModifiers::NONE)),
        );
        assert!(refused.is_empty() && app.popups.is_empty());
        assert!(app.status.contains("nothing is written"), "{}", app.status);
        // the views read the cluster now: refused, not shown under the REPLAY header
        assert!(run_command(&mut app, "pulse").is_empty() && app.popups.is_empty());
        assert!(app.status.contains(":pulse reads the cluster now"), "{}", app.status);
        // ] steps to the next change; an answer for the old instant is dropped
        let next = update(
            &mut app,
            Action::Key(KeyEvent::new(KeyCode::Char(']'), KeyModifiers::NONE)),
        );
        // a step reads its instant only: the steps are known
        assert!(matches!(&next[..], [Effect::ReplayAt { instant, changes: false, .. }] if *instant == at(2)));
        answer(&mut app, at(1), Suspended);
        assert!(app.inventory.rows().is_empty());
        answer(&mut app, at(2), Running);
        assert_eq!(app.inventory.rows()[0].mode, Running);
        // live rows that changed meanwhile come back as the watches left them
        let generation = app.contexts[0].follow_generation;
        update(
            &mut app,
            Action::Live {
                context: "kind".into(),
                scope: Scope::Namespace("agents".into()),
                generation,
                event: LiveEvent::Rows(vec![RowChange::Upsert(Box::new(row("bravo", Running)))]),
            },
        );
        assert_eq!(app.inventory.rows().len(), 1, "the replay's rows only");
        run_command(&mut app, "at now");
        assert!(app.replay.is_none());
        let ids: Vec<&str> = app.inventory.rows().iter().map(|w| w.id.as_str()).collect();
        assert_eq!(ids, ["alpha", "bravo"]);
        assert!(run_command(&mut app, "at 2999-01-01T00:00:00Z").is_empty());
        assert!(app.status.contains("in the future"), "{}", app.status);
    }
}
