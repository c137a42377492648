//! The popups: detail, YAML, help, history, the pickers; where a popup sits on the screen.

use super::*;

/// A box of `width` × `height` in the middle of `screen` (both capped to the screen).
pub(super) fn centered(screen: Rect, width: usize, height: usize) -> Rect {
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
pub(super) fn popup_text_width(screen: Rect) -> usize {
    (screen.width as usize).saturating_sub(2 + 1).max(8)
}

/// A popup sized to its (already wrapped) lines and title, within the screen.
pub(super) fn popup_area(screen: Rect, lines: &[String], title: &str, extra_rows: usize) -> Rect {
    let content = lines.iter().map(|l| width(l)).max().unwrap_or(0).max(width(title) + 2);
    centered(
        screen,
        content + 3,
        // the header's two rows and the footer's keys stay in sight
        (lines.len() + 2 + extra_rows).min(screen.height.saturating_sub(4) as usize),
    )
}

/// A scrolling popup: its text wrapped to the screen, the box fitted to it.
pub(super) fn render_text_popup(frame: &mut Frame, app: &App, title: String, text: &str, scroll: u16) {
    let screen = frame.area();
    let lines = wrap(text, popup_text_width(screen));
    render_lines(frame, app, title, lines, scroll);
}

/// Lines in a bordered box that scrolls no further than its last line: the app learns where
/// that is, so PgDn and End stop there.
pub(super) fn render_lines(frame: &mut Frame, app: &App, title: String, lines: Vec<String>, scroll: u16) {
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

/// What this session sent, by time; writes of one instant (a batch sends several at once, in
/// any order) by workspace, so the same session always reads the same.
fn render_sent(frame: &mut Frame, app: &App, scroll: u16) {
    let mut lines = Vec::new();
    if app.sent.is_empty() {
        lines.push("Nothing sent in this session.".to_string());
    }
    // by time; writes of one instant (a batch sends several at once, in any order) by
    // workspace, so the same session always reads the same
    let field = |e: &serde_json::Value, k: &str| e.get(k).and_then(serde_json::Value::as_str).unwrap_or("").to_string();
    let mut sent: Vec<&serde_json::Value> = app.sent.iter().collect();
    sent.sort_by_key(|e| ["time", "context", "namespace", "workspace"].map(|k| field(e, k)));
    for e in sent {
        let s = |k: &str| {
            e.get(k)
                .map_or("-".into(), |v| v.as_str().map_or(v.to_string(), str::to_string))
        };
        // across contexts each write names the one it was sent to
        let context = if app.several_contexts {
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
        scroll,
    );
}

/// The YAML view: its lines wrapped to the screen, a search's matches shown as the log pane
/// shows them (`search::line_style`), what the search found in the title.
fn render_yaml(
    frame: &mut Frame,
    app: &App,
    key: &namzu_domain::naming::WorkspaceKey,
    text: Option<&Result<String, String>>,
    scroll: u16,
    find: &crate::search::Find,
) {
    let body = match text {
        None => "reading…".to_string(),
        Some(Ok(t)) => t.clone(),
        Some(Err(e)) => format!("cannot read: {e}"),
    };
    let max = popup_text_width(frame.area());
    find.width.set(max);
    let (mut plain, mut styled) = (Vec::new(), Vec::new());
    for (i, line) in body.lines().enumerate() {
        let holding = !find.text.is_empty() && crate::search::holds(line, &find.text);
        let style = crate::search::line_style(find.matched == Some(i), holding);
        for part in wrap(line, max) {
            styled.push(Line::styled(part.clone(), style));
            plain.push(part);
        }
    }
    let said = find.said();
    let title = match said.as_str() {
        "" => format!(" namzu-ws-{} — YAML ", key.id),
        said => format!(" namzu-ws-{} — YAML · {said} ", key.id),
    };
    let area = popup_area(frame.area(), &plain, &title, 0);
    let last = plain.len().saturating_sub(area.height.saturating_sub(2) as usize);
    let last = u16::try_from(last).unwrap_or(u16::MAX);
    app.scroll_max.set(last);
    frame.render_widget(Clear, area);
    let p = Paragraph::new(styled)
        .block(Block::default().borders(Borders::ALL).title(title))
        .scroll((scroll.min(last), 0));
    frame.render_widget(p, area);
}

/// The sort picker: each column, the current one marked with its direction.
fn render_sort(frame: &mut Frame, app: &App, selected: usize) {
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
                namzu_domain::select::SortKey::Diagnosis => {
                    "worst first: crash loops, image pulls, … then drift".to_string()
                }
                namzu_domain::select::SortKey::Name => "context, namespace, id".to_string(),
                _ => column.header().to_string(),
            };
            let l = Line::from(format!("{mark}{name:<13}{what}"));
            if i == selected {
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

pub(super) fn render_popup(frame: &mut Frame, app: &App, top: &Popup, theme: Theme) {
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
                format!(" {} ({}) ", key.id, key.place(app.several_contexts)),
                &body,
                *scroll,
            );
        }
        Popup::Yaml {
            key,
            text,
            scroll,
            find,
        } => render_yaml(frame, app, key, text.as_ref(), *scroll, find),
        Popup::Help { scroll } => {
            // the picker's key shows wherever there is a context to pick: several, or others to switch to
            let picker = app.several_contexts || !app.kube_contexts.is_empty();
            let max = popup_text_width(frame.area());
            let mut text = crate::keys::help(&app.keys, max, app.several_contexts, picker);
            text.push_str("\n\n");
            text.push_str(&legend(max).join("\n"));
            render_text_popup(frame, app, " keys, columns, diagnoses ".into(), &text, *scroll);
        }
        Popup::Sent { scroll } => render_sent(frame, app, *scroll),
        Popup::Message { title, text, scroll } => {
            let text = format!("{text}\n\n(Esc closes)");
            render_text_popup(frame, app, format!(" {title} "), &text, *scroll);
        }
        Popup::Confirm(c) => render_confirm(frame, app, c, theme),
        Popup::Contexts { choices, selected } => render_picker(frame, app, choices, *selected, theme),
        Popup::Sort { selected } => render_sort(frame, app, *selected),
        Popup::Leaks(view) => {
            let title = leaks_title(app, view);
            render_text_popup(frame, app, title, &leaks_text(app, view), view.scroll);
        }
        Popup::Pulse(view) => {
            let title = pulse_title(app, view);
            render_text_popup(frame, app, title, &pulse_text(app, view), view.scroll);
        }
        Popup::History { key, text, scroll } => {
            // the timeline is laid out for the pane: its message wraps, columns go by priority
            let max = popup_text_width(frame.area());
            let lines: Vec<String> = match text {
                None => vec!["reading…".to_string()],
                Some(Ok(h)) => namzu_engine::present::history::render(h, Some(max))
                    .iter()
                    .map(|l| cut(l, max))
                    .collect(),
                Some(Err(e)) => wrap(&format!("cannot read: {e}"), max),
            };
            let title = format!(" history of {} ({}) ", key.id, key.place(app.several_contexts));
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
            let title = match pane.members.len() {
                0 => format!("logs of {} ({})", pane.key.id, pane.key.place(app.several_contexts)),
                n => format!("logs of {n} marked workspaces"),
            };
            crate::log_view::render(frame, area, pane, &title, theme.colour);
        }
    }
}

/// What the help says after the keys: every column the table can show and every diagnosis word,
/// each with what it means, from the domain's own lists (`Column::meaning`,
/// `DiagnosisKind::ALL` and `meaning`), fitted to `max` columns.
pub(super) fn legend(max: usize) -> Vec<String> {
    let mut shown: Vec<Column> = columns(true, true, false);
    shown.extend([Column::Cpu, Column::Mem, Column::Disk]);
    let cols: Vec<(&str, &str)> = shown.iter().map(|c| (c.header(), c.meaning())).collect();
    let diagnoses: Vec<(&str, &str)> = namzu_domain::diagnosis::DiagnosisKind::ALL
        .iter()
        .map(|d| (d.as_str(), d.meaning()))
        .collect();
    let mut lines = vec!["Columns (u shows CPU, MEM and DISK)".to_string()];
    lines.extend(described(&cols, max));
    lines.push(String::new());
    lines.push("Diagnoses (the DIAGNOSIS column; o sorts by it, worst first; diag: filters)".to_string());
    lines.extend(described(&diagnoses, max));
    lines
}

/// `name  meaning` lines, the meanings wrapped under themselves.
fn described(items: &[(&str, &str)], max: usize) -> Vec<String> {
    let label_width = items.iter().map(|(n, _)| width(n)).max().unwrap_or(0) + 2;
    let mut lines = Vec::new();
    for (name, meaning) in items {
        for (i, part) in wrap(meaning, max.saturating_sub(label_width)).iter().enumerate() {
            let label = if i == 0 { *name } else { "" };
            lines.push(format!("{label:<label_width$}{}", part.trim_start()));
        }
    }
    lines
}

/// The context picker: every context, then each with its badge, rows and status; the one
/// selected reversed, the one shown marked.
pub(super) fn render_picker(frame: &mut Frame, app: &App, choices: &[String], selected: usize, theme: Theme) {
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
            let health = health_words(app, c);
            spans.push(Span::raw(format!("  {rows} workspaces  ")));
            let style = health.colour.map_or(Style::default(), |colour| theme.fg(colour));
            let text = health
                .why
                .map_or(health.long.clone(), |why| format!("{}: {why}", health.long));
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
