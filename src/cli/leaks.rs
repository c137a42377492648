//! `kubectl namzu leaks`: what the fleet left behind (disks and policies whose Sandbox is gone,
//! Sandboxes stuck in deletion, Expired workspaces never reaped, claims no Sandbox answers, warm
//! pools not progressing), each with its size, age and next step; `--delete` deletes the disks
//! and policies through the one write path, each DELETE under uid and resourceVersion
//! preconditions, under the context's rules. Here: the flags, the table, the typed count read
//! from stdin, the result lines and the exit code; the read and the deletes are `ops::leaks`'s.

use super::exit::{self, Failure};
use super::globals::Globals;
use super::output::{self, Format, Tone};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use namzu_domain::leaks::{Leak, LeakKind};
use namzu_domain::quantities::{Unit, format_quantity, human};
use namzu_engine::ops::fleet::{Fleet, Member};
use namzu_engine::ops::leaks::{Front, LeaksError, Question, Report, Request};
use namzu_engine::present;
use serde_json::{Value, json};
use std::io::IsTerminal;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LeaksFormat {
    Table,
    Wide,
    Json,
    Yaml,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DryRun {
    /// Read and check, print each request, send nothing.
    Client,
    /// Send each DELETE with dryRun=All: the API server checks it and deletes nothing.
    Server,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: LeaksFormat,
    /// Answer from the flight recorder's recording at TIME (RFC 3339, or relative: -2h, -30m),
    /// judged at that instant; nothing is read from the cluster and nothing can be deleted.
    #[arg(long, value_name = "TIME", conflicts_with_all = ["delete", "quarantine"])]
    pub at: Option<String>,
    /// Delete the orphaned disks and policies listed (each DELETE with uid and resourceVersion
    /// preconditions); the other leaks are reported with their next step.
    #[arg(long)]
    pub delete: bool,
    /// Mark the orphaned disks and policies listed (or named) quarantined instead: two
    /// annotations, a conditional JSON Patch. A context whose rules set quarantineDays deletes
    /// only what was quarantined that long ago and untouched since.
    #[arg(long, conflicts_with = "delete")]
    pub quarantine: bool,
    /// With --delete or --quarantine: check and print each request, send nothing (=server: the
    /// API server checks).
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "client")]
    pub dry_run: Option<DryRun>,
    /// Do not ask for the typed confirmation (disks hold data: asked by default).
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// With --delete or --quarantine, also detached disks (unowned, which agent-sandbox
    /// re-adopts if their workspace is created again) once older than the context's
    /// detachedAfterDays (default 7).
    #[arg(long)]
    pub include_detached: bool,
    /// Only leaks of these kinds (orphaned-disk, detached-disk, orphaned-policy, in-use,
    /// retained-by-policy, …; comma-separated or repeated).
    #[arg(long = "kind", value_delimiter = ',', value_parser = parse_kind)]
    pub kinds: Vec<String>,
    /// Only these objects: NAME, or KIND/NAME as -o name prints it (pvc/NAME, cnp/NAME).
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
}

/// A leak kind as `-o json` names it (`orphaned-disk`, `in-use`, …); anything else is refused.
fn parse_kind(text: &str) -> Result<String, String> {
    let mut all: Vec<&str> = Vec::new();
    for k in LeakKind::ALL {
        if !all.contains(&k.as_str()) {
            all.push(k.as_str());
        }
    }
    if all.contains(&text) {
        Ok(text.to_string())
    } else {
        Err(format!("unknown leak kind {text:?}; one of: {}", all.join(", ")))
    }
}

struct Found {
    context: Option<String>,
    leak: Leak,
}

fn structured(f: &Found, now: DateTime<Utc>) -> Value {
    let l = &f.leak;
    let mut out = json!({
        "kind": l.kind.object_kind(),
        "leak": l.kind.as_str(),
        "namespace": l.namespace,
        "name": l.name,
        "uid": l.uid,
        "reason": l.reason,
        "age": l.age(now),
        "since": l.since.map(|s| s.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        "next": l.next_in(f.context.as_deref()),
        "deletable": l.deletable,
        "checks": l.checks.iter().map(|c| json!({"check": c.check, "found": c.found, "inUse": c.in_use})).collect::<Vec<_>>(),
    });
    if l.kind == LeakKind::Disk
        && let Some(o) = out.as_object_mut()
    {
        o.insert("size".into(), json!(l.size.map(|s| format_quantity(s, Unit::Bytes))));
    }
    if let (Some(c), Some(o)) = (&f.context, out.as_object_mut()) {
        o.shift_insert(0, "context".into(), json!(c));
    }
    out
}

fn table(found: &[Found], several_contexts: bool, wide: bool, now: DateTime<Utc>) -> String {
    if found.is_empty() {
        return "No leaks found.\n".into();
    }
    let mut headers = vec!["CONTEXT", "NAMESPACE", "KIND", "NAME", "LEAK", "SIZE", "AGE", "REASON"];
    if wide {
        headers.extend(["NEXT", "CHECKS"]);
    }
    let skip = usize::from(!several_contexts);
    let rows: Vec<Vec<(String, Tone)>> = found
        .iter()
        .map(|f| {
            let l = &f.leak;
            let mut row = Vec::new();
            if several_contexts {
                row.push((f.context.clone().unwrap_or_default(), Tone::Plain));
            }
            row.extend([
                (l.namespace.clone(), Tone::Plain),
                (l.kind.object_kind().to_string(), Tone::Plain),
                (l.name.clone(), Tone::Plain),
                (l.kind.as_str().to_string(), Tone::Busy),
                (l.size.map_or("-".into(), |s| human(s, Unit::Bytes)), Tone::Plain),
                (l.age(now).unwrap_or_else(|| "-".into()), Tone::Plain),
                (l.reason.clone(), Tone::Plain),
            ]);
            if wide {
                row.push((l.next_in(f.context.as_deref()), Tone::Plain));
                row.push((l.proof(), Tone::Plain));
            }
            row
        })
        .collect();
    let mut s = output::table(&headers[skip..], &rows, false, output::colour_enabled());
    let disks: i128 = found
        .iter()
        .filter(|f| matches!(f.leak.kind, LeakKind::Disk | LeakKind::DetachedDisk))
        .filter_map(|f| f.leak.size)
        .sum();
    let leaks = found.iter().filter(|f| f.leak.kind.is_leak()).count();
    let in_use = found
        .iter()
        .filter(|f| matches!(f.leak.kind, LeakKind::DiskInUse | LeakKind::PolicyInUse))
        .count();
    if disks > 0 || in_use > 0 {
        s.push_str(&format!(
            "\n{}; disks left behind hold {}{}\n",
            namzu_domain::counted(leaks, "leak"),
            human(disks, Unit::Bytes),
            if in_use > 0 {
                format!("; {in_use} in use, never deleted (-o wide shows why)")
            } else {
                String::new()
            }
        ));
    }
    s
}

pub(crate) async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    let writes = args.delete || args.quarantine;
    // a recording's past is read, never written to (clap refuses the pair too)
    if writes && args.at.is_some() {
        return Err(Failure::usage(
            "--at reads the recording: it does not go with --delete or --quarantine",
        ));
    }
    if !writes && (args.dry_run.is_some() || args.yes || args.include_detached) {
        return Err(Failure::usage(
            "--dry-run, --yes and --include-detached go with --delete or --quarantine",
        ));
    }
    let fleet = Fleet::open(crate::cli::config::fleet_request(globals, true)?).await?;
    if writes {
        namzu_engine::ops::leaks::admit(&fleet)?;
    }
    let (source, now) = super::at::source(globals, args.at.as_deref(), fleet.clock.now())?;
    let read = match &source {
        namzu_engine::ops::inventory::Source::At(at) => {
            namzu_engine::ops::leaks::read_at(&fleet, globals.all_namespaces, at).await?
        }
        namzu_engine::ops::inventory::Source::Live => {
            namzu_engine::ops::leaks::read(&fleet, globals.all_namespaces).await?
        }
    };
    if writes {
        return delete(globals, &fleet, &args, read).await;
    }
    let only = Request {
        names: args.names.clone(),
        kinds: args.kinds.clone(),
        ..Default::default()
    };
    let found: Vec<Found> = read
        .into_iter()
        .flat_map(|(member, leaks)| {
            let context = fleet.row_context(&member);
            leaks.into_iter().map(move |leak| Found {
                context: context.clone(),
                leak,
            })
        })
        .filter(|f| namzu_engine::ops::leaks::selected(&f.leak, &only))
        .collect();
    match args.output {
        LeaksFormat::Json | LeaksFormat::Yaml => {
            let format = if args.output == LeaksFormat::Json {
                Format::Json
            } else {
                Format::Yaml
            };
            let list: Vec<Value> = found.iter().map(|f| structured(f, now)).collect();
            namzu_engine::out!("{}", output::structured(&json!(list), format));
        }
        LeaksFormat::Table | LeaksFormat::Wide => namzu_engine::out!(
            "{}",
            table(&found, fleet.several_contexts, args.output == LeaksFormat::Wide, now)
        ),
    }
    fleet.finish()
}

/// A delete's error as the command's: usage errors exit 2, the rest 1, each with its one line.
impl From<LeaksError> for Failure {
    fn from(e: LeaksError) -> Self {
        match e {
            LeaksError::Fleet(e) => e.into(),
            e if e.is_usage() => Failure::usage(e.to_string()),
            e => Failure::error(e.to_string()),
        }
    }
}

/// The terminal's part in `leaks --delete`: the typed count read from stdin, the result lines as
/// they come (a table's, not `-o json|yaml`'s).
struct Terminal {
    human: bool,
}

impl Front for Terminal {
    fn ask_typed<'a>(&'a self, q: &'a Question) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move { super::input::typed_answer(&q.text(), &q.prompt(), &q.word()).await })
    }

    fn cancelled(&self, context: &str) {
        namzu_engine::errln!("{}", present::leaks::cancelled(context));
    }

    fn step(&self, report: &Report, done: usize, total: usize) {
        if self.human {
            namzu_engine::outln!("{}", output::printable(&report.line(done, total)));
        }
    }

    fn output_closed(&self) -> bool {
        output::stdout_closed()
    }

    fn interrupted_twice() {
        namzu_engine::errln!(
            "error: interrupted twice: the delete in flight was abandoned, its outcome unknown (`kubectl namzu audit` names it)"
        );
        std::process::exit(exit::ERROR);
    }
}

/// One object's result as `-o json|yaml` gives it.
fn json(r: &Report) -> Value {
    let p = &r.plan;
    let mut entry = json!({
        "kind": p.target_kind(), "namespace": p.namespace, "name": p.name,
        "result": r.result(), "detail": r.detail().filter(|d| !d.is_empty()),
        "request": r.request().map(|r| r.to_json()),
    });
    if let (Some(c), Some(o)) = (&r.context, entry.as_object_mut()) {
        o.shift_insert(0, "context".into(), json!(c));
    }
    entry
}

async fn delete(globals: &Globals, fleet: &Fleet, args: &Args, read: Vec<(Member, Vec<Leak>)>) -> Result<(), Failure> {
    let request = Request {
        dry_run: args.dry_run == Some(DryRun::Client),
        server_dry_run: args.dry_run == Some(DryRun::Server),
        yes: args.yes,
        names: args.names.clone(),
        kinds: args.kinds.clone(),
        include_detached: args.include_detached,
        detached_after_days: namzu_domain::leaks::DETACHED_AFTER_DAYS,
        quarantine: args.quarantine,
        quarantine_days: None,
    };
    // a name given that no deletable leak answers is said (and the command fails), not skipped
    let unmatched = namzu_engine::ops::leaks::unmatched(&read, &request, fleet.clock.now());
    for why in &unmatched {
        namzu_engine::errln!("{}", output::printable(why));
    }
    if !unmatched.is_empty() && unmatched.len() == request.names.len() {
        return Err(Failure {
            code: exit::NOT_APPLIED,
            message: "nothing named can be deleted: nothing sent".into(),
        });
    }
    let base = globals.write_policy(globals.overrides().read_only == Some(true));
    let human = matches!(args.output, LeaksFormat::Table | LeaksFormat::Wide);
    let checked = namzu_engine::ops::leaks::prepare(fleet, read, &request, &base, std::io::stdin().is_terminal())?;
    let skipped = checked.skipped();
    let ran = namzu_engine::ops::leaks::run(checked, &Terminal { human }).await?;
    let total = ran.total;
    if !human {
        let format = if args.output == LeaksFormat::Json {
            Format::Json
        } else {
            Format::Yaml
        };
        let reports: Vec<Value> = ran.reports.iter().map(json).collect();
        namzu_engine::out!("{}", output::structured(&json!(reports), format));
    } else if skipped > 0 {
        namzu_engine::errln!("{}", present::leaks::not_deleted(skipped));
    } else if total == 0 && fleet.failed().is_empty() {
        namzu_engine::errln!("{}", present::leaks::NOTHING_TO_DELETE);
    }
    if let Some(stop) = ran.stopped {
        namzu_engine::errln!(
            "{}",
            output::printable(&present::leaks::stopped(
                stop.reason(),
                ran.reports.len(),
                total,
                &ran.not_started
            ))
        );
        return Err(Failure::error(present::leaks::stopped_error(stop.reason())));
    }
    fleet.finish::<Failure>()?;
    let (failed, refused) = (ran.failed(), ran.refused());
    if failed > 0 {
        return Err(Failure::error(present::leaks::failed(failed, total)));
    }
    if refused > 0 {
        return Err(Failure {
            code: exit::NOT_APPLIED,
            message: present::leaks::refused(refused, total),
        });
    }
    Ok(())
}
