//! `kubectl namzu leaks`: what the fleet left behind (disks and policies whose Sandbox is gone,
//! Sandboxes stuck in deletion, Expired workspaces never reaped, claims no Sandbox answers, warm
//! pools not progressing), each with its size, age and next step; `--delete` deletes the disks
//! and policies through the one write path, each DELETE under uid and resourceVersion
//! preconditions, under the context's rules.

use super::exit::{self, Failure};
use super::globals::Globals;
use super::output::{self, Format, Tone};
use crate::cluster::leaks::{self, Report};
use crate::cluster::write::{self, LeakOutcome, LeakPlan, LeakTarget};
use crate::domain::leaks::{Leak, LeakKind};
use crate::domain::resources::{Unit, format_quantity, human};
use crate::ops::fleet::{Fleet, Member};
use crate::ops::write::rules::{self, Refusal};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::io::{BufRead, IsTerminal, Write};

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
    /// Delete the orphaned disks and policies listed (each DELETE with uid and resourceVersion
    /// preconditions); the other leaks are reported with their next step.
    #[arg(long)]
    pub delete: bool,
    /// With --delete: check and print each request, send nothing (=server: the API server checks).
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "client", requires = "delete")]
    pub dry_run: Option<DryRun>,
    /// Do not ask for the typed confirmation (disks hold data: asked by default).
    #[arg(short = 'y', long, requires = "delete")]
    pub yes: bool,
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
        "next": l.next,
        "deletable": l.deletable,
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

fn table(found: &[Found], labelled: bool, wide: bool, now: DateTime<Utc>) -> String {
    if found.is_empty() {
        return "No leaks found.\n".into();
    }
    let mut headers = vec!["CONTEXT", "NAMESPACE", "KIND", "NAME", "LEAK", "SIZE", "AGE", "REASON"];
    if wide {
        headers.push("NEXT");
    }
    let skip = usize::from(!labelled);
    let rows: Vec<Vec<(String, Tone)>> = found
        .iter()
        .map(|f| {
            let l = &f.leak;
            let mut row = Vec::new();
            if labelled {
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
                row.push((l.next.clone(), Tone::Plain));
            }
            row
        })
        .collect();
    let mut s = output::table(&headers[skip..], &rows, false, output::colour_enabled());
    let disks: i128 = found.iter().filter_map(|f| f.leak.size).sum();
    if disks > 0 {
        s.push_str(&format!(
            "\n{} leaks; orphaned disks hold {}\n",
            found.len(),
            human(disks, Unit::Bytes)
        ));
    }
    s
}

pub async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    let fleet = Fleet::open(globals.fleet_request(true)?).await?;
    if args.delete
        && let Some(why) = fleet.members.iter().find_map(|m| m.rules.refusal.as_ref())
    {
        return Err(Failure::usage(format!("{why}: nothing sent")));
    }
    let all = globals.all_namespaces;
    let read = fleet
        .each::<_, Failure, _>(|member| async move {
            let now = member.conn.clock.now();
            let ns = (!all).then(|| member.conn.namespace.clone());
            Ok(leaks::read(&member.conn, ns.as_deref(), now).await?)
        })
        .await?;
    let now = fleet.clock.now();
    let mut found: Vec<Found> = Vec::new();
    let mut per_member: Vec<(Member, Vec<Leak>)> = Vec::new();
    for (member, Report { leaks, warnings }) in read {
        for w in &warnings {
            fleet.warn(&member, w);
        }
        let context = fleet.row_context(&member);
        found.extend(leaks.iter().cloned().map(|leak| Found {
            context: context.clone(),
            leak,
        }));
        per_member.push((member, leaks));
    }
    if !args.delete {
        match args.output {
            LeaksFormat::Json | LeaksFormat::Yaml => {
                let format = if args.output == LeaksFormat::Json {
                    Format::Json
                } else {
                    Format::Yaml
                };
                let list: Vec<Value> = found.iter().map(|f| structured(f, now)).collect();
                crate::out!("{}", output::structured(&json!(list), format));
            }
            LeaksFormat::Table | LeaksFormat::Wide => crate::out!(
                "{}",
                table(&found, fleet.labelled, args.output == LeaksFormat::Wide, now)
            ),
        }
        return fleet.finish();
    }
    delete(globals, &fleet, &args, per_member).await
}

fn plan(leak: &Leak, dry_run: Option<DryRun>) -> Option<LeakPlan> {
    let target = match leak.kind {
        LeakKind::Disk => LeakTarget::Disk,
        LeakKind::Policy => LeakTarget::Policy,
        _ => return None,
    };
    Some(LeakPlan {
        target,
        namespace: leak.namespace.clone(),
        name: leak.name.clone(),
        uid: leak.uid.clone()?,
        resource_version: leak.resource_version.clone()?,
        dry_run: dry_run == Some(DryRun::Client),
        server_dry_run: dry_run == Some(DryRun::Server),
    })
}

/// Ask once on the terminal for the count typed; anything else cancels.
async fn confirm(context: Option<&str>, plans: &[LeakPlan]) -> Result<bool, Failure> {
    let disks = plans.iter().filter(|p| p.target == LeakTarget::Disk).count();
    let whose = context.map_or(String::new(), |c| format!(" in context {c}"));
    crate::errln!(
        "{} objects{whose} would be deleted, {disks} of them disks (their data is lost).",
        plans.len()
    );
    let word = format!("delete {}", plans.len());
    crate::errw!("Type \"{word}\" to delete them: ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let answer = tokio::task::spawn_blocking(move || std::io::stdin().lock().read_line(&mut line).map(|_| line))
        .await
        .map_err(|e| Failure::error(e.to_string()))?
        .map_err(|e| Failure::error(format!("cannot read the confirmation: {e}")))?;
    Ok(answer.trim() == word)
}

async fn delete(
    globals: &Globals,
    fleet: &Fleet,
    args: &Args,
    per_member: Vec<(Member, Vec<Leak>)>,
) -> Result<(), Failure> {
    let base = globals.write_policy(globals.overrides().read_only == Some(true));
    let human_out = matches!(args.output, LeaksFormat::Table | LeaksFormat::Wide);
    let mut reports: Vec<Value> = Vec::new();
    let (mut failed, mut refused, mut skipped) = (0usize, 0usize, 0usize);
    let mut batches: Vec<(Member, Vec<LeakPlan>)> = Vec::new();
    for (member, leaks) in per_member {
        let plans: Vec<LeakPlan> = leaks.iter().filter_map(|l| plan(l, args.dry_run)).collect();
        skipped += leaks.len() - plans.len();
        if plans.is_empty() {
            continue;
        }
        // the same rules as every write's, checked for every context before anything is sent
        match rules::check(&member.rules, &member.conn.context, fleet.read_only_flag(), plans.len()) {
            Ok(()) => {}
            Err(Refusal::ReadOnly(why)) => {
                let why = format!("{why}: leaks --delete sends no write");
                if !fleet.labelled {
                    return Err(Failure::error(why));
                }
                fleet.fail(&member.conn.context, &why);
                continue;
            }
            Err(Refusal::Bulk(why)) => return Err(Failure::usage(why)),
        }
        batches.push((member, plans));
    }
    let sends = args.dry_run != Some(DryRun::Client);
    let asks = |m: &Member, plans: &[LeakPlan]| {
        !args.yes
            && sends
            && m.rules
                .asks_typed_when(plans.iter().any(|p| p.target == LeakTarget::Disk))
    };
    if !std::io::stdin().is_terminal() && batches.iter().any(|(m, p)| asks(m, p)) {
        return Err(Failure::usage(
            "leaks --delete deletes disks (their data is lost): pass --yes (stdin is not a terminal, so it cannot ask)",
        ));
    }
    if sends && !batches.is_empty() {
        base.audit.ready().map_err(Failure::error)?;
    }
    let total: usize = batches.iter().map(|(_, p)| p.len()).sum();
    let mut done = 0usize;
    for (member, plans) in batches {
        let context = fleet.row_context(&member);
        if asks(&member, &plans) && !confirm(context.as_deref(), &plans).await? {
            crate::errln!("Cancelled: nothing deleted in {}.", member.conn.context);
            continue;
        }
        let policy = rules::policy(&base, &member.rules);
        for p in &plans {
            let outcome = write::delete_leak(&member.conn, &policy, p).await;
            done += 1;
            let what = format!("{}/{}", p.target_kind(), p.name);
            let (result, detail, request) = match &outcome {
                LeakOutcome::Deleted { request } => ("deleted", String::new(), Some(request)),
                LeakOutcome::DryRun { request } => ("dry-run", String::new(), Some(request)),
                LeakOutcome::AlreadyGone => ("already-gone", String::new(), None),
                LeakOutcome::Refused { message } => {
                    refused += 1;
                    ("refused", message.clone(), None)
                }
                LeakOutcome::ReadOnly => {
                    refused += 1;
                    ("refused", "read-only mode: nothing sent".into(), None)
                }
                LeakOutcome::Failed(e) => {
                    failed += 1;
                    ("failed", e.to_string(), None)
                }
            };
            if human_out {
                let progress = if total > 1 {
                    format!("[{done}/{total}] ")
                } else {
                    String::new()
                };
                let suffix = if p.server_dry_run && result == "deleted" {
                    " (server dry run)"
                } else {
                    ""
                };
                let line = match (result, request) {
                    ("dry-run", Some(r)) => format!(
                        "{progress}{what} in {}: would send {} {} {}",
                        p.namespace, r.method, r.path, r.body
                    ),
                    _ if detail.is_empty() => format!("{progress}{what} in {}: {result}{suffix}", p.namespace),
                    _ => format!("{progress}{what} in {}: {result}: {detail}", p.namespace),
                };
                crate::outln!("{}", output::printable(&line));
            }
            let mut entry = json!({
                "kind": p.target_kind(), "namespace": p.namespace, "name": p.name,
                "result": result, "detail": (!detail.is_empty()).then_some(detail),
                "request": request.map(|r| r.to_json()),
            });
            if let (Some(c), Some(o)) = (&context, entry.as_object_mut()) {
                o.shift_insert(0, "context".into(), json!(c));
            }
            reports.push(entry);
        }
    }
    if !human_out {
        let format = if args.output == LeaksFormat::Json {
            Format::Json
        } else {
            Format::Yaml
        };
        crate::out!("{}", output::structured(&json!(reports), format));
    } else if skipped > 0 {
        crate::errln!(
            "{skipped} other leaks (stuck, expired, claims, pools) are not deleted by leaks --delete: see their next step in kubectl namzu leaks -o wide"
        );
    } else if total == 0 && fleet.failed().is_empty() {
        crate::errln!("No leaks to delete.");
    }
    fleet.finish::<Failure>()?;
    if failed > 0 {
        return Err(Failure::error(format!("{failed} of {total} deletes failed")));
    }
    if refused > 0 {
        return Err(Failure {
            code: exit::NOT_APPLIED,
            message: format!("{refused} of {total} deletes were refused: nothing sent for them"),
        });
    }
    Ok(())
}
