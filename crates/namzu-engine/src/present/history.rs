//! A workspace's history as the user reads it (`kubectl namzu history`, the TUI's `h`): the
//! timeline as a table, oldest first, then the current pod's start-up waterfall with its slowest
//! leg named. Pure: entries in, text out.

use chrono::{DateTime, SecondsFormat, Utc};
use namzu_domain::age::{age, human_duration};
use namzu_domain::timeline::{Entry, Waterfall};

/// The widest the OBJECT column grows before its text is cut.
const OBJECT_WIDTH: usize = 48;
/// The widest the REASON column grows before its text is cut.
const REASON_WIDTH: usize = 24;
/// The narrowest MESSAGE keeps beside the other columns; narrower, columns go (TIME, SOURCE,
/// OBJECT, then TYPE: a Warning row's reason then starts with `!`), and what is left wraps.
const MESSAGE_MIN: usize = 40;

/// A workspace's history, read: what [`render`] lays out at any width.
#[derive(Debug, Clone)]
pub struct History {
    pub entries: Vec<Entry>,
    pub waterfall: Option<Waterfall>,
    pub warnings: Vec<String>,
    pub now: DateTime<Utc>,
}

/// One column of the timeline table: its heading, its width, and its cell of an entry.
struct Column {
    heading: &'static str,
    width: usize,
    cell: fn(&Entry, DateTime<Utc>) -> String,
}

/// The timeline table and the waterfall, as lines, laid out for `width` columns (`None`: no
/// limit, every column and no wrap — a pipe's, as kubectl prints). The message is the point: it
/// keeps at least [`MESSAGE_MIN`] columns where the width allows, columns are dropped by
/// priority to make room, and it wraps under itself rather than being cut.
pub fn render(history: &History, width: Option<usize>) -> Vec<String> {
    let mut out = Vec::new();
    if history.entries.is_empty() {
        out.push("No history recorded.".to_string());
    } else {
        out.extend(table(&history.entries, history.now, width));
    }
    out.push(String::new());
    match &history.waterfall {
        None => out.push("Start-up: no pod (the workspace is suspended or its pod not created yet).".into()),
        Some(w) => out.extend(render_waterfall(w)),
    }
    for w in &history.warnings {
        out.push(format!("warning: {w}"));
    }
    out
}

/// The timeline rows under their headings, fitted to `width`.
fn table(entries: &[Entry], now: DateTime<Utc>, width: Option<usize>) -> Vec<String> {
    let table = Table::fitted(entries, width);
    let headings = table.columns.iter().map(|c| c.heading.to_string()).collect();
    let mut out = vec![format!("{}MESSAGE", table.row(headings))];
    for e in entries {
        out.extend(table.entry(e, now));
    }
    out
}

/// The columns kept for a width, and where the message goes.
struct Table {
    columns: Vec<Column>,
    /// The width asked for (`None`: a pipe's, unlimited).
    width: Option<usize>,
    /// TYPE is among the columns (else a Warning's reason is marked `!`).
    typed: bool,
    /// The column the message starts at.
    message_at: usize,
}

impl Table {
    /// Every column that fits beside a readable message, dropped by priority: TIME (AGE stays),
    /// SOURCE, OBJECT, then TYPE.
    fn fitted(entries: &[Entry], width: Option<usize>) -> Table {
        let widest = |f: &dyn Fn(&Entry) -> usize, min: usize, max: usize| {
            entries.iter().map(f).max().unwrap_or(min).clamp(min, max)
        };
        let object_width = widest(&|e| super::layout::width(&e.object), 6, OBJECT_WIDTH);
        // unlimited (a pipe): REASON as wide as it always was, its longer reasons not cut
        let reason_width = match width {
            Some(_) => widest(&|e| super::layout::width(&reason(e)), 6, REASON_WIDTH),
            None => REASON_WIDTH,
        };
        let column = |heading, width, cell| Column { heading, width, cell };
        // each with the round it is dropped in when the width is short (5: never)
        let mut columns: Vec<(u8, Column)> = vec![
            (1, column("TIME", 20, |e, _| stamp(e.time))),
            (5, column("AGE", 6, |e, now| age(e.time, now))),
            (2, column("SOURCE", 10, |e, _| e.source.as_str().to_string())),
            (3, column("OBJECT", object_width, |e, _| safe(&e.object))),
            (
                4,
                column("TYPE", 7, |e, _| if e.warning { "Warning" } else { "Normal" }.into()),
            ),
            (5, column("REASON", reason_width, |e, _| reason(e))),
        ];
        let fixed = |columns: &[(u8, Column)]| columns.iter().map(|(_, c)| c.width + 2).sum::<usize>();
        if let Some(width) = width {
            for drop in 1..=4 {
                if fixed(&columns) + MESSAGE_MIN <= width {
                    break;
                }
                columns.retain(|(round, _)| *round != drop);
            }
        }
        let message_at = fixed(&columns);
        let columns: Vec<Column> = columns.into_iter().map(|(_, c)| c).collect();
        Table {
            typed: columns.iter().any(|c| c.heading == "TYPE"),
            columns,
            width,
            message_at,
        }
    }

    /// The cells as one row: each cut to its column where the width is limited (OBJECT always),
    /// else padded.
    fn row(&self, cells: Vec<String>) -> String {
        let mut line = String::new();
        for (c, text) in self.columns.iter().zip(cells) {
            let text = if self.width.is_some() || c.heading == "OBJECT" {
                super::layout::cut(&text, c.width)
            } else {
                text
            };
            let used = super::layout::width(&text);
            line.push_str(&text);
            line.push_str(&" ".repeat(c.width.saturating_sub(used) + 2));
        }
        line
    }

    /// One entry's lines: its row and its message, beside the columns where it has room (wrapped
    /// under itself), else on lines of its own under the row.
    fn entry(&self, e: &Entry, now: DateTime<Utc>) -> Vec<String> {
        let cells = self
            .columns
            .iter()
            .map(|c| {
                let text = (c.cell)(e, now);
                // without TYPE, a Warning says so in front of its reason
                if !self.typed && c.heading == "REASON" && e.warning {
                    format!("!{text}")
                } else {
                    text
                }
            })
            .collect();
        let head = self.row(cells);
        let message = safe(&e.text);
        let Some(width) = self.width else {
            return vec![format!("{head}{message}")];
        };
        let room = width.saturating_sub(self.message_at);
        if room >= MESSAGE_MIN.min(20) {
            let mut parts = super::layout::wrap(&message, room).into_iter();
            let first = format!("{head}{}", parts.next().unwrap_or_default());
            let mut out = vec![first.trim_end().to_string()];
            out.extend(parts.map(|p| format!("{}{}", " ".repeat(self.message_at), p.trim_start())));
            return out;
        }
        let mut out = vec![head.trim_end().to_string()];
        let wrapped = super::layout::wrap(&message, width.saturating_sub(4));
        out.extend(wrapped.into_iter().map(|p| format!("    {}", p.trim_start())));
        out
    }
}

/// An entry's reason, `-` where it has none.
fn reason(e: &Entry) -> String {
    if e.reason.is_empty() {
        "-".to_string()
    } else {
        safe(&e.reason)
    }
}

/// Text from the cluster in one row: a newline in an event's message would make a row of its
/// own, an escape sequence would drive the terminal.
fn safe(text: &str) -> String {
    super::layout::terminal_safe(text.to_string())
}

/// `2026-09-10 12:00:05Z`: seconds are enough to read, and sort as text.
fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true).replacen('T', " ", 1)
}

/// The waterfall: one line per leg with a bar in proportion, the leg under way timed to now
/// ("and counting"), the slowest marked.
pub(crate) fn render_waterfall(w: &Waterfall) -> Vec<String> {
    let mut out = vec![format!(
        "Start-up of the current pod, from {} at {}:",
        w.from,
        stamp(w.start)
    )];
    let open = w.open.as_ref().map(|o| o.seconds);
    let longest = w.legs.iter().map(|l| l.seconds).chain(open).max().unwrap_or(0).max(1);
    let bar = |seconds: i64| "█".repeat(((seconds * 30 + longest - 1) / longest).max(i64::from(seconds > 0)) as usize);
    let mark = |to: &str| {
        if w.slowest.as_deref() == Some(to) {
            "  ← slowest"
        } else {
            ""
        }
    };
    for leg in &w.legs {
        out.push(format!(
            "  {:<14} {:>7}  {}{}",
            leg.to,
            human_duration(leg.seconds),
            bar(leg.seconds),
            mark(&leg.to)
        ));
    }
    let counting = if w.open.is_some() { " and counting" } else { "" };
    if let Some(o) = &w.open {
        out.push(format!(
            "  {:<14} {:>7}{counting}  {}{}",
            o.doing,
            human_duration(o.seconds),
            bar(o.seconds),
            mark(&o.to)
        ));
    }
    out.push(format!(
        "  {:<14} {:>7}{counting}",
        "total",
        human_duration(w.total_seconds)
    ));
    if !w.pending.is_empty() {
        out.push(format!("  not yet: {}", w.pending.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use namzu_domain::timeline::Source;

    fn history() -> History {
        let now = DateTime::parse_from_rfc3339("2026-09-10T13:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let entry = |warning: bool, reason: &str, text: &str| Entry {
            time: now - chrono::Duration::minutes(59),
            source: Source::Event,
            object: "Pod namzu-ws-hotel".into(),
            warning,
            reason: reason.into(),
            text: text.into(),
        };
        History {
            entries: vec![
                entry(
                    false,
                    "Scheduled",
                    "Successfully assigned agents/namzu-ws-hotel to sim-node-1",
                ),
                entry(
                    true,
                    "BackOff",
                    "Back-off restarting failed container agent in pod namzu-ws-hotel_agents(6f41)",
                ),
            ],
            waterfall: None,
            warnings: Vec::new(),
            now,
        }
    }

    #[test]
    fn at_80_columns_the_message_wraps_whole_and_columns_go_by_priority() {
        let lines = render(&history(), Some(80));
        assert!(lines.iter().all(|l| super::super::layout::width(l) <= 80), "{lines:#?}");
        assert_eq!(
            lines[0], "AGE     TYPE     REASON     MESSAGE",
            "TIME, SOURCE and OBJECT went"
        );
        // narrower, TYPE goes too, and a Warning's reason says so
        let narrow = render(&history(), Some(60));
        assert!(narrow[0].starts_with("AGE     REASON"), "{}", narrow[0]);
        assert!(narrow.iter().any(|l| l.contains("!BackOff")), "{narrow:#?}");
        let words = lines.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("Back-off restarting failed container agent in pod"),
            "{words}"
        );
    }

    #[test]
    fn unlimited_every_column_on_one_line() {
        let lines = render(&history(), None);
        assert!(
            lines[0].starts_with("TIME ") && lines[0].contains("TYPE"),
            "{}",
            lines[0]
        );
        assert!(
            lines[2].contains("Warning  BackOff") && lines[2].ends_with("(6f41)"),
            "{}",
            lines[2]
        );
    }
}
