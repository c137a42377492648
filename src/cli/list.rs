//! `kubectl namzu list`: the inventory as a table, JSON, YAML or names.

use super::exit::Failure;
use super::globals::Globals;
use super::output::{self, Format, Printer, Tone};
use super::overlay::OverlayArgs;
use super::schema;
use super::selection::SelectionArgs;
use crate::cluster::connect::Connection;
use crate::cluster::inventory::{self, Query};
use crate::domain::columns::{Column, cell, columns};
use crate::domain::drift::DriftState;
use crate::domain::select::{SortKey, sort};
use crate::domain::state::State;
use crate::domain::workspace::Workspace;
use chrono::{DateTime, Utc};
use serde_json::Value;

fn parse_sort(text: &str) -> Result<SortKey, String> {
    SortKey::parse(text).ok_or_else(|| {
        let all: Vec<&str> = SortKey::ALL.iter().map(|(n, _)| *n).collect();
        format!("unknown sort key {text:?}; one of: {}", all.join(", "))
    })
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format: table, wide, json, yaml, name, jsonpath=TEMPLATE, jsonpath-file=FILE,
    /// custom-columns=HEADER:PATH,… or custom-columns-file=FILE (paths into the `-o json` schema;
    /// a template sees `{"kind": "List", "items": [...]}`, as kubectl's do).
    #[arg(short = 'o', long, default_value = "table", value_parser = output::parse_printer)]
    pub output: Printer,
    /// With a template: a path that finds nothing prints nothing (false: it is an error).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub allow_missing_template_keys: bool,
    /// A LABELS column with the Sandbox's labels.
    #[arg(long)]
    pub show_labels: bool,
    /// A column per label key (comma-separated); `pod-template:KEY` is a pod-template label.
    #[arg(short = 'L', long, value_delimiter = ',', value_name = "KEY")]
    pub label_columns: Vec<String>,
    /// Omit the header row.
    #[arg(long)]
    pub no_headers: bool,
    /// name, age, mode-changed, epoch, state or drift.
    #[arg(long, default_value = "name", value_parser = parse_sort)]
    pub sort_by: SortKey,
    /// After the list, print each change as it happens (`-o json`: one object per line) until
    /// Ctrl-C.
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// Print only the changes, not the list first.
    #[arg(long)]
    pub watch_only: bool,
    /// With a watch: each change as {"type": ADDED|MODIFIED|DELETED, "object": …}.
    #[arg(long)]
    pub output_watch_events: bool,
    #[command(flatten)]
    pub selection: SelectionArgs,
    #[command(flatten)]
    pub overlays: OverlayArgs,
}

pub async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    let conn = Connection::open(&globals.connect_options(true)).await?;
    let scope = globals.scope(&conn.namespace);
    let query = Query {
        selector: args.selection.selector.clone(),
        per_sandbox_label_key: globals.per_sandbox_label_key.clone(),
    };
    if args.watch || args.watch_only {
        return watch(globals, &args, conn, scope, query).await;
    }
    let inv = inventory::read(&conn, &scope, &query).await?;
    for w in &inv.warnings {
        crate::errln!("{}", output::printable(w));
    }
    let now = conn.clock.now();
    let filter = args.selection.filter();
    // each namespace's objects go once its rows are derived: the output is built from the rows
    let mut workspaces = inv.into_workspaces(&globals.overlay_flags(&args.overlays), now, |w| filter.matches(w, now));
    sort(&mut workspaces, args.sort_by, false);
    let format = match &args.output {
        Printer::Plain(format) => *format,
        template => {
            let items: Vec<Value> = workspaces.iter().map(schema::workspace).collect();
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items});
            let text = template
                .render_template(&list, &items, args.no_headers, args.allow_missing_template_keys)
                .map_err(Failure::error)?;
            crate::out!("{text}");
            return Ok(());
        }
    };
    if format == Format::Json {
        // printed as it is built: thousands of workspaces never sit in memory twice
        let mut buffer = String::with_capacity(OUTPUT_CHUNK);
        output::write_json_array(workspaces.iter().map(schema::workspace), |piece| {
            buffer.push_str(piece);
            if buffer.len() >= OUTPUT_CHUNK {
                output::write_stdout(&buffer);
                buffer.clear();
            }
        });
        output::write_stdout(&buffer);
        return Ok(());
    }
    let labels = LabelColumns {
        show: args.show_labels,
        keys: &args.label_columns,
    };
    crate::out!(
        "{}",
        render(
            &workspaces,
            format,
            globals.all_namespaces,
            args.no_headers,
            now,
            &labels
        )
    );
    if workspaces.is_empty() && matches!(format, Format::Table | Format::Wide) {
        match &scope {
            inventory::Scope::All => crate::errln!("No workspaces found."),
            inventory::Scope::Namespace(ns) => crate::errln!("No workspaces found in {ns} namespace."),
        }
    }
    Ok(())
}

/// How much JSON is gathered before it is written.
const OUTPUT_CHUNK: usize = 64 * 1024;

/// `list -w`: the table (unless `--watch-only`), then one line per change, from the live
/// inventory (watches; the same rows the TUI shows). Ctrl-C ends it with exit 0.
async fn watch(
    globals: &Globals,
    args: &Args,
    conn: Connection,
    scope: inventory::Scope,
    query: Query,
) -> Result<(), Failure> {
    use crate::cluster::live::{self, LiveEvent, LiveOptions, StreamStatus};
    use crate::domain::mirror::RowChange;
    use std::collections::BTreeMap;
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let clock = conn.clock.clone();
    let follow = tokio::spawn(live::follow(
        conn,
        scope,
        query,
        args.overlays.flags(),
        LiveOptions::default(),
        tx,
    ));
    let _stop = AbortOnDrop(follow);
    let termination = crate::signals::Termination::listen().received();
    tokio::pin!(termination);
    let filter = args.selection.filter();
    let labels = LabelColumns {
        show: args.show_labels,
        keys: &args.label_columns,
    };
    // the last row printed per workspace: a change that leaves it the same prints nothing
    let mut shown: BTreeMap<(String, String), Workspace> = BTreeMap::new();
    let mut synced = false;
    // the workspaces the filter selects, as last printed
    let mut selected: std::collections::BTreeSet<(String, String)> = Default::default();
    let mut header_due = !args.no_headers;
    let mut reconnecting: BTreeMap<String, bool> = BTreeMap::new();
    loop {
        let event = tokio::select! {
            _ = &mut termination => return Ok(()),
            e = events.recv() => match e {
                Some(e) => e,
                None => return Err(Failure::error("the watch ended")),
            },
        };
        let now = clock.now();
        let mut lines: Vec<(&'static str, Workspace)> = Vec::new();
        match event {
            LiveEvent::Warning(w) => crate::errln!("{}", output::printable(&w)),
            LiveEvent::Failed(why) => return Err(Failure::error(why)),
            LiveEvent::Status { stream, status } => {
                let down = matches!(status, StreamStatus::Reconnecting { .. });
                let was = reconnecting.insert(stream.to_string(), down).unwrap_or(false);
                match (&status, was) {
                    (StreamStatus::Reconnecting { why, .. }, false) => {
                        crate::errln!(
                            "warning: the watch of {stream} is reconnecting: {}",
                            output::printable(why)
                        )
                    }
                    (StreamStatus::Live, true) => crate::errln!("the watch of {stream} is live again"),
                    _ => {}
                }
            }
            LiveEvent::Synced { .. } => {
                synced = true;
                let mut rows: Vec<Workspace> = shown.values().filter(|w| filter.matches(w, now)).cloned().collect();
                sort(&mut rows, args.sort_by, false);
                selected = rows.iter().map(|w| (w.namespace.clone(), w.id.clone())).collect();
                if !args.watch_only {
                    lines.extend(rows.into_iter().map(|w| ("ADDED", w)));
                }
            }
            LiveEvent::Rows(changes) => {
                for change in changes {
                    match change {
                        RowChange::Upsert(w) => {
                            let w = *w;
                            let key = (w.namespace.clone(), w.id.clone());
                            if shown.get(&key) == Some(&w) {
                                continue;
                            }
                            shown.insert(key.clone(), w.clone());
                            if !synced {
                                continue;
                            }
                            // as a watch with a selector: a row entering the selection is ADDED,
                            // one leaving it DELETED
                            match (filter.matches(&w, now), selected.contains(&key)) {
                                (true, true) => lines.push(("MODIFIED", w)),
                                (true, false) => {
                                    selected.insert(key);
                                    lines.push(("ADDED", w));
                                }
                                (false, true) => {
                                    selected.remove(&key);
                                    lines.push(("DELETED", w));
                                }
                                (false, false) => {}
                            }
                        }
                        RowChange::Remove(ns, id) => {
                            let key = (ns, id);
                            if let Some(w) = shown.remove(&key)
                                && selected.remove(&key)
                            {
                                lines.push(("DELETED", w));
                            }
                        }
                    }
                }
            }
        }
        if lines.is_empty() {
            continue;
        }
        let text = match &args.output {
            Printer::Plain(Format::Json) => lines
                .iter()
                .map(|(kind, w)| {
                    let object = schema::workspace(w);
                    let value = if args.output_watch_events {
                        serde_json::json!({"type": kind, "object": object})
                    } else {
                        object
                    };
                    format!("{value}\n")
                })
                .collect(),
            Printer::Plain(table @ (Format::Table | Format::Wide)) => {
                let rows: Vec<Workspace> = lines.into_iter().map(|(_, w)| w).collect();
                let text = render(&rows, *table, globals.all_namespaces, !header_due, now, &labels);
                header_due = false;
                text
            }
            Printer::Plain(other) => {
                let rows: Vec<Workspace> = lines.into_iter().map(|(_, w)| w).collect();
                let text = render(&rows, *other, globals.all_namespaces, true, now, &labels);
                if *other == Format::Yaml {
                    format!("---\n{text}")
                } else {
                    text
                }
            }
            template => {
                let mut text = String::new();
                for (_, w) in lines {
                    let items = vec![schema::workspace(&w)];
                    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items});
                    text.push_str(
                        &template
                            .render_template(&list, &items, true, args.allow_missing_template_keys)
                            .map_err(Failure::error)?,
                    );
                }
                text
            }
        };
        output::write_stdout(&text);
        if output::stdout_closed() {
            return Ok(());
        }
        if let Some(why) = output::stdout_failure() {
            return Err(Failure::error(why));
        }
    }
}

/// The live inventory stops when `list -w` returns, however it returns.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn tone(w: &Workspace, c: Column) -> Tone {
    match c {
        Column::State => match w.state {
            State::Running => Tone::Good,
            State::Starting | State::Suspending => Tone::Busy,
            State::Suspended => Tone::Calm,
            State::Failed | State::Error => Tone::Bad,
            State::Expired | State::Deleting => Tone::Odd,
        },
        Column::Drift => match w.drift.state {
            DriftState::Drifted => Tone::Busy,
            DriftState::NoTemplate => Tone::Bad,
            _ => Tone::Plain,
        },
        Column::Diagnosis if w.diagnosis.is_some() => Tone::Bad,
        Column::Epoch if w.epoch.epoch.is_none() => Tone::Bad,
        _ => Tone::Plain,
    }
}

/// Render workspaces in `format`.
/// Label columns after the table's own: `-L` keys and `--show-labels`.
pub struct LabelColumns<'a> {
    pub show: bool,
    pub keys: &'a [String],
}

/// The prefix that names a pod-template label in `-L`.
pub const POD_TEMPLATE_LABEL: &str = "pod-template:";

impl LabelColumns<'_> {
    /// kubectl's header for `-L KEY`: the key's last segment, upper-cased.
    fn headers(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .keys
            .iter()
            .map(|k| {
                let key = k.strip_prefix(POD_TEMPLATE_LABEL);
                let last = key.unwrap_or(k).rsplit('/').next().unwrap_or(k).to_uppercase();
                // a pod-template label says so: its last segment may be a column's own name
                if key.is_some() {
                    format!("POD-TEMPLATE:{last}")
                } else {
                    last
                }
            })
            .collect();
        if self.show {
            out.push("LABELS".into());
        }
        out
    }

    fn cells(&self, w: &Workspace) -> Vec<String> {
        let mut out: Vec<String> = self
            .keys
            .iter()
            .map(|k| match k.strip_prefix(POD_TEMPLATE_LABEL) {
                Some(key) => w.template_labels.get(key).cloned().unwrap_or_default(),
                None => w.labels.get(k).cloned().unwrap_or_default(),
            })
            .collect();
        if self.show {
            let all: Vec<String> = w.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push(if all.is_empty() { "<none>".into() } else { all.join(",") });
        }
        out
    }
}

pub fn render(
    workspaces: &[Workspace],
    format: Format,
    all_namespaces: bool,
    no_headers: bool,
    now: DateTime<Utc>,
    labels: &LabelColumns,
) -> String {
    match format {
        Format::Json => output::json_array(workspaces.iter().map(schema::workspace)),
        Format::Yaml => {
            let items: Vec<Value> = workspaces.iter().map(schema::workspace).collect();
            output::structured(&Value::Array(items), format)
        }
        Format::Name => workspaces
            .iter()
            .map(|w| format!("sandbox.agents.x-k8s.io/{}\n", w.sandbox_name))
            .collect(),
        Format::Table | Format::Wide => {
            let cols = columns(all_namespaces, format == Format::Wide);
            let label_headers = labels.headers();
            let headers: Vec<&str> = cols
                .iter()
                .map(|c| c.header())
                .chain(label_headers.iter().map(String::as_str))
                .collect();
            let rows: Vec<Vec<(String, Tone)>> = workspaces
                .iter()
                .map(|w| {
                    let mut row: Vec<(String, Tone)> = cols.iter().map(|c| (cell(w, *c, now), tone(w, *c))).collect();
                    row.extend(labels.cells(w).into_iter().map(|c| (c, Tone::Plain)));
                    row
                })
                .collect();
            output::table(&headers, &rows, no_headers, output::colour_enabled())
        }
    }
}
