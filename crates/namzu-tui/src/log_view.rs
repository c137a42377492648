//! Drawing the log pane: it covers the table (the header and the footer's keys stay), one line
//! of where the stream stands, then the newest lines that fit — only those are laid out, so a
//! frame costs the pane's height, not the ring's length.

use super::logs::{Line as LogLine, LogPane, LogState, Prompt, RING_LINES};
use namzu_engine::present::layout::{cut, width};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// The pane, over `area`, with `colour` unless NO_COLOR.
pub(crate) fn render(frame: &mut Frame, area: Rect, pane: &LogPane, title: &str, colour: bool) {
    let fg = |c: Color| {
        if colour {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    };
    frame.render_widget(Clear, area);
    let block = Block::default().borders(Borders::ALL).title(format!(" {title} "));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    let text_width = inner.width as usize;
    let mut status = vec![Span::styled(
        match &pane.state {
            LogState::Opening => "opening…".to_string(),
            LogState::Streaming => "streaming".to_string(),
            LogState::Ended(why) => format!("ended: {why}"),
            LogState::Failed(why) => format!("cannot read: {why}"),
        },
        match pane.state {
            LogState::Failed(_) => fg(Color::Red),
            LogState::Ended(_) => fg(Color::Yellow),
            _ => fg(Color::Green),
        },
    )];
    let facts = facts(pane);
    status.push(Span::raw(format!(" · {}", facts.join(" · "))));
    let mut rows: Vec<Line> = vec![cut_line(status, text_width)];
    let height = inner.height as usize - 1;
    pane.view_height.set(height);
    let lines = pane.lines();
    // from the bottom up, the lines the filter passes, `offset` of them skipped, until the pane
    // is full: a frame costs the pane's height (and the lines a filter skips), not the ring's
    let mut shown: Vec<Line> = Vec::with_capacity(height);
    let needle = (!pane.search.is_empty()).then(|| pane.search.to_lowercase());
    let mut below = pane.offset;
    for index in (0..lines.len()).rev() {
        if shown.len() >= height {
            break;
        }
        let line = &lines[index];
        if !pane.passes(line) {
            continue;
        }
        if below > 0 {
            below -= 1;
            continue;
        }
        let style = match line {
            LogLine::Note(_) => fg(Color::Yellow),
            // as the YAML view's search shows its matches
            _ => crate::search::line_style(
                pane.matched == Some(index),
                needle
                    .as_ref()
                    .is_some_and(|n| line.shown(pane.timestamps).to_lowercase().contains(n)),
            ),
        };
        // a pane over several workspaces: each line after its workspace, in its colour
        let prefix = match line {
            LogLine::Of(from, _) => Some((format!("{} ", pane.label(*from)), fg(prefix_colour(*from)))),
            _ => None,
        };
        let room = text_width.saturating_sub(prefix.as_ref().map_or(0, |(p, _)| width(p)));
        let text = line.shown(pane.timestamps);
        let parts = if pane.wrap {
            wrap_hard(text, room)
        } else {
            vec![cut(text, room)]
        };
        for (i, part) in parts.into_iter().enumerate().rev() {
            if shown.len() >= height {
                break;
            }
            let mut spans = Vec::new();
            if let Some((p, colour)) = &prefix {
                // the prefix on the line's first row; the rows it wraps onto stay under the text
                spans.push(if i == 0 {
                    Span::styled(p.clone(), *colour)
                } else {
                    Span::raw(" ".repeat(width(p)))
                });
            }
            spans.push(Span::styled(part, style));
            shown.push(Line::from(spans));
        }
    }
    shown.reverse();
    rows.extend(shown);
    frame.render_widget(Paragraph::new(rows), inner);
}

/// What the pane's status line says after the stream's state: what the user just did first, so
/// a narrow pane still shows it; counts last.
fn facts(pane: &LogPane) -> Vec<String> {
    let mut facts = Vec::new();
    match pane.prompt {
        Some(Prompt::Search) => facts.push(format!("search: {}▏", pane.typed)),
        Some(Prompt::Filter) => facts.push(format!("filter: {}▏", pane.typed)),
        None if !pane.note.is_empty() => facts.push(pane.note.clone()),
        None => {}
    }
    if !pane.filter.is_empty() {
        facts.push(format!("filter {:?}: {} lines", pane.filter, pane.filter_hits));
    }
    if pane.timestamps {
        facts.push("timestamps".into());
    }
    if !pane.source.is_empty() {
        facts.push(pane.source.clone());
    }
    facts.push(format!("{} lines", pane.lines().len()));
    facts.push(if pane.follow {
        "following".into()
    } else {
        format!("{} below", pane.offset)
    });
    facts.push(if pane.wrap { "wrap on".into() } else { "wrap off".into() });
    if pane.evicted > 0 {
        facts.push(format!("{} older dropped (keeps {RING_LINES})", pane.evicted));
    }
    facts
}

/// The colour of workspace `from`'s prefix, in turn as `kubectl namzu logs` (and stern) colour them.
fn prefix_colour(from: usize) -> Color {
    const COLOURS: [Color; 6] = [
        Color::Cyan,
        Color::Yellow,
        Color::Green,
        Color::Magenta,
        Color::Blue,
        Color::Red,
    ];
    COLOURS[from % COLOURS.len()]
}

/// A line cut into pieces of `max` columns (a log line need not have spaces).
fn wrap_hard(text: &str, max: usize) -> Vec<String> {
    if width(text) <= max || max == 0 {
        return vec![text.to_string()];
    }
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(max).map(|c| c.iter().collect()).collect()
}

fn cut_line(spans: Vec<Span<'static>>, max: usize) -> Line<'static> {
    let mut used = 0;
    let mut out = Vec::new();
    for s in spans {
        let room = max.saturating_sub(used);
        if room == 0 {
            break;
        }
        let text = cut(&s.content, room);
        used += width(&text);
        out.push(Span::styled(text, s.style));
    }
    Line::from(out)
}
