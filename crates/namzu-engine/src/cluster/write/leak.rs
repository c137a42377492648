//! The one delete of a leaked object (`domain/leaks.rs`): an orphaned disk or per-sandbox policy,
//! through the same gate as every Sandbox write (rules, read-only, namespace, audit readiness),
//! fenced on the uid and resourceVersion the user saw, recorded in the audit log.

use super::*;

/// The audit log's verb for a leak delete (its intents, outcomes and a stop).
pub const DELETE_LEAK_VERB: &str = "delete-leak";

/// What kind of leaked object a [`LeakPlan`] deletes (`domain/leaks.rs`): a disk or a
/// per-sandbox policy. Nothing else is deleted through [`delete_leak`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeakTarget {
    Disk,
    Policy,
}

impl LeakTarget {
    fn kind(self) -> &'static resources::ApiKind {
        match self {
            LeakTarget::Disk => &crate::cluster::leaks::LEAK_PVCS,
            LeakTarget::Policy => &crate::cluster::leaks::LEAK_POLICIES,
        }
    }
}

/// One DELETE of a leaked object, as the report read it: the uid and resourceVersion it was
/// judged at are the DELETE's preconditions.
#[derive(Debug, Clone)]
pub struct LeakPlan {
    pub target: LeakTarget,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    /// Read and check, say the request, send nothing.
    pub dry_run: bool,
    /// Send it with `dryRun=All`: the API server checks it and deletes nothing.
    pub server_dry_run: bool,
    /// A detached disk (one the controller would re-adopt) may be deleted: `--include-detached`.
    pub allow_detached: bool,
    /// The context's rules delete only what was quarantined this many days ago, untouched since.
    pub quarantine_days: Option<i64>,
    /// Mark it (`leaks --quarantine`) instead of deleting it.
    pub quarantine_only: bool,
}

impl LeakPlan {
    /// `persistentvolumeclaim` or `ciliumnetworkpolicy`, as kubectl names the resource.
    pub fn target_kind(&self) -> &'static str {
        match self.target {
            LeakTarget::Disk => "persistentvolumeclaim",
            LeakTarget::Policy => "ciliumnetworkpolicy",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum LeakOutcome {
    Deleted {
        request: Request,
        /// What was kept for an undo, in words (the volume left `Retain`, the tombstone).
        kept: Option<String>,
    },
    /// Marked by `leaks --quarantine` (a conditional JSON Patch of two annotations).
    Quarantined {
        request: Request,
    },
    DryRun {
        request: Request,
    },
    /// Already gone: nothing to do.
    AlreadyGone,
    /// Refused before anything was sent (or by the API server's preconditions).
    Refused {
        message: String,
    },
    ReadOnly,
    Failed(ClusterError),
}

/// The DELETE of a leaked object: its path and its DeleteOptions with both preconditions.
pub fn leak_request(plan: &LeakPlan) -> Request {
    let kind = plan.target.kind();
    let base = if kind.group.is_empty() {
        format!("/api/{}", kind.version)
    } else {
        format!("/apis/{}/{}", kind.group, kind.version)
    };
    let mut body = json!({
        "kind": "DeleteOptions", "apiVersion": "v1",
        "preconditions": {"uid": plan.uid, "resourceVersion": plan.resource_version},
        "propagationPolicy": "Background",
    });
    if plan.server_dry_run {
        body["dryRun"] = json!(["All"]);
    }
    Request {
        method: "DELETE",
        path: format!(
            "{base}/namespaces/{}/{}/{}{}",
            plan.namespace,
            kind.plural,
            plan.name,
            if plan.server_dry_run { "?dryRun=All" } else { "" }
        ),
        content_type: "application/json",
        body,
    }
}

/// Delete one leaked object through the same checks as every write: the connection's rules
/// (read-only included), the pinned-clock guard, an audit log that records the intent before
/// the send. A fresh GET first: a disk whose uid or resourceVersion moved, or that a Sandbox of
/// its name (re-created) or a Sandbox that exists (by owner uid) now claims, is refused; the
/// DELETE carries uid and resourceVersion preconditions, so a change after that GET is refused by
/// the API server (409) and nothing is deleted.
pub async fn delete_leak(conn: &Connection, policy: &WritePolicy, plan: &LeakPlan) -> LeakOutcome {
    if let Err(stop) = gate(conn, policy, &plan.namespace, plan.dry_run).await {
        return match stop {
            Gate::Refused(message) => LeakOutcome::Refused { message },
            Gate::ReadOnly => LeakOutcome::ReadOnly,
            Gate::Failed(e) => LeakOutcome::Failed(e),
        };
    }
    let kind = plan.target.kind();
    let request = leak_request(plan);
    let id = write_id(conn);
    let entry = |status: Option<u16>, outcome: &str| {
        let mut entry = json!({
            "write": id, "context": conn.context, "server": conn.server, "namespace": plan.namespace,
            "workspace": plan.name, "verb": DELETE_LEAK_VERB, "kind": kind.kind,
            "request": request.to_json(), "status": status, "outcome": outcome,
        });
        if let Some(rules) = &conn.rules.file {
            entry["rules"] = json!(rules);
        }
        entry
    };
    let refuse = |message: String| {
        policy.audit.record(entry(None, "refused"), conn.clock.now());
        LeakOutcome::Refused { message }
    };
    let current = match resources::get(conn, kind, &plan.namespace, &plan.name).await {
        Ok(Some(o)) => o,
        Ok(None) => return LeakOutcome::AlreadyGone,
        Err(e) => return LeakOutcome::Failed(e),
    };
    if let Err(why) = unchanged(plan, &current) {
        return refuse(why);
    }
    // every tie that could make it still needed, read again now and judged by the listing's own
    // rule: owners of any kind, claims, pools, the Sandbox of its name, labels, pods mounting it
    if let Err(why) = still_left_behind(conn, plan, &current).await {
        return match why {
            Recheck::InUse(why) => refuse(format!("{} {} {why}; nothing sent", kind.kind, plan.name)),
            Recheck::Failed(e) => LeakOutcome::Failed(e),
        };
    }
    if plan.quarantine_only {
        return quarantine(conn, policy, plan, &current, &entry).await;
    }
    if let Some(why) = quarantine_refusal(plan, &current, conn.clock.now()) {
        return refuse(format!("{} {} {why}; nothing sent", kind.kind, plan.name));
    }
    if plan.dry_run {
        return LeakOutcome::DryRun { request };
    }
    // what can be kept for an undo is kept before the DELETE: the volume (Retain), the object
    let undo = match keep_for_undo(conn, policy, plan, &current, &id).await {
        Ok(undo) => undo,
        Err(why) => return refuse(format!("{why}; nothing sent")),
    };
    let stone = undo.stone.as_deref();
    let answer = match send_throttled(conn, policy, plan, &request, &undo, &entry).await {
        Ok(answer) => answer,
        Err(stop) => return stop,
    };
    // a DELETE the server answered and refused deleted nothing: nothing is left for an undo; one
    // whose answer never came may have landed — the tombstone and the kept volume stay
    if let Err(e) = &answer
        && status_of(e).is_some()
    {
        drop_stone(stone);
        undo_retain(conn, policy, plan, undo.retained.as_ref()).await;
    }
    match answer {
        Ok(_) => {
            // a server dry run deleted nothing: the audit says so, as the Sandbox path's does
            let recorded = if plan.server_dry_run { "dry-run" } else { "applied" };
            policy.audit.record(entry(Some(200), recorded), conn.clock.now());
            let kept = kept_words(&undo);
            LeakOutcome::Deleted { request, kept }
        }
        Err(e) => {
            let status = status_of(&e);
            match status {
                Some(404) => {
                    policy.audit.record(entry(status, "already-gone"), conn.clock.now());
                    LeakOutcome::AlreadyGone
                }
                Some(409) => {
                    policy.audit.record(entry(status, "refused"), conn.clock.now());
                    LeakOutcome::Refused {
                        message: format!(
                            "{} {} changed between the check and the DELETE: its preconditions refused it; nothing deleted",
                            kind.kind, plan.name
                        ),
                    }
                }
                _ => {
                    policy.audit.record(entry(status, "failed"), conn.clock.now());
                    LeakOutcome::Failed(e)
                }
            }
        }
    }
}

/// The object read now is the one reported: the same uid and resourceVersion.
fn unchanged(plan: &LeakPlan, current: &Value) -> Result<(), String> {
    if uid(current) != Some(plan.uid.as_str()) {
        return Err(format!(
            "{} {} was replaced (uid {} is now {}): not the object reported; nothing sent",
            plan.target.kind().kind,
            plan.name,
            plan.uid,
            uid(current).unwrap_or("-")
        ));
    }
    let rv = current.pointer("/metadata/resourceVersion").and_then(Value::as_str);
    if rv != Some(plan.resource_version.as_str()) {
        return Err(format!(
            "{} {} changed since it was reported (resourceVersion {} is now {}): run leaks again; nothing sent",
            plan.target.kind().kind,
            plan.name,
            plan.resource_version,
            rv.unwrap_or("-")
        ));
    }
    Ok(())
}

/// Send the DELETE, its intent logged first; a 429 holds it and it is resent, as every write's
/// is (`throttle.rs`). `Err` is the outcome when it could not be sent (the undo put back).
async fn send_throttled(
    conn: &Connection,
    policy: &WritePolicy,
    plan: &LeakPlan,
    request: &Request,
    undo: &Undo,
    entry: &(dyn Fn(Option<u16>, &str) -> Value + Sync),
) -> Result<Result<Value, ClusterError>, LeakOutcome> {
    let mut throttled = 0;
    let stone = undo.stone.as_deref();
    loop {
        if !policy.throttle.wait().await {
            drop_stone(stone);
            undo_retain(conn, policy, plan, undo.retained.as_ref()).await;
            return Err(LeakOutcome::Failed(ClusterError::Other(
                "interrupted while the API server held writes back (429): not sent".into(),
            )));
        }
        // write-ahead: the intent is in the log before the request leaves
        if let Err(why) = policy
            .audit
            .intend(entry(None, crate::cluster::audit::INTENT), conn.clock.now())
        {
            drop_stone(stone);
            undo_retain(conn, policy, plan, undo.retained.as_ref()).await;
            return Err(LeakOutcome::Failed(ClusterError::Other(format!("{why}; nothing sent"))));
        }
        match send_leak_delete(conn, plan, request).await {
            Err(e) => {
                if let Err(e) = throttle::resend_after(e, &mut throttled, &policy.throttle) {
                    break Ok(Err(e));
                }
            }
            answer => break Ok(answer),
        }
    }
}

/// What a deleted object left for an undo, in words.
fn kept_words(undo: &Undo) -> Option<String> {
    match (&undo.retained, &undo.stone) {
        (Some((pv, previous)), _) => Some(format!(
            "its volume {pv} is kept (reclaim policy Retain, was {previous}; it stays Released until restore re-binds it or it is deleted by hand)"
        )),
        (None, Some(_)) => Some("a tombstone is kept: kubectl namzu restore undoes it".into()),
        (None, None) => None,
    }
}

/// Send the DELETE of a leaked object once.
async fn send_leak_delete(conn: &Connection, plan: &LeakPlan, request: &Request) -> Result<Value, ClusterError> {
    let kind = plan.target.kind();
    let op = ApiCall::new("delete", kind, Some(&plan.namespace), &plan.name);
    let url = <DynamicObject as kube::Resource>::url_path(&kind.api_resource(), Some(&plan.namespace));
    let mut http_request = kube::core::Request::new(url)
        .delete(
            &plan.name,
            &DeleteParams {
                dry_run: plan.server_dry_run,
                ..Default::default()
            },
        )
        .map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    *http_request.body_mut() = serde_json::to_vec(&request.body).unwrap_or_default();
    // the URI sent is the request's own, as printed and audited
    *http_request.uri_mut() = request
        .path
        .parse()
        .map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    conn.bounded(&op, conn.client.request::<Value>(http_request)).await
}

/// Why a re-check before the DELETE stops it.
enum Recheck {
    /// Something that exists ties it (the sentence after its kind and name).
    InUse(String),
    Failed(ClusterError),
}

/// The object is still left behind now: read every tie again and judge it with the listing's
/// rule (`domain::leaks::judge_disk` / `judge_policy`). A detached disk passes only when the
/// plan allows detached disks.
async fn still_left_behind(conn: &Connection, plan: &LeakPlan, current: &Value) -> Result<(), Recheck> {
    let disk = plan.target == LeakTarget::Disk;
    let ties = crate::cluster::leaks::ties(conn, &plan.namespace, disk)
        .await
        .map_err(Recheck::Failed)?;
    let one = std::slice::from_ref(current);
    let now = conn.clock.now();
    let judged = if disk {
        namzu_domain::leaks::judge_disk(current, &ties.reads(&plan.namespace, one, &[], now))
    } else {
        namzu_domain::leaks::judge_policy(current, &ties.reads(&plan.namespace, &[], one, now))
    };
    use namzu_domain::leaks::LeakKind;
    match judged {
        Some(l) if matches!(l.kind, LeakKind::Disk | LeakKind::Policy) => Ok(()),
        Some(l) if l.kind == LeakKind::DetachedDisk && plan.allow_detached => Ok(()),
        Some(l) if l.kind == LeakKind::DetachedDisk => Err(Recheck::InUse(format!(
            "is detached now ({}): only --include-detached deletes it",
            l.reason
        ))),
        Some(l) => Err(Recheck::InUse(format!(
            "is in use now: {}",
            l.checks
                .iter()
                .filter(|c| c.in_use)
                .map(|c| c.found.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ))),
        None => Err(Recheck::InUse(
            "is claimed again by a Sandbox that exists (its owner, or the Sandbox of its name): re-adopted, never deleted".into(),
        )),
    }
}

/// The tombstone's file, kept for `restore`; removed when nothing was deleted.
fn drop_stone(stone: Option<&std::path::Path>) {
    if let Some(path) = stone {
        let _ = std::fs::remove_file(path);
    }
}

/// Before a DELETE that deletes: a disk's bound volume set to `Retain` where RBAC allows (a
/// conditional JSON Patch, audited), then the tombstone written. `None` for a server dry run
/// (nothing is deleted, nothing kept); an error when the tombstone cannot be written — then the
/// DELETE is not sent.
async fn keep_for_undo(
    conn: &Connection,
    policy: &WritePolicy,
    plan: &LeakPlan,
    current: &Value,
    write: &str,
) -> Result<Undo, String> {
    if plan.server_dry_run {
        return Ok(Undo::default());
    }
    let volume = match (plan.target, current.pointer("/spec/volumeName").and_then(Value::as_str)) {
        (LeakTarget::Disk, Some(pv)) => Some((pv.to_string(), retain_volume(conn, policy, plan, pv).await)),
        _ => None,
    };
    let changed = match &volume {
        Some((pv, Ok(Some(previous)))) => Some((pv.clone(), previous.clone())),
        _ => None,
    };
    let dir = super::super::tombstone::dir(policy.audit.path.as_deref())
        .ok_or("no state directory for the tombstone (set XDG_STATE_HOME or HOME)")?;
    let mut stone = json!({
        "kind": plan.target.kind().kind,
        "namespace": plan.namespace,
        "name": plan.name,
        "uid": plan.uid,
        "context": conn.context,
        "server": conn.server,
        "deletedAt": namzu_domain::timefmt::js_iso(conn.clock.now()),
        "by": std::env::var("USER").unwrap_or_default(),
        "write": write,
        "object": current,
    });
    if let Some((pv, kept)) = volume {
        stone["volume"] = match kept {
            Ok(previous) => {
                json!({"name": pv, "retained": true, "reclaimPolicyBefore": previous.unwrap_or_else(|| "Retain".into())})
            }
            Err(why) => json!({"name": pv, "retained": false, "why": why}),
        };
    }
    let written = super::super::tombstone::write(&dir, &stone);
    if written.is_err() {
        undo_retain(conn, policy, plan, changed.as_ref()).await;
    }
    Ok(Undo {
        stone: Some(written?),
        retained: changed,
    })
}

/// What was kept for an undo before a DELETE: the tombstone, and the volume whose reclaim policy
/// was changed (and from what), so a DELETE that did not happen leaves neither behind.
#[derive(Debug, Default)]
struct Undo {
    stone: Option<std::path::PathBuf>,
    retained: Option<(String, String)>,
}

/// A DELETE refused (or never sent): its volume's reclaim policy put back as it was, by the same
/// conditional patch (still this claim's, still `Retain`), audited.
async fn undo_retain(conn: &Connection, policy: &WritePolicy, plan: &LeakPlan, retained: Option<&(String, String)>) {
    if let Some((pv, previous)) = retained {
        let _ = set_reclaim(conn, policy, plan, pv, "Retain", previous).await;
    }
}

/// A disk's bound PersistentVolume set to `Retain` before its claim is deleted, so its data
/// survives: a JSON Patch conditional on the volume still being this claim's and still what it
/// was. `Some(previous)` when this changed it, `None` when it was `Retain` already; why it could
/// not be (no rights, not found, another claim's): then the data goes with the disk.
async fn retain_volume(
    conn: &Connection,
    policy: &WritePolicy,
    plan: &LeakPlan,
    pv: &str,
) -> Result<Option<String>, String> {
    if !namzu_domain::naming::is_path_safe_name(pv) {
        return Err(format!("volume name {pv:?} is not a name"));
    }
    let url = format!("/api/v1/persistentvolumes/{pv}");
    let get = http::Request::get(&url).body(Vec::new()).map_err(|e| e.to_string())?;
    let op = ApiCall::new("get", &crate::cluster::kinds::PERSISTENT_VOLUMES, None, pv);
    let volume: Value = conn
        .bounded(&op, conn.client.request::<Value>(get))
        .await
        .map_err(|e| format!("cannot read its volume: {e}"))?;
    if volume.pointer("/spec/claimRef/uid").and_then(Value::as_str) != Some(plan.uid.as_str()) {
        return Err(format!("volume {pv} is not bound to this claim"));
    }
    let reclaim = volume
        .pointer("/spec/persistentVolumeReclaimPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Delete")
        .to_string();
    if reclaim == "Retain" {
        return Ok(None);
    }
    set_reclaim(conn, policy, plan, pv, &reclaim, "Retain").await?;
    Ok(Some(reclaim))
}

/// The volume's reclaim policy from `from` to `to`, by a JSON Patch that tests it is still this
/// claim's and still `from`; audited before it is sent.
async fn set_reclaim(
    conn: &Connection,
    policy: &WritePolicy,
    plan: &LeakPlan,
    pv: &str,
    from: &str,
    to: &str,
) -> Result<(), String> {
    let url = format!("/api/v1/persistentvolumes/{pv}");
    let body = json!([
        {"op": "test", "path": "/spec/claimRef/uid", "value": plan.uid},
        {"op": "test", "path": "/spec/persistentVolumeReclaimPolicy", "value": from},
        {"op": "replace", "path": "/spec/persistentVolumeReclaimPolicy", "value": to},
    ]);
    let request = Request {
        method: "PATCH",
        path: url.clone(),
        content_type: "application/json-patch+json",
        body: body.clone(),
    };
    let entry = |status: Option<u16>, outcome: &str| {
        json!({
            "write": write_id(conn), "context": conn.context, "server": conn.server,
            "namespace": plan.namespace, "workspace": pv, "verb": RETAIN_VOLUME_VERB,
            "kind": "PersistentVolume", "request": request.to_json(), "status": status, "outcome": outcome,
        })
    };
    policy
        .audit
        .intend(entry(None, crate::cluster::audit::INTENT), conn.clock.now())?;
    let patch = http::Request::patch(&url)
        .header("content-type", "application/json-patch+json")
        .body(serde_json::to_vec(&body).unwrap_or_default())
        .map_err(|e| e.to_string())?;
    let op = ApiCall::new("patch", &crate::cluster::kinds::PERSISTENT_VOLUMES, None, pv);
    match conn.bounded(&op, conn.client.request::<Value>(patch)).await {
        Ok(_) => {
            policy.audit.record(entry(Some(200), "applied"), conn.clock.now());
            Ok(())
        }
        Err(e) => {
            policy.audit.record(entry(status_of(&e), "failed"), conn.clock.now());
            Err(format!("could not set volume {pv} to {to}: {e}"))
        }
    }
}

/// The audit log's verb for a volume set to `Retain` before its disk's delete.
pub const RETAIN_VOLUME_VERB: &str = "retain-volume";

/// Why the context's quarantine rule refuses this delete now, if it does: not quarantined, not
/// for long enough, or touched since (which cancels it).
pub(super) fn quarantine_refusal(
    plan: &LeakPlan,
    current: &Value,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<String> {
    let days = plan.quarantine_days?;
    match namzu_domain::leaks::quarantine_of(current) {
        None => Some(format!(
            "is not quarantined, and this context deletes only what was quarantined {days} days ago (kubectl namzu leaks --quarantine)"
        )),
        Some(q) if !q.unchanged => Some(
            "was touched since its quarantine (its owners, labels or volume changed): the quarantine is cancelled"
                .into(),
        ),
        Some(q) if now - q.since < chrono::Duration::days(days) => Some(format!(
            "was quarantined {} ago, less than this context's {days} days",
            namzu_domain::age::human_duration((now - q.since).num_seconds().max(0))
        )),
        Some(_) => None,
    }
}

/// Mark a leaked object quarantined: its two annotations set by a JSON Patch conditional on the
/// uid and resourceVersion judged, audited before it is sent (`verb: quarantine-leak`).
async fn quarantine(
    conn: &Connection,
    policy: &WritePolicy,
    plan: &LeakPlan,
    current: &Value,
    entry: &(dyn Fn(Option<u16>, &str) -> Value + Sync),
) -> LeakOutcome {
    use namzu_domain::leaks::{QUARANTINE_TIES, QUARANTINED_AT, ties_fingerprint};
    let at = namzu_domain::timefmt::js_iso(conn.clock.now());
    let escape = |k: &str| k.replace('~', "~0").replace('/', "~1");
    let mut ops = vec![
        json!({"op": "test", "path": "/metadata/uid", "value": plan.uid}),
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": plan.resource_version}),
    ];
    if current.pointer("/metadata/annotations").is_some_and(Value::is_object) {
        ops.push(
            json!({"op": "add", "path": format!("/metadata/annotations/{}", escape(QUARANTINED_AT)), "value": at}),
        );
        ops.push(json!({"op": "add", "path": format!("/metadata/annotations/{}", escape(QUARANTINE_TIES)), "value": ties_fingerprint(current)}));
    } else {
        ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {QUARANTINED_AT: at, QUARANTINE_TIES: ties_fingerprint(current)}}));
    }
    let base = leak_request(&LeakPlan {
        server_dry_run: false,
        ..plan.clone()
    });
    let request = Request {
        method: "PATCH",
        path: base.path.clone(),
        content_type: "application/json-patch+json",
        body: Value::Array(ops),
    };
    if plan.dry_run {
        return LeakOutcome::DryRun { request };
    }
    let mut intent = entry(None, crate::cluster::audit::INTENT);
    intent["verb"] = json!(QUARANTINE_VERB);
    intent["request"] = request.to_json();
    if let Err(why) = policy.audit.intend(intent.clone(), conn.clock.now()) {
        return LeakOutcome::Failed(ClusterError::Other(format!("{why}; nothing sent")));
    }
    let kind = plan.target.kind();
    let op = ApiCall::new("patch", kind, Some(&plan.namespace), &plan.name);
    let sent = http::Request::patch(&request.path)
        .header("content-type", "application/json-patch+json")
        .body(serde_json::to_vec(&request.body).unwrap_or_default());
    let answer = match sent {
        Ok(r) => conn.bounded(&op, conn.client.request::<Value>(r)).await,
        Err(e) => Err(ClusterError::Other(format!("{op}: {e}"))),
    };
    let mut outcome = intent;
    match answer {
        Ok(_) => {
            outcome["status"] = json!(200);
            outcome["outcome"] = json!("applied");
            policy.audit.record(outcome, conn.clock.now());
            LeakOutcome::Quarantined { request }
        }
        Err(e) => {
            outcome["status"] = json!(status_of(&e));
            outcome["outcome"] = json!("failed");
            policy.audit.record(outcome, conn.clock.now());
            match status_of(&e) {
                Some(409 | 422) => LeakOutcome::Refused {
                    message: format!(
                        "{} {} changed since it was reported: not quarantined",
                        kind.kind, plan.name
                    ),
                },
                Some(404) => LeakOutcome::AlreadyGone,
                _ => LeakOutcome::Failed(e),
            }
        }
    }
}

/// The audit log's verb for a quarantine mark.
pub(super) const QUARANTINE_VERB: &str = "quarantine-leak";
