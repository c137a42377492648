//! Rendering: a pure function of the state, generic over the ratatui backend.

use super::app::{App, Confirm, Focus, Popup, footer_keys, key_of};
use crate::cluster::inventory::Scope;
use crate::cluster::write::Outcome;
use crate::domain::age::age;
use crate::domain::columns::{Column, cell, columns};
use crate::domain::drift::DriftState;
use crate::domain::fence::Verb;
use crate::domain::state::State;
use crate::domain::workspace::Workspace;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, TableState, Wrap};

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
    let mut cols = columns(all_namespaces, false);
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
    let second = Line::from(vec![Span::raw(" "), freshness, Span::raw(format!(" │ {counts}"))]);
    frame.render_widget(Paragraph::new(vec![Line::from(first), second]), area);
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
    let results = area.width >= 110;
    if results {
        header.push(Cell::from("RESULT"));
    }
    let rows: Vec<Row> = window
        .iter()
        .map(|w| {
            let key = key_of(w);
            let mark = if app.view.marks.contains(&key) { "✓" } else { " " };
            let mut cells = vec![Cell::from(mark)];
            cells.extend(
                cols.iter()
                    .map(|c| Cell::from(cell(w, *c, app.now)).style(cell_style(w, *c, theme))),
            );
            if results {
                let note = app.notes.get(&key);
                let style = match note {
                    Some(n) if !n.ok => theme.fg(Color::Red),
                    _ => Style::default(),
                };
                cells.push(Cell::from(note.map_or(String::new(), |n| n.text.clone())).style(style));
            }
            Row::new(cells)
        })
        .collect();
    let mut widths: Vec<Constraint> = vec![Constraint::Length(1)];
    widths.extend(cols.iter().map(|c| match c {
        Column::Workspace => Constraint::Min(10),
        Column::Namespace => Constraint::Length(10),
        Column::Mode | Column::State => Constraint::Length(10),
        Column::Age | Column::ModeChanged => Constraint::Length(if *c == Column::Age { 6 } else { 12 }),
        Column::Epoch => Constraint::Length(8),
        Column::Template => Constraint::Length(11),
        Column::Drift => Constraint::Length(11),
        Column::Diagnosis => Constraint::Length(19),
        _ => Constraint::Length(12),
    }));
    if results {
        widths.push(Constraint::Fill(1));
    }
    let title = match (app.view.filter_editing, app.view.filter.is_empty()) {
        (true, _) => format!(" filter: {}█ ", app.view.filter),
        (false, false) => format!(
            " filter: {} ({} of {}) ",
            app.view.filter,
            rows_visible.len(),
            app.inventory.rows.len()
        ),
        (false, true) => format!(" {} workspaces ", app.inventory.rows.len()),
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
        Line::from(status),
    ];
    frame.render_widget(Paragraph::new(lines), area);
}

fn centered(area: Rect, pct_w: u16, pct_h: u16) -> Rect {
    let w = area.width * pct_w / 100;
    let h = area.height * pct_h / 100;
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

fn render_popup(frame: &mut Frame, app: &App, top: &Popup, theme: Theme) {
    let area = centered(frame.area(), 90, 85);
    frame.render_widget(Clear, area);
    let block = |title: String| Block::default().borders(Borders::ALL).title(title);
    match top {
        Popup::Detail { key, text, scroll } => {
            let body = match text {
                None => "reading…".to_string(),
                Some(Ok(t)) => t.clone(),
                Some(Err(e)) => format!("cannot read: {e}"),
            };
            let p = Paragraph::new(body)
                .block(block(format!(" {} ({}) ", key.1, key.0)))
                .scroll((*scroll, 0));
            frame.render_widget(p, area);
        }
        Popup::Yaml { key, text, scroll } => {
            let p = Paragraph::new(text.as_str())
                .block(block(format!(" namzu-ws-{} — YAML ", key.1)))
                .scroll((*scroll, 0));
            frame.render_widget(p, area);
        }
        Popup::Help => frame.render_widget(
            Paragraph::new(crate::present::keys::help())
                .wrap(Wrap { trim: false })
                .block(block(" keys ".into())),
            area,
        ),
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
                    lines.push(format!("    {}", r["body"]));
                }
            }
            let p = Paragraph::new(lines.join("\n"))
                .block(block(" what was sent (this session) ".into()))
                .scroll((*scroll, 0));
            frame.render_widget(p, area);
        }
        Popup::Confirm(c) => render_confirm(frame, area, c, theme),
    }
}

fn verb_title(v: Verb) -> &'static str {
    match v {
        Verb::Suspend => "Suspend",
        Verb::Resume => "Resume",
        Verb::Delete => "Delete",
    }
}

fn render_confirm(frame: &mut Frame, area: Rect, c: &Confirm, theme: Theme) {
    let mut lines: Vec<Line> = Vec::new();
    let n = c.targets.len();
    lines.push(Line::from(format!(
        "{} {n} workspace{} — take over: {}",
        verb_title(c.verb),
        if n == 1 { "" } else { "s" },
        if c.take_over {
            "ON (stored epoch + 1: the current holder is fenced out)"
        } else {
            "off (keeps the stored epoch)"
        }
    )));
    lines.push(Line::from(""));
    for key in &c.targets {
        let head = format!("{} ({}): ", key.1, key.0);
        let body = match c.previews.get(key) {
            None => vec!["reading…".to_string()],
            Some(Outcome::DryRun {
                request, epoch, mode, ..
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
                // one operation per line, spaced between JSON tokens so a long one wraps between
                // tokens, never inside a string: the same JSON value as the body sent
                match request.body.as_array() {
                    Some(ops) => v.extend(ops.iter().map(|op| format!("  {}", spaced_json(op)))),
                    None => v.push(format!("  {}", spaced_json(&request.body))),
                }
                v
            }
            Some(other) => vec![super::app::note_for(c.verb, key, other).text],
        };
        lines.push(Line::from(head + &body[0]));
        lines.extend(body[1..].iter().map(|l| Line::from(l.clone())));
    }
    if c.verb == Verb::Delete {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            "Deleting destroys the pod, its agent sessions and the disks (PVCs).",
            theme.fg(Color::Red).add_modifier(Modifier::BOLD),
        )));
        lines.push(Line::from(format!(
            "Type {:?} to enable Delete: {}█",
            c.phrase(),
            c.typed
        )));
    }
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
        button(verb_title(c.verb), c.focus == Focus::Confirm, c.ready()),
    ]));
    let p = Paragraph::new(Text::from(lines)).wrap(Wrap { trim: false }).block(
        Block::default()
            .borders(Borders::ALL)
            .title(format!(" {} ", verb_title(c.verb))),
    );
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
