//! Output formats and plain-text tables, coloured only on a terminal and never under NO_COLOR.

use serde_json::Value;
use std::io::IsTerminal;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Wide,
    Json,
    Yaml,
    Name,
}

/// Colour when stdout is a terminal and NO_COLOR is unset or empty.
pub fn colour_enabled() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Good,
    Busy,
    Calm,
    Bad,
    Odd,
}

fn paint(text: &str, tone: Tone) -> String {
    let code = match tone {
        Tone::Plain => return text.to_string(),
        Tone::Good => "32",
        Tone::Busy => "33",
        Tone::Calm => "34",
        Tone::Bad => "31",
        Tone::Odd => "35",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// Columns padded to their widest cell, separated by three spaces, as kubectl prints them.
pub fn table(headers: &[&str], rows: &[Vec<(String, Tone)>], no_headers: bool, colour: bool) -> String {
    let mut widths: Vec<usize> = headers
        .iter()
        .map(|h| if no_headers { 0 } else { h.chars().count() })
        .collect();
    for row in rows {
        for (i, (cell, _)) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<(String, Tone)>| {
        let last = cells.len().saturating_sub(1);
        for (i, (cell, tone)) in cells.into_iter().enumerate() {
            let pad = if i == last {
                0
            } else {
                widths[i] - cell.chars().count() + 3
            };
            out.push_str(&if colour { paint(&cell, tone) } else { cell });
            out.extend(std::iter::repeat_n(' ', pad));
        }
        out.push('\n');
    };
    if !no_headers {
        line(headers.iter().map(|h| (h.to_string(), Tone::Plain)).collect());
    }
    for row in rows {
        line(row.clone());
    }
    out
}

/// JSON (pretty) or YAML of a value, newline-terminated.
pub fn structured(value: &Value, format: Format) -> String {
    match format {
        Format::Yaml => serde_yaml::to_string(value).expect("JSON values serialise as YAML"),
        _ => {
            let mut s = serde_json::to_string_pretty(value).expect("JSON values serialise");
            s.push('\n');
            s
        }
    }
}
