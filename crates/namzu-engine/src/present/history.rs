//! A workspace's history as the user reads it (`kubectl namzu history`, the TUI's `h`): the
//! timeline as a table, oldest first, then the current pod's start-up waterfall with its slowest
//! leg named. Pure: entries in, text out.

use chrono::{DateTime, SecondsFormat, Utc};
use namzu_domain::age::{age, human_duration};
use namzu_domain::timeline::{Entry, Waterfall};

/// The widest the OBJECT column grows before its text is cut.
const OBJECT_WIDTH: usize = 48;

/// The timeline table and the waterfall, as lines.
pub fn render(
    entries: &[Entry],
    waterfall: Option<&Waterfall>,
    warnings: &[String],
    now: DateTime<Utc>,
) -> Vec<String> {
    let mut out = Vec::new();
    if entries.is_empty() {
        out.push("No history recorded.".to_string());
    } else {
        let object_width = entries
            .iter()
            .map(|e| super::layout::width(&e.object))
            .max()
            .unwrap_or(6)
            .clamp(6, OBJECT_WIDTH);
        out.push(format!(
            "{:<20}  {:<6}  {:<10}  {:<object_width$}  {:<7}  {:<24}  MESSAGE",
            "TIME", "AGE", "SOURCE", "OBJECT", "TYPE", "REASON"
        ));
        for e in entries {
            out.push(format!(
                "{:<20}  {:<6}  {:<10}  {:<object_width$}  {:<7}  {:<24}  {}",
                stamp(e.time),
                age(e.time, now),
                e.source.as_str(),
                super::layout::cut(&safe(&e.object), object_width),
                if e.warning { "Warning" } else { "Normal" },
                if e.reason.is_empty() {
                    "-".to_string()
                } else {
                    safe(&e.reason)
                },
                safe(&e.text)
            ));
        }
    }
    out.push(String::new());
    match waterfall {
        None => out.push("Start-up: no pod (the workspace is suspended or its pod not created yet).".into()),
        Some(w) => out.extend(render_waterfall(w)),
    }
    for w in warnings {
        out.push(format!("warning: {w}"));
    }
    out
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
