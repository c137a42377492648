//! The header (each context's health and freshness, the status strip) and the footer's keys.

use super::*;

pub(super) fn render_header(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
    let scope = match &app.scope {
        Scope::All => "all".to_string(),
        Scope::Namespace(_) if app.mixed_namespaces() => "each context's own".to_string(),
        Scope::Namespace(ns) => ns.clone(),
    };
    let mut first = vec![Span::styled(
        " kubectl-namzu ",
        Style::default().add_modifier(Modifier::BOLD),
    )];
    let counts: Vec<String> = app
        .counts()
        .iter()
        .map(|(s, n)| format!("{} {n}", s.as_str()))
        .collect();
    let mut counts = if counts.is_empty() {
        "no workspaces".to_string()
    } else {
        counts.join("  ")
    };
    let problems = app.problem_count();
    if problems > 0 || app.view.problems {
        counts = format!(
            "⚑ {problems} problems{}  {counts}",
            if app.view.problems { " (shown)" } else { "" }
        );
    }
    if !app.view.marks.is_empty() {
        counts = format!("✓ {} marked  {counts}", app.view.marks.len());
    }
    let lines = match app.contexts.as_slice() {
        [one] if !app.several_contexts => {
            first.push(Span::raw(format!(" context {}", one.name)));
            if let Some(b) = &one.rules.badge {
                first.extend([Span::raw(" "), badge_span(b, theme)]);
            }
            first.push(Span::raw(format!("  server {}  namespace {scope}", one.server)));
            if one.read_only.is_some() {
                first.push(Span::styled(
                    "  READ-ONLY",
                    theme.fg(Color::Yellow).add_modifier(Modifier::BOLD),
                ));
            }
            vec![
                Line::from(first),
                one_context_status(app, one, &counts, area.width, theme),
            ]
        }
        contexts => {
            // the fleet: its size and scope, then the counts; each context's status below
            let mut title = format!(" {} contexts  namespace {scope}", contexts.len());
            if let Some(c) = &app.view.context {
                title.push_str(&format!("  showing {c} only"));
            }
            let room = (area.width as usize).saturating_sub(width(&title) + 15 + 3);
            first.push(Span::raw(title));
            first.push(Span::raw(format!(" │ {}", cut(&counts, room))));
            vec![Line::from(first), status_strip(app, area.width as usize, theme)]
        }
    };
    let mut lines = lines;
    if let (Some(r), Some(second)) = (&app.replay, lines.get_mut(1)) {
        // replaying: the second line says so, where on the recording, and how complete it is
        let (lead, rest) = replay_words(app, r);
        let bar = time_bar(r, 16);
        let tail = format!(" {bar} {counts} ·{rest}");
        let room = (area.width as usize).saturating_sub(width(&lead));
        *second = Line::from(vec![
            Span::styled(
                lead,
                theme
                    .fg(Color::Magenta)
                    .add_modifier(Modifier::BOLD | Modifier::REVERSED),
            ),
            Span::raw(cut(&tail, room)),
        ]);
    }
    frame.render_widget(Paragraph::new(lines), area);
}

/// One context's second header line: how fresh its data is, then the counts.
pub(super) fn one_context_status(
    app: &App,
    c: &ContextView,
    counts: &str,
    area_width: u16,
    theme: Theme,
) -> Line<'static> {
    let freshness = match (&c.loaded_at, c.refresh_error.as_ref().or(c.open_error.as_ref())) {
        (Some(_), None) => live_freshness(app, c, theme),
        // rows come before the first full state: how many so far, their `?` still loading
        (None, None) => match app.inventory.per_context().get(c.name.as_str()) {
            Some(n) if *n > 0 => Span::styled(format!("loading… {n} so far"), theme.fg(Color::Yellow)),
            _ => Span::raw("loading…"),
        },
        (when, Some(e)) => Span::styled(
            format!(
                "⚠ refresh failed: {e}{}",
                when.map_or(String::new(), |t| format!(
                    " — showing data from {} ago",
                    age(t, app.now)
                ))
            ),
            theme.fg(Color::Red).add_modifier(Modifier::BOLD),
        ),
    };
    // freshness first: on a narrow terminal it is what must not be cut off
    let room = (area_width as usize).saturating_sub(width(&freshness.content) + 4);
    Line::from(vec![
        Span::raw(" "),
        freshness,
        Span::raw(format!(" │ {}", cut(counts, room))),
    ])
}

/// A context's status as the strip and the picker say it.
pub(super) struct HealthWords {
    /// A symbol and a word.
    pub(super) long: String,
    /// The symbol alone (with the age, where there is one), for a narrow strip.
    pub(super) short: String,
    /// Why, when in trouble.
    pub(super) why: Option<String>,
    pub(super) colour: Option<Color>,
}

pub(super) fn health_words(app: &App, c: &ContextView) -> HealthWords {
    let plain = |long: &str, short: &str, colour: Option<Color>| HealthWords {
        long: long.into(),
        short: short.into(),
        why: None,
        colour,
    };
    match c.health() {
        Health::Loading => plain("… connecting", "…", Some(Color::Yellow)),
        Health::Live => plain("● live", "●", Some(Color::Green)),
        Health::Syncing => plain("◌ syncing", "◌", Some(Color::Yellow)),
        Health::Polled => plain("● polled", "●", Some(Color::Yellow)),
        Health::Reconnecting { since, why } => {
            let ago = age(since, app.now);
            HealthWords {
                long: format!("⚠ reconnecting {ago}"),
                short: format!("⚠ {ago}"),
                why: Some(why),
                colour: Some(Color::Red),
            }
        }
        Health::Error(why) => HealthWords {
            long: "✖ error".into(),
            short: "✖".into(),
            why: Some(why),
            colour: Some(Color::Red),
        },
    }
}

/// One entry per context — name, badge, rows, status — with the reasons of those in trouble
/// as far as the width allows; the states as symbols when the words do not fit, and the whole
/// cut with `…` when even that is too wide.
pub(super) fn status_strip(app: &App, max: usize, theme: Theme) -> Line<'static> {
    let per_context = app.inventory.per_context();
    let entries_of = |short: bool| -> Vec<(Vec<Span<'static>>, Option<String>)> {
        app.contexts
            .iter()
            .map(|c| {
                let mut spans = vec![Span::raw(c.name.clone())];
                if let Some(b) = &c.rules.badge {
                    spans.extend([Span::raw(" "), badge_span(b, theme)]);
                }
                let health = health_words(app, c);
                let rows = per_context.get(c.name.as_str()).copied().unwrap_or(0);
                spans.push(Span::raw(format!(" {rows} ")));
                let style = health.colour.map_or(Style::default(), |colour| theme.fg(colour));
                spans.push(Span::styled(if short { health.short } else { health.long }, style));
                (spans, health.why)
            })
            .collect()
    };
    let width_of = |entries: &[(Vec<Span<'static>>, Option<String>)]| -> usize {
        entries
            .iter()
            .map(|(spans, _)| spans.iter().map(|s| width(&s.content)).sum::<usize>() + 3)
            .sum::<usize>()
            - 2
    };
    let mut entries = entries_of(false);
    if width_of(&entries) > max {
        entries = entries_of(true);
    }
    let base = width_of(&entries);
    let mut room = max.saturating_sub(base);
    let mut line: Vec<Span<'static>> = vec![Span::raw(" ")];
    for (i, (spans, why)) in entries.into_iter().enumerate() {
        if i > 0 {
            line.push(Span::raw(" │ "));
        }
        let style = spans.last().map_or(Style::default(), |s| s.style);
        line.extend(spans);
        // a reason only where there is room for a few words of it
        if let Some(why) = why.filter(|_| room > 12) {
            let reason = cut(&format!(": {why}"), room);
            room -= width(&reason);
            line.push(Span::styled(reason, style));
        }
    }
    cut_spans(line, max)
}

/// Spans cut to `max` columns, the last one ending in `…` when cut.
pub(super) fn cut_spans(spans: Vec<Span<'static>>, max: usize) -> Line<'static> {
    let mut out = Vec::new();
    let mut used = 0;
    let total: usize = spans.iter().map(|s| width(&s.content)).sum();
    for s in spans {
        let w = width(&s.content);
        if total <= max || used + w < max {
            used += w;
            out.push(s);
            continue;
        }
        out.push(Span::styled(cut(&s.content, max - used), s.style));
        break;
    }
    Line::from(out)
}

/// Per watch: live, polled, forbidden, or reconnecting since when and why (the worst first).
pub(super) fn live_freshness(app: &App, c: &ContextView, theme: Theme) -> Span<'static> {
    let mut by_state: BTreeMap<u8, BTreeSet<String>> = BTreeMap::new();
    let mut trouble: Option<(DateTime<Utc>, String)> = None;
    for (stream, status) in &c.streams {
        let rank = match status {
            StreamStatus::Reconnecting { since, why } => {
                if trouble.as_ref().is_none_or(|(t, _)| since < t) {
                    trouble = Some((*since, why.clone()));
                }
                0
            }
            StreamStatus::Forbidden => 1,
            StreamStatus::Polling => 2,
            StreamStatus::ByName => 3,
            StreamStatus::Syncing => 4,
            StreamStatus::Live => 5,
            // nothing to watch (CiliumNetworkPolicies without Cilium): nothing to say
            StreamStatus::NotServed => continue,
        };
        by_state.entry(rank).or_default().insert(stream.to_string());
    }
    let words = [
        "reconnecting",
        "not readable",
        "polling",
        "read by name",
        "syncing",
        "live",
    ];
    let mut parts: Vec<String> = by_state
        .iter()
        .map(|(rank, names)| {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            format!("{}: {}", words[*rank as usize], names.join(" · "))
        })
        .collect();
    match trouble {
        Some((since, why)) => {
            parts[0] = format!(
                "⚠ {} since {} ({} ago): {why}",
                parts[0],
                since.format("%H:%M:%S"),
                age(since, app.now)
            );
            Span::styled(parts.join("  "), theme.fg(Color::Red).add_modifier(Modifier::BOLD))
        }
        None if by_state.keys().all(|r| *r >= 5) => {
            Span::styled(format!("● {}", parts.join("  ")), theme.fg(Color::Green))
        }
        None => Span::styled(parts.join("  "), theme.fg(Color::Yellow)),
    }
}

pub(super) fn render_footer(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
    // a warning is said once in the status line when it arrives (the detail keeps it), then
    // expires with it; the command line takes the status line while it is typed
    let status = match &app.view.command {
        Some(line) => format!(":{line}█"),
        None => app.status.clone(),
    };
    let lines = vec![
        Line::from(Span::styled(
            footer_keys(app, area.width as usize),
            theme.fg(Color::DarkGray),
        )),
        Line::from(cut(&status, area.width as usize)),
    ];
    frame.render_widget(Paragraph::new(lines), area);
}
