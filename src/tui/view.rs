//! Rendering: a pure function of the state, generic over the ratatui backend.

use super::app::{App, Confirm, Focus, Popup, STALE_AFTER, footer_keys, key_of};
use crate::cluster::inventory::Scope;
use crate::cluster::live::StreamStatus;
use crate::cluster::write::Outcome;
use crate::domain::age::age;
use crate::domain::columns::{Column, cell, columns};
use crate::domain::drift::DriftState;
use crate::domain::fence::Verb;
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

/// The columns that fit: narrow terminals drop MODE, MODE-CHANGED and TEMPLATE first.
fn fitting(all_namespaces: bool, width: u16) -> Vec<Column> {
    let mut cols = columns(false, all_namespaces, false);
    if width < 110 {
        cols.retain(|c| !matches!(c, Column::Mode | Column::ModeChanged | Column::Template));
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
        Scope::Namespace(ns) => ns.clone(),
    };
    let mut first = vec![
        Span::styled(" kubectl-namzu ", Style::default().add_modifier(Modifier::BOLD)),
        Span::raw(format!(
            " context {}  server {}  namespace {scope}",
            app.context, app.server
        )),
    ];
    if app.permissions.read_only {
        first.push(Span::styled(
            "  READ-ONLY",
            theme.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
    let counts: Vec<String> = app
        .counts()
        .iter()
        .map(|(s, n)| format!("{} {n}", s.as_str()))
        .collect();
    let freshness = match (&app.inventory.loaded_at, &app.inventory.refresh_error) {
        (Some(_), None) if app.live => live_freshness(app, theme),
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
    let counts = if counts.is_empty() {
        "no workspaces".to_string()
    } else {
        counts.join("  ")
    };
    let room = (area.width as usize).saturating_sub(width(&freshness.content) + 4);
    let second = Line::from(vec![
        Span::raw(" "),
        freshness,
        Span::raw(format!(" │ {}", cut(&counts, room))),
    ]);
    frame.render_widget(Paragraph::new(vec![Line::from(first), second]), area);
}

/// Per watch: live, polled, forbidden, or reconnecting since when and why (the worst first).
fn live_freshness(app: &App, theme: Theme) -> Span<'static> {
    let mut by_state: BTreeMap<u8, BTreeSet<String>> = BTreeMap::new();
    let mut trouble: Option<(DateTime<Utc>, String)> = None;
    for (stream, status) in &app.inventory.streams {
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
    let all = app.scope == Scope::All;
    let cols = fitting(all, area.width);
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
    header.extend(cols.iter().map(|c| Cell::from(c.header())));
    // RESULT takes room only once an action has a result to show
    let results = area.width >= 110 && !app.notes.is_empty();
    if results {
        header.push(Cell::from("RESULT"));
    }
    // as wide as the longest id on screen (a Min column would take the room RESULT needs)
    let id_width = window.iter().map(|w| width(&w.id)).max().unwrap_or(0).clamp(9, 40) as u16;
    let mut widths: Vec<Constraint> = vec![Constraint::Length(1)];
    widths.extend(cols.iter().map(|c| match c {
        Column::Workspace => Constraint::Length(id_width),
        Column::Namespace => Constraint::Length(10),
        Column::Mode | Column::State => Constraint::Length(10),
        Column::Age | Column::ModeChanged => Constraint::Length(if *c == Column::Age { 6 } else { 12 }),
        Column::Epoch => Constraint::Length(8),
        Column::Template => Constraint::Length(11),
        Column::Drift => Constraint::Length(11),
        Column::Diagnosis => Constraint::Length(19),
        _ => Constraint::Length(12),
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
    // rows whose data is older than STALE_AFTER stay, dimmed
    let stale = app.live && app.inventory.stale_since().is_some_and(|t| app.now - t > STALE_AFTER);
    let row_style = if stale {
        Style::default().add_modifier(Modifier::DIM)
    } else {
        Style::default()
    };
    let rows: Vec<Row> = window
        .iter()
        .map(|w| {
            let key = key_of(w);
            let mark = if app.view.marks.contains(&key) { "✓" } else { " " };
            let mut cells = vec![Cell::from(mark)];
            cells.extend(
                cols.iter()
                    .enumerate()
                    .map(|(i, c)| Cell::from(fit(i + 1, cell(w, *c, app.now))).style(cell_style(w, *c, theme))),
            );
            if results {
                let note = app.notes.get(&key);
                let style = match note {
                    Some(n) if !n.ok => theme.fg(Color::Red),
                    _ => Style::default(),
                };
                let text = note.map_or(String::new(), |n| n.text.clone());
                cells.push(Cell::from(fit(cols.len() + 1, text)).style(style));
            }
            Row::new(cells).style(row_style)
        })
        .collect();
    let title = match (app.view.filter_editing, app.view.filter.is_empty()) {
        (true, _) => format!(" filter: {}█ ", app.view.filter),
        (false, false) => format!(
            " filter: {} ({} of {}) ",
            app.view.filter,
            rows_visible.len(),
            app.inventory.rows().len()
        ),
        (false, true) => format!(" {} workspaces ", app.inventory.rows().len()),
    };
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(Block::default().borders(Borders::TOP).title(title))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .column_spacing(1);
    let mut state =
        TableState::default().with_selected(app.view.selected.checked_sub(start).filter(|_| !window.is_empty()));
    frame.render_stateful_widget(table, area, &mut state);
}

fn render_footer(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
    let status = if app.status.is_empty() {
        app.inventory.warnings.first().cloned().unwrap_or_default()
    } else {
        app.status.clone()
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
fn render_text_popup(frame: &mut Frame, title: String, text: &str, scroll: u16) {
    let screen = frame.area();
    let lines = wrap(text, popup_text_width(screen));
    let area = popup_area(screen, &lines, &title, 0);
    frame.render_widget(Clear, area);
    let p = Paragraph::new(lines.join("\n"))
        .block(Block::default().borders(Borders::ALL).title(title))
        .scroll((scroll, 0));
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
            render_text_popup(frame, format!(" {} ({}) ", key.1, key.0), &body, *scroll);
        }
        Popup::Yaml { key, text, scroll } => {
            let body = match text {
                None => "reading…".to_string(),
                Some(Ok(t)) => t.clone(),
                Some(Err(e)) => format!("cannot read: {e}"),
            };
            render_text_popup(frame, format!(" namzu-ws-{} — YAML ", key.1), &body, *scroll);
        }
        Popup::Help { scroll } => {
            let text = crate::present::keys::help(popup_text_width(frame.area()));
            render_text_popup(frame, " keys ".into(), &text, *scroll);
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
                lines.push(format!(
                    "{}  {} {}/{}  epoch {}  → {} {}",
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
                " what was sent (this session) ".into(),
                &lines.join("\n"),
                *scroll,
            );
        }
        Popup::Confirm(c) => render_confirm(frame, c, theme),
    }
}

fn verb_title(v: Verb) -> &'static str {
    match v {
        Verb::Suspend => "Suspend",
        Verb::Resume => "Resume",
        Verb::Delete => "Delete",
    }
}

fn render_confirm(frame: &mut Frame, c: &Confirm, theme: Theme) {
    let action = if c.refresh {
        "Refresh template"
    } else {
        verb_title(c.verb)
    };
    let screen = frame.area();
    let max = popup_text_width(screen);
    // the dialog's text as (line, style), each wrapped to the screen
    let mut text: Vec<(String, Style)> = Vec::new();
    let mut say = |line: String, style: Style| {
        for l in wrap(&line, max) {
            text.push((l, style));
        }
    };
    let n = c.targets.len();
    say(
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
    say(String::new(), Style::default());
    for key in &c.targets {
        let head = format!("{} ({}): ", key.1, key.0);
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
        say(head + &body[0], Style::default());
        for line in &body[1..] {
            say(line.clone(), Style::default());
        }
    }
    if c.verb == Verb::Delete {
        say(String::new(), Style::default());
        say(
            "Deleting destroys the pod, its agent sessions and the disks (PVCs).".into(),
            theme.fg(Color::Red).add_modifier(Modifier::BOLD),
        );
        say(
            format!("Type {:?} to enable Delete: {}█", c.phrase(), c.typed),
            Style::default(),
        );
    }
    let title = format!(" {action} ");
    let plain: Vec<String> = text.iter().map(|(l, _)| l.clone()).collect();
    // the buttons always show: the text above them is cut, saying how much, when it is too long
    let area = popup_area(screen, &plain, &title, 2);
    let room = (area.height as usize).saturating_sub(2 + 2);
    if text.len() > room {
        let hidden = text.len() + 1 - room;
        text.truncate(room.saturating_sub(1));
        text.push((
            format!("… {hidden} more lines (Esc, then fewer marks)"),
            theme.fg(Color::DarkGray),
        ));
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
