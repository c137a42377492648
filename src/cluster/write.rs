//! THE write path. Every PATCH and DELETE of a Sandbox, from the CLI and the TUI, goes through
//! [`write`]: read-only mode, the fresh GET, the fence, the domain-built body, the send, the
//! library's retry rules, the audit entry, and a typed outcome. There is no other way to write.

use super::audit::AuditLog;
use super::connect::Connection;
use super::error::{ClusterError, Op};
use super::resources::{self, SANDBOXES};
use crate::domain::fence::{self, Decision, EpochChoice, EpochUse, Hold, Send, Verb};
use crate::domain::naming::sandbox_name;
use crate::domain::object::{owner_refs, str_at};
use crate::domain::patch::Mode;
use crate::domain::timefmt::js_iso;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

/// The library's cap on sends of one fenced write.
pub const MAX_SENDS: u32 = 3;
pub const FIELD_MANAGER: &str = "kubectl-namzu";

/// What the caller asks for.
#[derive(Debug, Clone)]
pub struct Plan {
    pub verb: Verb,
    pub namespace: String,
    pub id: String,
    pub epoch: EpochChoice,
    /// Read and check, print the request, send nothing.
    pub dry_run: bool,
    /// The Sandbox uid the user looked at: a replaced Sandbox (same name, new uid) is refused.
    pub expected_uid: Option<String>,
}

/// Where writes are allowed and recorded.
#[derive(Debug, Clone)]
pub struct Guard {
    pub read_only: bool,
    pub audit: AuditLog,
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
        sends: u32,
        object: Option<Value>,
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
        mode: Mode,
        uid: Option<String>,
    },
    /// The fence (or an unconditionable object) refused before anything was sent.
    Refused {
        message: String,
    },
    /// 422 and nothing moved: the body is wrong for this object; not retried.
    NotApplied {
        request: Request,
        message: String,
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
    pub fn landed(&self) -> bool {
        matches!(self, Outcome::Applied { .. })
    }
}

fn request_for(plan: &Plan, send: &Send) -> Request {
    let name = sandbox_name(&plan.id).unwrap_or_default();
    let path = format!(
        "/apis/agents.x-k8s.io/v1beta1/namespaces/{}/sandboxes/{name}",
        plan.namespace
    );
    match send {
        Send::Patch(ops) => Request {
            method: "PATCH",
            path,
            content_type: "application/json-patch+json",
            body: crate::domain::patch::to_json(ops),
        },
        Send::Delete(body) => Request {
            method: "DELETE",
            path,
            content_type: "application/json",
            body: body.clone(),
        },
    }
}

fn claim_owner(sandbox: &Value) -> Option<String> {
    owner_refs(sandbox)
        .iter()
        .find(|r| str_at(r, &["kind"]) == Some("SandboxClaim"))
        .map(|r| str_at(r, &["name"]).unwrap_or("?").to_string())
}

/// Send one request through kube: the body is exactly the one the domain built.
async fn send(conn: &Connection, plan: &Plan, request: &Request) -> Result<Option<Value>, ClusterError> {
    let name = sandbox_name(&plan.id).map_err(|e| ClusterError::Other(e.to_string()))?;
    let op = Op::new(
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
                ..Default::default()
            };
            let ops: json_patch::Patch = serde_json::from_value(request.body.clone()).expect("built ops parse");
            builder.patch(&name, &params, &Patch::<()>::Json(ops))
        }
        _ => builder.delete(&name, &DeleteParams::default()),
    };
    let mut http_request = http_request.map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    *http_request.body_mut() = body;
    let answer: Value = conn.bounded(&op, conn.client.request::<Value>(http_request)).await?;
    Ok(Some(answer))
}

async fn fresh(conn: &Connection, plan: &Plan) -> Result<Option<Value>, ClusterError> {
    let name = sandbox_name(&plan.id).map_err(|e| ClusterError::Other(e.to_string()))?;
    resources::get(conn, &SANDBOXES, &plan.namespace, &name).await
}

/// The answer to a PATCH must be the Sandbox patched: same kind, namespace, name and uid.
fn check_answer(plan: &Plan, answer: &Value, uid: Option<&str>) -> Result<(), ClusterError> {
    let name = sandbox_name(&plan.id).map_err(|e| ClusterError::Other(e.to_string()))?;
    resources::check_identity(answer, &SANDBOXES, &plan.namespace, &name)?;
    let answered = str_at(answer, &["metadata", "uid"]);
    match uid {
        Some(u) if answered != Some(u) => Err(ClusterError::Other(format!(
            "the API server answered the PATCH of {name} with uid {} where {u} was written: not the object written",
            answered.unwrap_or("-")
        ))),
        _ => Ok(()),
    }
}

/// Audit a bulk write that stopped before its end: which workspaces were done, which not started.
pub fn record_stop(
    conn: &Connection,
    guard: &Guard,
    verb: Verb,
    reason: &str,
    done: &[String],
    not_started: &[String],
) {
    guard.audit.record(
        json!({
            "context": conn.context, "server": conn.server, "verb": verb.as_str(), "outcome": "stopped",
            "reason": reason, "done": done, "notStarted": not_started,
        }),
        conn.clock.now(),
    );
}

/// Audit entry for one attempt (or one refusal, with no request).
fn audit(
    guard: &Guard,
    conn: &Connection,
    plan: &Plan,
    epoch: Option<&EpochUse>,
    request: Option<&Request>,
    status: Option<u16>,
    outcome: &str,
) {
    guard.audit.record(
        json!({
            "context": conn.context, "server": conn.server, "namespace": plan.namespace, "workspace": plan.id,
            "verb": plan.verb.as_str(),
            "epochCarried": epoch.map(|e| e.carried), "epochStored": epoch.and_then(|e| e.raw.clone()),
            "request": request.map(Request::to_json), "status": status, "outcome": outcome,
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

/// A refusal when the Sandbox read is not the one this write is about.
fn replaced(guard: &Guard, conn: &Connection, plan: &Plan, identity: Option<&str>, read: &Value) -> Option<Outcome> {
    let uid = str_at(read, &["metadata", "uid"]);
    let expected = identity.filter(|e| uid != Some(*e))?;
    audit(guard, conn, plan, None, None, None, "refused");
    Some(Outcome::Refused {
        message: format!(
            "the Sandbox was replaced (uid {expected} is now {}): a different workspace under the same name; nothing sent",
            uid.unwrap_or("-")
        ),
    })
}

/// Perform one fenced write, start to finish.
pub async fn write(conn: &Connection, guard: &Guard, plan: &Plan) -> Outcome {
    if guard.read_only {
        return Outcome::ReadOnly;
    }
    if let Err(e) = sandbox_name(&plan.id) {
        return Outcome::Refused { message: e.to_string() };
    }
    if !plan.dry_run
        && let Err(message) = guard.audit.ready()
    {
        return Outcome::Failed(ClusterError::Other(message));
    }
    let mut current = match fresh(conn, plan).await {
        Ok(Some(o)) => o,
        Ok(None) if plan.verb == Verb::Delete => return Outcome::AlreadyGone,
        Ok(None) => return Outcome::NotFound,
        Err(e) => return Outcome::Failed(e),
    };
    // the identity the write is about: the one the user looked at, else the first read's; a
    // re-read that finds another uid under the name is a different workspace, never written
    let identity = plan
        .expected_uid
        .clone()
        .or_else(|| str_at(&current, &["metadata", "uid"]).map(str::to_string));
    if let Some(refused) = replaced(guard, conn, plan, identity.as_deref(), &current) {
        return refused;
    }
    if plan.verb == Verb::Delete
        && let Some(claim) = claim_owner(&current)
    {
        return Outcome::ClaimOwned { claim };
    }
    let mut sends = 0;
    let mut choice = plan.epoch;
    loop {
        let decided = fence::resolve(&current, choice)
            .and_then(|e| fence::decide(&current, plan.verb, EpochChoice::Explicit(e), &js_iso(conn.clock.now())));
        let decision = match decided {
            Ok(d) => d,
            Err(Hold::AlreadyThere(mode)) => {
                // after a refused send, the record ends with what became of it
                if sends > 0 {
                    audit(guard, conn, plan, None, None, None, "unchanged");
                }
                return Outcome::Unchanged { mode, object: current };
            }
            Err(hold) => {
                let message = hold.message(plan.verb.as_str(), &plan.id);
                let epoch = match &hold {
                    Hold::Fenced { carried, stored, raw } => carried.map(|c| EpochUse {
                        carried: c,
                        stored: *stored,
                        raw: raw.clone(),
                    }),
                    _ => None,
                };
                audit(guard, conn, plan, epoch.as_ref(), None, None, "refused");
                return Outcome::Refused { message };
            }
        };
        let Decision { epoch, send: what } = decision;
        choice = EpochChoice::Explicit(epoch.carried);
        let request = request_for(plan, &what);
        if plan.dry_run {
            return Outcome::DryRun {
                request,
                epoch,
                mode: Mode::of_sandbox(&current),
                uid: str_at(&current, &["metadata", "uid"]).map(str::to_string),
            };
        }
        sends += 1;
        let sent = send(conn, plan, &request).await.and_then(|answer| {
            // a delete answers with a Status or the object; a patch must answer the object written
            if plan.verb != Verb::Delete
                && let Some(a) = &answer
            {
                check_answer(plan, a, identity.as_deref())?;
            }
            Ok(answer)
        });
        match sent {
            Ok(answer) => {
                audit(guard, conn, plan, Some(&epoch), Some(&request), Some(200), "applied");
                let object = if plan.verb == Verb::Delete { None } else { answer };
                return Outcome::Applied {
                    request,
                    epoch,
                    sends,
                    object,
                };
            }
            Err(e) => {
                let status = status_of(&e);
                match status {
                    // 404/410 on a delete: gone, as asked (a retried delete that had landed too)
                    Some(404 | 410) if plan.verb == Verb::Delete => {
                        audit(guard, conn, plan, Some(&epoch), Some(&request), status, "already-gone");
                        return Outcome::AlreadyGone;
                    }
                    // a 422 on a patch, a 409 on a delete: the condition failed; a landed write
                    // that the client retried can answer 404/409 too — look before saying so
                    Some(422 | 404 | 409) => {}
                    _ => {
                        audit(guard, conn, plan, Some(&epoch), Some(&request), status, "failed");
                        return Outcome::Failed(e);
                    }
                }
                let after = match fresh(conn, plan).await {
                    Ok(Some(o)) => o,
                    Ok(None) if plan.verb == Verb::Delete => {
                        audit(guard, conn, plan, Some(&epoch), Some(&request), status, "already-gone");
                        return Outcome::AlreadyGone;
                    }
                    Ok(None) => {
                        audit(guard, conn, plan, Some(&epoch), Some(&request), status, "not-found");
                        return Outcome::NotFound;
                    }
                    Err(e) => return Outcome::Failed(e),
                };
                if let Some(refused) = replaced(guard, conn, plan, identity.as_deref(), &after) {
                    return refused;
                }
                if fence::shows(&after, plan.verb, epoch.carried) && status != Some(422) {
                    audit(guard, conn, plan, Some(&epoch), Some(&request), status, "applied");
                    return Outcome::Applied {
                        request,
                        epoch,
                        sends,
                        object: Some(after),
                    };
                }
                // a delete's 409 is re-read and retried as it stands (the library's rule); a
                // patch whose 422 moved nothing is wrong for this object and is not retried
                if plan.verb != Verb::Delete && !fence::moved(&current, &after) {
                    audit(guard, conn, plan, Some(&epoch), Some(&request), status, "not-applied");
                    return Outcome::NotApplied {
                        request,
                        message:
                            "the API server did not apply the JSON patch and nothing moved since the read: not retried"
                                .into(),
                    };
                }
                if sends >= MAX_SENDS {
                    audit(guard, conn, plan, Some(&epoch), Some(&request), status, "conflict");
                    return Outcome::Conflict {
                        message: format!("the Sandbox kept changing: {sends} sends were refused; nothing applied"),
                    };
                }
                audit(guard, conn, plan, Some(&epoch), Some(&request), status, "retry");
                current = after;
            }
        }
    }
}

/// The pod uid a resume must see replaced, read just before the write.
pub async fn pod_uid_before(conn: &Connection, namespace: &str, id: &str) -> Option<String> {
    let name = sandbox_name(id).ok()?;
    let pod = resources::get(conn, &resources::PODS, namespace, &name).await.ok()??;
    str_at(&pod, &["metadata", "uid"]).map(str::to_string)
}
