//! `kubectl namzu logs ID`: the log of the workspace's own pod (by identity, never a name guess),
//! with kubectl's flags and meanings. `-f` follows across a container restart (and says so), says
//! when the stream broke, and stops — saying why — when the pod is deleted or replaced.

use super::exit::{self, Failure};
use super::globals::Globals;
use super::output;
use chrono::{DateTime, Utc};
use namzu_domain::naming::WorkspaceId;
use namzu_domain::select::parse_duration;
use namzu_domain::triage::{Purpose, Unavailable, command_target};
use namzu_engine::cluster::connect::Connection;
use namzu_engine::cluster::triage::{self, LogAsk, LogEnd, LogNote, LogSink};

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  # the workspace's log (its pod's default container)
  kubectl namzu logs alpha

  # the crashed instance before the last restart
  kubectl namzu logs alpha --previous

  # follow, with timestamps, starting from the last 20 lines
  kubectl namzu logs alpha -f --tail 20 --timestamps

  # the last hour of a sidecar
  kubectl namzu logs alpha -c sidecar --since 1h

  # every crash-looping workspace at once, each line after its workspace (as stern)
  kubectl namzu logs --diagnosis crash-loop -f

  # two workspaces, every container of each
  kubectl namzu logs alpha bravo --all-containers")]
pub struct Args {
    /// The workspace ids (each Sandbox is namzu-ws-<id>); several, or a selection instead, read
    /// every one at once, each line after its workspace.
    pub ids: Vec<WorkspaceId>,
    #[command(flatten)]
    pub selection: super::selection::SelectionArgs,
    /// Every container of each pod (its init containers too), each line after its container.
    #[arg(long)]
    pub all_containers: bool,
    /// The most logs read at once (as kubectl's --max-log-requests): a selection over it is refused.
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub max_log_requests: usize,
    /// The container (default: the pod's kubectl.kubernetes.io/default-container, else its first).
    #[arg(short = 'c', long)]
    pub container: Option<String>,
    /// The previous instance of the container (the one that terminated before the last restart).
    #[arg(short = 'p', long)]
    pub previous: bool,
    /// Stream new lines as they are written, across container restarts, until Ctrl-C.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Only lines newer than this (e.g. 30s, 5m, 1h).
    #[arg(long, value_name = "DURATION", value_parser = parse_since)]
    pub since: Option<i64>,
    /// Only lines after this RFC 3339 time.
    #[arg(long, value_name = "TIME", value_parser = parse_since_time, conflicts_with = "since")]
    pub since_time: Option<DateTime<Utc>>,
    /// The last N lines (-1: all).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "N")]
    pub tail: i64,
    /// Prefix each line with its RFC 3339 timestamp.
    #[arg(long)]
    pub timestamps: bool,
}

fn parse_since(text: &str) -> Result<i64, String> {
    let d = parse_duration(text)?;
    match d.num_seconds() {
        n if n > 0 => Ok(n),
        _ => Err(format!("invalid duration {text:?}: it must be longer than zero")),
    }
}

fn parse_since_time(text: &str) -> Result<DateTime<Utc>, String> {
    namzu_domain::timefmt::parse(text)
        .ok_or_else(|| format!("invalid time {text:?}: use RFC 3339, e.g. 2026-12-01T10:00:00Z"))
}

/// The exit code of a workspace with nothing to read or run in.
pub(crate) fn unavailable(u: &Unavailable) -> Failure {
    Failure {
        code: match u {
            Unavailable::Foreign { .. } => exit::NOT_APPLIED,
            // no workspace by that name, as every verb says it (exit 4)
            Unavailable::NotAWorkspace { .. } => exit::NOT_FOUND,
            // `-c` named no container of the pod: the flag is wrong
            Unavailable::NoSuchContainer { .. } => exit::USAGE,
            _ => exit::UNAVAILABLE,
        },
        message: output::printable(&u.message()),
    }
}

/// The workspace's own pod and the container a command acts on, or the one line why not.
pub(crate) async fn target(
    conn: &Connection,
    id: &WorkspaceId,
    asked: Option<&str>,
    purpose: Purpose,
) -> Result<(serde_json::Value, String), Failure> {
    let ns = &conn.namespace;
    let Some(read) = triage::read_pod(conn, ns, id).await? else {
        return Err(Failure {
            code: exit::NOT_FOUND,
            message: format!("workspace {id} not found in namespace {ns}"),
        });
    };
    let (pod, chosen) =
        command_target(id.as_str(), &read.sandbox, read.pod.as_ref(), asked, purpose).map_err(|u| match u {
            // said as every verb says it
            Unavailable::NotAWorkspace { .. } => Failure {
                code: exit::NOT_FOUND,
                message: exit::not_a_workspace(&id.sandbox_name(), ns),
            },
            u => unavailable(&u),
        })?;
    if let Some(all) = &chosen.defaulted_among {
        namzu_engine::errln!(
            "Defaulted container \"{}\" out of: {}",
            output::printable(&chosen.container),
            output::printable(&all.join(", "))
        );
    }
    Ok((pod.clone(), chosen.container))
}

impl Args {
    /// What the flags ask of one container's log.
    pub(crate) fn ask(&self, container: String) -> LogAsk {
        LogAsk {
            container,
            previous: self.previous,
            follow: self.follow && !self.previous,
            since_seconds: self.since,
            since_time: self.since_time,
            tail_lines: (self.tail >= 0).then_some(self.tail),
            timestamps: self.timestamps,
        }
    }

    /// The flags make sense together (`--tail` is -1 or a count).
    pub(crate) fn check(&self) -> Result<(), Failure> {
        if self.tail < -1 {
            return Err(Failure::usage(format!(
                "--tail {}: give -1 (all) or a count",
                self.tail
            )));
        }
        Ok(())
    }

    /// Several logs are asked for (ids, a selection, every container): `logs_many` reads them.
    pub(crate) fn many(&self) -> bool {
        self.ids.len() != 1 || self.selecting() || self.all_containers
    }

    /// A selection was given (`-l`, `--state`, `--diagnosis`, `--problems`, …).
    pub(crate) fn selecting(&self) -> bool {
        self.selection.selector.is_some() || self.selection.filter() != namzu_domain::select::Filter::default()
    }
}

pub(crate) async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    args.check()?;
    // one workspace's one container (`Args::many` is false): its log as it is, no prefix
    let Some(id) = args.ids.first().cloned() else {
        return Err(Failure::usage("name the workspace"));
    };
    globals.one_namespace_for_names()?;
    globals.one_context("logs")?;
    let conn = Connection::open(&globals.connect_options(true)).await?;
    let purpose = Purpose::Logs {
        previous: args.previous,
    };
    let (pod, container) = target(&conn, &id, args.container.as_deref(), purpose).await?;
    let ask = args.ask(container);
    let termination = namzu_engine::signals::Termination::listen();
    let mut sink = Stdout {
        terminal: std::io::IsTerminal::is_terminal(&std::io::stdout()),
    };
    let read = tokio::select! {
        read = triage::read_log(&conn, &conn.namespace, pod, ask, args.timestamps, &mut sink) => read?,
        // Ctrl-C is how a follow ends: no error
        _ = termination.received() => return Ok(()),
    };
    if let Some(why) = output::stdout_failure() {
        return Err(Failure::error(format!("cannot write the log: {why}")));
    }
    match read {
        LogEnd::Replaced { .. } => Err(Failure::error(read.message().unwrap_or_default())),
        other => {
            if let Some(m) = other.message() {
                namzu_engine::errln!("--- {m}");
            }
            Ok(())
        }
    }
}

/// Lines to stdout as they come; notes to stderr, marked so they are not taken for the log's.
/// On a terminal no line drives it (colour and cursor sequences out, controls and bidirectional
/// marks as �) and a line over 64 KiB is cut; into a pipe the lines go as written, as kubectl
/// logs passes them, a long one whole (in parts, so memory stays bounded).
struct Stdout {
    terminal: bool,
}

impl LogSink for Stdout {
    fn lines(&mut self, lines: Vec<String>) -> bool {
        write_lines("", lines, self.terminal)
    }

    fn whole_lines(&self) -> bool {
        !self.terminal
    }

    fn part(&mut self, text: String) -> bool {
        output::write_stdout(&text);
        !output::stdout_closed()
    }

    fn note(&mut self, note: LogNote) {
        namzu_engine::errln!("--- {}", output::printable(&note_text(note)));
    }
}

/// Lines to stdout in one write (lines of several streams never mix), each after `prefix`; on a
/// terminal made safe for it. Whether stdout still takes them.
pub(crate) fn write_lines(prefix: &str, lines: Vec<String>, terminal: bool) -> bool {
    let mut text = String::with_capacity(lines.iter().map(|l| l.len() + prefix.len() + 1).sum());
    for l in lines {
        text.push_str(prefix);
        if terminal {
            text.push_str(&namzu_engine::present::layout::terminal_safe(l));
        } else {
            text.push_str(&l);
        }
        text.push('\n');
    }
    output::write_stdout(&text);
    !output::stdout_closed()
}

/// What a follow says between the log's lines (a restart, a broken stream, a wait), once for
/// both the one log and the many.
pub(crate) fn note_text(note: LogNote) -> String {
    match note {
        LogNote::Restarted { container, restart } => {
            format!("container {container} restarted (restart {restart}): following the new instance")
        }
        LogNote::Reconnecting { why } => format!("the log stream ended ({why}): reading on"),
        LogNote::Waiting { container, state } => {
            format!("container {container} is not running ({state}): following its next start")
        }
    }
}
