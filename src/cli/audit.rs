//! `kubectl namzu audit`: the writes this machine sent, from the audit log.

use super::exit::Failure;
use super::globals::Globals;
use super::output::{self, ReportFormat, Tone};
use serde_json::Value;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only the last N entries.
    #[arg(long)]
    pub tail: Option<usize>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: ReportFormat,
}

pub(crate) fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    let log = globals.audit();
    // read from the end: `--tail N` reads the newest entries only, however long the log
    let mut settled = std::collections::HashSet::new();
    let read = log
        .read_newest(args.tail.unwrap_or(usize::MAX), |e| {
            settle(e, &mut settled)
                // `--context a,b`: those contexts' writes only
                && (globals.context.is_empty()
                    || e.get("context")
                        .and_then(Value::as_str)
                        .is_some_and(|c| globals.context.iter().any(|want| want == c)))
        })
        .map_err(|e| Failure::error(format!("cannot read the audit log: {e}")))?;
    if read.skipped > 0 {
        let at = log.path.as_ref().map_or("".into(), |p| p.display().to_string());
        namzu_engine::errln!(
            "warning: {} line{} of {at} {} not an audit entry (torn, not UTF-8 or not JSON of this tool): skipped",
            read.skipped,
            if read.skipped == 1 { "" } else { "s" },
            if read.skipped == 1 { "is" } else { "are" },
        );
    }
    let entries = read.entries;
    let unknown: Vec<String> = entries
        .iter()
        .filter(|e| e.get(UNKNOWN).is_some())
        .map(|e| {
            let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("-").to_string();
            format!(
                "kubectl namzu inspect {} -n {} --context {}",
                s("workspace"),
                s("namespace"),
                s("context")
            )
        })
        .collect();
    if let Some(first) = unknown.first() {
        namzu_engine::errln!(
            "warning: {} write{} sent (or about to be) with no outcome recorded: the process ended mid-write; check what the cluster has, e.g. `{}`",
            unknown.len(),
            if unknown.len() == 1 { " was" } else { "s were" },
            output::printable(first)
        );
    }
    match args.output {
        ReportFormat::Json | ReportFormat::Yaml => {
            namzu_engine::out!("{}", output::structured(&Value::Array(entries), args.output.format()))
        }
        ReportFormat::Table => {
            if entries.is_empty() {
                let at = log.path.map_or("(no path)".into(), |p| p.display().to_string());
                namzu_engine::errln!("No writes recorded in {at}.");
                return Ok(());
            }
            let s = |e: &Value, k: &str| {
                e.get(k)
                    .map_or("-".into(), |v| v.as_str().map_or(v.to_string(), str::to_string))
            };
            // a CONTEXT column once the writes span clusters
            let contexts: std::collections::BTreeSet<String> = entries.iter().map(|e| s(e, "context")).collect();
            let several_contexts = contexts.len() > 1;
            let rows: Vec<Vec<(String, Tone)>> = entries
                .iter()
                .map(|e| {
                    let request = e.pointer("/request/method").and_then(Value::as_str).unwrap_or("-");
                    let context = several_contexts.then(|| (s(e, "context"), Tone::Plain));
                    context
                        .into_iter()
                        .chain([
                            (s(e, "time"), Tone::Plain),
                            (s(e, "verb"), Tone::Plain),
                            (s(e, "namespace"), Tone::Plain),
                            (s(e, "workspace"), Tone::Plain),
                            (format!("{}/{}", s(e, "epochCarried"), s(e, "epochStored")), Tone::Plain),
                            (request.to_string(), Tone::Plain),
                            (s(e, "status"), Tone::Plain),
                            if e.get(UNKNOWN).is_some() {
                                ("outcome unknown".into(), Tone::Busy)
                            } else {
                                (s(e, "outcome"), Tone::Plain)
                            },
                        ])
                        .collect()
                })
                .collect();
            let headers = [
                "CONTEXT",
                "TIME",
                "VERB",
                "NAMESPACE",
                "WORKSPACE",
                "EPOCH(CARRIED/STORED)",
                "REQUEST",
                "STATUS",
                "OUTCOME",
            ];
            let headers = &headers[usize::from(!several_contexts)..];
            namzu_engine::out!("{}", output::table(headers, &rows, false, output::colour_enabled()));
        }
    }
    Ok(())
}

/// The field an intent without its outcome carries (`true`) in `audit`'s output.
const UNKNOWN: &str = "outcomeUnknown";

/// Write-ahead entries, seen newest first: an intent followed (later in the log, so seen before
/// it) by an entry of the same write is settled and left out (`false`); one that is not — the
/// process ended between the intent and the outcome — stays, marked [`UNKNOWN`].
fn settle(e: &mut Value, settled: &mut std::collections::HashSet<String>) -> bool {
    let intent = e.get("outcome").and_then(Value::as_str) == Some(namzu_engine::cluster::audit::INTENT);
    let id = e.get("write").and_then(Value::as_str).map(str::to_string);
    if !intent {
        settled.extend(id);
        true
    } else if id.as_ref().is_some_and(|id| settled.contains(id)) {
        false
    } else {
        e[UNKNOWN] = Value::Bool(true);
        true
    }
}
