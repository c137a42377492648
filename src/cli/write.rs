//! `suspend`, `resume` and `delete` on the command line: the flags, the terminal's part in the
//! write (the typed id, the result lines, the progress line and the spinner), the summary and the
//! exit code. The write itself — the selection, every context's rules, the binding to what was
//! confirmed, the batch — is `ops::write`'s.

use super::exit::{self, Failure};
use super::globals::Globals;
use super::output::{self, ReportFormat, Tone};
use super::overlay::OverlayArgs;
use super::selection::SelectionArgs;
use futures::future::BoxFuture;
use namzu_domain::epoch::parse_epoch_arg;
use namzu_domain::fence::{EpochChoice, Verb};
use namzu_domain::naming::{WorkspaceId, WorkspaceKey};
use namzu_domain::refresh;
use namzu_domain::select::parse_duration;
use namzu_domain::state::State;
use namzu_engine::cluster::verdict::Verdict;
use namzu_engine::cluster::write::Outcome;
use namzu_engine::ops;
use namzu_engine::ops::fleet::Fleet;
use namzu_engine::ops::write::{Front, Question, Report, Request, Selecting, Step, WriteError};
use namzu_engine::present;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Mutex;
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
    pub(crate) fn any(self) -> bool {
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

/// A write's exit code: 0 when it succeeded ([`Verdict::succeeded`]), else the verdict's number.
fn code(verdict: Verdict) -> i32 {
    if verdict.succeeded() {
        return exit::OK;
    }
    match verdict {
        Verdict::TimedOut => exit::WAIT_TIMED_OUT,
        Verdict::Replaced => exit::REPLACED,
        Verdict::TakeOverNotPerformed | Verdict::Refused | Verdict::NotApplied | Verdict::Conflict => exit::NOT_APPLIED,
        Verdict::NotFound => exit::NOT_FOUND,
        _ => exit::ERROR,
    }
}

/// A workspace's report for `-o json`.
fn json(r: &Report, verb: Verb) -> Value {
    let mut out = json!({
        "context": r.key.context,
        "id": r.key.id.as_str(),
        "namespace": r.key.namespace,
        "verb": verb.as_str(),
        "result": r.result(),
        "epoch": r.epoch().map(|e| json!({"carried": (!e.unfenced).then_some(e.carried), "stored": e.stored, "raw": e.raw, "effect": e.describe()})),
        "request": r.request().map(namzu_engine::cluster::write::Request::to_json),
        "message": r.detail(verb),
    });
    if r.key.context.is_none()
        && let Some(fields) = out.as_object_mut()
    {
        // with one context the report is as it always was
        fields.shift_remove("context");
    }
    if let Some(x) = r.refresh() {
        out["refresh"] = json!({
            "template": x.template, "storedHash": x.stored, "hash": x.hash,
            "overlays": x.overlays, "sources": x.uses,
            "changes": x.changes.iter().map(|c| json!({"path": c.path, "old": c.old, "new": c.new})).collect::<Vec<_>>(),
        });
    }
    out
}

pub(crate) async fn suspend(globals: &Globals, args: ModeArgs) -> Result<(), Failure> {
    run(globals, Verb::Suspend, &args.common, Some(&args.wait), Extra::default()).await
}

pub(crate) async fn resume(globals: &Globals, args: ResumeArgs) -> Result<(), Failure> {
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

pub(crate) async fn delete(globals: &Globals, args: DeleteArgs) -> Result<(), Failure> {
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

/// A write's error as the command's: usage errors exit 2, the rest 1, each with its one line
/// (several maxBulk refusals: all but the first said here, the first is the command's).
impl From<WriteError> for Failure {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Fleet(e) => e.into(),
            WriteError::Bulk(whys) => {
                for why in whys.iter().skip(1) {
                    namzu_engine::errln!("{}", output::printable(why));
                }
                Failure::usage(whys.into_iter().next().unwrap_or_default())
            }
            e if e.is_usage() => Failure::usage(e.to_string()),
            e => Failure::error(e.to_string()),
        }
    }
}

/// The terminal's part in a bulk write: the typed id read from stdin, the result lines as they
/// come, a progress line (or one wait's spinner) on stderr.
struct Terminal {
    verb: Verb,
    /// A table, not `-o json|yaml`.
    human: bool,
    /// More than one workspace: failures get their own lines (one is the command's error).
    several: bool,
    progress: Mutex<Progress>,
    /// One wait's spinner on a terminal: its start and frame.
    spinner: Option<Mutex<Option<(std::time::Instant, usize)>>>,
}

impl Front for Terminal {
    fn can_ask(&self) -> bool {
        std::io::stdin().is_terminal()
    }

    fn ask_typed<'a>(&'a self, q: &'a Question) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let prompt = present::report::prompt(q.key.id.as_str(), q.verb);
            super::input::typed_answer(&output::printable(&q.text()), &prompt, q.key.id.as_str()).await
        })
    }

    fn previewed(&self, shown: &Outcome) {
        if let Outcome::DryRun { epoch, refresh, .. } = shown {
            if let Some(r) = refresh {
                for line in present::outcome::refresh_lines(r) {
                    namzu_engine::errln!("{}", output::printable(&line));
                }
            }
            namzu_engine::errln!("holder epoch: {}", epoch.describe());
        }
    }

    fn waiting(&self, key: &WorkspaceKey<WorkspaceId>, what: &str, state: Option<State>) {
        let id = &key.id;
        const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
        let Some(spinner) = &self.spinner else {
            return;
        };
        let mut at = spinner.lock().unwrap_or_else(|p| p.into_inner());
        let (start, n) = at.get_or_insert_with(|| (std::time::Instant::now(), 0));
        *n += 1;
        namzu_engine::errw!(
            "\r\x1b[2K{} {id}: {}s, waiting for {what} ({})",
            FRAMES[*n % FRAMES.len()],
            start.elapsed().as_secs(),
            state.map_or("?", |s| s.as_str())
        );
    }

    fn waited(&self) {
        if let Some(spinner) = &self.spinner {
            *spinner.lock().unwrap_or_else(|p| p.into_inner()) = None;
            namzu_engine::errw!("\r\x1b[2K");
        }
    }

    fn step(&self, step: &Step) {
        let mut progress = self.progress.lock().unwrap_or_else(|p| p.into_inner());
        match step {
            Step::Done(report) => {
                progress.clear();
                if self.human {
                    // results on stdout, failures on stderr (as kubectl splits them); a single
                    // workspace's failure is the command's one error line, below
                    let who = report.who();
                    if report.succeeded() {
                        namzu_engine::outln!("{who}: {}", report.detail(self.verb));
                    } else if self.several {
                        namzu_engine::errln!("{who}: {}", output::printable_lines(&report.detail(self.verb)));
                    }
                }
                progress.done(!report.succeeded());
            }
            Step::Cancelled(key) => {
                namzu_engine::errln!("{}", present::report::cancelled(key));
                progress.done(false);
            }
            Step::NotStarted(..) => {}
        }
    }

    fn output_closed(&self) -> bool {
        output::stdout_closed()
    }

    fn interrupted_twice() {
        namzu_engine::errln!(
            "error: interrupted twice: the writes in flight were abandoned, their outcome unknown (`kubectl namzu audit` names them; `kubectl namzu inspect ID` shows what the cluster has)"
        );
        std::process::exit(exit::ERROR);
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
            let line = present::outcome::progress(self.verb, self.done, self.total, self.failed, self.start.elapsed());
            namzu_engine::errw!("\r\x1b[2K{line}");
        }
    }

    fn clear(&mut self) {
        if self.shown {
            namzu_engine::errw!("\r\x1b[2K");
        }
    }
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
    let selecting = Selecting::new(
        &common.ids,
        common.selection.selector.clone(),
        common.selection.filter(),
        common.all,
        globals.overlay_flags(&extra.overlays),
        globals.all_namespaces,
    )?;
    let fleet = Fleet::open(crate::cli::config::fleet_request(globals, true)?).await?;
    let request = request_of(verb, common, wait_args, extra.refresh);
    let human = common.output == ReportFormat::Table;
    let mut front = Terminal {
        verb,
        human,
        several: false,
        progress: Mutex::new(Progress::new(verb, 0, false)),
        spinner: None,
    };
    let base = globals.write_policy(false);
    let checked = ops::write::prepare(&fleet, &selecting, &request, &base, front.can_ask()).await?;
    let total = checked.targets.len();
    if total == 0 {
        // (a context left out has said why already: its workspaces were not looked at)
        if fleet.failed().is_empty() {
            namzu_engine::errln!("No workspaces matched.");
        }
        return fleet.finish();
    }
    // what the write costs, said once before a bulk write (a single one says it on success)
    let note = present::report::cost_note(verb, common.yes).filter(|_| human && !common.dry_run.any());
    if let Some(note) = note.as_ref().filter(|_| total > 1) {
        namzu_engine::errln!("{note}");
    }
    let confirming = checked.confirming();
    front.several = total > 1;
    // (a typed confirmation's prompt and a progress line would share one terminal line)
    front.progress = Mutex::new(Progress::new(
        verb,
        total,
        human && total > 1 && !confirming && std::io::stderr().is_terminal(),
    ));
    // one workspace's wait may spin on a terminal; a batch shows its progress line instead
    front.spinner = (human && total == 1 && std::io::stderr().is_terminal()).then(Default::default);
    let ran = ops::write::run(&checked, &request, &front).await?;
    front.progress.lock().unwrap_or_else(|p| p.into_inner()).clear();
    let reports = &ran.reports;
    if let Some(note) = note.filter(|_| total == 1 && reports.iter().any(|r| r.outcome.landed())) {
        namzu_engine::errln!("{note}");
    }
    // a resume into per-sandbox egress: what this tool could not check is said, every time
    if verb == Verb::Resume && reports.iter().any(Report::per_sandbox_egress) {
        namzu_engine::errln!("{}", present::outcome::ADMISSION_FENCE_NOTE);
    }
    if let Some(stop) = ran.stopped {
        ran.record_stop(&checked, verb);
        namzu_engine::errln!(
            "{}",
            present::report::stopped(stop.reason(), reports.len(), total, &ran.not_started_named())
        );
    }
    if human && reports.len() > 1 {
        namzu_engine::outln!();
        namzu_engine::out!("{}", summary(reports, fleet.several_contexts));
    }
    // a dry run says what it would do, never what it did not
    let would = reports
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::DryRun { .. }))
        .count();
    if human && common.dry_run.any() && reports.len() > 1 {
        namzu_engine::outln!(
            "{}",
            present::report::would(common.dry_run == DryRun::Server, verb, would, reports.len())
        );
        // and what the writes would free or start holding
        namzu_engine::outln!("{}", ops::write::what_if(&checked, reports, verb).await);
    }
    let off_template = ran.off_template();
    if human && reports.len() > 1 && !off_template.is_empty() {
        namzu_engine::errln!("{}", present::outcome::off_template(&off_template));
    }
    if !human {
        let items: Vec<Value> = reports.iter().map(|r| json(r, verb)).collect();
        namzu_engine::out!("{}", output::structured(&Value::Array(items), common.output.format()));
    }
    if let Some(why) = base.audit.lost() {
        return Err(Failure::error(present::report::audit_lost(&why)));
    }
    if let Some(stop) = ran.stopped {
        return Err(Failure::error(present::report::stopped_before_done(
            verb,
            stop.reason(),
        )));
    }
    verdict_of(&fleet, &ran, verb, total, common.dry_run.any())
}

/// The write the flags ask for.
fn request_of(verb: Verb, common: &Common, wait_args: Option<&WaitArgs>, refresh: Option<refresh::Ask>) -> Request {
    Request {
        verb,
        epoch: match (common.epoch, common.take_over) {
            (Some(e), _) => EpochChoice::Explicit(e),
            (None, true) => EpochChoice::TakeOver,
            (None, false) => EpochChoice::Stored,
        },
        take_over: common.take_over,
        dry_run: common.dry_run == DryRun::Client,
        server_dry_run: common.dry_run == DryRun::Server,
        yes: common.yes,
        parallel: usize::from(common.parallel),
        wait: wait_args.filter(|w| w.wait).map(|w| w.timeout),
        refresh,
    }
}

/// How the command ends after its writes: 0, or the failures' own code when they share one
/// (1 otherwise), with one line saying what was not done.
fn verdict_of(fleet: &Fleet, ran: &ops::write::Ran, verb: Verb, total: usize, dry_run: bool) -> Result<(), Failure> {
    let reports = &ran.reports;
    let failed = ran.failed();
    // a typed id that did not match: that workspace was not done as asked
    if failed.is_empty() && ran.cancelled > 0 {
        return Err(Failure::error(present::report::cancelled_at_confirmation(
            ran.cancelled,
            total,
            verb,
        )));
    }
    let Some(first) = failed.first() else {
        return fleet.finish();
    };
    // a context left out (its warning said why) is a failure of its own: 1, never masked
    let left_out = fleet.failed().len();
    let first_code = code(first.verdict());
    let code = if left_out == 0 && failed.iter().all(|r| code(r.verdict()) == first_code) {
        first_code
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
    let failures = present::report::Failures {
        total: reports.len(),
        not_done: failed.len() - unconfirmed,
        unconfirmed,
        left_out,
        dry_run,
    };
    Err(Failure {
        code,
        message: present::report::failures(verb, &failures),
    })
}

/// The results as a table, CONTEXT first across contexts, then one tally line per context.
fn summary(reports: &[Report], several_contexts: bool) -> String {
    let rows: Vec<Vec<(String, Tone)>> = reports
        .iter()
        .map(|r| {
            let tone = match code(r.verdict()) {
                exit::OK => Tone::Good,
                exit::WAIT_TIMED_OUT => Tone::Busy,
                _ => Tone::Bad,
            };
            let context = several_contexts.then(|| (r.key.context.clone().unwrap_or_default(), Tone::Plain));
            context
                .into_iter()
                .chain([
                    (r.key.id.to_string(), Tone::Plain),
                    (r.key.namespace.clone(), Tone::Plain),
                    (r.result().to_string(), tone),
                    (r.epoch().map_or("-".into(), |e| e.describe()), Tone::Plain),
                ])
                .collect()
        })
        .collect();
    let headers = ["CONTEXT", "WORKSPACE", "NAMESPACE", "RESULT", "EPOCH"];
    let mut text = output::table(
        &headers[usize::from(!several_contexts)..],
        &rows,
        false,
        output::colour_enabled(),
    );
    if several_contexts {
        let mut tally: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
        for r in reports {
            *tally
                .entry(r.key.context.as_deref().unwrap_or_default())
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
