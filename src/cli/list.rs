//! `kubectl namzu list`: the inventory as a table, JSON, YAML or names.

use super::exit::Failure;
use super::globals::Globals;
use super::output::{self, Format, Tone};
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
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: Format,
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
    };
    let inv = inventory::read(&conn, &scope, &query).await?;
    for w in &inv.warnings {
        crate::errln!("{}", output::printable(w));
    }
    let now = conn.clock.now();
    let filter = args.selection.filter();
    let mut workspaces: Vec<Workspace> = inv
        .workspaces(&args.overlays.flags(), now)
        .into_iter()
        .filter(|w| filter.matches(w, now))
        .collect();
    // the objects read are done with: the output is built from the workspaces alone
    drop(inv);
    sort(&mut workspaces, args.sort_by, false);
    crate::out!(
        "{}",
        render(&workspaces, args.output, globals.all_namespaces, args.no_headers, now)
    );
    if workspaces.is_empty() && matches!(args.output, Format::Table | Format::Wide) {
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
pub fn render(
    workspaces: &[Workspace],
    format: Format,
    all_namespaces: bool,
    no_headers: bool,
    now: DateTime<Utc>,
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
            let headers: Vec<&str> = cols.iter().map(|c| c.header()).collect();
            let rows: Vec<Vec<(String, Tone)>> = workspaces
                .iter()
                .map(|w| cols.iter().map(|c| (cell(w, *c, now), tone(w, *c))).collect())
                .collect();
            output::table(&headers, &rows, no_headers, output::colour_enabled())
        }
    }
}
