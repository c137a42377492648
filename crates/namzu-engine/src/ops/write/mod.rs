//! A bulk `suspend`, `resume` or `delete`, whichever front-end asked: select the workspaces in
//! every context ([`Selecting`]), check every context's rules before anything is sent
//! ([`prepare`], [`rules`]), bind each write to what was confirmed ([`rules::bind`]), send them in
//! batches that stop and throttle together ([`batch`]), and report one [`Report`] per workspace,
//! each with its [`Verdict`]. The front-end plugs in through [`Front`]: it asks the typed
//! confirmation, shows each step, and says whether its output is still open.

pub mod batch;
pub mod rules;

use crate::cluster::connect::Connection;
use crate::cluster::error::ClusterError;
use crate::cluster::inventory::{Query, Scope};
use crate::cluster::resources::SANDBOXES;
use crate::cluster::verdict::Verdict;
use crate::cluster::wait::Waited;
use crate::cluster::write::{Outcome, Plan, Request as Sent, WritePolicy};
use crate::ops::fleet::{ContextError, Fleet, FleetError, Member};
use crate::present;
use namzu_domain::drift::OverlayFlags;
use namzu_domain::fence::{EpochChoice, EpochUse, Verb};
use namzu_domain::naming::{WorkspaceId, WorkspaceKey};
use namzu_domain::refresh::{self, Refresh};
use namzu_domain::select::Filter;
use rules::Refusal;

pub use batch::{Front, Question, Ran, Step, Stop, run};

/// What a front-end asks for: one write of every workspace selected.
#[derive(Debug, Clone)]
pub struct Request {
    pub verb: Verb,
    /// The holder epoch the writes carry.
    pub epoch: EpochChoice,
    /// `--take-over` was asked for: finding the mode already there means it was not performed.
    pub take_over: bool,
    /// Read and check, send nothing (`--dry-run=client`).
    pub dry_run: bool,
    /// Sent with `dryRun=All` (`--dry-run=server`).
    pub server_dry_run: bool,
    /// The typed confirmations were answered up front (`--yes`).
    pub yes: bool,
    /// Workspaces written at once (1 while a typed confirmation is asked).
    pub parallel: usize,
    /// Wait this long for each landed write's transition (`--wait`).
    pub wait: Option<std::time::Duration>,
    /// resume --refresh-template.
    pub refresh: Option<refresh::Ask>,
}

impl Request {
    /// Any dry run: nothing changes.
    pub(crate) fn any_dry_run(&self) -> bool {
        self.dry_run || self.server_dry_run
    }
}

/// Why a write was not started at all (or could not go on).
#[derive(Debug)]
pub enum WriteError {
    /// The selection flags contradict (a usage error): the sentence.
    Selection(&'static str),
    /// A context's rules cannot be applied to its connection: no flag lifts it.
    Unrulable(String),
    /// Workspace ids with several contexts.
    IdsAcrossContexts,
    /// A typed confirmation is asked and the front-end cannot ask (stdin is not a terminal).
    CannotAsk {
        verb: Verb,
        context: String,
    },
    /// The one context is read-only: the sentence.
    ReadOnly(String),
    /// Contexts whose maxBulk the selection passes: each one's sentence.
    Bulk(Vec<String>),
    /// The audit log cannot take the entries (a write is never sent unrecorded).
    AuditNotReady(String),
    /// The typed confirmation could not be read.
    Confirmation(String),
    Cluster(ClusterError),
    Fleet(FleetError),
}

impl WriteError {
    /// The user asked for something that cannot be (a usage error, not a failure).
    pub fn is_usage(&self) -> bool {
        match self {
            WriteError::Selection(_)
            | WriteError::Unrulable(_)
            | WriteError::IdsAcrossContexts
            | WriteError::CannotAsk { .. }
            | WriteError::Bulk(_) => true,
            WriteError::Fleet(e) => e.is_usage(),
            _ => false,
        }
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Selection(why) => f.write_str(why),
            WriteError::Unrulable(why) => write!(f, "{why}: nothing sent"),
            WriteError::IdsAcrossContexts => f.write_str(
                "workspace ids name workspaces in one context: pass one --context, or select them across contexts (-l, --state, …, --all)",
            ),
            WriteError::CannotAsk { verb: Verb::Delete, .. } => f.write_str(
                "delete destroys the workspace's disks: pass --yes (stdin is not a terminal, so it cannot ask)",
            ),
            WriteError::CannotAsk { context, .. } => write!(
                f,
                "context \"{context}\" asks for typed ids (confirm: typed): pass --yes (stdin is not a terminal, so it cannot ask)"
            ),
            WriteError::ReadOnly(why) | WriteError::AuditNotReady(why) | WriteError::Confirmation(why) => {
                f.write_str(why)
            }
            WriteError::Bulk(whys) => f.write_str(whys.first().map_or("", String::as_str)),
            WriteError::Cluster(e) => write!(f, "{e}"),
            WriteError::Fleet(e) => write!(f, "{e}"),
        }
    }
}

impl From<ClusterError> for WriteError {
    fn from(e: ClusterError) -> Self {
        WriteError::Cluster(e)
    }
}

impl From<FleetError> for WriteError {
    fn from(e: FleetError) -> Self {
        WriteError::Fleet(e)
    }
}

impl ContextError for WriteError {
    fn why(&self) -> String {
        self.to_string()
    }
}

/// What selects the workspaces to act on, the same in every context.
#[derive(Clone)]
pub struct Selecting {
    ids: Vec<WorkspaceId>,
    selector: Option<String>,
    filter: Filter,
    flags: OverlayFlags,
    per_sandbox_label_key: Option<String>,
    all_namespaces: bool,
}

impl Selecting {
    /// The workspaces named (`ids`), or those a selection matches (`selector`, `filter`, or
    /// `all` of them): one or the other, never both, never neither.
    pub fn new(
        ids: &[WorkspaceId],
        selector: Option<String>,
        filter: Filter,
        all: bool,
        flags: OverlayFlags,
        all_namespaces: bool,
    ) -> Result<Selecting, WriteError> {
        let filtered = selector.is_some() || filter != Filter::default();
        if !ids.is_empty() && (filtered || all) {
            return Err(WriteError::Selection(
                "give workspace ids or a selection (-l, --state, --suspended-for, --all), not both",
            ));
        }
        if ids.is_empty() && !filtered && !all {
            return Err(WriteError::Selection(
                "name the workspaces, or select them (-l, --state, --drift, --diagnosis, --suspended-for), or pass --all",
            ));
        }
        // each workspace once, in the order given
        let mut seen = std::collections::BTreeSet::new();
        Ok(Selecting {
            ids: ids.iter().filter(|id| seen.insert(*id)).cloned().collect(),
            selector,
            filter,
            per_sandbox_label_key: flags.per_sandbox_label_key.clone(),
            flags,
            all_namespaces,
        })
    }

    /// Workspaces named by id (they name workspaces in one context).
    pub(crate) fn by_id(&self) -> bool {
        !self.ids.is_empty()
    }

    /// The workspaces to act on in one context, with the read's warnings: the ids given, or the
    /// selection's matches (named under `context`, the context a report names).
    async fn targets(
        self,
        conn: Connection,
        context: Option<String>,
    ) -> Result<(Vec<String>, Vec<WorkspaceKey<WorkspaceId>>), WriteError> {
        let key = |namespace: String, id: WorkspaceId| WorkspaceKey {
            context: context.clone(),
            namespace,
            id,
        };
        if !self.ids.is_empty() {
            return Ok((
                Vec::new(),
                self.ids.into_iter().map(|id| key(conn.namespace.clone(), id)).collect(),
            ));
        }
        let scope = if self.all_namespaces {
            Scope::All
        } else {
            Scope::Namespace(conn.namespace.clone())
        };
        let now = conn.clock.now();
        // derived one namespace at a time, as `list -A` does: the pass is never held whole
        let (warnings, chosen) = crate::ops::inventory::select(
            &crate::ops::inventory::Source::Live,
            &conn,
            &scope,
            &Query {
                selector: self.selector.clone(),
                per_sandbox_label_key: self.per_sandbox_label_key.clone(),
            },
            &self.flags,
            now,
            &|w| self.filter.matches(w, now),
        )
        .await?;
        let targets = chosen.into_iter().map(|(namespace, id)| key(namespace, id)).collect();
        Ok((warnings, targets))
    }
}

/// One context of a bulk write: where its writes go and under which rules.
pub struct WriteContext {
    pub member: Member,
    pub policy: WritePolicy,
    /// Each write asks for the typed id first.
    pub confirming: bool,
    /// Across contexts, the context named in reports.
    pub label: Option<String>,
}

/// One workspace of a write: its context (an index into [`Checked::contexts`]), its key (naming
/// the context across several, as its report will), and the plan when the front-end confirmed
/// and bound it itself ([`rules::bind`]: the TUI's popup showed the preview it is bound to).
#[derive(Clone)]
pub struct Selected {
    pub context: usize,
    pub key: WorkspaceKey<WorkspaceId>,
    pub bound: Option<Plan>,
}

/// Every context's rules checked, nothing sent yet: the contexts that take the write and the
/// workspaces selected there, in the selection's order. Only [`prepare`] and [`confirmed`] make
/// one, so nothing reaches [`run`] unchecked.
pub struct Checked {
    pub contexts: Vec<WriteContext>,
    pub targets: Vec<Selected>,
}

impl Checked {
    /// Some write asks for a typed confirmation (they are then asked one at a time).
    pub fn confirming(&self) -> bool {
        self.contexts.iter().any(|t| t.confirming)
    }
}

/// Select the workspaces in every context and check every context's rules before anything is
/// sent: a refusal no flag lifts is said before any read; a read-only context sends nothing
/// (across several it is left out with its warning); any context over its maxBulk refuses the
/// whole write. `base` is the write policy every context's starts from.
pub async fn prepare(
    fleet: &Fleet,
    selecting: &Selecting,
    request: &Request,
    base: &WritePolicy,
    can_ask: bool,
) -> Result<Checked, WriteError> {
    let verb = request.verb;
    // the rules each connection is written under were decided as it opened, for every front-end
    // (and the write path refuses on its own): a refusal no flag lifts is said before any read
    if let Some(why) = fleet.members.iter().find_map(|m| rules::unrulable(&m.rules)) {
        return Err(WriteError::Unrulable(why.to_string()));
    }
    if fleet.several_contexts && selecting.by_id() {
        return Err(WriteError::IdsAcrossContexts);
    }
    if let Some(why) = rules::yes_across(
        fleet.several_contexts,
        request.yes && !request.any_dry_run(),
        fleet.members.iter().map(|m| (m.conn.context.as_str(), &m.rules)),
    ) {
        return Err(WriteError::Bulk(vec![why]));
    }
    // a typed confirmation where the verb or the context's rules ask for one
    let asks = |m: &Member| rules::asks_typed(Some(&m.rules), verb, request.yes, request.any_dry_run());
    if !can_ask && let Some(m) = fleet.members.iter().find(|m| asks(m)) {
        return Err(WriteError::CannotAsk {
            verb,
            context: m.conn.context.clone(),
        });
    }
    let sends = fleet.members.iter().any(|m| !m.rules.read_only);
    // a server dry run sends (with dryRun=All) and is recorded
    if !request.dry_run && sends {
        base.audit.ready().map_err(WriteError::AuditNotReady)?;
    }
    let selected = fleet
        .each(|member| {
            let context = fleet.row_context(&member);
            selecting.clone().targets(member.conn, context)
        })
        .await?;
    // every context's selection is checked before anything is sent: a refusal sends nothing
    let mut refusals = Vec::new();
    let mut checked = Checked {
        contexts: Vec::new(),
        targets: Vec::new(),
    };
    for (member, (warnings, chosen)) in selected {
        for w in &warnings {
            fleet.warn(&member, w);
        }
        if chosen.is_empty() {
            continue;
        }
        match rules::check(
            &member.rules,
            &member.conn.context,
            fleet.read_only_flag(),
            chosen.len(),
        ) {
            Ok(()) => {}
            // read-only refuses dry runs too, as it always has: one line, nothing read further
            Err(Refusal::ReadOnly(reason)) => {
                let why = format!("{reason}: {} sends no write", verb.as_str());
                if !fleet.several_contexts {
                    return Err(WriteError::ReadOnly(why));
                }
                fleet.fail(&member.conn.context, &why);
                continue;
            }
            Err(Refusal::Bulk(why)) => {
                refusals.push(why);
                continue;
            }
        }
        let index = checked.contexts.len();
        checked.targets.extend(chosen.into_iter().map(|key| Selected {
            context: index,
            key,
            bound: None,
        }));
        checked.contexts.push(WriteContext {
            confirming: asks(&member),
            label: fleet.row_context(&member),
            policy: rules::policy(base, &member.rules),
            member,
        });
    }
    if !refusals.is_empty() {
        return Err(WriteError::Bulk(refusals));
    }
    Ok(checked)
}

/// Writes a front-end confirmed and bound itself, in one context (the TUI's popup: each plan
/// bound by [`rules::bind`] to the preview it showed): the context's rules are checked again here
/// — read-only, maxBulk — before [`run`] sends them through the one batch, as [`prepare`] checks
/// a selection's. `policy` is the context's own ([`rules::policy`], made as it opened: its
/// throttle is the one its front-end abandons on quitting); `label` names the context in the
/// reports (across several).
pub fn confirmed(
    member: Member,
    policy: &WritePolicy,
    label: Option<String>,
    read_only_flag: bool,
    writes: Vec<(WorkspaceKey<WorkspaceId>, Plan)>,
) -> Result<Checked, WriteError> {
    if let Some(why) = rules::unrulable(&member.rules) {
        return Err(WriteError::Unrulable(why.to_string()));
    }
    let sends = writes.iter().any(|(_, plan)| !plan.dry_run);
    match rules::check(&member.rules, &member.conn.context, read_only_flag, writes.len()) {
        Ok(()) => {}
        Err(Refusal::ReadOnly(reason)) => return Err(WriteError::ReadOnly(reason)),
        Err(Refusal::Bulk(why)) => return Err(WriteError::Bulk(vec![why])),
    }
    if sends {
        policy.audit.ready().map_err(WriteError::AuditNotReady)?;
    }
    Ok(Checked {
        targets: writes
            .into_iter()
            .map(|(key, plan)| Selected {
                context: 0,
                key,
                bound: Some(plan),
            })
            .collect(),
        contexts: vec![WriteContext {
            policy: WritePolicy {
                read_only: policy.read_only || member.rules.read_only,
                ..policy.clone()
            },
            confirming: false,
            label,
            member,
        }],
    })
}

/// A write's preview: the same read and checks as the write, nothing sent (a client dry run of
/// `plan`). What a confirmation shows, and what the write is then bound to ([`rules::bind`]).
pub async fn preview(conn: &Connection, policy: &WritePolicy, plan: &Plan) -> Outcome {
    let shown = Plan {
        dry_run: true,
        server_dry_run: false,
        ..plan.clone()
    };
    crate::cluster::write::write(conn, policy, &shown).await
}

/// What a wait after a write holds on to: the pod a resume replaces, the Sandbox written.
pub(crate) struct Landed {
    pod_before: Option<String>,
    pinned: Option<crate::cluster::wait::Pinned>,
}

/// One write through the one write path (`cluster::write::write`), with what its wait needs:
/// every front-end's write goes through here.
pub(crate) async fn send(conn: &Connection, policy: &WritePolicy, plan: &Plan) -> (Outcome, Landed) {
    let pod_before = if plan.verb == Verb::Resume {
        crate::cluster::write::pod_uid_before(conn, &plan.namespace, &plan.id).await
    } else {
        None
    };
    let outcome = crate::cluster::write::write(conn, policy, plan).await;
    let pinned = outcome.pinned();
    (outcome, Landed { pod_before, pinned })
}

impl Landed {
    /// The mode was found already there (nothing was written): the pod seen is no old one.
    pub(crate) fn found_already_there(self) -> Landed {
        Landed {
            pod_before: None,
            ..self
        }
    }

    /// Wait for the write's transition (suspend: the pod gone; resume: Ready with a new pod).
    pub(crate) async fn wait(
        self,
        conn: &Connection,
        plan: &Plan,
        timeout: std::time::Duration,
        progress: impl FnMut(&str, Option<namzu_domain::state::State>),
    ) -> Waited {
        crate::cluster::wait::wait(
            conn,
            &plan.namespace,
            &plan.id,
            plan.verb,
            self.pod_before.as_deref(),
            self.pinned,
            timeout,
            progress,
        )
        .await
    }
}

/// One workspace's result: what the write came to, and its wait's.
pub struct Report {
    /// The workspace written; its context named across contexts only.
    pub key: WorkspaceKey<WorkspaceId>,
    pub outcome: Outcome,
    pub waited: Option<Waited>,
    /// `--take-over` was asked for: finding the mode already there means it was not performed.
    pub take_over: bool,
}

impl Report {
    /// What it came to, once ([`Verdict::of`]).
    pub fn verdict(&self) -> Verdict {
        Verdict::of(&self.outcome, self.waited.as_ref(), self.take_over)
    }

    /// Done as asked ([`Verdict::succeeded`]).
    pub fn succeeded(&self) -> bool {
        self.verdict().succeeded()
    }

    /// The workspace as result lines name it: its id, after its context across several.
    pub fn who(&self) -> String {
        // (a report's key names a context only across several)
        self.key.who(true)
    }

    /// The result's word (`applied`, `refused`, …).
    pub fn result(&self) -> &'static str {
        self.verdict().word()
    }

    /// The workspace as the stop line names it: `namespace/id`, after its context across
    /// several.
    pub fn qualified(&self) -> String {
        self.key.qualified(true)
    }

    pub fn epoch(&self) -> Option<&EpochUse> {
        match &self.outcome {
            Outcome::Applied { epoch, .. } | Outcome::DryRun { epoch, .. } => Some(epoch),
            _ => None,
        }
    }

    /// The exact request sent (or that would be).
    pub fn request(&self) -> Option<&Sent> {
        match &self.outcome {
            Outcome::Applied { request, .. }
            | Outcome::DryRun { request, .. }
            | Outcome::NotApplied { request, .. }
            | Outcome::Raced { request, .. } => Some(request),
            _ => None,
        }
    }

    /// The outcome's sentence, and the wait's after it.
    pub fn detail(&self, verb: Verb) -> String {
        let mut text = present::outcome::outcome(verb, &self.key.namespace, &self.outcome, self.take_over);
        if let Some(w) = &self.waited {
            text.push_str("; ");
            text.push_str(&present::outcome::waited(w));
        }
        text
    }

    /// What a refresh wrote (or would write) and from what.
    pub fn refresh(&self) -> Option<&Refresh> {
        match &self.outcome {
            Outcome::Applied { refresh, .. } | Outcome::DryRun { refresh, .. } => refresh.as_deref(),
            _ => None,
        }
    }

    /// A resume into per-sandbox egress: what this tool could not check is said, every time.
    pub fn per_sandbox_egress(&self) -> bool {
        matches!(
            self.outcome,
            Outcome::Applied {
                per_sandbox_egress: true,
                ..
            } | Outcome::DryRun {
                per_sandbox_egress: true,
                ..
            }
        )
    }
}

/// What a bulk dry run's writes would free or start holding (`domain::resources::what_if`): the
/// requests of the pods a suspend or delete stops (each pod's as admitted), or a resume starts
/// (the pod template's), and the disks (which stay, or go with a delete). Each Sandbox and its
/// pod are read once more (dry runs only).
pub async fn what_if(checked: &Checked, reports: &[Report], verb: Verb) -> String {
    use crate::cluster::resources::PODS;
    use namzu_domain::{object::uid, pod::owned_by, quantities};
    let reads = reports.iter().filter_map(|r| {
        let Outcome::DryRun { mode, .. } = &r.outcome else {
            return None;
        };
        let target = checked.contexts.iter().find(|t| t.label == r.key.context)?;
        let name = r.key.id.sandbox_name();
        Some(async move {
            let conn = &target.member.conn;
            let (sandbox, pod) = futures::join!(
                crate::cluster::resources::get(conn, &SANDBOXES, &r.key.namespace, &name),
                crate::cluster::resources::get(conn, &PODS, &r.key.namespace, &name),
            );
            let sandbox = sandbox.ok().flatten()?;
            // the pod the Sandbox owns holds what it was admitted with; without one, the template
            let pod = pod
                .ok()
                .flatten()
                .filter(|p| uid(&sandbox).is_some_and(|u| owned_by(p, u)));
            let read = quantities::of_workspace(&sandbox, pod.as_ref(), |_| None);
            Some((*mode, read))
        })
    });
    let read: Vec<_> = futures::future::join_all(reads).await.into_iter().flatten().collect();
    quantities::what_if_of(verb, read.iter().map(|(mode, r)| (*mode, r)))
}
