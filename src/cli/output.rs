//! Output formats and plain-text tables, coloured only on a terminal and never under NO_COLOR.

use serde_json::Value;
use std::io::IsTerminal;

pub use namzu_engine::console::{printable, printable_lines, stdout_closed, stdout_failure, write_stdout};
pub use namzu_engine::present::yaml::{compact_json, pretty_json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Wide,
    Json,
    Yaml,
    Name,
}

/// The formats of a report (a write's results, capacity, the audit log): a table or the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Table,
    Json,
    Yaml,
}

impl ReportFormat {
    pub(crate) fn format(self) -> Format {
        match self {
            ReportFormat::Table => Format::Table,
            ReportFormat::Json => Format::Json,
            ReportFormat::Yaml => Format::Yaml,
        }
    }
}

/// How `list` and `inspect` print: one of the plain formats, a JSONPath template or custom
/// columns (kubectl's `-o` values).
#[derive(Debug, Clone)]
pub enum Printer {
    Plain(Format),
    /// The template and its text (kubectl's execution errors quote it).
    JsonPath(namzu_engine::present::jsonpath::Template, String),
    CustomColumns(Vec<(String, namzu_engine::present::jsonpath::Template)>),
}

/// kubectl's `-o`: `table|wide|json|yaml|name`, `jsonpath=T`, `jsonpath-file=F`,
/// `custom-columns=H:P,…`, `custom-columns-file=F`.
pub fn parse_printer(text: &str) -> Result<Printer, String> {
    use namzu_engine::present::jsonpath::{Template, parse_columns, parse_columns_file};
    let read = |path: &str| std::fs::read_to_string(path).map_err(|e| format!("error reading {path}: {e}"));
    match text.split_once('=') {
        Some(("jsonpath", "")) | None if text == "jsonpath" || text == "jsonpath=" => {
            Err("template format specified but no template given".into())
        }
        Some(("jsonpath", t)) => Template::parse(t).map(|p| Printer::JsonPath(p, t.to_string())),
        Some(("jsonpath-file", f)) => {
            let text = read(f)?;
            Template::parse(&text).map(|p| Printer::JsonPath(p, text.trim().to_string()))
        }
        Some(("custom-columns", spec)) => parse_columns(spec).map(Printer::CustomColumns),
        Some(("custom-columns-file", f)) => parse_columns_file(&read(f)?).map(Printer::CustomColumns),
        _ => <Format as clap::ValueEnum>::from_str(text, false).map(Printer::Plain).map_err(|_| {
            format!(
                "unable to match a printer suitable for the output format {text:?}, allowed formats are: custom-columns,custom-columns-file,json,jsonpath,jsonpath-file,name,table,wide,yaml"
            )
        }),
    }
}

impl Printer {
    /// Print `data` (a List of the schema's items, or one object) as a template or columns
    /// would; `items` are the rows custom columns print.
    pub fn render_template(
        &self,
        data: &Value,
        items: &[Value],
        no_headers: bool,
        allow_missing: bool,
    ) -> Result<String, String> {
        match self {
            Printer::Plain(_) => Ok(String::new()),
            Printer::JsonPath(t, text) => t
                .render(data, allow_missing)
                .map_err(|e| format!("error executing jsonpath {text:?}: Error executing template: {e}")),
            Printer::CustomColumns(columns) => {
                let headers: Vec<&str> = columns.iter().map(|(h, _)| h.as_str()).collect();
                let rows: Vec<Vec<(String, Tone)>> = items
                    .iter()
                    .map(|item| {
                        columns
                            .iter()
                            .map(|(_, t)| (namzu_engine::present::jsonpath::column_cell(t, item), Tone::Plain))
                            .collect()
                    })
                    .collect();
                Ok(table(&headers, &rows, no_headers, false))
            }
        }
    }
}

/// Colour when stdout is a terminal and NO_COLOR is unset or empty.
/// Why `-o name` may not print here, if it may not: a name carries neither namespace nor
/// context, so under `-A` or across contexts a pipe into a verb (`| xargs kubectl namzu suspend`)
/// would act on the workspace of that name in the current namespace and context — another one, or
/// none. The form that carries both is given instead.
pub(crate) fn name_pipe_refusal(
    verb: &str,
    all_namespaces: bool,
    several_contexts: bool,
) -> Option<super::exit::Failure> {
    let (lost, columns) = match (all_namespaces, several_contexts) {
        (_, true) => (
            "the namespace and context",
            "CONTEXT:.context,NAMESPACE:.namespace,ID:.id --no-headers | while read -r ctx ns id; do kubectl namzu --context \"$ctx\" -n \"$ns\" suspend --yes \"$id\"; done",
        ),
        (true, false) => (
            "the namespace",
            "NAMESPACE:.namespace,ID:.id --no-headers | while read -r ns id; do kubectl namzu -n \"$ns\" suspend --yes \"$id\"; done",
        ),
        (false, false) => return None,
    };
    Some(super::exit::Failure::usage(format!(
        "-o name drops {lost}, so a verb it is piped to would act in the current one: print both, e.g. `kubectl namzu {verb} … -o custom-columns={columns}`"
    )))
}

pub(crate) fn colour_enabled() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    Plain,
    Good,
    Busy,
    Calm,
    Bad,
    Odd,
}

/// A config file's badge colour as a tone of the tables.
pub(crate) fn badge_tone(colour: Option<namzu_domain::safety::Colour>) -> Tone {
    use namzu_domain::safety::Colour;
    match colour {
        None => Tone::Plain,
        Some(Colour::Red) => Tone::Bad,
        Some(Colour::Yellow) => Tone::Busy,
        Some(Colour::Green) => Tone::Good,
        Some(Colour::Blue) => Tone::Calm,
        Some(Colour::Magenta) => Tone::Odd,
    }
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
pub(crate) fn table(headers: &[&str], rows: &[Vec<(String, Tone)>], no_headers: bool, colour: bool) -> String {
    let mut widths: Vec<usize> = headers
        .iter()
        .map(|h| if no_headers { 0 } else { h.chars().count() })
        .collect();
    for row in rows {
        for (i, (cell, _)) in row.iter().enumerate() {
            widths[i] = widths[i].max(printable(cell).chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<(String, Tone)>| {
        let last = cells.len().saturating_sub(1);
        for (i, (cell, tone)) in cells.into_iter().enumerate() {
            let pad = if i == last {
                0
            } else {
                widths[i] - printable(&cell).chars().count() + 3
            };
            let cell = printable(&cell);
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

/// A list as kubectl prints one (`{"apiVersion": "v1", "items": […], "kind": "List", …}`), the
/// items as given: what `list -o json|yaml` prints, so `jq '.items[]'` reads it as kubectl's.
pub(crate) fn kubectl_list(items: Vec<Value>) -> Value {
    serde_json::json!({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}})
}

/// What a pretty [`kubectl_list`] prints before its first item.
pub(crate) const LIST_HEAD: &str = "{\n  \"apiVersion\": \"v1\",\n  \"items\": [";

/// What a pretty [`kubectl_list`] prints after its last item (`empty`: it had none).
pub(crate) fn list_tail(empty: bool) -> &'static str {
    if empty {
        "],\n  \"kind\": \"List\",\n  \"metadata\": {\n    \"resourceVersion\": \"\"\n  }\n}\n"
    } else {
        "\n  ],\n  \"kind\": \"List\",\n  \"metadata\": {\n    \"resourceVersion\": \"\"\n  }\n}\n"
    }
}

/// One item of a pretty [`kubectl_list`] as it stands in it: its lines indented by four spaces,
/// without the separator.
pub(crate) fn list_item(item: &Value) -> String {
    let pretty = pretty_json(item);
    let mut out = String::with_capacity(pretty.len() + pretty.len() / 8);
    for (i, line) in pretty.lines().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str("    ");
        out.push_str(line);
    }
    out
}

/// A pretty [`kubectl_list`] of `items`, newline-terminated, byte for byte what `structured`
/// prints for it, built one item at a time (a list of thousands never exists as one JSON tree).
pub(crate) fn json_list(items: impl Iterator<Item = Value>) -> String {
    let mut out = String::new();
    write_json_list(items, |text| out.push_str(text));
    out
}

/// The same list handed to `sink` piece by piece: each item is serialised and let go before
/// the next is built, so printing thousands never holds the whole text.
pub(crate) fn write_json_list(items: impl Iterator<Item = Value>, mut sink: impl FnMut(&str)) {
    sink(LIST_HEAD);
    let mut empty = true;
    let mut piece = String::new();
    for item in items {
        piece.clear();
        piece.push_str(if empty { "\n" } else { ",\n" });
        empty = false;
        piece.push_str(&list_item(&item));
        sink(&piece);
    }
    sink(list_tail(empty));
}

/// JSON (pretty) or YAML of a value, newline-terminated.
pub(crate) fn structured(value: &Value, format: Format) -> String {
    match format {
        Format::Yaml => namzu_engine::present::yaml::yaml(value),
        _ => {
            let mut s = pretty_json(value);
            s.push('\n');
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_json_list_one_item_at_a_time_is_the_whole_list_pretty() {
        for items in [
            vec![],
            vec![json!({"a": 1})],
            vec![json!({"a": [1, {"b": "x\ny"}], "c": {}}), json!([]), json!("s")],
        ] {
            assert_eq!(
                json_list(items.clone().into_iter()),
                structured(&kubectl_list(items), Format::Json)
            );
        }
    }

    #[test]
    fn printable_escapes_control_characters() {
        assert_eq!(printable("ok"), "ok");
        assert_eq!(printable("a\u{1b}[2Jb\nc"), "a\\u{1b}[2Jb\\u{a}c");
        assert_eq!(printable_lines("x\ny\u{7}"), "x\ny\\u{7}");
        assert_eq!(printable("abc\u{202e}fed\u{2028}"), "abc\\u{202e}fed\\u{2028}");
        assert_eq!(printable("a\u{61c}b"), "a\\u{61c}b");
    }
}
