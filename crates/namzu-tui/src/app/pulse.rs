//! The pulse view (`:pulse [WINDOW]`): what `kubectl namzu pulse` prints for the contexts and
//! namespace in view, read through the same use case (`ops::pulse`). Each group's figures, then a
//! cursor over the counts behind them (starts, cold starts, pending, slow, stale members); Enter
//! lists what a count is made of, with each start's latency, what it was measured from and, for
//! a slow one, its cause and evidence. The view reads again at most every [`REFRESH_EVERY`] while
//! it is open (and on `r`), never while a read is under way.

use super::*;
use chrono::TimeDelta;
use namzu_domain::pulse::{Blame, Group, Pulse, Start};

/// One context's answer: its pulse and the warnings of what it could not read, or why nothing.
pub(crate) type PulseAnswer = Result<(Pulse, Vec<String>), String>;

/// How often an open view reads again: each read costs the LISTs `kubectl namzu pulse` makes.
pub(crate) const REFRESH_EVERY: TimeDelta = TimeDelta::seconds(5);

/// One context asked: its scope, its last answer, whether a read is under way and when the
/// answer came.
#[derive(Debug, Clone)]
pub struct PulsePart {
    pub context: String,
    pub scope: Scope,
    pub answer: Option<PulseAnswer>,
    pub reading: bool,
    pub answered_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
pub struct PulseView {
    /// The window: starts requested in the last this long.
    pub since: TimeDelta,
    pub parts: Vec<PulsePart>,
    /// The count under the cursor: its place among every count listed.
    pub cursor: usize,
    /// A count opened (Enter): the cursor over what it is made of.
    pub opened: Option<(Figure, usize)>,
    pub scroll: u16,
}

/// What a count counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FigureKind {
    Starts,
    Cold,
    Pending,
    Slow,
    Stale,
}

/// A count of one group of one context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Figure {
    pub context: String,
    pub group: usize,
    pub kind: FigureKind,
    pub count: usize,
}

impl Figure {
    fn words(&self) -> String {
        let n = self.count;
        let s = if n == 1 { "" } else { "s" };
        match self.kind {
            FigureKind::Starts => format!("{n} start{s}, each with its latency"),
            FigureKind::Cold => format!("{n} cold start{s} (launch-type cold)"),
            FigureKind::Pending => format!("{n} not Ready yet"),
            FigureKind::Slow => format!("{n} slow start{s} (above p95), each with its cause"),
            FigureKind::Stale => format!("{n} pool member{s} on a stale template"),
        }
    }
}

fn answered_pulse(part: &PulsePart) -> Option<&Pulse> {
    match &part.answer {
        Some(Ok((p, _))) => Some(p),
        _ => None,
    }
}

fn in_group(g: &Group, s: &Start) -> bool {
    s.namespace == g.namespace && s.pool == g.pool && s.template == g.template
}

/// Every count worth opening (not zero), in the order the view shows them.
pub(crate) fn figures(parts: &[PulsePart]) -> Vec<Figure> {
    let mut out = Vec::new();
    for part in parts {
        let Some(p) = answered_pulse(part) else { continue };
        for (i, g) in p.groups.iter().enumerate() {
            let starts: Vec<&Start> = p.starts.iter().filter(|s| in_group(g, s)).collect();
            let counts = [
                (FigureKind::Starts, starts.len()),
                (FigureKind::Cold, g.cold),
                (
                    FigureKind::Pending,
                    starts.iter().filter(|s| s.pending_ms.is_some()).count(),
                ),
                (FigureKind::Slow, g.slow.len()),
                (FigureKind::Stale, g.depth.as_ref().map_or(0, |d| d.stale_members.len())),
            ];
            out.extend(counts.into_iter().filter(|(_, n)| *n > 0).map(|(kind, count)| Figure {
                context: part.context.clone(),
                group: i,
                kind,
                count,
            }));
        }
    }
    out
}

/// What an opened count is made of: one entry per start (or stale member), each its lines and,
/// where it is a workspace the list shows, the id to go to.
pub(crate) fn behind(parts: &[PulsePart], figure: &Figure) -> Vec<(Vec<String>, Option<String>)> {
    let Some(p) = parts
        .iter()
        .find(|part| part.context == figure.context)
        .and_then(answered_pulse)
    else {
        return Vec::new();
    };
    let Some(g) = p.groups.get(figure.group) else {
        return Vec::new();
    };
    if figure.kind == FigureKind::Stale {
        let Some(d) = &g.depth else { return Vec::new() };
        return d
            .stale_members
            .iter()
            .map(|m| (vec![format!("{m}  ({})", d.stale_evidence)], None))
            .collect();
    }
    let blame_of = |s: &Start| -> Option<&Blame> {
        g.slow
            .iter()
            .find(|b| b.claim.is_some() && b.claim == s.claim || b.claim.is_none() && b.sandbox == s.sandbox)
    };
    p.starts
        .iter()
        .filter(|s| in_group(g, s))
        .filter(|s| match figure.kind {
            FigureKind::Cold => s.launch_type.as_deref() == Some("cold"),
            FigureKind::Pending => s.pending_ms.is_some(),
            FigureKind::Slow => blame_of(s).is_some(),
            FigureKind::Starts | FigureKind::Stale => true,
        })
        .map(|s| {
            let mut lines = vec![start_line(s)];
            if let Some(b) = blame_of(s) {
                lines.push(format!("    slow: {}", b.cause.as_str()));
                lines.extend(b.evidence.iter().map(|e| format!("    {e}")));
            }
            if let Some(why) = &s.unknown {
                lines.push(format!("    latency unknown: {why}"));
            }
            let workspace = s
                .sandbox
                .as_deref()
                .and_then(namzu_domain::naming::id_of)
                .map(str::to_string);
            (lines, workspace)
        })
        .collect()
}

fn secs(ms: i64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

/// A start in one line: what it is, what served it, how long it took and from what to what.
fn start_line(s: &Start) -> String {
    let what = match &s.claim {
        Some(c) => format!("claim {c}"),
        None => "resume".to_string(),
    };
    let sandbox = s.sandbox.as_deref().unwrap_or("no Sandbox found");
    let launch = s.launch_type.as_deref().unwrap_or("launch-type ?");
    let from = serde_json::to_value(s.from).ok();
    let from = from.as_ref().and_then(Value::as_str).unwrap_or("?");
    let took = match (s.latency_ms, s.pending_ms, s.until) {
        (Some(ms), _, Some(until)) => {
            let until = serde_json::to_value(until).ok();
            let until = until.as_ref().and_then(Value::as_str).unwrap_or("?").to_string();
            format!("{} ({from} → {until})", secs(ms))
        }
        (_, Some(ms), _) => format!("not Ready after {} (from {from})", secs(ms)),
        _ => "latency unknown".to_string(),
    };
    format!("{what} → {}/{sandbox}  {launch}  {took}", s.namespace)
}

/// Open the view: one read per context in view, in the scope it shows.
pub(super) fn open(app: &mut App, window: &str) -> Vec<Effect> {
    let since = if window.is_empty() {
        TimeDelta::hours(1)
    } else {
        match namzu_domain::select::parse_duration(window) {
            Ok(d) if d > TimeDelta::zero() => d,
            Ok(_) => {
                app.status = format!("pulse {window}: the window must be longer than zero");
                return Vec::new();
            }
            Err(e) => {
                app.status = format!("pulse: {e}");
                return Vec::new();
            }
        }
    };
    let parts: Vec<PulsePart> = app
        .contexts_in_view()
        .into_iter()
        .map(|context| PulsePart {
            scope: app.scope_in(&context),
            context,
            answer: None,
            reading: false,
            answered_at: None,
        })
        .collect();
    app.popups.push(Popup::Pulse(PulseView {
        since,
        parts,
        cursor: 0,
        opened: None,
        scroll: 0,
    }));
    read_again(app, true)
}

/// Reads for the open view's contexts: every one not reading (`all`), else only those whose
/// answer is older than [`REFRESH_EVERY`].
fn read_again(app: &mut App, all: bool) -> Vec<Effect> {
    let now = app.now;
    let Some(view) = app.popups.iter_mut().rev().find_map(|p| match p {
        Popup::Pulse(v) => Some(v),
        _ => None,
    }) else {
        return Vec::new();
    };
    let since = view.since;
    view.parts
        .iter_mut()
        .filter(|p| !p.reading)
        .filter(|p| all || p.answered_at.is_none_or(|t| now - t >= REFRESH_EVERY))
        .map(|p| {
            p.reading = true;
            Effect::Pulse {
                context: p.context.clone(),
                scope: p.scope.clone(),
                since,
            }
        })
        .collect()
}

/// A tick: an open view whose answers are [`REFRESH_EVERY`] old reads again.
pub(super) fn due(app: &mut App) -> Vec<Effect> {
    if app.popups.iter().any(|p| matches!(p, Popup::Pulse(_))) {
        read_again(app, false)
    } else {
        Vec::new()
    }
}

/// A context's answer, into the view if it is still open and asked it (for the same window).
pub(super) fn answered(app: &mut App, context: &str, scope: &Scope, since: TimeDelta, result: PulseAnswer) {
    let now = app.now;
    for popup in app.popups.iter_mut() {
        if let Popup::Pulse(view) = popup
            && view.since == since
        {
            for part in view
                .parts
                .iter_mut()
                .filter(|p| p.context == context && p.scope == *scope)
            {
                part.answer = Some(result.clone());
                part.reading = false;
                part.answered_at = Some(now);
            }
            // the counts may have changed: the cursors stay on one
            let counted = figures(&view.parts);
            view.cursor = view.cursor.min(counted.len().saturating_sub(1));
            if let Some((figure, at)) = &mut view.opened {
                let same =
                    |f: &&Figure| f.context == figure.context && f.group == figure.group && f.kind == figure.kind;
                match counted.iter().find(same) {
                    Some(f) => *figure = f.clone(),
                    None => figure.count = 0,
                }
                *at = (*at).min(figure.count.saturating_sub(1));
            }
        }
    }
}

/// The open view, if it is on top.
fn on_top(app: &mut App) -> Option<&mut PulseView> {
    match app.popups.last_mut() {
        Some(Popup::Pulse(view)) => Some(view),
        _ => None,
    }
}

/// A key on the pulse view: the cursor over the counts (or over what an opened one is made of),
/// Enter opens a count (or goes to a workspace's row), `r` reads again now, Esc steps back.
pub(super) fn on_pulse_key(app: &mut App, command: Option<Command>, key: KeyEvent) -> Vec<Effect> {
    let Some(view) = on_top(app) else {
        return Vec::new();
    };
    let enter = matches!(command, Some(Command::Choose)) || key.code == KeyCode::Enter;
    match (&mut view.opened, command) {
        (Some(_), Some(Command::Close)) => view.opened = None,
        (None, Some(Command::Close)) => {
            app.popups.pop();
            return Vec::new();
        }
        (_, Some(Command::Refresh)) => {
            app.status = "pulse: reading again".into();
            return read_again(app, true);
        }
        (Some((figure, at)), _) if enter => {
            let entries = behind(&view.parts, figure);
            match entries.get(*at).and_then(|(_, id)| id.clone()) {
                Some(id) => return go_to(app, &id),
                None => {
                    app.status = "not a workspace of the list (a claim's Sandbox): its lines say what is known".into()
                }
            }
        }
        (None, _) if enter => {
            if let Some(f) = figures(&view.parts).get(view.cursor).cloned() {
                view.opened = Some((f, 0));
            }
        }
        (Some((figure, at)), Some(c)) => {
            let last = behind(&view.parts, figure).len().saturating_sub(1);
            *at = moved(*at, c, 5, last);
        }
        (None, Some(c)) => {
            let last = figures(&view.parts).len().saturating_sub(1);
            view.cursor = moved(view.cursor, c, 5, last);
        }
        _ => {}
    }
    keep_cursor_in_sight(app);
    Vec::new()
}

/// Enter on a workspace's start: the view closes and the list shows that workspace.
fn go_to(app: &mut App, id: &str) -> Vec<Effect> {
    app.popups.retain(|p| !matches!(p, Popup::Pulse(_)));
    app.set_filter(id);
    Vec::new()
}

/// The cursor's line stays in sight.
fn keep_cursor_in_sight(app: &mut App) {
    let Some(Popup::Pulse(view)) = app.popups.last() else {
        return;
    };
    let text = pulse_text(app, view);
    let line = text.lines().position(|l| l.starts_with('›')).unwrap_or(0);
    if let Some(view) = on_top(app) {
        view.scroll = line.saturating_sub(3) as u16;
    }
}

/// The view's title: what is shown, for which window.
pub(crate) fn pulse_title(app: &App, view: &PulseView) -> String {
    let scope = match view.parts.first().map(|p| &p.scope) {
        Some(Scope::Namespace(n)) if view.parts.iter().all(|p| p.scope == Scope::Namespace(n.clone())) => {
            format!("namespace {n}")
        }
        Some(Scope::Namespace(_)) => "each context's namespace".to_string(),
        _ => "all namespaces".to_string(),
    };
    let window = namzu_domain::age::human_duration(view.since.num_seconds());
    match &view.opened {
        Some((f, _)) => format!(" pulse: {} ", f.words()),
        None if app.several_contexts => format!(" pulse ({scope}, {} contexts, last {window}) ", view.parts.len()),
        None => format!(" pulse ({scope}, last {window}) "),
    }
}

fn latency(l: &namzu_domain::pulse::Latency) -> String {
    if l.count == 0 {
        return "-".into();
    }
    let p = |ms: Option<i64>| ms.map_or("-".to_string(), secs);
    format!("{} / {} / {}", p(l.p50_ms), p(l.p95_ms), p(l.p99_ms))
}

/// A group's figures, in lines: what it is, its rates and latencies, its pool.
fn group_lines(at: &str, g: &Group) -> Vec<String> {
    let hit = g.warm_hit_percent.map_or("-".into(), |h| format!("{h:.0}%"));
    let mut lines = vec![
        format!("{at}{} · template {} · pool {}", g.namespace, g.template, g.pool),
        format!(
            "  {:.2} claims/min · warm-hit {hit} ({} warm, {} cold, {} unknown)",
            g.claims_per_minute, g.warm, g.cold, g.launch_unknown
        ),
        format!(
            "  claim→Ready p50/p95/p99 {} · resume→Ready {}",
            latency(&g.claim_to_ready),
            latency(&g.resume_to_ready)
        ),
    ];
    if let Some(d) = &g.depth {
        let empty = d
            .seconds_to_empty
            .map_or("never at this rate".into(), namzu_domain::age::human_duration);
        lines.push(format!(
            "  pool {}/{} ready (wants {}) · empty in {empty} · refill {:.2}/min · {}",
            d.ready_members,
            d.members,
            d.desired.map_or("?".into(), |n| n.to_string()),
            d.refill_per_minute,
            d.update_strategy
        ));
    }
    lines
}

/// The view's text: per context its warnings and groups, each group's figures then its counts
/// (the one under the cursor marked ›); an opened count lists what it is made of instead.
pub(crate) fn pulse_text(app: &App, view: &PulseView) -> String {
    if let Some((figure, at)) = &view.opened {
        let entries = behind(&view.parts, figure);
        let mut out = Vec::new();
        if entries.is_empty() {
            out.push("(none now: the pulse read again has none)".to_string());
        }
        for (i, (lines, _)) in entries.iter().enumerate() {
            for (j, l) in lines.iter().enumerate() {
                let lead = if i == *at && j == 0 { "› " } else { "  " };
                out.push(format!("{lead}{l}"));
            }
        }
        out.push(String::new());
        out.push("Enter on a workspace's start shows its row · Esc back to the figures".into());
        return out.join("\n");
    }
    let counted = figures(&view.parts);
    let mut out = Vec::new();
    let mut place = 0usize;
    for part in &view.parts {
        let at = if app.several_contexts {
            format!("{}/", part.context)
        } else {
            String::new()
        };
        match &part.answer {
            None => out.push(format!("{}: reading…", part.context)),
            Some(Err(e)) => out.push(format!("{}: cannot read: {e}", part.context)),
            Some(Ok((p, warnings))) => {
                out.extend(warnings.iter().map(|w| format!("{}: {w}", part.context)));
                if p.groups.is_empty() {
                    out.push(format!("{at}no claims, warm pools or resumes in the window"));
                }
                for (i, g) in p.groups.iter().enumerate() {
                    out.extend(group_lines(&at, g));
                    for f in counted.iter().filter(|f| f.context == part.context && f.group == i) {
                        let lead = if place == view.cursor { "› " } else { "  " };
                        place += 1;
                        out.push(format!("{lead}  {}", f.words()));
                    }
                }
                if !p.events_read {
                    out.push(format!(
                        "{at}note: Events were not read: causes told by Events are unknown"
                    ));
                }
            }
        }
    }
    let read = view
        .parts
        .iter()
        .filter_map(|p| p.answered_at)
        .min()
        .map_or("reading".to_string(), |t| {
            format!(
                "read {} ago",
                namzu_domain::age::human_duration((app.now - t).num_seconds().max(0))
            )
        });
    out.push(String::new());
    out.push(format!(
        "{read} (again every {}s, r now) · percentiles by nearest rank · Enter lists what a count is made of",
        REFRESH_EVERY.num_seconds()
    ));
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use namzu_domain::pulse::{Cause, From, Latency, Until};
    use ratatui::crossterm::event::KeyModifiers;

    fn app() -> App {
        crate::app::tests::one_context("kind", "staging", DateTime::UNIX_EPOCH)
    }

    fn start(claim: &str, sandbox: &str, launch: &str, ms: i64) -> Start {
        Start {
            namespace: "staging".into(),
            claim: Some(claim.into()),
            sandbox: Some(sandbox.into()),
            pool: "coder-pool".into(),
            template: "coder".into(),
            launch_type: Some(launch.into()),
            requested: DateTime::UNIX_EPOCH,
            from: From::FirstRequested,
            ready: Some(DateTime::UNIX_EPOCH + TimeDelta::milliseconds(ms)),
            until: Some(Until::SandboxReady),
            latency_ms: Some(ms),
            pending_ms: None,
            unknown: None,
        }
    }

    fn pulse() -> Pulse {
        Pulse {
            window_seconds: 3600,
            groups: vec![Group {
                namespace: "staging".into(),
                template: "coder".into(),
                pool: "coder-pool".into(),
                claims: 2,
                claims_per_minute: 0.03,
                warm: 1,
                cold: 1,
                launch_unknown: 0,
                warm_hit_percent: Some(50.0),
                claim_to_ready: Latency {
                    count: 2,
                    p50_ms: Some(1000),
                    p95_ms: Some(1000),
                    p99_ms: Some(31000),
                    ..Default::default()
                },
                resume_to_ready: Latency::default(),
                depth: None,
                slow: vec![Blame {
                    claim: Some("c2".into()),
                    sandbox: Some("coder-pool-b".into()),
                    latency_ms: 31000,
                    cause: Cause::PoolEmpty,
                    evidence: vec!["launch-type cold: the pool had no member".into()],
                }],
            }],
            starts: vec![
                start("c1", "coder-pool-a", "warm", 1000),
                start("c2", "coder-pool-b", "cold", 31000),
            ],
            events_read: true,
        }
    }

    fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
        update(app, Action::Key(KeyEvent::new(code, KeyModifiers::NONE)))
    }

    fn view(app: &App) -> &PulseView {
        match app.popups.last() {
            Some(Popup::Pulse(v)) => v,
            other => panic!("no pulse view: {other:?}"),
        }
    }

    fn answer(app: &mut App) {
        let scope = Scope::Namespace("staging".into());
        update(
            app,
            Action::Pulse {
                context: "kind".into(),
                scope,
                since: TimeDelta::hours(1),
                result: Ok((pulse(), Vec::new())),
            },
        );
    }

    #[test]
    fn pulse_reads_the_scope_in_view_then_again_only_when_its_answer_is_old() {
        let mut app = app();
        let asked = run_command(&mut app, "pulse");
        assert!(
            matches!(&asked[..], [Effect::Pulse { context, scope: Scope::Namespace(n), since }]
                if context == "kind" && n == "staging" && *since == TimeDelta::hours(1)),
            "{asked:?}"
        );
        assert!(pulse_text(&app, view(&app)).contains("kind: reading…"));
        // a tick while the read is under way asks nothing more
        assert!(update(&mut app, Action::Tick(DateTime::UNIX_EPOCH + TimeDelta::seconds(9))).is_empty());
        answer(&mut app);
        let text = pulse_text(&app, view(&app));
        assert!(text.contains("staging · template coder · pool coder-pool"), "{text}");
        assert!(text.contains("warm-hit 50% (1 warm, 1 cold, 0 unknown)"), "{text}");
        assert!(text.contains("claim→Ready p50/p95/p99 1.0s / 1.0s / 31.0s"), "{text}");
        assert!(text.contains("›   2 starts, each with its latency"), "{text}");
        assert!(text.contains("1 slow start (above p95), each with its cause"), "{text}");
        let soon = DateTime::UNIX_EPOCH + TimeDelta::seconds(12);
        assert!(
            update(&mut app, Action::Tick(soon)).is_empty(),
            "answered 3 s ago: not yet"
        );
        let later = soon + REFRESH_EVERY;
        assert_eq!(update(&mut app, Action::Tick(later)).len(), 1, "5 s old: read again");
        assert_eq!(
            run_command(&mut app, "pulse 0s").len(),
            0,
            "a window of nothing is refused: {}",
            app.status
        );
    }

    #[test]
    fn enter_lists_what_a_count_is_made_of_and_esc_steps_back() {
        let mut app = app();
        run_command(&mut app, "pulse 1h");
        answer(&mut app);
        // the counts: starts, cold, slow
        assert_eq!(figures(&view(&app).parts).len(), 3);
        press(&mut app, KeyCode::Down);
        press(&mut app, KeyCode::Down);
        press(&mut app, KeyCode::Enter);
        let text = pulse_text(&app, view(&app));
        assert!(pulse_title(&app, view(&app)).contains("1 slow start"));
        assert!(
            text.contains("› claim c2 → staging/coder-pool-b  cold  31.0s (client-first-requested-at → Sandbox Ready)"),
            "{text}"
        );
        assert!(text.contains("    slow: pool-empty"), "{text}");
        assert!(!text.contains("claim c1"), "only the slow one: {text}");
        // a claim's Sandbox is not a row of the list: Enter says so and stays
        press(&mut app, KeyCode::Enter);
        assert!(app.status.contains("not a workspace of the list"), "{}", app.status);
        press(&mut app, KeyCode::Esc);
        assert!(view(&app).opened.is_none());
        assert!(pulse_text(&app, view(&app)).contains("›   1 slow start"));
        press(&mut app, KeyCode::Esc);
        assert!(app.popups.is_empty());
    }
}
