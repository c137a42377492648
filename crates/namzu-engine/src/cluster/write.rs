//! THE write path. Every PATCH and DELETE of a Sandbox, from the CLI and the TUI, goes through
//! [`write`]: read-only mode, the fresh GET, the fence, the domain-built body, the send, the
//! library's retry rules, the audit entry, and a typed outcome. There is no other way to write.
//! The same gate serves the one other delete, of a leaked disk or policy ([`leak`]); a batch's
//! writes share the server's back-pressure ([`throttle`]).

use super::audit::AuditLog;
use super::connect::Connection;
use super::error::{ApiCall, ClusterError};
use super::inventory::TemplateFetch;
use super::resources::{self, SANDBOXES};
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use namzu_domain::annotations::TEMPLATE_LABEL;
use namzu_domain::egress::{Egress, PolicyIndex, PolicyRead, resume_refusal};
use namzu_domain::fence::{self, Change, Decision, EpochChoice, EpochUse, Hold, Verb, WriteBody};
use namzu_domain::naming::{WorkspaceId, is_workspace, validate_namespace};
use namzu_domain::object::{claim_owner, uid};
use namzu_domain::patch::Mode;
use namzu_domain::refresh::{self, Mismatch, Refresh, Refusal, Refused};
use namzu_domain::retry::{self, OnReread, OnStatus, Reread};
use namzu_domain::timefmt::js_iso;
use serde_json::{Value, json};

pub(crate) const FIELD_MANAGER: &str = namzu_domain::writers::THIS_TOOL;

mod leak;
mod restore;
mod throttle;

pub use leak::{DELETE_LEAK_VERB, LeakOutcome, LeakPlan, LeakTarget, RETAIN_VOLUME_VERB, delete_leak, leak_request};

pub use restore::{RESTORE_VERB, RestoreOutcome, restore};
pub use throttle::{MAX_HOLD_SECONDS, MAX_THROTTLED, Throttle};

/// What the caller asks for.
#[derive(Debug, Clone)]
pub struct Plan {
    pub verb: Verb,
    pub namespace: String,
    pub id: WorkspaceId,
    pub epoch: EpochChoice,
    /// Read and check, print the request, send nothing.
    pub dry_run: bool,
    /// Send the fenced write with `dryRun=All`: the server admits and validates it, and
    /// changes nothing (kubectl's `--dry-run=server`); the audit records it as a dry run.
    pub server_dry_run: bool,
    /// The Sandbox uid the user looked at: a replaced Sandbox (same name, new uid) is refused.
    pub expected_uid: Option<String>,
    /// A resume that refreshes the pod template as it wakes (docs/interop.md §14), with the
    /// overlays the caller knows; `None` for every other write.
    pub refresh: Option<refresh::Ask>,
}

/// Where writes are allowed and recorded, and how fast they may go.
#[derive(Debug, Clone)]
pub struct WritePolicy {
    pub read_only: bool,
    pub audit: AuditLog,
    /// Shared by every write of a batch.
    pub throttle: Throttle,
    /// The hosts' per-sandbox egress label key (default `sandbox.namzu.ai/per-sandbox-egress`):
    /// a resume reads the namespace's policies with it (docs/interop.md §13.5).
    pub per_sandbox_label_key: Option<String>,
}

/// The exact request a write sends (or would send).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: &'static str,
    pub path: String,
    pub content_type: &'static str,
    pub body: Value,
}

impl Request {
    pub fn to_json(&self) -> Value {
        json!({"method": self.method, "path": self.path, "contentType": self.content_type, "body": self.body})
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The write landed. `object` is the Sandbox after it (none after a delete).
    Applied {
        request: Request,
        epoch: EpochUse,
        change: Change,
        sends: u32,
        object: Option<Value>,
        /// A resume of a workspace with per-sandbox egress: the host's admission fence was not
        /// re-verified (this tool cannot).
        per_sandbox_egress: bool,
        /// A refresh: what it wrote and from what.
        refresh: Option<Box<Refresh>>,
    },
    /// Nothing to do: the mode already is the one asked for.
    Unchanged {
        mode: Mode,
        object: Value,
    },
    /// Delete of a Sandbox that is not there (or went away meanwhile): success.
    AlreadyGone,
    /// What would be sent, and the mode the fresh read found.
    DryRun {
        request: Request,
        epoch: EpochUse,
        change: Change,
        mode: Mode,
        uid: Option<String>,
        /// As for `Applied`: a resume of a workspace with per-sandbox egress.
        per_sandbox_egress: bool,
        /// A refresh: what it would write and from what (overlays, field changes, hash).
        refresh: Option<Box<Refresh>>,
    },
    /// The fence (or an unconditionable object) refused before anything was sent.
    Refused {
        message: String,
    },
    /// A refresh refused before anything was sent (docs/interop.md §14); the workspace is left
    /// as it was.
    RefreshRefused(Box<Refusal>),
    /// 422 and nothing moved: the body is wrong for this object; not retried.
    NotApplied {
        request: Request,
        message: String,
    },
    /// A refresh's mode test lost: another process resumed the workspace between the read and
    /// the PATCH. Not retried; it runs off-template. `mismatches`: the overlays the refresh would
    /// have written that the running pod template does not carry.
    Raced {
        request: Request,
        template: String,
        mismatches: Vec<Mismatch>,
    },
    /// Still changing under us after the send cap.
    Conflict {
        message: String,
    },
    NotFound,
    /// A SandboxClaim owns the Sandbox: deleting it only makes the claim recreate it.
    ClaimOwned {
        claim: String,
    },
    ReadOnly,
    Failed(ClusterError),
}

impl Outcome {
    /// No Sandbox under the name: a delete finds its work done, any other verb nothing to do.
    pub(crate) fn absent(verb: Verb) -> Outcome {
        if verb == Verb::Delete {
            Outcome::AlreadyGone
        } else {
            Outcome::NotFound
        }
    }

    pub fn landed(&self) -> bool {
        matches!(self, Outcome::Applied { .. })
    }

    /// What a wait after this write holds on to: the Sandbox it wrote (or found already there).
    pub(crate) fn pinned(&self) -> Option<super::wait::Pinned> {
        match self {
            Outcome::Applied { object: Some(o), .. } | Outcome::Unchanged { object: o, .. } => {
                Some(super::wait::Pinned::of(o))
            }
            _ => None,
        }
    }
}

/// The exact request for a body the domain built: its path is the URI sent, query included (a
/// PATCH's `fieldManager`, a server dry run's `dryRun=All`), so what is printed and audited is
/// what the server received.
fn request_for(plan: &Plan, body: &WriteBody) -> Request {
    let mut query = Vec::new();
    if plan.server_dry_run {
        query.push("dryRun=All".to_string());
    }
    if matches!(body, WriteBody::Patch { .. }) {
        query.push(format!("fieldManager={FIELD_MANAGER}"));
    }
    let path = format!(
        "/apis/agents.x-k8s.io/v1beta1/namespaces/{}/sandboxes/{}{}",
        plan.namespace,
        plan.id.sandbox_name(),
        if query.is_empty() {
            String::new()
        } else {
            format!("?{}", query.join("&"))
        }
    );
    match body {
        WriteBody::Patch { ops, .. } => Request {
            method: "PATCH",
            path,
            content_type: "application/json-patch+json",
            body: namzu_domain::patch::to_json(ops),
        },
        WriteBody::Delete(options) => Request {
            method: "DELETE",
            path,
            content_type: "application/json",
            body: options.clone(),
        },
    }
}

/// Send one request through kube: the body is exactly the one the domain built.
async fn send(conn: &Connection, plan: &Plan, request: &Request) -> Result<Value, ClusterError> {
    let name = plan.id.sandbox_name();
    let op = ApiCall::new(
        if request.method == "PATCH" { "patch" } else { "delete" },
        &SANDBOXES,
        Some(&plan.namespace),
        &name,
    );
    let url = <DynamicObject as kube::Resource>::url_path(&SANDBOXES.api_resource(), Some(&plan.namespace));
    let builder = kube::core::Request::new(url);
    let body = serde_json::to_vec(&request.body).expect("JSON body");
    let http_request = match request.method {
        "PATCH" => {
            let params = PatchParams {
                field_manager: Some(FIELD_MANAGER.into()),
                dry_run: plan.server_dry_run,
                ..Default::default()
            };
            let ops: json_patch::Patch = serde_json::from_value(request.body.clone()).expect("built ops parse");
            builder.patch(&name, &params, &Patch::<()>::Json(ops))
        }
        _ => builder.delete(
            &name,
            &DeleteParams {
                dry_run: plan.server_dry_run,
                ..Default::default()
            },
        ),
    };
    let mut http_request = http_request.map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    *http_request.body_mut() = body;
    // the URI sent is the request's own path and query (`request_for`), exactly as printed and
    // audited: kube's builder puts a delete's dryRun in the body and may start a query with `?&`
    *http_request.uri_mut() = request
        .path
        .parse()
        .map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    conn.bounded(&op, conn.client.request::<Value>(http_request)).await
}

/// The answer to a PATCH must be the Sandbox patched: same kind, namespace, name and uid.
fn check_answer(plan: &Plan, answer: &Value, identity: Option<&str>) -> Result<(), ClusterError> {
    let name = plan.id.sandbox_name();
    resources::check_identity(answer, &SANDBOXES, &plan.namespace, &name)?;
    match identity {
        Some(u) if uid(answer) != Some(u) => Err(ClusterError::Other(format!(
            "the API server answered the PATCH of {name} with uid {} where {u} was written: not the object written",
            uid(answer).unwrap_or("-")
        ))),
        _ => Ok(()),
    }
}

/// Audit a bulk write (or `leaks --delete`) that stopped before its end: which objects were done,
/// which not started.
pub(crate) fn record_stop(
    conn: &Connection,
    policy: &WritePolicy,
    verb: &str,
    reason: &str,
    done: &[String],
    not_started: &[String],
) {
    policy.audit.record(
        json!({
            "context": conn.context, "server": conn.server, "verb": verb, "outcome": "stopped",
            "reason": reason, "done": done, "notStarted": not_started,
        }),
        conn.clock.now(),
    );
}

fn status_of(e: &ClusterError) -> Option<u16> {
    match e {
        ClusterError::Api { code, .. } => Some(*code),
        ClusterError::Forbidden { .. } => Some(403),
        ClusterError::Unauthorized { .. } => Some(401),
        _ => None,
    }
}

/// One write in progress: what it is about, and the audit entries it records as it goes.
struct Attempt<'a> {
    conn: &'a Connection,
    policy: &'a WritePolicy,
    plan: &'a Plan,
    /// The uid the write is about: the one the user looked at, else the first read's.
    identity: Option<String>,
    sends: u32,
    /// What ties this write's audit entries together: its intents and their outcome.
    id: String,
    /// The last send was not made: its intent could not be appended to the audit log.
    unsent: bool,
}

/// A write's audit id: unique on this machine (process, instant, count).
fn write_id(conn: &Connection) -> String {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(
        "{}-{}-{n}",
        std::process::id(),
        conn.clock.now().timestamp_nanos_opt().unwrap_or_default()
    )
}

impl Attempt<'_> {
    /// One audit line: the epoch carried, the request (none for a refusal), its status, the result.
    fn record(&self, epoch: Option<&EpochUse>, request: Option<&Request>, status: Option<u16>, outcome: &str) {
        self.policy
            .audit
            .record(self.entry(epoch, request, status, outcome), self.conn.clock.now());
    }

    /// Before a send: its intent in the audit log (write-ahead), or why it could not be
    /// appended — and then nothing is sent.
    fn intend(&self, epoch: &EpochUse, request: &Request) -> Result<(), ClusterError> {
        let entry = self.entry(Some(epoch), Some(request), None, super::audit::INTENT);
        self.policy
            .audit
            .intend(entry, self.conn.clock.now())
            .map_err(|why| ClusterError::Other(format!("{why}; nothing sent")))
    }

    fn entry(&self, epoch: Option<&EpochUse>, request: Option<&Request>, status: Option<u16>, outcome: &str) -> Value {
        let (conn, plan) = (self.conn, self.plan);
        let mut entry = json!({
            "write": self.id,
            "context": conn.context, "server": conn.server, "namespace": plan.namespace,
            "workspace": plan.id.as_str(), "verb": plan.verb.as_str(),
            "epochCarried": epoch.filter(|e| !e.unfenced).map(|e| e.carried), "epochStored": epoch.and_then(|e| e.raw.clone()),
            "request": request.map(Request::to_json), "status": status, "outcome": outcome,
        });
        if plan.refresh.is_some() {
            entry["refreshTemplate"] = json!(true);
        }
        if let Some(rules) = &self.conn.rules.file {
            entry["rules"] = json!(rules);
        }
        if plan.server_dry_run {
            entry["dryRun"] = json!("All");
        }
        entry
    }

    async fn read(&self) -> Result<Option<Value>, ClusterError> {
        resources::get(
            self.conn,
            &SANDBOXES,
            &self.plan.namespace,
            &self.plan.id.sandbox_name(),
        )
        .await
    }

    /// A refusal when the Sandbox read is not the one this write is about.
    fn replaced(&self, read: &Value) -> Option<Outcome> {
        let expected = self.identity.as_deref().filter(|e| uid(read) != Some(*e))?;
        self.record(None, None, None, "refused");
        Some(Outcome::Refused {
            message: format!(
                "the Sandbox was replaced (uid {expected} is now {}): a different workspace under the same name; nothing sent",
                uid(read).unwrap_or("-")
            ),
        })
    }

    /// The fence's verdict on `current`, or the outcome that ends the write here.
    fn decide(&self, current: &Value, choice: EpochChoice) -> Result<Decision, Box<Outcome>> {
        let decided = fence::resolve(current, choice).and_then(|e| {
            fence::decide(
                current,
                self.plan.verb,
                EpochChoice::Explicit(e),
                &js_iso(self.conn.clock.now()),
            )
        });
        decided.map_err(|hold| {
            Box::new(match hold {
                Hold::AlreadyThere(mode) => {
                    // after a refused send, the record ends with what became of it
                    if self.sends > 0 {
                        self.record(None, None, None, "unchanged");
                    }
                    Outcome::Unchanged {
                        mode,
                        object: current.clone(),
                    }
                }
                hold => *self.refused(Refused::Fence(hold)),
            })
        })
    }

    /// The refresh's verdict on `current` against the template read once (docs/interop.md §14),
    /// or the outcome that ends the write here.
    fn decide_refresh(
        &self,
        current: &Value,
        template: &TemplateFetch,
        ask: &refresh::Ask,
        choice: EpochChoice,
    ) -> Result<(Decision, Refresh), Box<Outcome>> {
        let now = js_iso(self.conn.clock.now());
        refresh::decide(current, template.as_read(), ask, choice, &now).map_err(|refused| self.refused(refused))
    }

    /// A refresh refused before anything was sent, recorded.
    fn refused(&self, refused: Refused) -> Box<Outcome> {
        Box::new(match refused {
            Refused::Fence(hold) => {
                let epoch = match &hold {
                    Hold::Fenced { carried, stored, raw } => carried.map(|c| EpochUse {
                        carried: c,
                        stored: *stored,
                        raw: raw.clone(),
                        unfenced: false,
                    }),
                    _ => None,
                };
                self.record(epoch.as_ref(), None, None, "refused");
                Outcome::Refused {
                    message: hold.message(self.plan.verb.as_str(), self.plan.id.as_str()),
                }
            }
            Refused::Refusal(r) => {
                self.record(None, None, None, "refused");
                Outcome::RefreshRefused(Box::new(r))
            }
        })
    }

    /// Before a resume: read the namespace's CiliumNetworkPolicies and refuse when one that
    /// selects this workspace is not its Sandbox's (`domain::egress::resume_refusal`). `Ok` says
    /// whether the workspace has per-sandbox egress.
    async fn egress_check(&self, current: &Value) -> Result<bool, Box<Outcome>> {
        let flags = namzu_domain::drift::OverlayFlags {
            per_sandbox_label_key: self.policy.per_sandbox_label_key.clone(),
            ..Default::default()
        };
        let read = match super::policies::read(self.conn, Some(&self.plan.namespace)).await {
            Ok(r) => r,
            Err(e) => return Err(Box::new(Outcome::Failed(e))),
        };
        let index = read.map(|v| PolicyIndex::new(v, flags.per_sandbox_key()));
        if let Some(message) = resume_refusal(current, &flags, index.as_ref()) {
            self.record(None, None, None, "refused");
            return Err(Box::new(Outcome::Refused { message }));
        }
        Ok(Egress::of(current, &flags, PolicyRead::NotServed).per_sandbox.is_some())
    }

    /// Send `request`; the answer must be the object written (a delete may answer a Status). A
    /// 429 was not processed: the whole batch holds back as long as it asks, then it is resent.
    async fn send(&mut self, epoch: &EpochUse, request: &Request) -> Result<Value, ClusterError> {
        self.sends += 1;
        let mut throttled = 0;
        let answer = loop {
            if !self.policy.throttle.wait().await {
                return Err(ClusterError::Other(
                    "interrupted while the API server held writes back (429): not sent".into(),
                ));
            }
            // write-ahead: the intent is in the log before the request leaves
            if let Err(e) = self.intend(epoch, request) {
                self.unsent = true;
                return Err(e);
            }
            match send(self.conn, self.plan, request).await {
                Err(e) => throttle::resend_after(e, &mut throttled, &self.policy.throttle)?,
                Ok(answer) => break answer,
            }
        };
        if self.plan.verb != Verb::Delete {
            check_answer(self.plan, &answer, self.identity.as_deref())?;
        }
        Ok(answer)
    }
}

/// Why a write may not be sent at all, decided before any read — the same gate for every write
/// this path sends (a Sandbox's mode change or delete, a leaked object's delete).
enum Gate {
    Refused(String),
    ReadOnly,
    Failed(ClusterError),
}

/// The gate of every write: the rules this connection is written under (decided at its open for
/// every front-end: refused here whatever the caller built its policy from), read-only mode, a
/// namespace that may reach a URL, an audit log that can record what is sent — and has recorded
/// what was (an append that failed refuses every write after it) — and the pinned clock
/// (`KUBECTL_NAMZU_NOW`, a test hook: its stamps and audit times never reach a real cluster).
async fn gate(conn: &Connection, policy: &WritePolicy, namespace: &str, dry_run: bool) -> Result<(), Gate> {
    if let Some(why) = &conn.rules.refusal {
        return Err(Gate::Refused(format!("{why}: nothing sent")));
    }
    if policy.read_only || conn.rules.read_only {
        return Err(Gate::ReadOnly);
    }
    validate_namespace(namespace).map_err(|e| Gate::Refused(e.to_string()))?;
    if dry_run {
        return Ok(());
    }
    let unrecorded = policy
        .audit
        .failure()
        .map(|why| format!("{why}: no write is sent after one the log could not record"));
    if let Some(m) = unrecorded.or_else(|| policy.audit.ready().err()) {
        return Err(Gate::Failed(ClusterError::Other(m)));
    }
    if conn.clock.pinned() && !conn.is_simulated().await {
        return Err(Gate::Refused(format!(
            "{} pins the clock (a test hook): no write is sent to a server other than the simulated cluster; nothing sent (unset it)",
            namzu_clock::NOW_ENV
        )));
    }
    Ok(())
}

/// Perform one fenced write, start to finish: the gate, the read that vets the target, what a
/// refresh or a resume needs read first, then the sends until one settles.
pub(crate) async fn write(conn: &Connection, policy: &WritePolicy, plan: &Plan) -> Outcome {
    if let Err(stop) = gate(conn, policy, &plan.namespace, plan.dry_run).await {
        return match stop {
            Gate::Refused(message) => Outcome::Refused { message },
            Gate::ReadOnly => Outcome::ReadOnly,
            Gate::Failed(e) => Outcome::Failed(e),
        };
    }
    let mut attempt = Attempt {
        conn,
        policy,
        plan,
        identity: plan.expected_uid.clone(),
        sends: 0,
        id: write_id(conn),
        unsent: false,
    };
    let current = match attempt.vetted_read().await {
        Ok(current) => current,
        Err(stop) => return *stop,
    };
    let prepared = match attempt.prepare(&current).await {
        Ok(prepared) => prepared,
        Err(stop) => return *stop,
    };
    attempt.send_until_settled(current, &prepared).await
}

/// What a write reads once before its first send: a refresh's ask and template, and whether a
/// resume wakes into the workspace's own per-sandbox egress grant.
struct Prepared {
    ask: Option<refresh::Ask>,
    template: Option<TemplateFetch>,
    per_sandbox_egress: bool,
}

/// One send's request and what it carries, kept for the outcome it ends in.
struct Sent {
    request: Request,
    epoch: EpochUse,
    change: Change,
    refreshed: Option<Box<Refresh>>,
}

/// After a send that failed: settled (an outcome), or read again and to be sent again.
enum Next {
    Settled(Outcome),
    Resend(Value),
}

impl Attempt<'_> {
    /// The first read, vetted: the object is there, is the one asked for (its uid), is a
    /// workspace, and is not a claim's to delete.
    async fn vetted_read(&mut self) -> Result<Value, Box<Outcome>> {
        let plan = self.plan;
        let current = match self.read().await {
            Ok(Some(o)) => o,
            Ok(None) => return Err(Box::new(Outcome::absent(plan.verb))),
            Err(e) => return Err(Box::new(Outcome::Failed(e))),
        };
        // a re-read that finds another uid under the name is a different workspace, never written
        self.identity = self.identity.take().or_else(|| uid(&current).map(str::to_string));
        if let Some(refused) = self.replaced(&current) {
            return Err(Box::new(refused));
        }
        // a Sandbox under the prefix without the library's template label is not a workspace:
        // listed nowhere, written never
        if !is_workspace(&current) {
            self.record(None, None, None, "refused");
            return Err(Box::new(Outcome::Refused {
                message: format!(
                    "{} is not a workspace (no {TEMPLATE_LABEL} label on its pod template): not written",
                    plan.id.sandbox_name()
                ),
            }));
        }
        if plan.verb == Verb::Delete
            && let Some(claim) = claim_owner(&current)
        {
            return Err(Box::new(Outcome::ClaimOwned { claim: claim.into() }));
        }
        Ok(current)
    }

    /// What is read once before the first send; a refresh or a resume refused here sends nothing.
    async fn prepare(&self, current: &Value) -> Result<Prepared, Box<Outcome>> {
        let plan = self.plan;
        // a refresh (docs/interop.md §14): the host's per-sandbox label key unless the caller named one
        let ask = plan.refresh.clone().map(|mut ask| {
            if ask.flags.per_sandbox_label_key.is_none() {
                ask.flags.per_sandbox_label_key = self.policy.per_sandbox_label_key.clone();
            }
            ask
        });
        // a refresh of a Running workspace (or one fenced out) is refused before anything else is read
        if let Some(ask) = &ask
            && let Err(refused) = refresh::admit(current, plan.epoch, &ask.flags)
        {
            return Err(self.refused(refused));
        }
        // a resume must not wake the workspace into a per-sandbox egress grant that is not its own:
        // checked against the uid the cluster reports now, before anything is sent
        let per_sandbox_egress = match plan.verb {
            Verb::Resume => self.egress_check(current).await?,
            _ => false,
        };
        // the template a refresh writes is read once; retries rebuild the body from it
        let template = match &ask {
            Some(_) => Some(
                super::detail::template_of(self.conn, &plan.namespace, current)
                    .await
                    .map_err(|e| Box::new(Outcome::Failed(e)))?,
            ),
            None => None,
        };
        Ok(Prepared {
            ask,
            template,
            per_sandbox_egress,
        })
    }

    /// Decide, send, and after a failed send read again, until the write settles.
    async fn send_until_settled(&mut self, mut current: Value, p: &Prepared) -> Outcome {
        let plan = self.plan;
        let mut choice = plan.epoch;
        loop {
            let decided = match (&p.ask, &p.template) {
                (Some(ask), Some(template)) => self
                    .decide_refresh(&current, template, ask, choice)
                    .map(|(d, r)| (d, Some(Box::new(r)))),
                _ => self.decide(&current, choice).map(|d| (d, None)),
            };
            let (Decision { epoch, body }, refreshed) = match decided {
                Ok(d) => d,
                Err(outcome) => return *outcome,
            };
            // retries carry the epoch resolved from the first read
            choice = EpochChoice::Explicit(epoch.carried);
            let sent = Sent {
                request: request_for(plan, &body),
                change: body.change(),
                epoch,
                refreshed,
            };
            // what a dry run answers, read here (client) or sent and admitted (server)
            let dry_run = |sent: Sent| Outcome::DryRun {
                request: sent.request,
                epoch: sent.epoch,
                change: sent.change,
                mode: Mode::of_sandbox(&current),
                uid: uid(&current).map(str::to_string),
                per_sandbox_egress: p.per_sandbox_egress,
                refresh: sent.refreshed,
            };
            if plan.dry_run {
                return dry_run(sent);
            }
            let error = match self.send(&sent.epoch, &sent.request).await {
                // the server admitted and validated it, and changed nothing
                Ok(_) if plan.server_dry_run => {
                    self.record(Some(&sent.epoch), Some(&sent.request), Some(200), "dry-run");
                    return dry_run(sent);
                }
                Ok(answer) => {
                    self.record(Some(&sent.epoch), Some(&sent.request), Some(200), "applied");
                    let object = (plan.verb != Verb::Delete).then_some(answer);
                    return self.applied(sent, object, p.per_sandbox_egress);
                }
                // (the log cannot take the outcome either: the refusal is the command's to say)
                Err(e) if self.unsent => return Outcome::Failed(e),
                Err(e) => e,
            };
            match self
                .after_failed_send(error, sent, &current, p.per_sandbox_egress)
                .await
            {
                Next::Settled(outcome) => return outcome,
                Next::Resend(after) => current = after,
            }
        }
    }

    fn applied(&self, sent: Sent, object: Option<Value>, per_sandbox_egress: bool) -> Outcome {
        Outcome::Applied {
            request: sent.request,
            epoch: sent.epoch,
            change: sent.change,
            sends: self.sends,
            object,
            per_sandbox_egress,
            refresh: sent.refreshed,
        }
    }

    /// A send failed: its status decides at once, or the object is read again and what moved
    /// since the read `before` decides.
    async fn after_failed_send(
        &self,
        error: ClusterError,
        sent: Sent,
        before: &Value,
        per_sandbox_egress: bool,
    ) -> Next {
        let status = status_of(&error);
        let unanswered = matches!(error, ClusterError::Timeout { .. } | ClusterError::Unreachable { .. });
        let record = |word: &str| self.record(Some(&sent.epoch), Some(&sent.request), status, word);
        match retry::on_status(self.plan.verb, status, unanswered) {
            OnStatus::AlreadyGone => {
                record("already-gone");
                return Next::Settled(Outcome::AlreadyGone);
            }
            OnStatus::Failed => {
                record("failed");
                return Next::Settled(Outcome::Failed(error));
            }
            OnStatus::Reread => {}
        }
        let after = match self.read().await {
            Ok(after) => after,
            Err(e) => return Next::Settled(Outcome::Failed(e)),
        };
        let facts = Reread {
            verb: self.plan.verb,
            status,
            unanswered,
            sends: self.sends,
            identity: self.identity.as_deref(),
            before,
            after: after.as_ref(),
            carried: sent.epoch.carried,
        };
        let verdict = match &sent.refreshed {
            Some(r) => retry::on_refresh_reread(facts, &r.hash),
            None => retry::on_reread(facts),
        };
        self.settle(verdict, after, error, sent, per_sandbox_egress)
    }

    /// What the re-read's verdict makes of the write (each recorded in the audit log).
    fn settle(
        &self,
        verdict: OnReread,
        after: Option<Value>,
        error: ClusterError,
        sent: Sent,
        per_sandbox_egress: bool,
    ) -> Next {
        let record = |word: &str| self.record(Some(&sent.epoch), Some(&sent.request), status_of(&error), word);
        Next::Settled(match verdict {
            OnReread::AlreadyGone => {
                record("already-gone");
                Outcome::AlreadyGone
            }
            OnReread::NotFound => {
                record("not-found");
                Outcome::NotFound
            }
            OnReread::Replaced => {
                let after = after.expect("a replaced object was read");
                self.replaced(&after).expect("another uid")
            }
            OnReread::Landed => {
                record("applied");
                self.applied(sent, after, per_sandbox_egress)
            }
            OnReread::NotApplied => {
                record("not-applied");
                Outcome::NotApplied {
                    request: sent.request,
                    message:
                        "the API server did not apply the JSON patch and nothing moved since the read: not retried"
                            .into(),
                }
            }
            OnReread::Raced => {
                record("not-applied");
                // only a refresh's re-read, which read an object, answers Raced
                let (Some(after), Some(refreshed)) = (after, sent.refreshed) else {
                    return Next::Settled(Outcome::Failed(error));
                };
                Outcome::Raced {
                    request: sent.request,
                    mismatches: refresh::mismatches(&after, &refreshed.overlays),
                    template: refreshed.template,
                }
            }
            OnReread::Conflict => {
                record("conflict");
                Outcome::Conflict {
                    message: format!(
                        "the Sandbox kept changing: {} sends were refused; nothing applied",
                        self.sends
                    ),
                }
            }
            OnReread::Unanswered => {
                record("failed");
                Outcome::Failed(error)
            }
            OnReread::Resend => {
                record("retry");
                return Next::Resend(after.expect("a moved object was read"));
            }
        })
    }
}

/// The pod uid a resume must see replaced, read just before the write.
pub(crate) async fn pod_uid_before(conn: &Connection, namespace: &str, id: &WorkspaceId) -> Option<String> {
    let pod = resources::get(conn, &resources::PODS, namespace, &id.sandbox_name())
        .await
        .ok()??;
    uid(&pod).map(str::to_string)
}
