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
    let inv = inventory::read(&conn, &scope, &query).await?;
    for w in &inv.warnings {
        crate::errln!("{}", output::printable(w));
    }
    let now = conn.clock.now();
    let filter = args.selection.filter();
    let mut workspaces: Vec<Workspace> = inv
        .workspaces(&globals.overlay_flags(&args.overlays), now)
        .into_iter()
        .filter(|w| filter.matches(w, now))
        .collect();
    // the objects read are done with: the output is built from the workspaces alone
    drop(inv);
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
