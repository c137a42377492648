//! `suspend`, `resume` and `delete`: each workspace gets its own fenced read-check-write through
//! the one write path; a summary follows when there are several.

use super::exit::{self, Failure};
use super::fleet::{Fleet, Member};
use super::globals::{Globals, scope};
use super::output::{self, ReportFormat, Tone};
use super::overlay::OverlayArgs;
use super::selection::SelectionArgs;
use crate::cluster::connect::Connection;
use crate::cluster::inventory::{self, Query};
use crate::cluster::resources::{self, SANDBOXES};
use crate::cluster::wait::{self, Waited};
use crate::cluster::write::{self, Outcome, Plan, Request, WritePolicy};
use crate::domain::epoch::parse_epoch_arg;
use crate::domain::fence::{EpochChoice, EpochUse, Verb};
use crate::domain::naming::WorkspaceId;
use crate::domain::refresh::{self, Refresh};
use crate::domain::select::parse_duration;
use crate::present::outcome as said;
use futures::StreamExt;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

fn parse_epoch(text: &str) -> Result<u64, String> {
    parse_epoch_arg(text).map_err(|e| e.to_string())
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    parse_duration(text)?
        .to_std()
        .map_err(|_| format!("invalid timeout {text:?}"))
}

#[derive(Debug, Clone, clap::Args)]
pub struct Common {
    /// Workspace ids (the Sandboxes are namzu-ws-<id>).
    pub ids: Vec<WorkspaceId>,
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// Every workspace in scope (when no ids or filters are given).
    #[arg(long)]
    pub all: bool,
    /// The holder epoch the write carries (default: the stored one, which fences nobody out).
    #[arg(long, value_parser = parse_epoch, conflicts_with = "take_over")]
    pub epoch: Option<u64>,
    /// Carry the stored epoch + 1: the current holder is fenced out.
    #[arg(long)]
    pub take_over: bool,
    /// client (the bare flag): read and check, print the exact request, send nothing. server:
    /// send it with dryRun=All, so the API server's admission and validation answer and
    /// nothing changes (recorded in the audit log as a dry run).
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_value = "none",
          default_missing_value = "client", value_name = "client|server", hide_default_value = true)]
    pub dry_run: DryRun,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: ReportFormat,
    /// Workspaces written at once (each through its own fenced read-check-write); 1 = one after
    /// the other. Results are reported in the selection's order.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub parallel: u16,
    /// Do not ask for the typed id: delete asks by default, suspend and resume in a context whose
    /// rules say `confirm: typed` (required when stdin is not a terminal).
    #[arg(short = 'y', long)]
    pub yes: bool,
}

/// kubectl's `--dry-run` (since 1.18): `none`, `client` (the bare flag) or `server`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DryRun {
    None,
    Client,
    Server,
}

impl DryRun {
    pub fn any(self) -> bool {
        self != DryRun::None
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct WaitArgs {
    /// Wait until the transition is confirmed (suspend: pod gone; resume: Ready with a new pod).
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits.
    #[arg(long, default_value = "60s", value_parser = parse_timeout)]
    pub timeout: Duration,
}

#[derive(Debug, clap::Args)]
pub struct ModeArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub wait: WaitArgs,
}

#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub wait: WaitArgs,
    /// Replace each Suspended workspace's pod template with its SandboxTemplate as it is now
    /// (plus the hosts' overlays) as it wakes: the library's refreshPodTemplate, one fenced JSON
    /// Patch. A Running workspace is refused (suspend it first).
    #[arg(long)]
    pub refresh_template: bool,
    /// The hosts' overlays for --refresh-template (and --drift); each one not given is inferred from
    /// the stored hash, and a refresh that would have to guess is refused.
    #[command(flatten)]
    pub overlays: OverlayArgs,
}

#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    #[command(flatten)]
    pub common: Common,
}

/// One workspace's result, for the line, the summary and `-o json`.
struct Report {
    /// Across contexts, the one it was written in.
    context: Option<String>,
    namespace: String,
    id: WorkspaceId,
    outcome: Outcome,
    waited: Option<Waited>,
    /// `--take-over` was asked for: finding the mode already there means it was not performed.
    take_over: bool,
}

impl Report {
    fn code(&self) -> i32 {
        use crate::cluster::verdict::Verdict;
        match Verdict::of(&self.outcome, self.waited.as_ref(), self.take_over) {
            Verdict::Applied | Verdict::Unchanged | Verdict::AlreadyGone | Verdict::DryRun => exit::OK,
            Verdict::TimedOut => exit::WAIT_TIMED_OUT,
            Verdict::Replaced => exit::REPLACED,
            Verdict::TakeOverNotPerformed | Verdict::Refused | Verdict::NotApplied | Verdict::Conflict => {
                exit::NOT_APPLIED
            }
            Verdict::NotFound => exit::NOT_FOUND,
            Verdict::WaitFailed | Verdict::ClaimOwned | Verdict::ReadOnly | Verdict::Error => exit::ERROR,
        }
    }

    /// The workspace as result lines name it: its id, after its context across several.
    fn who(&self) -> String {
        match &self.context {
            Some(c) => format!("{c}/{}", self.id),
            None => self.id.to_string(),
        }
    }

    fn result(&self) -> &'static str {
        said::result_word(&self.outcome, self.waited.as_ref(), self.take_over)
    }

    fn epoch(&self) -> Option<&EpochUse> {
        match &self.outcome {
            Outcome::Applied { epoch, .. } | Outcome::DryRun { epoch, .. } => Some(epoch),
            _ => None,
        }
    }

    fn request(&self) -> Option<&Request> {
        match &self.outcome {
            Outcome::Applied { request, .. }
            | Outcome::DryRun { request, .. }
            | Outcome::NotApplied { request, .. }
            | Outcome::Raced { request, .. } => Some(request),
            _ => None,
        }
    }

    /// The outcome's sentence, and the wait's after it.
    fn detail(&self, verb: Verb) -> String {
        let mut text = said::outcome(verb, &self.namespace, &self.outcome, self.take_over);
        if let Some(w) = &self.waited {
            text.push_str("; ");
            text.push_str(&said::waited(w));
        }
        text
    }

    /// What a refresh wrote (or would write) and from what.
    fn refresh(&self) -> Option<&Refresh> {
        match &self.outcome {
            Outcome::Applied { refresh, .. } | Outcome::DryRun { refresh, .. } => refresh.as_deref(),
            _ => None,
        }
    }

    fn json(&self, verb: Verb) -> Value {
        let mut out = json!({
            "context": self.context,
            "id": self.id.as_str(),
            "namespace": self.namespace,
            "verb": verb.as_str(),
            "result": self.result(),
            "epoch": self.epoch().map(|e| json!({"carried": (!e.unfenced).then_some(e.carried), "stored": e.stored, "raw": e.raw, "effect": e.describe()})),
            "request": self.request().map(Request::to_json),
            "message": self.detail(verb),
        });
        if self.context.is_none()
            && let Some(fields) = out.as_object_mut()
        {
            // with one context the report is as it always was
            fields.shift_remove("context");
        }
        if let Some(r) = self.refresh() {
            out["refresh"] = json!({
                "template": r.template, "storedHash": r.stored, "hash": r.hash,
                "overlays": r.overlays, "sources": r.uses,
                "changes": r.changes.iter().map(|c| json!({"path": c.path, "old": c.old, "new": c.new})).collect::<Vec<_>>(),
            });
        }
        out
    }
}

/// What selects the workspaces to act on, the same in every context.
#[derive(Clone)]
struct Selecting {
    ids: Vec<WorkspaceId>,
    selection: SelectionArgs,
    flags: crate::domain::drift::OverlayFlags,
    per_sandbox_label_key: Option<String>,
    all_namespaces: bool,
}

impl Selecting {
    fn new(globals: &Globals, common: &Common, overlays: &OverlayArgs) -> Result<Selecting, Failure> {
        let sel = &common.selection;
        let filtered = !sel.state.is_empty()
            || !sel.drift.is_empty()
            || !sel.diagnosis.is_empty()
            || sel.selector.is_some()
            || sel.suspended_for.is_some()
            || sel.running_for.is_some()
            || sel.mode_changed_before.is_some();
        if !common.ids.is_empty() && (filtered || common.all) {
            return Err(Failure::usage(
                "give workspace ids or a selection (-l, --state, --suspended-for, --all), not both",
            ));
        }
        if common.ids.is_empty() && !filtered && !common.all {
            return Err(Failure::usage(
                "name the workspaces, or select them (-l, --state, --drift, --diagnosis, --suspended-for), or pass --all",
            ));
        }
        // each workspace once, in the order given
        let mut seen = std::collections::BTreeSet::new();
        Ok(Selecting {
            ids: common.ids.iter().filter(|id| seen.insert(*id)).cloned().collect(),
            selection: sel.clone(),
            flags: globals.overlay_flags(overlays),
            per_sandbox_label_key: globals.per_sandbox_label_key.clone(),
            all_namespaces: globals.all_namespaces,
        })
    }

    /// The workspaces to act on in one context, with the read's warnings: the ids given, or the
    /// selection's matches.
    async fn targets(self, conn: Connection) -> Result<(Vec<String>, Vec<(String, WorkspaceId)>), Failure> {
        if !self.ids.is_empty() {
            return Ok((
                Vec::new(),
                self.ids.into_iter().map(|id| (conn.namespace.clone(), id)).collect(),
            ));
        }
        let inv = inventory::read(
            &conn,
            &scope(self.all_namespaces, &conn.namespace),
            &Query {
                selector: self.selection.selector.clone(),
                per_sandbox_label_key: self.per_sandbox_label_key,
            },
        )
        .await?;
        let mut warnings = inv.warnings.clone();
        let now = conn.clock.now();
        let filter = self.selection.filter();
        let targets = inv
            .workspaces(&self.flags, now)
            .into_iter()
            .filter(|w| filter.matches(w, now))
            .filter_map(|w| match WorkspaceId::parse(&w.id) {
                Ok(id) => Some((w.namespace, id)),
                // a Sandbox named namzu-ws-<not an id> is listed, never written
                Err(e) => {
                    warnings.push(format!("skipped: {e}"));
                    None
                }
            })
            .collect();
        Ok((warnings, targets))
    }
}

fn choice(common: &Common) -> EpochChoice {
    match (common.epoch, common.take_over) {
        (Some(e), _) => EpochChoice::Explicit(e),
        (None, true) => EpochChoice::TakeOver,
        (None, false) => EpochChoice::Stored,
    }
}

pub async fn suspend(globals: &Globals, args: ModeArgs) -> Result<(), Failure> {
    run(globals, Verb::Suspend, &args.common, Some(&args.wait), Extra::default()).await
}

pub async fn resume(globals: &Globals, args: ResumeArgs) -> Result<(), Failure> {
    let refresh = args.refresh_template.then(|| refresh::Ask {
        flags: globals.overlay_flags(&args.overlays),
        expected_hash: None,
    });
    run(
        globals,
        Verb::Resume,
        &args.common,
        Some(&args.wait),
        Extra {
            refresh,
            overlays: args.overlays,
        },
    )
    .await
}

pub async fn delete(globals: &Globals, args: DeleteArgs) -> Result<(), Failure> {
    run(globals, Verb::Delete, &args.common, None, Extra::default()).await
}

/// What one verb adds to the common flags.
#[derive(Debug, Default)]
struct Extra {
    /// resume --refresh-template.
    refresh: Option<refresh::Ask>,
    /// The overlays `--drift` selects with.
    overlays: OverlayArgs,
}

/// What the user confirmed: the delete is then bound to exactly that object.
enum Confirmed {
    /// The id was typed for this read of the Sandbox.
    Object(Value),
    /// Nothing there to destroy: the write path reports it.
    Gone,
    Cancelled,
}

/// Ask on the terminal for the workspace id; anything else cancels that workspace.
async fn confirm(
    conn: &Connection,
    context: Option<&str>,
    verb: Verb,
    namespace: &str,
    id: &WorkspaceId,
) -> Result<Confirmed, Failure> {
    let name = id.sandbox_name();
    let current = resources::get(conn, &SANDBOXES, namespace, &name).await?;
    let what = match &current {
        None => return Ok(Confirmed::Gone),
        Some(s) => {
            let mode = crate::domain::patch::Mode::of_sandbox(s);
            let epoch = crate::domain::epoch::Reading::of(s);
            let whose = context.map_or(String::new(), |c| format!(" (context {c})"));
            let cost = match verb {
                Verb::Delete => "Deleting it destroys its pod, its agent sessions and its disks (PVCs).",
                Verb::Suspend => "Suspending it deletes its pod and ends its agent sessions; its disks are kept.",
                Verb::Resume => "Resuming it starts a pod on its disks.",
            };
            format!(
                "{name} in {namespace}{whose} is {} (holder epoch {}). {cost}",
                mode.as_str(),
                epoch.annotation.unwrap_or_else(|| "0".into())
            )
        }
    };
    crate::errln!("{}", output::printable(&what));
    crate::errw!("Type the workspace id ({id}) to {} it: ", verb.as_str());
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let answer = tokio::task::spawn_blocking(move || std::io::stdin().lock().read_line(&mut line).map(|_| line))
        .await
        .map_err(|e| Failure::error(e.to_string()))?
        .map_err(|e| Failure::error(format!("cannot read the confirmation: {e}")))?;
    Ok(match (answer.trim() == id.as_str(), current) {
        (true, Some(object)) => Confirmed::Object(object),
        _ => Confirmed::Cancelled,
    })
}

/// Why a bulk write stopped before its last workspace.
#[derive(Debug, Clone, Copy)]
enum Stop {
    StdoutClosed,
    Interrupted,
    /// The audit log stopped taking entries: no write is sent that it cannot record.
    AuditFailed,
}

impl Stop {
    fn reason(self) -> &'static str {
        match self {
            Stop::StdoutClosed => "stdout was closed",
            Stop::Interrupted => "interrupted",
            Stop::AuditFailed => "the audit log stopped taking entries",
        }
    }
}

/// Ctrl-C (or SIGTERM) during a write: the write in flight finishes, none starts after it, and
/// a write held back by the server's 429 is not sent.
#[derive(Clone)]
struct Interrupt {
    raised: std::sync::Arc<std::sync::atomic::AtomicBool>,
    notify: std::sync::Arc<tokio::sync::Notify>,
}

impl Interrupt {
    fn install(throttles: Vec<write::Throttle>) -> Interrupt {
        let me = Interrupt {
            raised: Default::default(),
            notify: Default::default(),
        };
        let (termination, signalled) = (crate::signals::Termination::listen(), me.clone());
        tokio::spawn(async move {
            termination.received().await;
            signalled.raised.store(true, std::sync::atomic::Ordering::SeqCst);
            signalled.notify.notify_waiters();
            for t in &throttles {
                t.abandon();
            }
            // a second signal abandons the writes in flight: their intents stay in the audit log
            // without an outcome, which `audit` shows as "outcome unknown"
            crate::signals::Termination::listen().received().await;
            crate::errln!(
                "error: interrupted twice: the writes in flight were abandoned, their outcome unknown (`kubectl namzu audit` names them; `kubectl namzu inspect ID` shows what the cluster has)"
            );
            std::process::exit(exit::ERROR);
        });
        me
    }

    fn raised(&self) -> bool {
        self.raised.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Run `work` unless interrupted first (`None` then); for waits and prompts, never writes.
    async fn unless<T>(&self, work: impl std::future::Future<Output = T>) -> Option<T> {
        if self.raised() {
            return None;
        }
        tokio::select! {
            out = work => Some(out),
            _ = self.notify.notified() => None,
        }
    }
}

/// What became of one selected workspace.
enum Step {
    Done(Box<Report>),
    /// The typed id did not match: nothing sent.
    Cancelled,
    /// A stop came before this one's turn: not started (its context's index, `namespace/id`).
    NotStarted(Stop, usize, String),
}

/// One context of a bulk write: where its writes go and under which rules.
struct Target {
    member: Member,
    policy: WritePolicy,
    /// Each write asks for the typed id first.
    confirming: bool,
    /// Across contexts, the context named in reports.
    label: Option<String>,
}

/// What every workspace of one bulk write shares.
struct Batch<'a> {
    targets: &'a [Target],
    common: &'a Common,
    verb: Verb,
    wait_args: Option<&'a WaitArgs>,
    interrupt: &'a Interrupt,
    spinner: bool,
    /// resume --refresh-template.
    refresh: Option<&'a refresh::Ask>,
}

impl Batch<'_> {
    /// Why no new write may start, if one may not: checked as each workspace's turn comes, so a
    /// stop finishes the writes in flight and starts none after them.
    fn stop(&self) -> Option<Stop> {
        output::stdout_closed()
            .then_some(Stop::StdoutClosed)
            .or(self.interrupt.raised().then_some(Stop::Interrupted))
            .or(self
                .targets
                .iter()
                .find_map(|t| t.policy.audit.failure())
                .map(|_| Stop::AuditFailed))
    }

    /// One workspace: (a typed confirmation,) the write through the one write path, the wait.
    async fn one(&self, index: usize, namespace: String, id: WorkspaceId) -> Result<Step, Failure> {
        let target = &self.targets[index];
        if let Some(stop) = self.stop() {
            return Ok(Step::NotStarted(stop, index, format!("{namespace}/{id}")));
        }
        let (conn, verb) = (&target.member.conn, self.verb);
        let mut plan = Plan {
            verb,
            namespace: namespace.clone(),
            id: id.clone(),
            epoch: choice(self.common),
            dry_run: self.common.dry_run == DryRun::Client,
            server_dry_run: self.common.dry_run == DryRun::Server,
            expected_uid: None,
            refresh: self.refresh.cloned(),
        };
        // a refresh asked on a terminal shows what it writes, as its dry run does (the template,
        // the hashes, the field changes), and is then bound to that: the uid, the epoch, the hash
        let mut preview = None;
        if target.confirming && plan.refresh.is_some() {
            let shown = Plan {
                dry_run: true,
                server_dry_run: false,
                ..plan.clone()
            };
            match write::write(conn, &target.policy, &shown).await {
                Outcome::DryRun {
                    epoch, uid, refresh, ..
                } => {
                    if let Some(r) = &refresh {
                        for line in crate::present::outcome::refresh_lines(r) {
                            crate::errln!("{}", output::printable(&line));
                        }
                    }
                    crate::errln!("holder epoch: {}", epoch.describe());
                    preview = Some((epoch, uid, refresh.map(|r| r.hash)));
                }
                // refused (or gone) before anything is asked: nothing is sent, nothing to ask
                other => {
                    return Ok(Step::Done(Box::new(Report {
                        context: target.label.clone(),
                        namespace,
                        id,
                        outcome: other,
                        waited: None,
                        take_over: self.common.take_over,
                    })));
                }
            }
        }
        if target.confirming {
            let asked = confirm(conn, target.label.as_deref(), verb, &namespace, &id);
            let Some(confirmed) = self.interrupt.unless(asked).await else {
                return Ok(Step::NotStarted(Stop::Interrupted, index, format!("{namespace}/{id}")));
            };
            match confirmed? {
                Confirmed::Cancelled => {
                    crate::errln!(
                        "{}: cancelled (the id typed did not match): nothing sent",
                        key(target.label.as_deref(), &namespace, &id)
                    );
                    return Ok(Step::Cancelled);
                }
                // the write is of the object shown, at the epoch shown: one replaced or taken
                // over while the user typed is refused, not written
                Confirmed::Object(shown) => {
                    plan.expected_uid = crate::domain::object::uid(&shown).map(str::to_string);
                    if let Ok(epoch) = crate::domain::fence::resolve(&shown, plan.epoch) {
                        plan.epoch = EpochChoice::Explicit(epoch);
                    }
                }
                Confirmed::Gone => {}
            }
            if let Some((epoch, uid, hash)) = preview {
                plan.expected_uid = uid.or(plan.expected_uid);
                plan.epoch = EpochChoice::Explicit(epoch.carried);
                if let Some(ask) = plan.refresh.as_mut() {
                    ask.expected_hash = hash;
                }
            }
        }
        let pod_before = if verb == Verb::Resume {
            write::pod_uid_before(conn, &namespace, &id).await
        } else {
            None
        };
        let outcome = write::write(conn, &target.policy, &plan).await;
        let mut report = Report {
            context: target.label.clone(),
            namespace,
            id,
            outcome,
            waited: None,
            take_over: self.common.take_over,
        };
        // a landed write waits for its transition; so does one found already there, which may
        // still be on its way (Suspending: the pod not yet gone)
        let unchanged = matches!(report.outcome, Outcome::Unchanged { .. }) && !report.take_over;
        if let (true, Some(w)) = (report.outcome.landed() || unchanged, self.wait_args.filter(|w| w.wait)) {
            let before = if unchanged { None } else { pod_before.as_deref() };
            report.waited = Some(
                self.interrupt
                    .unless(wait_for(conn, &report, verb, before, w.timeout, self.spinner))
                    .await
                    .unwrap_or_else(|| Waited::Failed("interrupted before the transition was confirmed".into())),
            );
        }
        Ok(Step::Done(Box::new(report)))
    }
}

/// A bulk write's progress on a terminal's stderr: done / total, failures, rate, time left. It is
/// cleared before each result line and at the end, so only the results and the summary remain.
struct Progress {
    verb: Verb,
    total: usize,
    done: usize,
    failed: usize,
    start: std::time::Instant,
    shown: bool,
}

impl Progress {
    fn new(verb: Verb, total: usize, shown: bool) -> Progress {
        Progress {
            verb,
            total,
            done: 0,
            failed: 0,
            start: std::time::Instant::now(),
            shown,
        }
    }

    fn done(&mut self, failed: bool) {
        self.done += 1;
        self.failed += usize::from(failed);
        if self.shown && self.done < self.total {
            let line =
                crate::present::outcome::progress(self.verb, self.done, self.total, self.failed, self.start.elapsed());
            crate::errw!("\r\x1b[2K{line}");
        }
    }

    fn clear(&mut self) {
        if self.shown {
            crate::errw!("\r\x1b[2K");
        }
    }
}

/// A workspace as the stop line names it: `namespace/id`, after its context across several.
fn key(context: Option<&str>, namespace: &str, id: &WorkspaceId) -> String {
    in_context(context, format!("{namespace}/{id}"))
}

/// `what`, after its context across several (`prod:agents/alpha`).
fn in_context(context: Option<&str>, what: String) -> String {
    match context {
        Some(c) => format!("{c}:{what}"),
        None => what,
    }
}

/// Why a context refuses every write: its read-only rule, from the flag or the config file.
fn read_only_reason(globals: &Globals, member: &Member) -> String {
    let flag = globals.overrides().read_only == Some(true);
    member.rules.why_read_only(&member.conn.context, flag)
}

async fn run(
    globals: &Globals,
    verb: Verb,
    common: &Common,
    wait_args: Option<&WaitArgs>,
    extra: Extra,
) -> Result<(), Failure> {
    if !common.ids.is_empty() {
        globals.one_namespace_for_names()?;
    }
    let selecting = Selecting::new(globals, common, &extra.overlays)?;
    let fleet = Fleet::open(globals, true).await?;
    // the rules each connection is written under were decided as it opened, for every front-end
    // (and the write path refuses on its own): a refusal no flag lifts is said before any read
    if let Some(why) = fleet.members.iter().find_map(|m| m.rules.refusal.as_ref()) {
        return Err(Failure::usage(format!("{why}: nothing sent")));
    }
    if fleet.labelled && !common.ids.is_empty() {
        return Err(Failure::usage(
            "workspace ids name workspaces in one context: pass one --context, or select them across contexts (-l, --state, …, --all)",
        ));
    }
    let interactive = std::io::stdin().is_terminal();
    // a typed confirmation where the verb or the context's rules ask for one
    let asks = |m: &Member| !common.yes && !common.dry_run.any() && !m.rules.read_only && m.rules.asks_typed(verb);
    if !interactive && let Some(m) = fleet.members.iter().find(|m| asks(m)) {
        return Err(Failure::usage(if verb == Verb::Delete {
            "delete destroys the workspace's disks: pass --yes (stdin is not a terminal, so it cannot ask)".to_string()
        } else {
            format!(
                "context \"{}\" asks for typed ids (confirm: typed): pass --yes (stdin is not a terminal, so it cannot ask)",
                m.conn.context
            )
        }));
    }
    let base = globals.write_policy(false);
    let sends = fleet.members.iter().any(|m| !m.rules.read_only);
    // a server dry run sends (with dryRun=All) and is recorded
    if common.dry_run != DryRun::Client && sends {
        base.audit.ready().map_err(Failure::error)?;
    }
    let selected = fleet.each(|member| selecting.clone().targets(member.conn)).await?;
    // every context's selection is checked before anything is sent: a refusal sends nothing
    let mut refusals = Vec::new();
    let mut contexts: Vec<Target> = Vec::new();
    let mut targets: Vec<(usize, String, WorkspaceId)> = Vec::new();
    for (member, (warnings, chosen)) in selected {
        for w in &warnings {
            fleet.warn(&member, w);
        }
        if chosen.is_empty() {
            continue;
        }
        // read-only refuses dry runs too, as it always has: one line, nothing read further
        if member.rules.read_only {
            let why = format!(
                "{}: {} sends no write",
                read_only_reason(globals, &member),
                verb.as_str()
            );
            if !fleet.labelled {
                return Err(Failure::error(why));
            }
            fleet.fail(&member.conn.context, &why);
            continue;
        }
        // named ids count as a bulk write too: `list -o name | xargs suspend` meets the limit
        if let Some(why) = member.rules.refuse_bulk(&member.conn.context, chosen.len()) {
            refusals.push(why);
            continue;
        }
        let index = contexts.len();
        targets.extend(chosen.into_iter().map(|(ns, id)| (index, ns, id)));
        contexts.push(Target {
            confirming: asks(&member),
            label: fleet.row_context(&member),
            policy: WritePolicy {
                read_only: member.rules.read_only,
                throttle: Default::default(),
                ..base.clone()
            },
            member,
        });
    }
    if let Some(first) = refusals.first() {
        for why in &refusals[1..] {
            crate::errln!("{}", output::printable(why));
        }
        return Err(Failure::usage(first.clone()));
    }
    if targets.is_empty() {
        // (a context left out has said why already: its workspaces were not looked at)
        if fleet.failed().is_empty() {
            crate::errln!("No workspaces matched.");
        }
        return fleet.finish();
    }
    let human = common.output == ReportFormat::Table;
    // what the write costs, said once before a bulk write (a single one says it on success)
    let note = match verb {
        Verb::Suspend => {
            Some("note: a suspend ends the agent sessions, terminals and detached commands inside the workspace")
        }
        Verb::Delete if common.yes => Some("note: delete destroys each workspace's pod, agent sessions and disks"),
        _ => None,
    }
    .filter(|_| human && !common.dry_run.any());
    if let Some(note) = note.filter(|_| targets.len() > 1) {
        crate::errln!("{note}");
    }
    let interrupt = Interrupt::install(contexts.iter().map(|t| t.policy.throttle.clone()).collect());
    // a typed confirmation is asked one workspace at a time
    let confirming = contexts.iter().any(|t| t.confirming);
    let parallel = if confirming { 1 } else { usize::from(common.parallel) };
    let batch = Batch {
        targets: &contexts,
        common,
        verb,
        wait_args,
        interrupt: &interrupt,
        // one workspace's wait may spin on a terminal; a batch shows its progress line instead
        spinner: human && targets.len() == 1,
        refresh: extra.refresh.as_ref(),
    };
    // (a typed confirmation's prompt and a progress line would share one terminal line)
    let mut progress = Progress::new(
        verb,
        targets.len(),
        human && targets.len() > 1 && !confirming && std::io::stderr().is_terminal(),
    );
    let mut steps = futures::stream::iter(targets.iter().cloned())
        .map(|(target, namespace, id)| batch.one(target, namespace, id))
        .buffered(parallel);
    let mut reports = Vec::new();
    let mut stopped: Option<Stop> = None;
    let mut not_started: Vec<(usize, String)> = Vec::new();
    let mut cancelled = 0;
    // results in the selection's order, whatever order the writes finish in
    while let Some(step) = steps.next().await {
        match step? {
            Step::Done(report) => {
                progress.clear();
                if human {
                    // results on stdout, failures on stderr (as kubectl splits them); a single
                    // workspace's failure is the command's one error line, below
                    let who = report.who();
                    if report.code() == exit::OK {
                        crate::outln!("{who}: {}", report.detail(verb));
                    } else if targets.len() > 1 {
                        crate::errln!("{who}: {}", output::printable_lines(&report.detail(verb)));
                    }
                }
                progress.done(report.code() != exit::OK);
                reports.push(*report);
            }
            Step::Cancelled => {
                cancelled += 1;
                progress.done(false);
            }
            Step::NotStarted(stop, index, key) => {
                stopped = stopped.or(Some(stop));
                not_started.push((index, key));
            }
        }
    }
    progress.clear();
    if let Some(note) = note.filter(|_| targets.len() == 1 && reports.iter().any(|r| r.outcome.landed())) {
        crate::errln!("{note}");
    }
    // a resume into per-sandbox egress: what this tool could not check is said, every time
    let per_sandbox = reports.iter().any(|r| {
        matches!(
            r.outcome,
            Outcome::Applied {
                per_sandbox_egress: true,
                ..
            } | Outcome::DryRun {
                per_sandbox_egress: true,
                ..
            }
        )
    });
    if verb == Verb::Resume && per_sandbox {
        crate::errln!("{}", said::ADMISSION_FENCE_NOTE);
    }
    if let Some(stop) = stopped {
        // each context's audit log entry names what was done and not started there
        for (index, t) in contexts.iter().enumerate() {
            let done: Vec<String> = reports
                .iter()
                .filter(|r| r.context == t.label)
                .map(|r| format!("{}/{}", r.namespace, r.id))
                .collect();
            let pending: Vec<String> = not_started
                .iter()
                .filter(|(i, _)| *i == index)
                .map(|(_, k)| k.clone())
                .collect();
            write::record_stop(&t.member.conn, &t.policy, verb, stop.reason(), &done, &pending);
        }
        let named: Vec<String> = not_started
            .iter()
            .map(|(i, k)| in_context(contexts[*i].label.as_deref(), k.clone()))
            .collect();
        crate::errln!(
            "stopped ({}) after {} of {} workspaces; not started: {}",
            stop.reason(),
            reports.len(),
            targets.len(),
            named.join(", ")
        );
    }
    if human && reports.len() > 1 {
        crate::outln!();
        crate::out!("{}", summary(&reports, fleet.labelled));
    }
    // a dry run says what it would do, never what it did not
    let would = reports
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::DryRun { .. }))
        .count();
    if human && common.dry_run.any() && reports.len() > 1 {
        crate::outln!(
            "dry run ({}): would {} {would} of {}",
            if common.dry_run == DryRun::Server {
                "server"
            } else {
                "client"
            },
            verb.as_str(),
            reports.len()
        );
        // and what the writes would free or start holding
        crate::outln!("{}", what_if(&contexts, &reports, verb).await);
    }
    // a refresh that lost to another resume left a workspace running what it ran before
    let off_template: Vec<String> = reports
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Raced { .. }))
        .map(|r| key(r.context.as_deref(), &r.namespace, &r.id))
        .collect();
    if human && reports.len() > 1 && !off_template.is_empty() {
        crate::errln!("{}", said::off_template(&off_template));
    }
    if !human {
        let items: Vec<Value> = reports.iter().map(|r| r.json(verb)).collect();
        crate::out!("{}", output::structured(&Value::Array(items), common.output.format()));
    }
    if let Some(why) = base.audit.lost() {
        return Err(Failure::error(format!(
            "{why}: the write above was sent but its outcome is not in the audit log"
        )));
    }
    if let Some(stop) = stopped {
        return Err(Failure::error(format!(
            "{} stopped before every selected workspace was done ({})",
            verb.as_str(),
            stop.reason()
        )));
    }
    let failed: Vec<&Report> = reports.iter().filter(|r| r.code() != exit::OK).collect();
    // a typed id that did not match: that workspace was not done as asked
    if failed.is_empty() && cancelled > 0 {
        return Err(Failure::error(format!(
            "{cancelled} of {} workspaces were not {}: cancelled at the confirmation",
            targets.len(),
            verb.past()
        )));
    }
    let Some(first) = failed.first() else {
        return fleet.finish();
    };
    // a context left out (its warning said why) is a failure of its own: 1, never masked
    let left_out = fleet.failed().len();
    let code = if left_out == 0 && failed.iter().all(|r| r.code() == first.code()) {
        first.code()
    } else {
        exit::ERROR
    };
    if let [only] = reports.as_slice()
        && left_out == 0
    {
        return Err(Failure {
            code,
            message: format!("{}: {}", only.who(), only.detail(verb)),
        });
    }
    // a write that landed but was not confirmed is not a write that failed: say which is which
    let unconfirmed = failed.iter().filter(|r| r.waited.is_some()).count();
    let not_done = failed.len() - unconfirmed;
    let total = reports.len();
    let mut parts = Vec::new();
    if common.dry_run.any() && not_done > 0 {
        parts.push(format!(
            "dry run: {not_done} of {total} workspaces would not be {}",
            verb.past()
        ));
    } else if not_done > 0 {
        parts.push(format!("{not_done} of {total} workspaces were not {}", verb.past()));
    }
    if unconfirmed > 0 {
        parts.push(format!(
            "{unconfirmed} of {total} workspaces were {} but the transition was not confirmed",
            verb.past()
        ));
    }
    if left_out > 0 {
        parts.push(format!(
            "{left_out} context{} left out",
            if left_out == 1 { " was" } else { "s were" }
        ));
    }
    Err(Failure {
        code,
        message: parts.join("; "),
    })
}

async fn wait_for(
    conn: &Connection,
    r: &Report,
    verb: Verb,
    pod_before: Option<&str>,
    timeout: Duration,
    human: bool,
) -> Waited {
    let spinner = human && std::io::stderr().is_terminal();
    let start = std::time::Instant::now();
    let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    let mut n = 0usize;
    let pinned = r.outcome.pinned();
    let waited = wait::wait(
        conn,
        &r.namespace,
        &r.id,
        verb,
        pod_before,
        pinned,
        timeout,
        |what, state| {
            if spinner {
                n += 1;
                crate::errw!(
                    "\r\x1b[2K{} {}: {}s, waiting for {what} ({})",
                    frames[n % frames.len()],
                    r.id,
                    start.elapsed().as_secs(),
                    state.map_or("?", |s| s.as_str())
                );
            }
        },
    )
    .await;
    if spinner {
        crate::errw!("\r\x1b[2K");
    }
    waited
}

/// The results as a table, CONTEXT first across contexts, then one tally line per context.
/// What a bulk dry run's writes would free or start holding (`domain::resources::what_if`): the
/// requests of the pods a suspend or delete stops, or a resume starts, and the disks (which stay,
/// or go with a delete). Each Sandbox is read once more for its pod template (dry runs only).
async fn what_if(contexts: &[Target], reports: &[Report], verb: Verb) -> String {
    use crate::domain::resources;
    let reads = reports.iter().filter_map(|r| {
        let Outcome::DryRun { mode, .. } = &r.outcome else {
            return None;
        };
        let target = contexts.iter().find(|t| t.label == r.context)?;
        let name = r.id.sandbox_name();
        Some(async move {
            let read = resources::of_sandbox(
                &crate::cluster::resources::get(&target.member.conn, &SANDBOXES, &r.namespace, &name)
                    .await
                    .ok()
                    .flatten()?,
                |_| None,
            );
            Some((*mode, read))
        })
    });
    let read: Vec<_> = futures::future::join_all(reads).await.into_iter().flatten().collect();
    resources::what_if_of(verb, read.iter().map(|(mode, r)| (*mode, r)))
}

fn summary(reports: &[Report], labelled: bool) -> String {
    let rows: Vec<Vec<(String, Tone)>> = reports
        .iter()
        .map(|r| {
            let tone = match r.code() {
                exit::OK => Tone::Good,
                exit::WAIT_TIMED_OUT => Tone::Busy,
                _ => Tone::Bad,
            };
            let context = labelled.then(|| (r.context.clone().unwrap_or_default(), Tone::Plain));
            context
                .into_iter()
                .chain([
                    (r.id.to_string(), Tone::Plain),
                    (r.namespace.clone(), Tone::Plain),
                    (r.result().to_string(), tone),
                    (r.epoch().map_or("-".into(), |e| e.describe()), Tone::Plain),
                ])
                .collect()
        })
        .collect();
    let headers = ["CONTEXT", "WORKSPACE", "NAMESPACE", "RESULT", "EPOCH"];
    let mut text = output::table(
        &headers[usize::from(!labelled)..],
        &rows,
        false,
        output::colour_enabled(),
    );
    if labelled {
        let mut tally: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
        for r in reports {
            *tally
                .entry(r.context.as_deref().unwrap_or_default())
                .or_default()
                .entry(r.result())
                .or_default() += 1;
        }
        text.push('\n');
        for (context, results) in tally {
            let counts: Vec<String> = results.iter().map(|(result, n)| format!("{n} {result}")).collect();
            text.push_str(&format!("{context}: {}\n", counts.join(", ")));
        }
    }
    text
}
