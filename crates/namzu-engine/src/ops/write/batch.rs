//! The writes of one bulk write, sent together: at most `parallel` at once (one at a time while a
//! typed confirmation is asked), results in the selection's order whatever order they finish in.
//! A stop — Ctrl-C or SIGTERM, the front-end's output gone, the audit log failing — finishes the
//! writes in flight and starts none after them; the server's 429 holds them all back together
//! (`cluster::write::Throttle`).

use super::rules;
use super::{Checked, Report, Request, Selected, WriteError};
use crate::cluster::connect::Connection;
use crate::cluster::error::ClusterError;
use crate::cluster::resources::{self, SANDBOXES};
use crate::cluster::wait::Waited;
use crate::cluster::write::{self, Outcome, Plan};
use futures::StreamExt;
use futures::future::BoxFuture;
use namzu_domain::fence::Verb;
use namzu_domain::naming::{WorkspaceId, WorkspaceKey};
use namzu_domain::patch::Mode;
use namzu_domain::state::State;

/// Why a bulk write stopped before its last workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The front-end's output went away (a reader that closed stdout).
    OutputClosed,
    Interrupted,
    /// The audit log stopped taking entries: no write is sent that it cannot record.
    AuditFailed,
}

impl Stop {
    /// As the stop line and the audit log's entry say it.
    pub fn reason(self) -> &'static str {
        match self {
            Stop::OutputClosed => "stdout was closed",
            Stop::Interrupted => "interrupted",
            Stop::AuditFailed => "the audit log stopped taking entries",
        }
    }
}

/// What a typed confirmation asks about: the Sandbox as read just now.
pub struct Question {
    /// The workspace; its context named across contexts only.
    pub key: WorkspaceKey<WorkspaceId>,
    pub verb: Verb,
    pub mode: Mode,
    /// The holder epoch as stored ("0" when none is).
    pub epoch: String,
    /// The context written to, always named (a typed id is asked where a mistake costs most),
    /// and its badge (`PROD`) where its rules give one.
    pub context: String,
    pub badge: Option<String>,
}

impl Question {
    /// The words shown before the prompt (`present/report.rs`).
    pub fn text(&self) -> String {
        crate::present::report::question(
            &self.key.id.sandbox_name(),
            &self.key.namespace,
            (&self.context, self.badge.as_deref()),
            self.mode,
            &self.epoch,
            self.verb,
        )
    }
}

/// How a front-end takes part in a bulk write.
pub trait Front: Sync {
    /// Whether it can ask for a typed id at all (the CLI: stdin is a terminal). One that cannot
    /// gets the refusal ([`WriteError::CannotAsk`]) before anything is read.
    fn can_ask(&self) -> bool;
    /// Ask for the typed id: `Ok(true)` when what was typed is the id.
    fn ask_typed<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Result<bool, String>>;
    /// A refresh's preview, shown before the typed id is asked (the write is then bound to it).
    fn previewed(&self, shown: &Outcome);
    /// A write is about to be sent (a front-end that quits waits for the writes sent).
    fn sending(&self, _key: &WorkspaceKey<WorkspaceId>) {}
    /// A write was answered (before its wait, if it waits): what it came to.
    fn sent(&self, _key: &WorkspaceKey<WorkspaceId>, _outcome: &Outcome) {}
    /// A wait's progress: what it waits for, the state it read.
    fn waiting(&self, key: &WorkspaceKey<WorkspaceId>, what: &str, state: Option<State>);
    /// A wait ended.
    fn waited(&self);
    /// One workspace done (or cancelled, or not started), in the selection's order.
    fn step(&self, step: &Step);
    /// The output went away: no new write starts.
    fn output_closed(&self) -> bool;
    /// A second Ctrl-C: the writes in flight are abandoned (this ends the process).
    fn interrupted_twice();
}

/// What became of one selected workspace.
pub enum Step {
    Done(Box<Report>),
    /// The typed id did not match: nothing sent. The workspace as the stop line names it.
    Cancelled(String),
    /// A stop came before this one's turn: not started (its context's index, the workspace).
    NotStarted(Stop, usize, WorkspaceKey<WorkspaceId>),
}

/// A bulk write's end: every workspace's report in the selection's order, and why it stopped.
#[derive(Default)]
pub struct Ran {
    pub reports: Vec<Report>,
    pub stopped: Option<Stop>,
    /// The workspaces not started, with their context's index.
    pub not_started: Vec<(usize, WorkspaceKey<WorkspaceId>)>,
    /// Typed ids that did not match.
    pub cancelled: usize,
}

impl Ran {
    /// After a stop, each context's audit log entry names what was done and not started there.
    pub fn record_stop(&self, checked: &Checked, verb: Verb) {
        let Some(stop) = self.stopped else {
            return;
        };
        for (index, t) in checked.contexts.iter().enumerate() {
            let done: Vec<String> = self
                .reports
                .iter()
                .filter(|r| r.key.context == t.label)
                .map(|r| r.key.in_namespace())
                .collect();
            let pending: Vec<String> = self
                .not_started
                .iter()
                .filter(|(i, _)| *i == index)
                .map(|(_, k)| k.in_namespace())
                .collect();
            write::record_stop(&t.member.conn, &t.policy, verb.as_str(), stop.reason(), &done, &pending);
        }
    }

    /// The workspaces not started, named as the stop line names them.
    pub fn not_started_named(&self) -> Vec<String> {
        // (a key names its context only across several)
        self.not_started.iter().map(|(_, k)| k.qualified(true)).collect()
    }

    /// The reports not done as asked.
    pub fn failed(&self) -> Vec<&Report> {
        self.reports.iter().filter(|r| !r.succeeded()).collect()
    }

    /// A refresh that lost to another resume left a workspace running what it ran before.
    pub fn off_template(&self) -> Vec<String> {
        self.reports
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Raced { .. }))
            .map(Report::qualified)
            .collect()
    }
}

/// What became of one item of a batch: it ran, or a stop came before its turn.
pub(crate) enum Turn<T, R> {
    Ran(R),
    NotStarted(Stop, T),
}

/// The one batch engine of every bulk act (workspace writes, leak deletes): the items started in
/// order, at most `parallel` at once, each checked against `stop` as its turn comes — a stop lets
/// those in flight finish and starts none after them — and yielded in the items' order, whatever
/// order they finish in.
pub(crate) fn in_order<'a, T, R, Fut>(
    items: impl IntoIterator<Item = T> + 'a,
    parallel: usize,
    stop: &'a (impl Fn() -> Option<Stop> + 'a),
    run: &'a (impl Fn(T) -> Fut + 'a),
) -> impl futures::Stream<Item = Turn<T, R>> + 'a
where
    T: 'a,
    R: 'a,
    Fut: std::future::Future<Output = R> + 'a,
{
    futures::stream::iter(items)
        .map(move |item| async move {
            match stop() {
                Some(why) => Turn::NotStarted(why, item),
                None => Turn::Ran(run(item).await),
            }
        })
        .buffered(parallel.max(1))
}

/// Ctrl-C (or SIGTERM) during a write: the write in flight finishes, none starts after it, and
/// a write held back by the server's 429 is not sent.
#[derive(Clone)]
pub(crate) struct Interrupt {
    raised: std::sync::Arc<std::sync::atomic::AtomicBool>,
    notify: std::sync::Arc<tokio::sync::Notify>,
}

/// The task that listens for a batch's signals, stopped when the batch ends (dropped), so a
/// front-end that runs many batches (the TUI) keeps no listener of a batch done.
pub(crate) struct Listening(tokio::task::AbortHandle);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Interrupt {
    pub(crate) fn install(throttles: Vec<write::Throttle>, twice: fn()) -> (Interrupt, Listening) {
        let me = Interrupt {
            raised: Default::default(),
            notify: Default::default(),
        };
        let (termination, signalled) = (crate::signals::Termination::listen(), me.clone());
        let listener = tokio::spawn(async move {
            termination.received().await;
            signalled.raised.store(true, std::sync::atomic::Ordering::SeqCst);
            signalled.notify.notify_waiters();
            for t in &throttles {
                t.abandon();
            }
            // a second signal abandons the writes in flight: their intents stay in the audit log
            // without an outcome, which `audit` shows as "outcome unknown"
            crate::signals::Termination::listen().received().await;
            twice();
        });
        (me, Listening(listener.abort_handle()))
    }

    pub(crate) fn raised(&self) -> bool {
        self.raised.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Run `work` unless interrupted first (`None` then); for waits and prompts, never writes.
    pub(crate) async fn unless<T>(&self, work: impl std::future::Future<Output = T>) -> Option<T> {
        if self.raised() {
            return None;
        }
        tokio::select! {
            out = work => Some(out),
            _ = self.notify.notified() => None,
        }
    }
}

/// What the user confirmed: the write is then bound to exactly that object.
enum Confirmed {
    /// The id was typed for this read of the Sandbox.
    Object(serde_json::Value),
    /// Nothing there when asked: reported as the write path reports it, nothing sent.
    Gone,
    Cancelled,
    /// The Sandbox could not be read to ask: nothing asked, nothing sent.
    Unread(ClusterError),
}

/// What every workspace of one bulk write shares.
struct Batch<'a, F: Front> {
    checked: &'a Checked,
    request: &'a Request,
    interrupt: Interrupt,
    front: &'a F,
}

/// Send the checked writes: each workspace's own fenced read-check-write through the one write
/// path, bound to what was confirmed, at most `request.parallel` at once (one at a time while a
/// typed confirmation is asked); each step is shown as it comes, in the selection's order.
pub async fn run<F: Front>(checked: &Checked, request: &Request, front: &F) -> Result<Ran, WriteError> {
    let (interrupt, _listening) = Interrupt::install(
        checked.contexts.iter().map(|t| t.policy.throttle.clone()).collect(),
        F::interrupted_twice,
    );
    // a typed confirmation is asked one workspace at a time
    let parallel = if checked.confirming() {
        1
    } else {
        request.parallel.max(1)
    };
    let batch = Batch {
        checked,
        request,
        interrupt,
        front,
    };
    let (stop, one) = (|| batch.stop(), |selected| batch.one(selected));
    let mut turns = in_order(checked.targets.iter().cloned(), parallel, &stop, &one);
    let mut ran = Ran::default();
    // results in the selection's order, whatever order the writes finish in
    while let Some(turn) = turns.next().await {
        let step = match turn {
            Turn::Ran(step) => step?,
            Turn::NotStarted(why, selected) => Step::NotStarted(why, selected.context, selected.key),
        };
        front.step(&step);
        match step {
            Step::Done(report) => ran.reports.push(*report),
            Step::Cancelled(_) => ran.cancelled += 1,
            Step::NotStarted(stop, index, key) => {
                ran.stopped = ran.stopped.or(Some(stop));
                ran.not_started.push((index, key));
            }
        }
    }
    Ok(ran)
}

impl<F: Front> Batch<'_, F> {
    /// Why no new write may start, if one may not: checked as each workspace's turn comes, so a
    /// stop finishes the writes in flight and starts none after them.
    fn stop(&self) -> Option<Stop> {
        self.front
            .output_closed()
            .then_some(Stop::OutputClosed)
            .or(self.interrupt.raised().then_some(Stop::Interrupted))
            .or(self
                .checked
                .contexts
                .iter()
                .find_map(|t| t.policy.audit.failure())
                .map(|_| Stop::AuditFailed))
    }

    /// Ask for the typed id of the Sandbox as read now; anything else cancels that workspace.
    async fn confirm(
        &self,
        target: &super::WriteContext,
        key: &WorkspaceKey<WorkspaceId>,
    ) -> Result<Confirmed, WriteError> {
        let conn = &target.member.conn;
        let current = match resources::get(conn, &SANDBOXES, &key.namespace, &key.id.sandbox_name()).await {
            Ok(current) => current,
            // that workspace fails, said as every failed write is; the batch goes on
            Err(e) => return Ok(Confirmed::Unread(e)),
        };
        let Some(object) = current else {
            return Ok(Confirmed::Gone);
        };
        let question = Question {
            key: key.clone(),
            verb: self.request.verb,
            mode: Mode::of_sandbox(&object),
            epoch: namzu_domain::epoch::Reading::of(&object)
                .annotation
                .unwrap_or_else(|| "0".into()),
            context: conn.context.clone(),
            badge: target.member.rules.badge.as_ref().map(|b| b.label.clone()),
        };
        let typed = self
            .front
            .ask_typed(&question)
            .await
            .map_err(WriteError::Confirmation)?;
        Ok(if typed {
            Confirmed::Object(object)
        } else {
            Confirmed::Cancelled
        })
    }

    /// One workspace: (a typed confirmation,) the write through the one write path, the wait.
    async fn one(&self, selected: Selected) -> Result<Step, WriteError> {
        let Selected {
            context: index,
            key,
            bound,
        } = selected;
        // (a stop before its turn was checked by the engine, `in_order`)
        let target = &self.checked.contexts[index];
        let (conn, verb, request) = (&target.member.conn, self.request.verb, self.request);
        // confirmed and bound by the front-end (the TUI's popup): sent as bound
        if let Some(plan) = bound {
            return Ok(self.send(conn, &target.policy, plan, key).await);
        }
        let mut plan = Plan {
            verb,
            namespace: key.namespace.clone(),
            id: key.id.clone(),
            epoch: request.epoch,
            dry_run: request.dry_run,
            server_dry_run: request.server_dry_run,
            expected_uid: None,
            refresh: request.refresh.clone(),
        };
        let report = |outcome| Report {
            key: key.clone(),
            outcome,
            waited: None,
            take_over: request.take_over,
        };
        // a refresh asked on a terminal shows what it writes, as its dry run does (the template,
        // the hashes, the field changes), and is then bound to that: the uid, the epoch, the hash
        let mut preview = None;
        if target.confirming && plan.refresh.is_some() {
            match super::preview(conn, &target.policy, &plan).await {
                shown @ Outcome::DryRun { .. } => {
                    self.front.previewed(&shown);
                    preview = Some(shown);
                }
                // refused (or gone) before anything is asked: nothing is sent, nothing to ask
                other => return Ok(Step::Done(Box::new(report(other)))),
            }
        }
        if target.confirming {
            let asked = self.confirm(target, &key);
            let Some(confirmed) = self.interrupt.unless(asked).await else {
                return Ok(Step::NotStarted(Stop::Interrupted, index, key));
            };
            match confirmed? {
                Confirmed::Cancelled => {
                    return Ok(Step::Cancelled(key.qualified(true)));
                }
                Confirmed::Unread(e) => return Ok(Step::Done(Box::new(report(Outcome::Failed(e))))),
                // the write is of the object shown, at the epoch shown: one replaced or taken
                // over while the user typed is refused, not written
                Confirmed::Object(shown) => rules::bind_to_object(&mut plan, &shown),
                // nothing stood there, so nothing was asked or confirmed: nothing is sent (a
                // Sandbox made since under the name was never confirmed)
                Confirmed::Gone => return Ok(Step::Done(Box::new(report(Outcome::absent(verb))))),
            }
            // the prompt may have waited long: a stop that came meanwhile starts no write
            if let Some(stop) = self.stop() {
                return Ok(Step::NotStarted(stop, index, key));
            }
            if let Some(shown) = &preview {
                plan = match rules::bind(plan, Some(shown)) {
                    Ok(bound) => bound,
                    // (a preview is always a dry run's outcome here)
                    Err(_) => return Ok(Step::Done(Box::new(report(shown.clone())))),
                };
            }
        }
        Ok(self.send(conn, &target.policy, plan, key).await)
    }

    /// The write through the one write path, then its wait: the workspace's report.
    async fn send(
        &self,
        conn: &Connection,
        policy: &crate::cluster::write::WritePolicy,
        plan: Plan,
        key: WorkspaceKey<WorkspaceId>,
    ) -> Step {
        let request = self.request;
        self.front.sending(&key);
        let (outcome, landed) = super::send(conn, policy, &plan).await;
        self.front.sent(&key, &outcome);
        let mut report = Report {
            key: key.clone(),
            outcome,
            waited: None,
            take_over: request.take_over,
        };
        // a landed write waits for its transition; so does one found already there, which may
        // still be on its way (Suspending: the pod not yet gone)
        let unchanged = matches!(report.outcome, Outcome::Unchanged { .. }) && !report.take_over;
        if let (true, Some(timeout)) = (report.outcome.landed() || unchanged, request.wait) {
            let landed = if unchanged {
                landed.found_already_there()
            } else {
                landed
            };
            let waiting = landed.wait(conn, &plan, timeout, |what, state| {
                self.front.waiting(&key, what, state)
            });
            let waited = self.interrupt.unless(waiting).await;
            if waited.is_some() {
                self.front.waited();
            }
            report.waited = Some(
                waited.unwrap_or_else(|| Waited::Failed("interrupted before the transition was confirmed".into())),
            );
        }
        Step::Done(Box::new(report))
    }
}
