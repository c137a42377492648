//! The confirmation popup: what each target's dry run says the write will do.

use super::*;
use namzu_domain::naming::WorkspaceKey;

pub(super) fn verb_title(v: Verb) -> &'static str {
    match v {
        Verb::Suspend => "Suspend",
        Verb::Resume => "Resume",
        Verb::Delete => "Delete",
    }
}

/// The dialog's text as (line, style), each line wrapped to the screen as it is said.
struct Said {
    max: usize,
    text: Vec<(String, Style)>,
}

impl Said {
    fn say(&mut self, line: String, style: Style) {
        for l in wrap(&line, self.max) {
            self.text.push((l, style));
        }
    }
}

pub(super) fn render_confirm(frame: &mut Frame, app: &App, c: &Confirm, theme: Theme) {
    let action = if c.refresh {
        "Refresh template"
    } else {
        verb_title(c.verb)
    };
    let screen = frame.area();
    let mut said = Said {
        max: popup_text_width(screen),
        text: Vec::new(),
    };
    say_consequences(&mut said, app, c, action, theme);
    for key in &c.targets {
        let head = format!("{} ({}): ", key.id, key.place(app.several_contexts));
        let body = target_lines(c, key);
        said.say(head + &body[0], Style::default());
        for line in &body[1..] {
            said.say(line.clone(), Style::default());
        }
    }
    // what follows always shows: the toggle, the typing asked for
    let tail_from = said.text.len();
    say_asks(&mut said, app, c, action, theme);
    let title = format!(" {action} ");
    let plain: Vec<String> = said.text.iter().map(|(l, _)| l.clone()).collect();
    // the buttons always show: the text above them is cut, saying how much, when it is too long
    let area = popup_area(screen, &plain, &title, 2);
    let room = (area.height as usize).saturating_sub(2 + 2);
    let text = cut_to_room(said.text, tail_from, room, theme);
    let mut lines: Vec<Line> = text
        .into_iter()
        .map(|(l, style)| Line::from(Span::styled(l, style)))
        .collect();
    lines.push(Line::from(""));
    lines.push(buttons(c, action));
    frame.render_widget(Clear, area);
    let p = Paragraph::new(Text::from(lines)).block(Block::default().borders(Borders::ALL).title(title));
    frame.render_widget(p, area);
}

/// The head of the dialog: what the write does in plain words, the drifted rows a plain resume
/// leaves behind, and the count with the take-over toggle.
fn say_consequences(said: &mut Said, app: &App, c: &Confirm, action: &str, theme: Theme) {
    let n = c.targets.len();
    // the consequences first, in plain words
    // the cost as every front-end says it (`present::report::cost`), and the key that undoes it
    let cost = namzu_engine::present::report::cost(c.verb);
    let (consequence, colour) = match (c.verb, c.refresh) {
        (Verb::Suspend, _) => (format!("{cost} R resumes it."), Color::Yellow),
        (Verb::Delete, _) => (cost.to_string(), Color::Red),
        (Verb::Resume, true) => (namzu_engine::present::report::REFRESH_COST.to_string(), Color::Yellow),
        (Verb::Resume, false) => (cost.to_string(), Color::Green),
    };
    said.say(consequence, theme.fg(colour).add_modifier(Modifier::BOLD));
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
        said.say(
            format!(
                "{} drifted from its template: this resume keeps the old pod template; Esc, then F resumes onto the template as it is now.",
                drifted.join(", ")
            ),
            theme.fg(Color::Yellow),
        );
    }
    said.say(String::new(), Style::default());
    said.say(
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
    said.say(String::new(), Style::default());
}

/// One target's lines: what its dry run says (or that it is still being read).
fn target_lines(c: &Confirm, key: &WorkspaceKey) -> Vec<String> {
    match c.previews.get(key) {
        None => vec!["reading…".to_string()],
        Some(Outcome::DryRun {
            request,
            epoch,
            mode,
            per_sandbox_egress,
            refresh,
            ..
        }) => {
            // the consequences first: the mode it leaves and the field diff; the epoch and
            // the exact request under the toggle
            let mut v = vec![if c.show_request {
                format!(
                    "{}, stored epoch {} → carries {} ({}); {} {}",
                    mode.as_str(),
                    epoch.raw.clone().unwrap_or_else(|| "none (0)".into()),
                    epoch.carried,
                    epoch.describe(),
                    request.method,
                    request.path
                )
            } else {
                format!("now {}", mode.as_str())
            }];
            // a refresh: the template and hashes, each overlay and its source, the field diff
            v.extend(
                refresh
                    .iter()
                    .flat_map(|r| namzu_engine::present::outcome::refresh_lines(r)),
            );
            if !c.show_request && v.last().is_some_and(|l| l == "body:") {
                v.pop();
            }
            if c.show_request {
                // one operation per line, spaced between JSON tokens so a long one wraps
                // between tokens, never inside a string: the same JSON value as the body sent
                match request.body.as_array() {
                    Some(ops) => v.extend(ops.iter().map(|op| format!("  {}", spaced_json(op)))),
                    None => v.push(format!("  {}", spaced_json(&request.body))),
                }
            }
            if *per_sandbox_egress {
                v.push(namzu_engine::present::outcome::ADMISSION_FENCE_NOTE.to_string());
            }
            v
        }
        Some(other) => vec![crate::app::note_for(c.verb, key, other).text],
    }
}

/// The foot of the dialog: the request toggle, the bulk what-if, the typing asked for.
fn say_asks(said: &mut Said, app: &App, c: &Confirm, action: &str, theme: Theme) {
    said.say(
        format!(
            "{}: {} the epoch and the exact request",
            if c.asks_typed { "Ctrl-V" } else { "v" },
            if c.show_request { "hide" } else { "show" }
        ),
        theme.fg(Color::DarkGray),
    );
    if c.targets.len() > 1 {
        said.say(String::new(), Style::default());
        said.say(bulk_what_if(app, c), Style::default().add_modifier(Modifier::BOLD));
    }
    if c.asks_typed {
        said.say(String::new(), Style::default());
    }
    if c.verb != Verb::Delete && !c.typed_rule.is_empty() {
        said.say(
            format!(
                "Context {} asks for the id typed (confirm: typed).",
                c.typed_rule.join(", ")
            ),
            theme.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        );
    }
    if c.asks_typed {
        said.say(
            format!("Type {:?} to enable {action}: {}█", c.phrase(), c.typed),
            Style::default(),
        );
    }
}

/// The text cut to `room` lines when too long: the request's detail is cut in the middle, so
/// the consequences above and the typing asked for below (from `tail_from`) stay.
fn cut_to_room(mut text: Vec<(String, Style)>, tail_from: usize, room: usize, theme: Theme) -> Vec<(String, Style)> {
    if text.len() > room {
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
    text
}

/// Cancel and the action, the focused one reversed, the action dimmed until it may go.
fn buttons<'a>(c: &Confirm, action: &'a str) -> Line<'a> {
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
    Line::from(vec![
        button("Cancel", c.focus == Focus::Cancel, true),
        Span::raw("   "),
        button(action, c.focus == Focus::Confirm, c.ready()),
    ])
}

/// What a bulk action's writes would free or start holding (the CLI's bulk `--dry-run` line):
/// each target as its preview read it, with what its row holds; until every preview is in, says so.
fn bulk_what_if(app: &App, c: &Confirm) -> String {
    let rows = app.inventory.rows();
    let mut read = Vec::new();
    for key in &c.targets {
        match c.previews.get(key) {
            None => return "what it would free: reading…".into(),
            Some(Outcome::DryRun { mode, .. }) => {
                if let Some(w) = rows.iter().find(|w| key_of(w) == *key) {
                    read.push((*mode, &w.resources));
                }
            }
            Some(_) => {}
        }
    }
    namzu_domain::quantities::what_if_of(c.verb, read)
}
