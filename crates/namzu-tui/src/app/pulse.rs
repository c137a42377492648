//! The pulse view (`:pulse [WINDOW]`): what `kubectl namzu pulse` prints for the contexts and
//! namespace in view, computed by the same domain rules (`domain::pulse`) on each context's live
//! follow: while the view is open the follow also watches claims, warm pools and Events, and
//! sends the pulse at most once a second when what it reads changed (`cluster/live/pulse.rs`) —
//! a refresh costs no request. Each group's figures, then a cursor over the counts behind them
//! (starts, cold starts, pending, slow, stale members); Enter lists what a count is made of,
//! with each start's latency, what it was measured from and, for a slow one, its cause and
//! evidence. `r` asks for it again now.

use super::*;
use chrono::TimeDelta;
use namzu_domain::pulse::{Blame, Group, Pulse, Start};
use namzu_engine::cluster::live::PulseAsk;

/// One context's answer: its pulse and the warnings of what it could not read, or why nothing.
pub(crate) type PulseAnswer = Result<(Pulse, Vec<String>), String>;

/// One context asked: its scope, its last answer, whether a read is under way and when the
/// answer came.
#[derive(Debug, Clone)]
pub struct PulsePart {
    pub context: String,
    pub scope: Scope,
    pub answer: Option<PulseAnswer>,
    pub reading: bool,
    pub answered_at: Option<DateTime<Utc>>,
    /// How long its follow took to compute the last answer.
    pub took: Option<std::time::Duration>,
}

#[derive(Debug, Clone)]
pub struct PulseView {
    /// The window: starts requested in the last this long.
    pub since: TimeDelta,
    /// Which ask this is: `r` makes another (the follows compute again at once).
    pub asked: u64,
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
        .map(|context| {
            // a context whose follow ended computes nothing: said at once
            let failed = app.context_view(&context).and_then(|c| c.refresh_error.clone());
            PulsePart {
                scope: app.scope_in(&context),
                answer: failed.map(Err),
                reading: true,
                answered_at: None,
                took: None,
                context,
            }
        })
        .collect();
    app.pulse_seq += 1;
    app.popups.push(Popup::Pulse(PulseView {
        since,
        asked: app.pulse_seq,
        parts,
        cursor: 0,
        opened: None,
        scroll: 0,
    }));
    Vec::new()
}

/// What the follows are asked after any action: each context of the open view its pulse, the
/// rest nothing. Every way the view closes or asks again comes through here, so no follow keeps
/// watching for a view that is gone.
pub(super) fn sync(app: &mut App) -> Vec<Effect> {
    let wanted: BTreeMap<String, PulseAsk> = app
        .popups
        .iter()
        .rev()
        .find_map(|p| match p {
            Popup::Pulse(v) => Some(v),
            _ => None,
        })
        .map(|v| {
            let ask = PulseAsk {
                since: v.since,
                asked: v.asked,
            };
            v.parts.iter().map(|p| (p.context.clone(), ask.clone())).collect()
        })
        .unwrap_or_default();
    if wanted == app.pulse_asked {
        return Vec::new();
    }
    let mut effects = Vec::new();
    for context in app.pulse_asked.keys().filter(|c| !wanted.contains_key(*c)) {
        app.pulse_seq += 1;
        effects.push(Effect::PulseWatch {
            context: context.clone(),
            seq: app.pulse_seq,
            ask: None,
        });
    }
    for (context, ask) in &wanted {
        if app.pulse_asked.get(context) != Some(ask) {
            app.pulse_seq += 1;
            effects.push(Effect::PulseWatch {
                context: context.clone(),
                seq: app.pulse_seq,
                ask: Some(ask.clone()),
            });
        }
    }
    app.pulse_asked = wanted;
    effects
}

/// A context's follow ended: the open view says why instead of waiting.
pub(super) fn failed(app: &mut App, context: &str, why: &str) {
    for popup in app.popups.iter_mut() {
        if let Popup::Pulse(view) = popup {
            for part in view.parts.iter_mut().filter(|p| p.context == context) {
                part.answer = Some(Err(why.to_string()));
                part.reading = false;
            }
        }
    }
}

/// A context's answer, into the view if it is still open and asked it (for the same window).
pub(super) fn answered(
    app: &mut App,
    context: &str,
    scope: &Scope,
    since: TimeDelta,
    result: PulseAnswer,
    took: std::time::Duration,
) {
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
                part.took = Some(took);
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
            view.asked += 1;
            for part in &mut view.parts {
                part.reading = true;
            }
            app.status = "pulse: computing again".into();
            return Vec::new();
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
    let took = view.parts.iter().filter_map(|p| p.took).max().unwrap_or_default();
    let read = view
        .parts
        .iter()
        .filter_map(|p| p.answered_at)
        .min()
        .map_or("watching".to_string(), |t| {
            format!(
                "live, computed {} ago in {:.2}s",
                namzu_domain::age::human_duration((app.now - t).num_seconds().max(0)),
                took.as_secs_f64()
            )
        });
    out.push(String::new());
    out.push(format!(
        "{read} (on each change, at most once a second; r now) · percentiles by nearest rank · Enter lists what a count is made of"
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

    /// The follow of context "kind" sends its pulse.
    fn answer(app: &mut App) -> Vec<Effect> {
        let action = Action::Live {
            context: "kind".into(),
            scope: Scope::Namespace("staging".into()),
            generation: app.contexts[0].follow_generation,
            event: LiveEvent::Pulse {
                since: TimeDelta::hours(1),
                pulse: Box::new(pulse()),
                warnings: Vec::new(),
                took: std::time::Duration::from_millis(120),
            },
        };
        update(app, action)
    }

    /// A command line run, and what the follows are then asked (as `update` does after each action).
    fn command(app: &mut App, text: &str) -> Vec<Effect> {
        let mut effects = run_command(app, text);
        effects.extend(sync(app));
        effects
    }

    fn asks(effects: &[Effect]) -> Vec<(String, Option<PulseAsk>)> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::PulseWatch { context, ask, .. } => Some((context.clone(), ask.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_view_asks_the_follow_for_its_pulse_while_open_and_no_longer_once_closed() {
        let mut app = app();
        let asked = asks(&command(&mut app, "pulse"));
        assert!(
            matches!(&asked[..], [(context, Some(PulseAsk { since, .. }))]
                if context == "kind" && *since == TimeDelta::hours(1)),
            "{asked:?}"
        );
        assert!(pulse_text(&app, view(&app)).contains("kind: reading…"));
        // time passing asks nothing more: the follow sends the pulse when it changes
        assert!(update(&mut app, Action::Tick(DateTime::UNIX_EPOCH + TimeDelta::seconds(9))).is_empty());
        assert!(answer(&mut app).is_empty(), "an answer asks nothing");
        let text = pulse_text(&app, view(&app));
        assert!(text.contains("staging · template coder · pool coder-pool"), "{text}");
        assert!(text.contains("warm-hit 50% (1 warm, 1 cold, 0 unknown)"), "{text}");
        assert!(text.contains("claim→Ready p50/p95/p99 1.0s / 1.0s / 31.0s"), "{text}");
        assert!(text.contains("›   2 starts, each with its latency"), "{text}");
        assert!(text.contains("1 slow start (above p95), each with its cause"), "{text}");
        assert!(text.contains("live, computed 0s ago in 0.12s"), "{text}");
        // r: asked again, with a new ask
        let before = view(&app).asked;
        let again = asks(&press(&mut app, KeyCode::Char('r')));
        assert!(
            matches!(&again[..], [(c, Some(PulseAsk { asked, .. }))] if c == "kind" && *asked != before),
            "{again:?}"
        );
        // closed: the follow is told to stop
        let closed = asks(&press(&mut app, KeyCode::Esc));
        assert_eq!(closed, vec![("kind".to_string(), None)]);
        assert!(asks(&press(&mut app, KeyCode::Esc)).is_empty(), "told once");
        assert_eq!(
            command(&mut app, "pulse 0s").len(),
            0,
            "a window of nothing is refused: {}",
            app.status
        );
    }

    #[test]
    fn a_context_whose_follow_failed_says_why_in_the_view() {
        let mut app = app();
        run_command(&mut app, "pulse");
        let action = Action::Live {
            context: "kind".into(),
            scope: Scope::Namespace("staging".into()),
            generation: app.contexts[0].follow_generation,
            event: LiveEvent::Failed("sandboxes.agents.x-k8s.io is forbidden".into()),
        };
        update(&mut app, action);
        let text = pulse_text(&app, view(&app));
        assert!(
            text.contains("kind: cannot read: sandboxes.agents.x-k8s.io is forbidden"),
            "{text}"
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
