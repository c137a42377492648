//! `kubectl namzu logs` over several workspaces at once, as stern and `kubectl logs -l` read
//! many pods: the ids given, or those a selection matches (`-l`, `--state`, `--diagnosis`,
//! `--problems`, …), each workspace's own pod (by identity, never a name guess), one container
//! or `--all-containers`. Every line is prefixed with where it came from (`id`, `id/container`,
//! `namespace/id` with `-A`; coloured on a terminal), and each stream follows across restarts as
//! one `logs -f` does. A workspace whose log cannot be read says why on stderr; the others go on.
//! A workspace named that has no log fails the command at its end (exit 7); one a selection
//! matched (a Suspended one under `--problems`) is only said: the selection asked for what there is.

use super::exit::{self, Failure};
use super::globals::Globals;
use super::logs::Args;
use super::output;
use namzu_domain::naming::WorkspaceId;
use namzu_domain::triage::{Purpose, command_target};
use namzu_engine::cluster::connect::Connection;
use namzu_engine::cluster::triage::{self, LogEnd, LogNote, LogSink};
use namzu_engine::ops::inventory::{self, Query};

/// One log to read: the workspace, its pod as read, the container, and the line prefix.
struct Stream {
    namespace: String,
    pod: serde_json::Value,
    container: String,
    prefix: String,
}

/// Colours a terminal gives each stream's prefix in turn (as stern does); none under NO_COLOR.
const COLOURS: [&str; 6] = ["36", "33", "32", "35", "34", "31"];

pub(crate) async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    args.check()?;
    globals.one_context("logs")?;
    if !args.ids.is_empty() && args.selecting() {
        return Err(Failure::usage(
            "give workspace ids or a selection (-l, --state, --diagnosis, --problems, …), not both",
        ));
    }
    if !args.ids.is_empty() {
        globals.one_namespace_for_names()?;
    }
    let conn = Connection::open(&globals.connect_options(true)).await?;
    let chosen = chosen(globals, &args, &conn).await?;
    if chosen.is_empty() {
        namzu_engine::errln!("no workspace matches the selection");
        return Ok(());
    }
    // each workspace is one log at least: a selection over the cap is refused before any pod is read
    if chosen.len() > args.max_log_requests {
        return Err(too_many(chosen.len(), args.max_log_requests));
    }
    let (streams, mut failed) = streams(&conn, &args, &chosen, globals.all_namespaces).await;
    if args.selecting() {
        failed = 0;
    }
    if streams.len() > args.max_log_requests {
        return Err(too_many(streams.len(), args.max_log_requests));
    }
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let colour = terminal && output::colour_enabled();
    let termination = namzu_engine::signals::Termination::listen();
    let reads = streams.into_iter().enumerate().map(|(i, s)| {
        let conn = &conn;
        let ask = args.ask(s.container);
        let prefix = if colour {
            format!("\x1b[{}m{}\x1b[0m ", COLOURS[i % COLOURS.len()], s.prefix)
        } else {
            format!("{} ", s.prefix)
        };
        let label = s.prefix;
        async move {
            let mut sink = Prefixed { prefix, terminal };
            let read = triage::read_log(conn, &s.namespace, s.pod, ask, args.timestamps, &mut sink).await;
            (label, read)
        }
    });
    let ended = tokio::select! {
        ended = futures::future::join_all(reads) => ended,
        // Ctrl-C is how a follow ends: no error
        _ = termination.received() => return Ok(()),
    };
    if let Some(why) = output::stdout_failure() {
        return Err(Failure::error(format!("cannot write the logs: {why}")));
    }
    for (label, read) in ended {
        match read {
            Ok(LogEnd::Done) => {}
            Ok(end) => {
                if let Some(m) = end.message() {
                    namzu_engine::errln!("--- {label}: {}", output::printable(&m));
                }
            }
            Err(e) => {
                failed += 1;
                namzu_engine::errln!("--- {label}: {}", output::printable(&e.to_string()));
            }
        }
    }
    match failed {
        0 => Ok(()),
        n => Err(Failure {
            code: exit::UNAVAILABLE,
            message: format!("{n} of the logs asked for could not be read (each said why above)"),
        }),
    }
}

/// More logs asked for than `--max-log-requests` allows: the one line, exit 2.
fn too_many(asked: usize, max: usize) -> Failure {
    Failure::usage(format!(
        "{asked} logs to follow, more than --max-log-requests {max}: narrow the selection, or raise it"
    ))
}

/// The workspaces to read: the ids given (in this namespace), or the selection's matches.
async fn chosen(globals: &Globals, args: &Args, conn: &Connection) -> Result<Vec<(String, WorkspaceId)>, Failure> {
    if !args.ids.is_empty() {
        let mut seen = std::collections::BTreeSet::new();
        return Ok(args
            .ids
            .iter()
            .filter(|id| seen.insert(*id))
            .map(|id| (conn.namespace.clone(), id.clone()))
            .collect());
    }
    if !args.selecting() {
        return Err(Failure::usage(
            "name the workspaces, or select them (-l, --state, --diagnosis, --problems, …)",
        ));
    }
    let now = conn.clock.now();
    let filter = args.selection.filter();
    let query = Query {
        selector: args.selection.selector.clone(),
        per_sandbox_label_key: globals.per_sandbox_label_key.clone(),
    };
    let flags = namzu_domain::drift::OverlayFlags {
        per_sandbox_label_key: globals.per_sandbox_label_key.clone(),
        ..Default::default()
    };
    let scope = globals.scope(&conn.namespace);
    let (warnings, chosen) = inventory::select(&inventory::Source::Live, conn, &scope, &query, &flags, now, &|w| {
        filter.matches(w, now)
    })
    .await?;
    for w in warnings {
        namzu_engine::errln!("warning: {}", output::printable(&w));
    }
    Ok(chosen)
}

/// Each chosen workspace's pod and containers; a workspace with none to read says why and counts.
async fn streams(
    conn: &Connection,
    args: &Args,
    chosen: &[(String, WorkspaceId)],
    all_namespaces: bool,
) -> (Vec<Stream>, usize) {
    let purpose = Purpose::Logs {
        previous: args.previous,
    };
    let (mut streams, mut failed) = (Vec::new(), 0);
    for (namespace, id) in chosen {
        let who = if all_namespaces {
            format!("{namespace}/{id}")
        } else {
            id.to_string()
        };
        let read = match triage::read_pod(conn, namespace, id).await {
            Ok(Some(read)) => read,
            Ok(None) => {
                failed += 1;
                namzu_engine::errln!("--- {who}: workspace {id} not found in namespace {namespace}");
                continue;
            }
            Err(e) => {
                failed += 1;
                namzu_engine::errln!("--- {who}: {}", output::printable(&e.to_string()));
                continue;
            }
        };
        let containers: Vec<Option<String>> = match (&args.container, args.all_containers) {
            (Some(c), _) => vec![Some(c.clone())],
            (None, true) => read
                .pod
                .as_ref()
                .map(namzu_domain::triage::container_names)
                .unwrap_or_default()
                .into_iter()
                .map(Some)
                .collect(),
            (None, false) => vec![None],
        };
        // a pod not there yet (or none of its own) has no container to list: its reason is said once
        let containers = if containers.is_empty() { vec![None] } else { containers };
        let several = containers.len() > 1;
        for asked in containers {
            match command_target(id.as_str(), &read.sandbox, read.pod.as_ref(), asked.as_deref(), purpose) {
                Ok((pod, chosen)) => streams.push(Stream {
                    namespace: namespace.clone(),
                    pod: pod.clone(),
                    prefix: if several {
                        format!("{who}/{}", chosen.container)
                    } else {
                        who.clone()
                    },
                    container: chosen.container,
                }),
                Err(u) => {
                    failed += 1;
                    namzu_engine::errln!("--- {who}: {}", output::printable(&u.message()));
                }
            }
        }
    }
    (streams, failed)
}

/// One stream's lines, each after its prefix, written whole (lines of several streams never
/// mix: each batch is one write); notes on stderr after the same prefix.
struct Prefixed {
    prefix: String,
    terminal: bool,
}

impl LogSink for Prefixed {
    fn lines(&mut self, lines: Vec<String>) -> bool {
        super::logs::write_lines(&self.prefix, lines, self.terminal)
    }

    fn note(&mut self, note: LogNote) {
        let said = super::logs::note_text(note);
        namzu_engine::errln!("--- {}{}", self.prefix, output::printable(&said));
    }
}
