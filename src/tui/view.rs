//! Rendering: a pure function of the state, generic over the ratatui backend.

use super::app::{App, Confirm, ContextView, Focus, Health, Popup, SORTS, STALE_AFTER, footer_keys, key_of, sort_name};
use crate::cluster::inventory::Scope;
use crate::cluster::live::StreamStatus;
use crate::cluster::write::Outcome;
use crate::domain::age::age;
use crate::domain::columns::{Column, cell, columns};
use crate::domain::drift::DriftState;
use crate::domain::fence::Verb;
use crate::domain::safety::{Badge, Colour};
use crate::domain::state::State;
use crate::domain::workspace::Workspace;
use crate::present::layout::{cut, width, wrap};
use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, TableState};
use std::collections::{BTreeMap, BTreeSet};

/// Colours off under NO_COLOR (decided once by the caller).
#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub colour: bool,
}

impl Theme {
    fn fg(&self, c: Color) -> Style {
        if self.colour {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }
}

fn state_colour(s: State) -> Color {
    match s {
        State::Running => Color::Green,
        State::Starting | State::Suspending => Color::Yellow,
        State::Suspended => Color::Blue,
        State::Failed | State::Error => Color::Red,
        State::Expired | State::Deleting => Color::Magenta,
    }
}

fn badge_colour(c: Colour) -> Color {
    match c {
        Colour::Red => Color::Red,
        Colour::Yellow => Color::Yellow,
        Colour::Green => Color::Green,
        Colour::Blue => Color::Blue,
        Colour::Magenta => Color::Magenta,
    }
}

/// A context's badge as shown beside its name: `[PROD]`, bold in its colour.
fn badge_span(b: &Badge, theme: Theme) -> Span<'static> {
    let style = b.colour.map_or(Style::default(), |c| theme.fg(badge_colour(c)));
    Span::styled(format!("[{}]", b.label), style.add_modifier(Modifier::BOLD))
}

fn cell_style(w: &Workspace, c: Column, theme: Theme) -> Style {
    match c {
        Column::State => theme.fg(state_colour(w.state)),
        Column::Drift if w.drift.state == DriftState::Drifted => theme.fg(Color::Yellow),
        Column::Drift if w.drift.state == DriftState::NoTemplate => theme.fg(Color::Red),
        Column::Diagnosis if w.diagnosis.is_some() => theme.fg(Color::Red),
        Column::Epoch if w.epoch.epoch.is_none() => theme.fg(Color::Red),
        _ => Style::default(),
    }
}

/// The columns that fit: narrow terminals drop MODE-CHANGED, then TEMPLATE, MODE, AGE and
/// NAMESPACE, in that order, until the rest fit; the columns the tool exists for (STATE, DRIFT,
/// DIAGNOSIS, EPOCH) and the workspace always stay. A fleet's CONTEXT counts as its short room.
fn fitting(fleet: bool, all_namespaces: bool, width: u16) -> Vec<Column> {
    let mut cols = columns(fleet, all_namespaces, false);
    let need = |cols: &[Column]| -> usize {
        cols.iter()
            .map(|c| match c {
                Column::Context => 12,
                Column::Workspace => 12,
                other => fixed_width(*other) as usize,
            })
            .sum::<usize>()
            + cols.len()
            + 2
    };
    for drop in [
        Column::ModeChanged,
        Column::Template,
        Column::Mode,
        Column::Age,
        Column::Namespace,
    ] {
        if need(&cols) <= width as usize {
            break;
        }
        cols.retain(|c| *c != drop);
    }
    cols
}

pub fn render(frame: &mut Frame, app: &App, theme: Theme) {
    let [header, body, footer] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(3), Constraint::Length(2)]).areas(frame.area());
    render_header(frame, header, app, theme);
    render_table(frame, body, app, theme);
    render_footer(frame, footer, app, theme);
    if let Some(top) = app.popups.last() {
        render_popup(frame, app, top, theme);
    }
}

fn render_header(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
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
        [one] if !app.labelled => {
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
    frame.render_widget(Paragraph::new(lines), area);
}

/// One context's second header line: how fresh its data is, then the counts.
fn one_context_status(app: &App, c: &ContextView, counts: &str, area_width: u16, theme: Theme) -> Line<'static> {
    let freshness = match (&c.loaded_at, c.refresh_error.as_ref().or(c.open_error.as_ref())) {
        (Some(_), None) if app.live => live_freshness(app, c, theme),
        (None, None) => Span::raw("loading…"),
        (Some(t), None) => Span::raw(format!("updated {} ago", age(*t, app.now))),
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
struct Said {
    /// A symbol and a word.
    long: String,
    /// The symbol alone (with the age, where there is one), for a narrow strip.
    short: String,
    /// Why, when in trouble.
    why: Option<String>,
    colour: Option<Color>,
}

fn health_words(app: &App, c: &ContextView) -> Said {
    let plain = |long: &str, short: &str, colour: Option<Color>| Said {
        long: long.into(),
        short: short.into(),
        why: None,
        colour,
    };
    match c.health(app.live) {
        Health::Loading => plain("… loading", "…", Some(Color::Yellow)),
        Health::Live => plain("● live", "●", Some(Color::Green)),
        Health::Syncing => plain("◌ syncing", "◌", Some(Color::Yellow)),
        Health::Polled => plain("● polled", "●", Some(Color::Yellow)),
        Health::Listed(at) => {
            let ago = age(at, app.now);
            plain(&format!("updated {ago} ago"), &ago, None)
        }
        Health::Reconnecting { since, why } => {
            let ago = age(since, app.now);
            Said {
                long: format!("⚠ reconnecting {ago}"),
                short: format!("⚠ {ago}"),
                why: Some(why),
                colour: Some(Color::Red),
            }
        }
        Health::Error(why) => Said {
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
fn status_strip(app: &App, max: usize, theme: Theme) -> Line<'static> {
    let per_context = app.inventory.per_context();
    let entries_of = |short: bool| -> Vec<(Vec<Span<'static>>, Option<String>)> {
        app.contexts
            .iter()
            .map(|c| {
                let mut spans = vec![Span::raw(c.name.clone())];
                if let Some(b) = &c.rules.badge {
                    spans.extend([Span::raw(" "), badge_span(b, theme)]);
                }
                let said = health_words(app, c);
                let rows = per_context.get(c.name.as_str()).copied().unwrap_or(0);
                spans.push(Span::raw(format!(" {rows} ")));
                let style = said.colour.map_or(Style::default(), |colour| theme.fg(colour));
                spans.push(Span::styled(if short { said.short } else { said.long }, style));
                (spans, said.why)
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
            let said = cut(&format!(": {why}"), room);
            room -= width(&said);
            line.push(Span::styled(said, style));
        }
    }
    cut_spans(line, max)
}

/// Spans cut to `max` columns, the last one ending in `…` when cut.
fn cut_spans(spans: Vec<Span<'static>>, max: usize) -> Line<'static> {
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
fn live_freshness(app: &App, c: &ContextView, theme: Theme) -> Span<'static> {
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
            StreamStatus::NotServed => 6,
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

fn render_table(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
    let all = app.scope == Scope::All || app.mixed_namespaces();
    let cols = fitting(app.labelled, all, area.width);
    let rows_visible = app.visible();
    // build only the rows that fit: a frame costs the same at 10 or 10,000 workspaces
    let height = area.height.saturating_sub(2) as usize;
    let start = if app.view.selected >= height {
        app.view.selected + 1 - height
    } else {
        0
    };
    let window = &rows_visible[start.min(rows_visible.len())..(start + height).min(rows_visible.len())];
    let mut header: Vec<Cell> = vec![Cell::from(" ")];
    // the sorted column says so, and which way
    let (sort_name, sorted) = sort_name(app.view.sort);
    let arrow = if app.view.reverse { "▼" } else { "▲" };
    header.extend(cols.iter().map(|c| {
        if *c == sorted {
            Cell::from(format!("{}{arrow}", c.header()))
        } else {
            Cell::from(c.header())
        }
    }));
    // RESULT takes room only once an action has a result to show
    let results = area.width >= 110 && !app.notes.is_empty();
    if results {
        header.push(Cell::from("RESULT"));
    }
    // as wide as the longest id on screen (a Min column would take the room RESULT needs)
    // room for WORKSPACE's sort mark when it is the sorted column
    let id_min = if sorted == Column::Workspace { 10 } else { 9 };
    let id_width = window.iter().map(|w| width(&w.id)).max().unwrap_or(0).clamp(id_min, 40) as u16;
    // CONTEXT takes what the others leave, up to its longest name and badge
    let others: usize = cols
        .iter()
        .map(|c| match c {
            Column::Context => 0,
            Column::Workspace => id_width as usize,
            other => fixed_width(*other) as usize,
        })
        .sum::<usize>()
        + cols.len()
        + 1;
    let context_width = window
        .iter()
        .map(|w| width(&context_text(app, w, usize::MAX)))
        .max()
        .unwrap_or(0)
        .min((area.width as usize).saturating_sub(others))
        .max(7) as u16;
    let mut widths: Vec<Constraint> = vec![Constraint::Length(1)];
    widths.extend(cols.iter().map(|c| match c {
        Column::Workspace => Constraint::Length(id_width),
        Column::Context => Constraint::Length(context_width),
        other => Constraint::Length(fixed_width(*other)),
    }));
    // the room left goes to RESULT, or to nothing (the columns keep their widths)
    widths.push(Constraint::Fill(1));
    // each cell cut to its column with `…` (the table itself would cut it without a mark)
    let fitted: Vec<usize> = Layout::horizontal(widths.clone())
        .flex(ratatui::layout::Flex::Start)
        .spacing(1)
        .split(Rect::new(0, 0, area.width, 1))
        .iter()
        .map(|r| r.width as usize)
        .collect();
    let fit = |i: usize, text: String| cut(&text, fitted.get(i).copied().unwrap_or(usize::MAX));
    // rows whose context's data is older than STALE_AFTER stay, dimmed
    let stale: BTreeSet<&str> = app
        .contexts
        .iter()
        .filter(|c| app.live && c.stale_since().is_some_and(|t| app.now - t > STALE_AFTER))
        .map(|c| c.name.as_str())
        .collect();
    let rows: Vec<Row> = window
        .iter()
        .map(|w| {
            let key = key_of(w);
            let mark = if app.view.marks.contains(&key) { "✓" } else { " " };
            let mut cells = vec![Cell::from(mark)];
            cells.extend(cols.iter().enumerate().map(|(i, c)| match c {
                Column::Context => {
                    let room = fitted.get(i + 1).copied().unwrap_or(usize::MAX);
                    Cell::from(context_text(app, w, room)).style(context_style(app, w, theme))
                }
                _ => Cell::from(fit(i + 1, cell(w, *c, app.now))).style(cell_style(w, *c, theme)),
            }));
            if results {
                let note = app.notes.get(&key);
                let style = match note {
                    Some(n) if !n.ok => theme.fg(Color::Red),
                    _ => Style::default(),
                };
                let text = note.map_or(String::new(), |n| n.text.clone());
                cells.push(Cell::from(fit(cols.len() + 1, text)).style(style));
            }
            let row_style = if stale.contains(key.context.as_str()) {
                Style::default().add_modifier(Modifier::DIM)
            } else {
                Style::default()
            };
            Row::new(cells).style(row_style)
        })
        .collect();
    // with a context picked, the rows in view are that context's
    let (in_view, of_context) = match &app.view.context {
        Some(c) => (
            app.inventory.per_context().get(c.as_str()).copied().unwrap_or(0),
            format!(" in {c}"),
        ),
        None => (app.inventory.rows().len(), String::new()),
    };
    let problems = if app.view.problems { " · problems only" } else { "" };
    let bad = app.query().err().map_or(String::new(), |e| format!(" — {e}"));
    let mut title = match (app.view.filter_editing, app.view.filter.is_empty()) {
        (true, _) => format!(" filter: {}█{bad} ", app.view.filter),
        (false, false) => format!(
            " filter: {} ({} of {}{of_context}){problems}{bad} ",
            app.view.filter,
            rows_visible.len(),
            in_view
        ),
        (false, true) if app.view.problems => {
            format!(" {} of {in_view} workspaces{of_context}{problems} ", rows_visible.len())
        }
        (false, true) => format!(" {in_view} workspaces{of_context} "),
    };
    title.push_str(&format!("· sort: {sort_name} {arrow} "));
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(Block::default().borders(Borders::TOP).title(title))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .column_spacing(1);
    let mut state =
        TableState::default().with_selected(app.view.selected.checked_sub(start).filter(|_| !window.is_empty()));
    frame.render_stateful_widget(table, area, &mut state);
}

/// The width of a column whose width does not depend on the rows.
fn fixed_width(c: Column) -> u16 {
    match c {
        Column::Namespace | Column::Mode | Column::State => 10,
        Column::Age => 6,
        Column::ModeChanged => 12,
        Column::Epoch => 8,
        Column::Template | Column::Drift => 11,
        Column::Diagnosis => 19,
        _ => 12,
    }
}

/// A row's CONTEXT cell in `room` columns: its context, and the context's badge; a name too
/// long is cut, the badge kept.
fn context_text(app: &App, w: &Workspace, room: usize) -> String {
    let name = w.context.as_deref().unwrap_or("-");
    match app.context_view(name).and_then(|c| c.rules.badge.as_ref()) {
        Some(b) => {
            let badge = format!(" [{}]", b.label);
            let kept = room.saturating_sub(width(&badge)).max(3);
            cut(&format!("{}{badge}", cut(name, kept)), room)
        }
        None => cut(name, room),
    }
}

fn context_style(app: &App, w: &Workspace, theme: Theme) -> Style {
    let badge = w
        .context
        .as_deref()
        .and_then(|name| app.context_view(name))
        .and_then(|c| c.rules.badge.as_ref());
    match badge.and_then(|b| b.colour) {
        Some(c) => theme.fg(badge_colour(c)),
        None => Style::default(),
    }
}

fn render_footer(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
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

/// A box of `width` × `height` in the middle of `screen` (both capped to the screen).
fn centered(screen: Rect, width: usize, height: usize) -> Rect {
    let w = (width as u16).min(screen.width);
    let h = (height as u16).min(screen.height);
    Rect {
        x: screen.x + (screen.width - w) / 2,
        y: screen.y + (screen.height - h) / 2,
        width: w,
        height: h,
    }
}

/// The widest a popup's text may be on `screen`: the borders and one free column before the
/// right border, so no text ever touches it.
fn popup_text_width(screen: Rect) -> usize {
    (screen.width as usize).saturating_sub(2 + 1).max(8)
}

/// A popup sized to its (already wrapped) lines and title, within the screen.
fn popup_area(screen: Rect, lines: &[String], title: &str, extra_rows: usize) -> Rect {
    let content = lines.iter().map(|l| width(l)).max().unwrap_or(0).max(width(title) + 2);
    centered(
        screen,
        content + 3,
        // the header's two rows and the footer's keys stay in sight
        (lines.len() + 2 + extra_rows).min(screen.height.saturating_sub(4) as usize),
    )
}

/// A scrolling popup: its text wrapped to the screen, the box fitted to it.
fn render_text_popup(frame: &mut Frame, app: &App, title: String, text: &str, scroll: u16) {
    let screen = frame.area();
    let lines = wrap(text, popup_text_width(screen));
    render_lines(frame, app, title, lines, scroll);
}

/// Lines in a bordered box that scrolls no further than its last line: the app learns where
/// that is, so PgDn and End stop there.
fn render_lines(frame: &mut Frame, app: &App, title: String, lines: Vec<String>, scroll: u16) {
    let area = popup_area(frame.area(), &lines, &title, 0);
    let last = lines.len().saturating_sub(area.height.saturating_sub(2) as usize);
    let last = u16::try_from(last).unwrap_or(u16::MAX);
    app.scroll_max.set(last);
    frame.render_widget(Clear, area);
    let p = Paragraph::new(lines.join("\n"))
        .block(Block::default().borders(Borders::ALL).title(title))
        .scroll((scroll.min(last), 0));
    frame.render_widget(p, area);
}

fn render_popup(frame: &mut Frame, app: &App, top: &Popup, theme: Theme) {
    match top {
        Popup::Detail { key, text, scroll } => {
            let body = match text {
                None => "reading…".to_string(),
                Some(Ok(t)) => t.clone(),
                Some(Err(e)) => format!("cannot read: {e}"),
            };
            render_text_popup(
                frame,
                app,
                format!(" {} ({}) ", key.id, key.place(app.labelled)),
                &body,
                *scroll,
            );
        }
        Popup::Yaml { key, text, scroll } => {
            let body = match text {
                None => "reading…".to_string(),
                Some(Ok(t)) => t.clone(),
                Some(Err(e)) => format!("cannot read: {e}"),
            };
            render_text_popup(frame, app, format!(" namzu-ws-{} — YAML ", key.id), &body, *scroll);
        }
        Popup::Help { scroll } => {
            let text = crate::present::keys::help(popup_text_width(frame.area()), app.labelled);
            render_text_popup(frame, app, " keys ".into(), &text, *scroll);
        }
        Popup::Sent { scroll } => {
            let mut lines = Vec::new();
            if app.sent.is_empty() {
                lines.push("Nothing sent in this session.".to_string());
            }
            for e in &app.sent {
                let s = |k: &str| {
                    e.get(k)
                        .map_or("-".into(), |v| v.as_str().map_or(v.to_string(), str::to_string))
                };
                // across contexts each write names the one it was sent to
                let context = if app.labelled {
                    format!("{}:", s("context"))
                } else {
                    String::new()
                };
                lines.push(format!(
                    "{}  {} {context}{}/{}  epoch {}  → {} {}",
                    s("time"),
                    s("verb"),
                    s("namespace"),
                    s("workspace"),
                    s("epochCarried"),
                    s("status"),
                    s("outcome")
                ));
                if let Some(r) = e.get("request").filter(|r| !r.is_null()) {
                    lines.push(format!(
                        "    {} {}",
                        r["method"].as_str().unwrap_or(""),
                        r["path"].as_str().unwrap_or("")
                    ));
                    lines.push(format!("    {}", spaced_json(&r["body"])));
                }
            }
            render_text_popup(
                frame,
                app,
                " what was sent (this session) ".into(),
                &lines.join("\n"),
                *scroll,
            );
        }
        Popup::Confirm(c) => render_confirm(frame, app, c, theme),
        Popup::Contexts { choices, selected } => render_picker(frame, app, choices, *selected, theme),
        Popup::Sort { selected } => {
            let lines: Vec<Line> = SORTS
                .iter()
                .enumerate()
                .map(|(i, (name, key, column))| {
                    let on = *key == app.view.sort;
                    let mark = match (on, app.view.reverse) {
                        (true, false) => "▲ ",
                        (true, true) => "▼ ",
                        _ => "  ",
                    };
                    let what = match key {
                        crate::domain::select::SortKey::Diagnosis => {
                            "worst first: crash loops, image pulls, … then drift".to_string()
                        }
                        crate::domain::select::SortKey::Name => "context, namespace, id".to_string(),
                        _ => column.header().to_string(),
                    };
                    let l = Line::from(format!("{mark}{name:<13}{what}"));
                    if i == *selected {
                        l.style(Style::default().add_modifier(Modifier::REVERSED))
                    } else {
                        l
                    }
                })
                .collect();
            let plain: Vec<String> = lines
                .iter()
                .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
                .collect();
            let title = " sort by (Enter; the same again reverses) ";
            let area = popup_area(frame.area(), &plain, title, 0);
            frame.render_widget(Clear, area);
            frame.render_widget(
                Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
                area,
            );
        }
        Popup::History { key, text, scroll } => {
            let body = match text {
                None => "reading…".to_string(),
                Some(Ok(t)) => t.clone(),
                Some(Err(e)) => format!("cannot read: {e}"),
            };
            // a timeline is a table: its rows are cut, not wrapped
            let screen = frame.area();
            let max = popup_text_width(screen);
            let lines: Vec<String> = body.lines().map(|l| cut(l, max)).collect();
            let title = format!(" history of {} ({}) ", key.id, key.place(app.labelled));
            render_lines(frame, app, title, lines, *scroll);
        }
        Popup::Logs(pane) => {
            // over the table: the header and the footer's keys stay in sight
            let screen = frame.area();
            let area = Rect {
                x: screen.x,
                y: screen.y + 2.min(screen.height),
                width: screen.width,
                height: screen.height.saturating_sub(4),
            };
            let title = format!("logs of {} ({})", pane.key.id, pane.key.place(app.labelled));
            super::log_view::render(frame, area, pane, &title, theme.colour);
        }
    }
}

/// The context picker: every context, then each with its badge, rows and status; the one
/// selected reversed, the one shown marked.
fn render_picker(frame: &mut Frame, app: &App, choices: &[String], selected: usize, theme: Theme) {
    let per_context = app.inventory.per_context();
    let mark = |shown: bool| if shown { "▸ " } else { "  " };
    let mut lines: Vec<Line> = vec![Line::from(format!(
        "{}all contexts  {} workspaces",
        mark(app.view.context.is_none()),
        app.inventory.rows().len()
    ))];
    for name in choices {
        let mut spans = vec![Span::raw(format!(
            "{}{name}",
            mark(app.view.context.as_ref() == Some(name))
        ))];
        if let Some(c) = app.context_view(name) {
            if let Some(b) = &c.rules.badge {
                spans.extend([Span::raw(" "), badge_span(b, theme)]);
            }
            let rows = per_context.get(name.as_str()).copied().unwrap_or(0);
            let said = health_words(app, c);
            spans.push(Span::raw(format!("  {rows} workspaces  ")));
            let style = said.colour.map_or(Style::default(), |colour| theme.fg(colour));
            let text = said
                .why
                .map_or(said.long.clone(), |why| format!("{}: {why}", said.long));
            spans.push(Span::styled(text, style));
        }
        lines.push(Line::from(spans));
    }
    let screen = frame.area();
    let max = popup_text_width(screen);
    let plain: Vec<String> = lines
        .iter()
        .map(|l| cut(&l.spans.iter().map(|s| s.content.as_ref()).collect::<String>(), max))
        .collect();
    let title = " contexts ";
    let area = popup_area(screen, &plain, title, 0);
    let lines: Vec<Line> = lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let l = cut_spans(l.spans, max);
            if i == selected {
                l.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                l
            }
        })
        .collect();
    frame.render_widget(Clear, area);
    let p = Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title));
    frame.render_widget(p, area);
}

fn verb_title(v: Verb) -> &'static str {
    match v {
        Verb::Suspend => "Suspend",
        Verb::Resume => "Resume",
        Verb::Delete => "Delete",
    }
}

fn render_confirm(frame: &mut Frame, app: &App, c: &Confirm, theme: Theme) {
    let action = if c.refresh {
        "Refresh template"
    } else {
        verb_title(c.verb)
    };
    let screen = frame.area();
    let max = popup_text_width(screen);
    // the dialog's text as (line, style), each wrapped to the screen
    let mut text: Vec<(String, Style)> = Vec::new();
    let say = |text: &mut Vec<(String, Style)>, line: String, style: Style| {
        for l in wrap(&line, max) {
            text.push((l, style));
        }
    };
    let n = c.targets.len();
    // the consequences first, in plain words
    let (consequence, colour) = match (c.verb, c.refresh) {
        (Verb::Suspend, _) => (
            "Suspending stops the pod: running sessions end; the disk is kept, and R resumes it.",
            Color::Yellow,
        ),
        (Verb::Delete, _) => (
            "Deleting destroys the Sandbox, its pod, its agent sessions and its disks (PVCs). It cannot be undone.",
            Color::Red,
        ),
        (Verb::Resume, true) => (
            "Refreshing resumes the workspace (it wakes up) onto its SandboxTemplate as it is now: the pod template changes as the field diff below shows.",
            Color::Yellow,
        ),
        (Verb::Resume, false) => ("Resuming starts the pod again on the disk it kept.", Color::Green),
    };
    say(
        &mut text,
        consequence.into(),
        theme.fg(colour).add_modifier(Modifier::BOLD),
    );
    // a plain resume of a drifted row: the way to take the template along
    let drifted: Vec<&str> = c
        .targets
        .iter()
        .filter(|k| {
            app.inventory
                .rows()
                .iter()
                .any(|w| key_of(w) == **k && w.drift.state == DriftState::Drifted)
        })
        .map(|k| k.id.as_str())
        .collect();
    if c.verb == Verb::Resume && !c.refresh && !drifted.is_empty() {
        say(
            &mut text,
            format!(
                "{} drifted from its template: this resume keeps the old pod template; Esc, then F resumes onto the template as it is now.",
                drifted.join(", ")
            ),
            theme.fg(Color::Yellow),
        );
    }
    say(&mut text, String::new(), Style::default());
    say(
        &mut text,
        format!(
            "{} {n} workspace{} — take over: {}",
            action,
            if n == 1 { "" } else { "s" },
            if c.take_over {
                "ON (stored epoch + 1: the current holder is fenced out)"
            } else {
                "off (keeps the stored epoch)"
            }
        ),
        Style::default(),
    );
    say(&mut text, String::new(), Style::default());
    for key in &c.targets {
        let head = format!("{} ({}): ", key.id, key.place(app.labelled));
        let body = match c.previews.get(key) {
            None => vec!["reading…".to_string()],
            Some(Outcome::DryRun {
                request,
                epoch,
                mode,
                per_sandbox_egress,
                refresh,
                ..
            }) => {
                let mut v = vec![format!(
                    "{}, stored epoch {} → carries {} ({}); {} {}",
                    mode.as_str(),
                    epoch.raw.clone().unwrap_or_else(|| "none (0)".into()),
                    epoch.carried,
                    epoch.describe(),
                    request.method,
                    request.path
                )];
                // a refresh: the template and hashes, each overlay and its source, the field diff
                v.extend(refresh.iter().flat_map(|r| crate::present::outcome::refresh_lines(r)));
                // one operation per line, spaced between JSON tokens so a long one wraps between
                // tokens, never inside a string: the same JSON value as the body sent
                match request.body.as_array() {
                    Some(ops) => v.extend(ops.iter().map(|op| format!("  {}", spaced_json(op)))),
                    None => v.push(format!("  {}", spaced_json(&request.body))),
                }
                if *per_sandbox_egress {
                    v.push(crate::present::outcome::ADMISSION_FENCE_NOTE.to_string());
                }
                v
            }
            Some(other) => vec![super::app::note_for(c.verb, key, other).text],
        };
        say(&mut text, head + &body[0], Style::default());
        for line in &body[1..] {
            say(&mut text, line.clone(), Style::default());
        }
    }
    // what follows always shows: the typing asked for
    let tail_from = text.len();
    if c.asks_typed {
        say(&mut text, String::new(), Style::default());
    }
    if c.verb != Verb::Delete && !c.typed_rule.is_empty() {
        say(
            &mut text,
            format!(
                "Context {} asks for the id typed (confirm: typed).",
                c.typed_rule.join(", ")
            ),
            theme.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        );
    }
    if c.asks_typed {
        say(
            &mut text,
            format!("Type {:?} to enable {action}: {}█", c.phrase(), c.typed),
            Style::default(),
        );
    }
    let title = format!(" {action} ");
    let plain: Vec<String> = text.iter().map(|(l, _)| l.clone()).collect();
    // the buttons always show: the text above them is cut, saying how much, when it is too long
    let area = popup_area(screen, &plain, &title, 2);
    let room = (area.height as usize).saturating_sub(2 + 2);
    if text.len() > room {
        // the request's detail is cut in the middle: the consequences above and the typing
        // asked for below stay
        let tail = text.split_off(tail_from.min(text.len()));
        let body_room = room.saturating_sub(tail.len()).max(1);
        let hidden = text.len() + 1 - body_room.min(text.len() + 1);
        text.truncate(body_room.saturating_sub(1));
        text.push((
            format!("… {hidden} more lines (Esc, then fewer marks)"),
            theme.fg(Color::DarkGray),
        ));
        text.extend(tail);
    }
    let mut lines: Vec<Line> = text
        .into_iter()
        .map(|(l, style)| Line::from(Span::styled(l, style)))
        .collect();
    lines.push(Line::from(""));
    let button = |label: &str, focused: bool, enabled: bool| {
        let mut style = Style::default();
        if focused {
            style = style.add_modifier(Modifier::REVERSED);
        }
        if !enabled {
            style = style.add_modifier(Modifier::DIM);
        }
        Span::styled(format!("[ {label} ]"), style)
    };
    lines.push(Line::from(vec![
        button("Cancel", c.focus == Focus::Cancel, true),
        Span::raw("   "),
        button(action, c.focus == Focus::Confirm, c.ready()),
    ]));
    frame.render_widget(Clear, area);
    let p = Paragraph::new(Text::from(lines)).block(Block::default().borders(Borders::ALL).title(title));
    frame.render_widget(p, area);
}

/// Compact JSON with a space after every `,` and `:` between tokens (never inside a string), so
/// word wrapping breaks a long patch operation only where JSON allows whitespace.
pub fn spaced_json(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Array(items) => format!("[{}]", items.iter().map(spaced_json).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), spaced_json(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        scalar => scalar.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::spaced_json;
    use serde_json::json;

    #[test]
    fn spaced_json_is_the_same_value_with_breaks_between_tokens() {
        let op = json!({"op": "add", "path": "/metadata/annotations", "value": {"a, b": "x: y", "n": [1, true, null]}});
        let text = spaced_json(&op);
        assert_eq!(
            text,
            r#"{"op": "add", "path": "/metadata/annotations", "value": {"a, b": "x: y", "n": [1, true, null]}}"#
        );
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), op);
    }
}
