//! `kubectl namzu history ID`: one timeline of a workspace — its Sandbox's, pod's, disks' and
//! claim's Events, the mode change its annotations record, pod and container transitions, and this
//! machine's audit entries for it — then where its current pod's start-up time went.

use super::exit::{self, Failure};
use super::globals::Globals;
use super::output::{self, ReportFormat};
use namzu_domain::naming::WorkspaceId;
use namzu_domain::timeline;
use namzu_engine::cluster::connect::Connection;
use namzu_engine::cluster::triage::{self, HistoryRead};
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  # what happened to a workspace, oldest first, and where its start-up time went
  kubectl namzu history alpha

  # the same as JSON (entries, startup), e.g. for jq
  kubectl namzu history alpha -o json")]
pub struct Args {
    /// The workspace id (the Sandbox is namzu-ws-<id>).
    pub id: WorkspaceId,
    /// Output format: table (the timeline), json or yaml.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: ReportFormat,
    /// The history as the flight recorder's recording could tell it at TIME (RFC 3339, or
    /// relative: -2h, -30m).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, conflicts_with = "between")]
    pub at: Option<String>,
    /// What changed between two recorded instants, in words, with who wrote each change (from
    /// the flight recorder's recording; RFC 3339, or relative: -2h).
    #[arg(long, num_args = 2, value_names = ["T1", "T2"], allow_hyphen_values = true)]
    pub between: Vec<String>,
}

/// `history ID --between T1 T2`.
fn between(globals: &Globals, args: &Args, conn: &Connection) -> Result<(), Failure> {
    let now = conn.clock.now();
    let (from, to) = (
        super::at::parse(&args.between[0], now)?,
        super::at::parse(&args.between[1], now)?,
    );
    if from > to {
        return Err(Failure::usage("--between T1 T2: T1 must not be after T2"));
    }
    let at = namzu_engine::ops::inventory::At {
        root: globals.recording_root()?,
        instant: from,
    };
    let ns = &conn.namespace;
    let explained = namzu_engine::ops::explain::explain(&at, &conn.context, ns, &args.id, to)?;
    namzu_engine::errln!("{}", output::printable(&explained.coverage));
    match args.output {
        ReportFormat::Json | ReportFormat::Yaml => {
            let value = json!({
                "workspace": args.id.as_str(),
                "namespace": ns,
                "from": namzu_domain::timefmt::js_iso(from),
                "to": namzu_domain::timefmt::js_iso(to),
                "changes": explained.changes,
            });
            namzu_engine::out!("{}", output::structured(&value, args.output.format()));
        }
        ReportFormat::Table => {
            if explained.changes.is_empty() {
                namzu_engine::errln!("No recorded change of workspace {} in that time.", args.id);
            }
            for c in &explained.changes {
                let line = format!(
                    "{}  {}  {}  (by {})",
                    namzu_domain::timefmt::js_iso(c.time),
                    c.object,
                    c.what,
                    c.who
                );
                namzu_engine::outln!("{}", output::printable(&line));
            }
        }
    }
    Ok(())
}

/// The timeline and waterfall of what was read.
pub(crate) fn structured(
    id: &WorkspaceId,
    namespace: &str,
    read: &HistoryRead,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    let inputs = read.inputs();
    json!({
        "workspace": id.as_str(),
        "namespace": namespace,
        "entries": timeline::timeline(&inputs),
        "startup": timeline::waterfall(&inputs, now),
        "warnings": read.warnings,
        "eventsNotShown": read.events_not_shown,
    })
}

pub(crate) async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    globals.one_namespace_for_names()?;
    globals.one_context("history")?;
    let conn = Connection::open(&globals.connect_options(true)).await?;
    if !args.between.is_empty() {
        return between(globals, &args, &conn);
    }
    let ns = conn.namespace.clone();
    let (source, now) = super::at::source(globals, args.at.as_deref(), conn.clock.now())?;
    let read = match &source {
        namzu_engine::ops::inventory::Source::At(at) => {
            let (read, coverage) = namzu_engine::ops::replay::history_at(at, &conn.context, &ns, &args.id)?;
            namzu_engine::errln!("{}", output::printable(&coverage));
            read
        }
        namzu_engine::ops::inventory::Source::Live => {
            triage::read_history(&conn, &ns, &args.id, &globals.audit()).await?
        }
    };
    let Some(mut read) = read else {
        return Err(Failure {
            code: exit::NOT_FOUND,
            message: format!("workspace {} not found in namespace {ns}", args.id),
        });
    };
    if !namzu_domain::naming::is_workspace(&read.sandbox) {
        return Err(Failure {
            code: exit::NOT_FOUND,
            message: exit::not_a_workspace(&args.id.sandbox_name(), &ns),
        });
    }
    // Events past the hour the cluster keeps them, from the flight recorder's recording
    if args.at.is_none()
        && let Ok(root) = globals.recording_root()
        && let Err(e) = namzu_engine::ops::replay::merge_recorded_events(&mut read, &root, &conn.context, &ns)
    {
        read.warnings
            .push(format!("the recording in {} could not be read: {e}", root.display()));
    }
    match args.output {
        ReportFormat::Json | ReportFormat::Yaml => {
            let value = structured(&args.id, &ns, &read, now);
            namzu_engine::out!("{}", output::structured(&value, args.output.format()));
        }
        ReportFormat::Table => {
            let inputs = read.inputs();
            let history = namzu_engine::present::history::History {
                entries: timeline::timeline(&inputs),
                waterfall: timeline::waterfall(&inputs, now),
                warnings: read.warnings.clone(),
                now,
            };
            // a terminal's width (the message wraps, columns go by priority); a pipe: every column
            let lines = namzu_engine::present::history::render(&history, namzu_tui::stdout_columns());
            namzu_engine::out!("{}", output::printable_lines(&(lines.join("\n") + "\n")));
        }
    }
    Ok(())
}
