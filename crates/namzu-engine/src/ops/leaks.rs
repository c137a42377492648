//! `leaks --delete`, whichever front-end asks: read what the fleet left behind in every context
//! ([`read`]), plan the deletes of the orphaned disks and policies ([`plan`]), check every
//! context's rules before anything is sent ([`admit`] before the read, [`prepare`] after it — the
//! same rules as every write's, `ops::write::rules`), ask each context's typed confirmation
//! through the front-end ([`Front`]), send each DELETE through the one write path
//! (`cluster::write::delete_leak`) and report one [`Report`] per object. The words are
//! `present/leaks.rs`'s; the exit code is the front-end's.
//!
//! The TUI's `:leaks` view only reads (it deletes nothing).

use crate::cluster::error::ClusterError;
use crate::cluster::leaks;
use crate::cluster::write::{self, LeakOutcome, LeakPlan, LeakTarget, WritePolicy};
use crate::ops::fleet::{ContextError, Fleet, FleetError, Member};
use crate::ops::write::batch::{Interrupt, Stop};
use crate::ops::write::rules::{self, Refusal};
use crate::present;
use futures::StreamExt;
use futures::future::BoxFuture;
use namzu_domain::leaks::{Leak, LeakKind};

/// What a front-end asks for: how the deletes are sent.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Read and check, say each request, send nothing (`--dry-run=client`).
    pub dry_run: bool,
    /// Send each DELETE with `dryRun=All` (`--dry-run=server`): asked like a delete.
    pub server_dry_run: bool,
    /// The typed confirmations were answered up front (`--yes`).
    pub yes: bool,
    /// Only these objects (`NAME`, `KIND/NAME` as `-o name` prints them); empty: every one.
    pub names: Vec<String>,
    /// Only leaks of these kinds (`orphaned-disk`, `detached-disk`, `orphaned-policy`); empty: all.
    pub kinds: Vec<String>,
    /// Detached disks (the controller would re-adopt them) are deleted too, once older than
    /// [`Request::detached_after_days`].
    pub include_detached: bool,
    /// How old a detached disk must be (the rules' `detachedAfterDays`, else the default).
    pub detached_after_days: i64,
    /// Mark the objects quarantined (`--quarantine`) instead of deleting them.
    pub quarantine: bool,
    /// The context's `quarantineDays`: a delete takes only objects quarantined that long ago.
    pub quarantine_days: Option<i64>,
}

impl Request {
    /// Something is sent (a server dry run too): it is confirmed and recorded.
    pub(crate) fn sends(&self) -> bool {
        !self.dry_run
    }
}

/// Why the deletes were not started (or could not go on).
#[derive(Debug)]
pub enum LeaksError {
    /// A context's rules cannot be applied to its connection: no flag lifts it.
    Unrulable(String),
    /// The one context is read-only: its reason.
    ReadOnly(String),
    /// A context whose maxBulk the deletes pass: the sentence.
    Bulk(String),
    /// A typed confirmation is asked and the front-end cannot ask (stdin is not a terminal).
    CannotAsk,
    /// The audit log cannot take the entries (a delete is never sent unrecorded).
    AuditNotReady(String),
    /// The typed confirmation could not be read.
    Confirmation(String),
    Cluster(ClusterError),
    Fleet(FleetError),
}

impl LeaksError {
    /// The user asked for something that cannot be (a usage error, not a failure).
    pub fn is_usage(&self) -> bool {
        match self {
            LeaksError::Unrulable(_) | LeaksError::Bulk(_) | LeaksError::CannotAsk => true,
            LeaksError::Fleet(e) => e.is_usage(),
            _ => false,
        }
    }
}

impl std::fmt::Display for LeaksError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeaksError::Unrulable(why) => f.write_str(&present::leaks::unrulable(why)),
            LeaksError::ReadOnly(reason) => f.write_str(&present::leaks::read_only(reason)),
            LeaksError::CannotAsk => f.write_str(present::leaks::CANNOT_ASK),
            LeaksError::Bulk(why) | LeaksError::AuditNotReady(why) | LeaksError::Confirmation(why) => f.write_str(why),
            LeaksError::Cluster(e) => write!(f, "{e}"),
            LeaksError::Fleet(e) => write!(f, "{e}"),
        }
    }
}

impl From<ClusterError> for LeaksError {
    fn from(e: ClusterError) -> Self {
        LeaksError::Cluster(e)
    }
}

impl From<FleetError> for LeaksError {
    fn from(e: FleetError) -> Self {
        LeaksError::Fleet(e)
    }
}

impl ContextError for LeaksError {
    fn why(&self) -> String {
        self.to_string()
    }
}

/// Before anything is read for a delete: a context whose rules cannot be applied to its
/// connection (`--cluster`/`--user` under rules) refuses it, whatever the flags say.
pub fn admit(fleet: &Fleet) -> Result<(), LeaksError> {
    match fleet.members.iter().find_map(|m| rules::unrulable(&m.rules)) {
        Some(why) => Err(LeaksError::Unrulable(why.to_string())),
        None => Ok(()),
    }
}

/// The leaks of every context (its namespace, or every one with `all_namespaces`), in the
/// members' order; each read's warnings are said as they come (naming the context across
/// several).
pub async fn read(fleet: &Fleet, all_namespaces: bool) -> Result<Vec<(Member, Vec<Leak>)>, LeaksError> {
    let read = fleet
        .each::<_, LeaksError, _>(|member| async move {
            let now = member.conn.clock.now();
            let ns = (!all_namespaces).then(|| member.conn.namespace.clone());
            Ok(leaks::read(&member.conn, ns.as_deref(), now).await?)
        })
        .await?;
    Ok(read
        .into_iter()
        .map(|(member, leaks::Report { leaks, warnings })| {
            for w in &warnings {
                fleet.warn(&member, w);
            }
            (member, leaks)
        })
        .collect())
}

/// `leaks --at`: each context's recording read at the instant, judged then; no request is
/// sent to any cluster. What a recording cannot tell is said through the fleet's warnings.
pub async fn read_at(
    fleet: &Fleet,
    all_namespaces: bool,
    at: &crate::ops::replay::At,
) -> Result<Vec<(Member, Vec<Leak>)>, LeaksError> {
    let read = fleet
        .each::<_, LeaksError, _>(|member| {
            let at = at.clone();
            async move {
                let scope = match all_namespaces {
                    true => crate::cluster::inventory::Scope::All,
                    false => crate::cluster::inventory::Scope::Namespace(member.conn.namespace.clone()),
                };
                Ok(crate::ops::replay::leaks_at(&at, &member.conn.context, &scope)?)
            }
        })
        .await?;
    Ok(read
        .into_iter()
        .map(|(member, (leaks, notes))| {
            for n in &notes {
                fleet.warn(&member, n);
            }
            (member, leaks)
        })
        .collect())
}

/// The DELETE of a leak, if it is one `leaks --delete` deletes: an orphaned disk or policy, read
/// with the uid and resourceVersion its preconditions carry. The other leaks (stuck, expired,
/// claims, pools) are reported with their next step, never deleted.
pub fn plan(leak: &Leak, request: &Request, now: chrono::DateTime<chrono::Utc>) -> Option<LeakPlan> {
    // when a disk became detached cannot be read off it (its creation is older): its age counts
    // from a quarantine, a moment known to come after
    let quarantined_for = |days: i64| {
        leak.quarantine
            .as_ref()
            .is_some_and(|q| q.unchanged && now - q.since >= chrono::Duration::days(days))
    };
    let target = match leak.kind {
        LeakKind::Disk => LeakTarget::Disk,
        LeakKind::Policy => LeakTarget::Policy,
        LeakKind::DetachedDisk
            if request.include_detached && (request.quarantine || quarantined_for(request.detached_after_days)) =>
        {
            LeakTarget::Disk
        }
        _ => return None,
    };
    if !selected(leak, request) {
        return None;
    }
    // a context that quarantines first deletes only what has served its quarantine untouched
    if !request.quarantine
        && let Some(days) = request.quarantine_days
        && !leak
            .quarantine
            .as_ref()
            .is_some_and(|q| q.unchanged && now - q.since >= chrono::Duration::days(days))
    {
        return None;
    }
    // a quarantine marks once: one that holds is not marked again
    if request.quarantine && leak.quarantine.as_ref().is_some_and(|q| q.unchanged) {
        return None;
    }
    Some(LeakPlan {
        target,
        namespace: leak.namespace.clone(),
        name: leak.name.clone(),
        uid: leak.uid.clone()?,
        resource_version: leak.resource_version.clone()?,
        dry_run: request.dry_run,
        server_dry_run: request.server_dry_run,
        allow_detached: leak.kind == LeakKind::DetachedDisk,
        quarantine_days: request.quarantine_days,
        quarantine_only: request.quarantine,
    })
}

/// The request as it holds in `member`'s context: how old a detached disk must be is the
/// context's rule (`detachedAfterDays`).
fn in_context(request: &Request, member: &Member) -> Request {
    request.under(&member.rules)
}

impl Request {
    /// This request as it holds under a context's rules: how old a detached disk's quarantine
    /// must be (`detachedAfterDays`), whether a delete waits for a quarantine (`quarantineDays`).
    pub fn under(&self, rules: &namzu_domain::safety::ContextRules) -> Request {
        Request {
            detached_after_days: rules.detached_after_days.map_or(self.detached_after_days, i64::from),
            quarantine_days: rules.quarantine_days.map(i64::from),
            ..self.clone()
        }
    }
}

/// The leak is one the request names (by name, `-o name`'s `kind/name`, or its leak kind).
pub fn selected(leak: &Leak, request: &Request) -> bool {
    let kind = leak.kind.object_kind().to_lowercase();
    let short = match leak.kind.object_kind() {
        "PersistentVolumeClaim" => "pvc",
        _ => "cnp",
    };
    let named = request.names.is_empty()
        || request.names.iter().any(|n| match n.split_once('/') {
            Some((k, name)) => name == leak.name && (k == kind || k == short || k == format!("{kind}s")),
            None => *n == leak.name,
        });
    named && (request.kinds.is_empty() || request.kinds.iter().any(|k| k == leak.kind.as_str()))
}

/// Names given that no deletable leak answers (in use, detached without `--include-detached`,
/// or not a leak at all): each with why, so a typo or a look-alike is said, not skipped.
pub fn unmatched(read: &[(Member, Vec<Leak>)], request: &Request, now: chrono::DateTime<chrono::Utc>) -> Vec<String> {
    request
        .names
        .iter()
        .filter_map(|n| {
            let one = Request {
                names: vec![n.clone()],
                kinds: Vec::new(),
                ..request.clone()
            };
            let deletable = read.iter().any(|(member, leaks)| {
                let here = in_context(&one, member);
                leaks.iter().any(|l| plan(l, &here, now).is_some())
            });
            if deletable {
                return None;
            }
            let leaks = read.iter().flat_map(|(_, l)| l);
            Some(match leaks.clone().find(|l| selected(l, &one)) {
                Some(l) if l.kind == LeakKind::DetachedDisk && l.quarantine.is_some() => format!(
                    "{n}: detached, and its quarantine is too recent or was cancelled: --include-detached deletes it once that quarantine is {} days old, untouched",
                    request.detached_after_days
                ),
                Some(l) if l.kind == LeakKind::DetachedDisk => format!(
                    "{n}: detached (re-adopted if its workspace is created again): quarantine it first (kubectl namzu leaks --quarantine --include-detached {n}); --include-detached deletes it once that quarantine is {} days old, untouched",
                    request.detached_after_days
                ),
                Some(l) if l.deletable && request.quarantine => format!("{n}: quarantined already, untouched since"),
                Some(l) if l.deletable => format!(
                    "{n}: its context deletes only what kubectl namzu leaks --quarantine marked quarantineDays ago and nothing touched since{}",
                    if l.quarantine.is_some() { " (its quarantine is too recent, or was cancelled)" } else { " (it is not quarantined)" }
                ),
                Some(l) => format!("{n}: {} — not deleted", l.reason),
                None => format!("{n}: no such leak (kubectl namzu leaks lists them)"),
            })
        })
        .collect()
}

/// One context's deletes, checked: where they go and under which rules.
struct Batch {
    member: Member,
    /// Across contexts, the context named in reports.
    label: Option<String>,
    plans: Vec<LeakPlan>,
    policy: WritePolicy,
    /// The deletes ask for the typed count first (disks hold data; `confirm: typed`).
    confirming: bool,
}

/// Every context's rules checked, nothing sent yet. Only [`prepare`] makes one, so nothing
/// reaches [`run`] unchecked.
pub struct Checked {
    batches: Vec<Batch>,
    skipped: usize,
}

impl Checked {
    /// Leaks found that `leaks --delete` does not delete.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// The deletes planned, across every context.
    pub(crate) fn total(&self) -> usize {
        self.batches.iter().map(|b| b.plans.len()).sum()
    }
}

/// Plan every context's deletes and check its rules before anything is sent: a read-only context
/// sends nothing (across several it is left out with its warning), a context over its maxBulk
/// refuses them all, a typed confirmation the front-end cannot ask refuses them all, and the
/// audit log must be able to take the entries. `base` is the write policy every context's starts
/// from; `can_ask`: the front-end can ask for the typed count.
pub fn prepare(
    fleet: &Fleet,
    read: Vec<(Member, Vec<Leak>)>,
    request: &Request,
    base: &WritePolicy,
    can_ask: bool,
) -> Result<Checked, LeaksError> {
    if let Some(why) = rules::yes_across(
        fleet.several_contexts,
        request.yes && request.sends(),
        fleet.members.iter().map(|m| (m.conn.context.as_str(), &m.rules)),
    ) {
        return Err(LeaksError::Bulk(why));
    }
    let mut checked = Checked {
        batches: Vec::new(),
        skipped: 0,
    };
    for (member, leaks) in read {
        let now = member.conn.clock.now();
        let request = in_context(request, &member);
        let plans: Vec<LeakPlan> = leaks.iter().filter_map(|l| plan(l, &request, now)).collect();
        checked.skipped += leaks.len() - plans.len();
        if plans.is_empty() {
            continue;
        }
        // the same rules as every write's, checked for every context before anything is sent
        match rules::check_of(
            &member.rules,
            &member.conn.context,
            fleet.read_only_flag(),
            plans.len(),
            "object",
        ) {
            Ok(()) => {}
            Err(Refusal::ReadOnly(reason)) => {
                if !fleet.several_contexts {
                    return Err(LeaksError::ReadOnly(reason));
                }
                fleet.fail(&member.conn.context, &present::leaks::read_only(&reason));
                continue;
            }
            Err(Refusal::Bulk(why)) => return Err(LeaksError::Bulk(why)),
        }
        // a disk holds data: its delete asks, as a workspace's does
        let destroys_data = !request.quarantine && plans.iter().any(|p| p.target == LeakTarget::Disk);
        checked.batches.push(Batch {
            confirming: rules::asks_typed_when(&member.rules, destroys_data, request.yes, !request.sends()),
            label: fleet.row_context(&member),
            policy: rules::policy(base, &member.rules),
            plans,
            member,
        });
    }
    if !can_ask && checked.batches.iter().any(|b| b.confirming) {
        return Err(LeaksError::CannotAsk);
    }
    if request.sends() && !checked.batches.is_empty() {
        base.audit.ready().map_err(LeaksError::AuditNotReady)?;
    }
    Ok(checked)
}

/// What one context's typed confirmation asks about: how many objects, how many of them disks.
pub struct Question {
    pub context: Option<String>,
    /// The context's badge (`PROD`), shown beside it.
    pub badge: Option<String>,
    pub objects: usize,
    pub disks: usize,
    /// Every object, as `kind/name in namespace` (and what a disk's data comes to).
    pub named: Vec<String>,
}

impl Question {
    /// The words shown before the prompt: the count, the context and badge, every object.
    pub fn text(&self) -> String {
        let context = self.context.as_ref().map(|c| match &self.badge {
            Some(b) => format!("{c} [{b}]"),
            None => c.clone(),
        });
        let mut text = present::leaks::question(context.as_deref(), self.objects, self.disks);
        for n in &self.named {
            text.push_str("\n  ");
            text.push_str(n);
        }
        text
    }

    /// What must be typed (`delete N`).
    pub fn word(&self) -> String {
        present::leaks::word(self.objects)
    }

    /// The prompt after [`Question::text`].
    pub fn prompt(&self) -> String {
        present::leaks::prompt(&self.word())
    }
}

/// How a front-end takes part in `leaks --delete`.
pub trait Front: Sync {
    /// Ask for the typed count: `Ok(true)` when what was typed is [`Question::word`].
    fn ask_typed<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Result<bool, String>>;
    /// A context's deletes were cancelled at its confirmation: nothing sent there.
    fn cancelled(&self, context: &str);
    /// One delete done (`done` of `total`, across every context), in the order planned.
    fn step(&self, report: &Report, done: usize, total: usize);
    /// The front-end's output went away: no further delete starts.
    fn output_closed(&self) -> bool;
    /// A second Ctrl-C while a delete is in flight: the front-end ends the process.
    fn interrupted_twice();
}

/// One object's result.
pub struct Report {
    /// Across contexts, the one it was deleted in.
    pub context: Option<String>,
    pub plan: LeakPlan,
    pub outcome: LeakOutcome,
}

impl Report {
    /// Refused before anything was sent, or by the API server's preconditions.
    pub(crate) fn refused(&self) -> bool {
        matches!(self.outcome, LeakOutcome::Refused { .. } | LeakOutcome::ReadOnly)
    }

    pub fn failed(&self) -> bool {
        matches!(self.outcome, LeakOutcome::Failed(_))
    }

    /// The result's word (`deleted`, `dry-run`, `already-gone`, `refused`, `failed`).
    pub fn result(&self) -> &'static str {
        present::leaks::result(&self.outcome)
    }

    /// Why, when the result needs a why (a refusal, a failure).
    pub fn detail(&self) -> Option<String> {
        present::leaks::detail(&self.outcome)
    }

    /// The exact request sent (or that would be).
    pub fn request(&self) -> Option<&write::Request> {
        match &self.outcome {
            LeakOutcome::Deleted { request, .. }
            | LeakOutcome::Quarantined { request }
            | LeakOutcome::DryRun { request } => Some(request),
            _ => None,
        }
    }

    /// The result line (`[done/total] ` before it across several).
    pub fn line(&self, done: usize, total: usize) -> String {
        let line = present::leaks::line(&self.plan, &self.outcome, done, total);
        // across contexts each line names its own
        match &self.context {
            Some(c) => format!("{c}: {line}"),
            None => line,
        }
    }
}

/// The deletes' end: every object's report in the order planned.
pub struct Ran {
    pub reports: Vec<Report>,
    /// The deletes planned (those cancelled at a confirmation too).
    pub total: usize,
    /// Why the deletes stopped before the last, if they did (as a bulk write stops).
    pub stopped: Option<Stop>,
    /// The objects not started after a stop, as the stop line names them.
    pub not_started: Vec<String>,
}

impl Ran {
    pub fn failed(&self) -> usize {
        self.reports.iter().filter(|r| r.failed()).count()
    }

    pub fn refused(&self) -> usize {
        self.reports.iter().filter(|r| r.refused()).count()
    }
}

/// Why the deletes stopped, once they did: read as each delete's turn comes (shared by the
/// engine's stop check and the loop, across awaits, so a lock rather than a cell).
#[derive(Default)]
struct Stopped(std::sync::Mutex<Option<Stop>>);

impl Stopped {
    fn get(&self) -> Option<Stop> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, why: Option<Stop>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = why;
    }
}

/// A context's typed count, asked: whether its deletes go on (a wrong count cancels them, said
/// to the front-end; an interrupt while asking is a stop).
async fn confirmed<F: Front>(
    batch: &Batch,
    interrupt: &Interrupt,
    front: &F,
    stopped: &Stopped,
) -> Result<bool, LeaksError> {
    let question = Question {
        context: batch.label.clone().or_else(|| Some(batch.member.conn.context.clone())),
        badge: batch.member.rules.badge.as_ref().map(|b| b.label.clone()),
        objects: batch.plans.len(),
        disks: batch.plans.iter().filter(|p| p.target == LeakTarget::Disk).count(),
        named: batch.plans.iter().map(present::leaks::named).collect(),
    };
    match interrupt.unless(front.ask_typed(&question)).await {
        None => {
            stopped.set(Some(Stop::Interrupted));
            Ok(true)
        }
        Some(answer) => {
            let typed = answer.map_err(LeaksError::Confirmation)?;
            if !typed {
                front.cancelled(&batch.member.conn.context);
            }
            Ok(typed)
        }
    }
}

/// Send the checked deletes, context by context: each context's typed confirmation first (where
/// it asks), then each DELETE through the one write path under that context's policy, one after
/// the other.
pub async fn run<F: Front>(checked: Checked, front: &F) -> Result<Ran, LeaksError> {
    let (interrupt, _listening) = Interrupt::install(
        checked.batches.iter().map(|b| b.policy.throttle.clone()).collect(),
        F::interrupted_twice,
    );
    // checked as each delete's turn comes: a stop lets the delete in flight finish, starts none;
    // once one came, every context's deletes after it are not started
    let stopped = Stopped::default();
    let stop = |policy: &WritePolicy| {
        stopped.get().or_else(|| {
            front
                .output_closed()
                .then_some(Stop::OutputClosed)
                .or(interrupt.raised().then_some(Stop::Interrupted))
                .or(policy.audit.failure().map(|_| Stop::AuditFailed))
        })
    };
    let mut ran = Ran {
        reports: Vec::new(),
        total: checked.total(),
        stopped: None,
        not_started: Vec::new(),
    };
    let mut done = 0usize;
    for batch in checked.batches {
        stopped.set(stop(&batch.policy));
        if stopped.get().is_none() && batch.confirming && !confirmed(&batch, &interrupt, front, &stopped).await? {
            continue;
        }
        let (member, policy, label) = (&batch.member, &batch.policy, &batch.label);
        let named = |plan: &LeakPlan| match label {
            Some(c) => format!("{c}:{}/{}", plan.namespace, plan.name),
            None => format!("{}/{}", plan.namespace, plan.name),
        };
        let (mut deleted, mut pending) = (Vec::new(), Vec::new());
        // the one batch engine, one DELETE at a time
        let turn_stop = || {
            let why = stop(policy);
            stopped.set(why);
            why
        };
        let delete = |plan: LeakPlan| async move {
            let outcome = write::delete_leak(&member.conn, policy, &plan).await;
            (plan, outcome)
        };
        let mut turns = super::write::batch::in_order(batch.plans, 1, &turn_stop, &delete);
        while let Some(turn) = turns.next().await {
            match turn {
                super::write::batch::Turn::Ran((plan, outcome)) => {
                    done += 1;
                    deleted.push(format!("{}/{}", plan.namespace, plan.name));
                    let report = Report {
                        context: label.clone(),
                        plan,
                        outcome,
                    };
                    front.step(&report, done, ran.total);
                    ran.reports.push(report);
                }
                super::write::batch::Turn::NotStarted(_, plan) => {
                    ran.not_started.push(named(&plan));
                    pending.push(format!("{}/{}", plan.namespace, plan.name));
                }
            }
        }
        // each context's audit log names what was done and not started there
        if let Some(why) = stopped.get().filter(|_| !pending.is_empty()) {
            write::record_stop(
                &member.conn,
                policy,
                write::DELETE_LEAK_VERB,
                why.reason(),
                &deleted,
                &pending,
            );
        }
    }
    ran.stopped = stopped.get();
    Ok(ran)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leak(kind: LeakKind) -> Leak {
        Leak {
            kind,
            namespace: "agents".into(),
            name: "data-namzu-ws-ghost".into(),
            uid: Some("uid-1".into()),
            resource_version: Some("7".into()),
            reason: String::new(),
            since: None,
            size: None,
            next: String::new(),
            deletable: true,
            checks: Vec::new(),
            quarantine: None,
        }
    }

    #[test]
    fn only_disks_and_policies_read_with_their_preconditions_are_deleted() {
        let request = Request {
            server_dry_run: true,
            ..Default::default()
        };
        let now = chrono::DateTime::UNIX_EPOCH;
        let disk = plan(&leak(LeakKind::Disk), &request, now).expect("a disk is deleted");
        assert_eq!(
            (disk.target, disk.uid.as_str(), disk.resource_version.as_str()),
            (LeakTarget::Disk, "uid-1", "7")
        );
        assert!(disk.server_dry_run && !disk.dry_run);
        assert!(plan(&leak(LeakKind::Policy), &request, now).is_some());
        assert!(plan(&leak(LeakKind::StuckSandbox), &request, now).is_none());
        assert!(plan(&leak(LeakKind::DiskInUse), &request, now).is_none());
        assert!(
            plan(&leak(LeakKind::DetachedDisk), &request, now).is_none(),
            "not without --include-detached"
        );
        // without the uid it was judged at, no precondition: never deleted
        let unread = Leak {
            uid: None,
            ..leak(LeakKind::Disk)
        };
        assert!(plan(&unread, &request, now).is_none());
    }
}
