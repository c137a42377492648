//! The writes: JSON, merge and server-side-apply patches, updates, `/status`, deletes with
//! preconditions and the garbage collector's delay, strict mode, dry runs.

use super::super::SimState;
use super::super::clock::k8s_time;
use super::super::resources::{CASCADE, Resource};
use super::super::status::{self, ApiError};
use super::super::store::meta;
use super::super::wire::Req;
use super::admission::{admit_custom, invalid, keep_immutable, status_errors, validate};
use super::reply::{Answer, authorize_sub};
use serde_json::{Value, json};

/// `?dryRun=All`: answer as if written, write nothing.
pub(super) fn dry_run(req: &Req) -> bool {
    req.query.iter().any(|(k, v)| k == "dryRun" && !v.is_empty())
}

/// A body patched as its content type says: JSON Patch, merge patch (strategic merge for the
/// core kinds, modelled as a merge patch).
pub(super) fn apply_patch(req: &Req, r: &Resource, ct: &str, old: &Value) -> Result<Value, ApiError> {
    let mut new = old.clone();
    match ct {
        "application/json-patch+json" => {
            let ops: json_patch::Patch =
                serde_json::from_slice(&req.raw_body).map_err(|e| status::patch_undecodable(&e.to_string()))?;
            json_patch::patch(&mut new, &ops).map_err(|_| status::patch_invalid())?;
        }
        "application/merge-patch+json" | "application/strategic-merge-patch+json"
            if ct == "application/merge-patch+json" || r.group.is_empty() =>
        {
            let body = req
                .body
                .clone()
                .filter(Value::is_object)
                .ok_or_else(|| status::bad_request("the merge patch must be a JSON object"))?;
            json_patch::merge(&mut new, &body);
        }
        other => return Err(status::unsupported_media(other)),
    }
    Ok(new)
}

/// `/status`: GET, PATCH and PUT of the status alone, validated against the CRD's schema.
pub(super) fn status_subresource(st: &mut SimState, req: &Req, r: &Resource, ns: &str, name: &str) -> Answer {
    let verb = match req.method.as_str() {
        "GET" => "get",
        "PATCH" => "patch",
        "PUT" => "update",
        _ => return Err(status::method_not_allowed()),
    };
    authorize_sub(
        req,
        r.group,
        r.plural,
        "status",
        verb,
        Some(ns).filter(|n| !n.is_empty()),
        name,
    )?;
    let old = existing(st, r, ns, name)?;
    let written = match verb {
        "get" => return Ok((200, old)),
        "patch" => {
            let ct = req.content_type.split(';').next().unwrap_or("").trim().to_string();
            apply_patch(req, r, &ct, &old)?
        }
        _ => req
            .body
            .clone()
            .filter(Value::is_object)
            .ok_or_else(|| status::bad_request("the body of the request must be a JSON object"))?,
    };
    let sent_rv = written
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty());
    if verb == "update"
        && sent_rv.is_some_and(|v| Some(v) != old.pointer("/metadata/resourceVersion").and_then(Value::as_str))
    {
        return Err(modified_since(r, name));
    }
    // only the status changes through /status
    let mut new = old.clone();
    match written.get("status") {
        Some(s) => new["status"] = s.clone(),
        None => {
            if let Some(o) = new.as_object_mut() {
                o.remove("status");
            }
        }
    }
    if let Some(m) = status_errors(r, &new) {
        return Err(invalid(r, name, &m));
    }
    if dry_run(req) {
        return Ok((200, new));
    }
    Ok((200, st.store.update(r, new)))
}

/// Server-side apply, modelled as a merge of the applied configuration (created when missing).
pub(super) fn server_side_apply(st: &mut SimState, req: &Req, r: &Resource, ns: &str, name: &str, now: &str) -> Answer {
    if req.param("fieldManager").is_none_or(str::is_empty) {
        return Err(status::status(
            422,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            json!({"group": "meta.k8s.io", "kind": "PatchOptions"}),
        ));
    }
    let applied: Value = serde_saphyr::from_slice(&req.raw_body)
        .ok()
        .filter(Value::is_object)
        .ok_or_else(|| status::bad_request("error decoding YAML: the applied configuration must be an object"))?;
    match st.store.get(r, ns, name).cloned() {
        Some(old) => {
            let mut new = old.clone();
            json_patch::merge(&mut new, &applied);
            commit(st, req, r, old, new, now)
        }
        None => {
            let mut obj = applied;
            obj["metadata"]["name"] = json!(name);
            if r.namespaced {
                obj["metadata"]["namespace"] = json!(ns);
            }
            admit_custom(r, &mut obj);
            validate(r, &obj, None)?;
            if dry_run(req) {
                return st.store.create_dry(r, obj, now).map(|o| (201, o));
            }
            st.store.create(r, obj, now).map(|o| (201, o))
        }
    }
}

pub(super) fn patch(st: &mut SimState, req: &Req, r: &Resource, ns: &str, name: &str, now: &str) -> Answer {
    let ct = req.content_type.split(';').next().unwrap_or("").trim().to_string();
    if st.strict && r.plural == "sandboxes" {
        let leading_test = ct == "application/json-patch+json"
            && req
                .body
                .as_ref()
                .and_then(|b| b.get(0))
                .and_then(|op| op.get("op"))
                .and_then(Value::as_str)
                == Some("test");
        if !leading_test {
            return Err(status::bad_request(
                "strict mode: a PATCH of a Sandbox must be a JSON Patch (application/json-patch+json) whose first operation is a test",
            ));
        }
    }
    if ct == "application/apply-patch+yaml" {
        return server_side_apply(st, req, r, ns, name, now);
    }
    let old = existing(st, r, ns, name)?;
    let new = apply_patch(req, r, &ct, &old)?;
    commit(st, req, r, old, new, now)
}

pub(super) fn update(st: &mut SimState, req: &Req, r: &Resource, ns: &str, name: &str, now: &str) -> Answer {
    let old = existing(st, r, ns, name)?;
    let new = req
        .body
        .clone()
        .filter(Value::is_object)
        .ok_or_else(|| status::bad_request("the body of the request must be a JSON object"))?;
    commit(st, req, r, old, new, now)
}

/// The stored object a write applies to, or the API's 404.
pub(super) fn existing(st: &SimState, r: &Resource, ns: &str, name: &str) -> Result<Value, ApiError> {
    st.store
        .get(r, ns, name)
        .cloned()
        .ok_or_else(|| status::not_found(r, name))
}

/// Store a written object: optimistic concurrency on resourceVersion, immutables kept, validated.
pub(super) fn commit(st: &mut SimState, req: &Req, r: &Resource, old: Value, mut new: Value, now: &str) -> Answer {
    let name = meta(&old, "name").to_string();
    let sent_rv = new
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty());
    if sent_rv.is_some_and(|v| Some(v) != old.pointer("/metadata/resourceVersion").and_then(Value::as_str)) {
        return Err(modified_since(r, &name));
    }
    keep_immutable(r, &old, &mut new);
    new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
    admit_custom(r, &mut new);
    validate(r, &new, Some(&old))?;
    record_managers(req, &old, &mut new, now);
    if dry_run(req) {
        if r.is_custom() {
            super::super::store::sort_keys(&mut new);
        }
        return Ok((200, new));
    }
    Ok((200, st.store.update(r, new)))
}

pub(super) fn delete(
    st: &mut SimState,
    req: &Req,
    r: &Resource,
    ns: &str,
    name: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> Answer {
    let now_s = k8s_time(at);
    let now = now_s.as_str();
    let opts = req.body.clone().unwrap_or(json!({}));
    let pre_uid = opts.pointer("/preconditions/uid").and_then(Value::as_str);
    let pre_rv = opts.pointer("/preconditions/resourceVersion").and_then(Value::as_str);
    if st.strict && r.plural == "sandboxes" && pre_uid.is_none() && pre_rv.is_none() {
        return Err(status::bad_request(
            "strict mode: a DELETE of a Sandbox must carry DeleteOptions preconditions (uid and/or resourceVersion)",
        ));
    }
    let old = existing(st, r, ns, name)?;
    let have = |k: &str| {
        old.pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if let Some(want) = pre_uid
        && want != have("uid")
    {
        return Err(status::precondition_uid(r, name, want, &have("uid")));
    }
    if pre_rv.is_some_and(|want| want != have("resourceVersion")) {
        return Err(status::precondition_rv(
            r,
            name,
            pre_rv.unwrap_or(""),
            &have("resourceVersion"),
        ));
    }
    if req.param("dryRun").is_some()
        || opts
            .get("dryRun")
            .is_some_and(|d| d.as_array().is_some_and(|a| !a.is_empty()))
    {
        return Ok((200, old));
    }
    if orphaning(req, &opts) {
        // the garbage collector's orphan finalizer: the dependents stay, unowned (so its pass
        // after the delete finds none to collect)
        st.store.orphan_dependents(&have("uid"), ns, &CASCADE);
    }
    let deleted = match st.gc_delay {
        None => st.store.delete(r, ns, name, now, &CASCADE).expect("present"),
        Some(delay) => delete_later(st, r, &old, at, delay),
    };
    if deleted.pointer("/metadata/deletionTimestamp").is_some() && st.store.get(r, ns, name).is_some() {
        return Ok((200, deleted));
    }
    Ok((
        200,
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",
        "details":{"name":name,"group":r.group,"kind":r.plural,"uid":have("uid")}}),
    ))
}

/// `propagationPolicy: Orphan` in the DeleteOptions body or the query (`kubectl delete
/// --cascade=orphan`), or the older `orphanDependents: true`.
fn orphaning(req: &Req, opts: &Value) -> bool {
    let policy = opts
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .or(req.param("propagationPolicy"));
    match policy {
        Some(p) => p == "Orphan",
        None => {
            opts.get("orphanDependents").and_then(Value::as_bool) == Some(true)
                || req.param("orphanDependents") == Some("true")
        }
    }
}

/// A DELETE with the garbage collector's delay: a pod bound to a node is marked Terminating
/// (its kubelet confirms later); anything else goes now and its dependents later.
pub(super) fn delete_later(
    st: &mut SimState,
    r: &Resource,
    old: &Value,
    when: chrono::DateTime<chrono::Utc>,
    delay: chrono::Duration,
) -> Value {
    let (ns, name, uid) = (meta(old, "namespace"), meta(old, "name"), meta(old, "uid"));
    let now_s = k8s_time(when);
    let now = now_s.as_str();
    let at = when + delay;
    let bound = r.plural == "pods"
        && r.group.is_empty()
        && old
            .pointer("/spec/nodeName")
            .is_some_and(|n| n.as_str().is_some_and(|n| !n.is_empty()));
    if bound {
        if old.pointer("/metadata/deletionTimestamp").is_some() {
            return old.clone();
        }
        let mut marked = old.clone();
        marked["metadata"]["deletionTimestamp"] = json!(now);
        marked["metadata"]["deletionGracePeriodSeconds"] = json!(30);
        st.gc_due.push(super::super::GcDue::Pod {
            at,
            namespace: ns.to_string(),
            name: name.to_string(),
            uid: uid.to_string(),
        });
        return st.store.update(r, marked);
    }
    let deleted = st.store.delete(r, ns, name, now, &[]).unwrap_or_else(|| old.clone());
    st.gc_due.push(super::super::GcDue::Dependents {
        at,
        namespace: ns.to_string(),
        owner_uid: uid.to_string(),
    });
    deleted
}

/// `metadata.managedFields` after a write, as the API server keeps them: the fields the write
/// changed (each label, annotation and key of `spec`; finalizers and owners whole) move to its
/// manager — the `fieldManager` query, else the User-Agent's product, as the API server names it —
/// stamped with its operation and the time; a manager left owning nothing is dropped. A write
/// that changes nothing leaves them as they were.
fn record_managers(req: &Req, old: &Value, new: &mut Value, now: &str) {
    let kept = old.pointer("/metadata/managedFields").cloned().unwrap_or(json!([]));
    let changed = changed_fields(old, new);
    if changed.is_empty() {
        new["metadata"]["managedFields"] = kept;
        return;
    }
    let manager = req
        .param("fieldManager")
        .filter(|m| !m.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| {
            let product = req.user_agent.split(['/', ' ']).next().unwrap_or("");
            if product.is_empty() {
                "unknown".into()
            } else {
                product.to_string()
            }
        });
    let operation = if req.content_type.starts_with("application/apply-patch") {
        "Apply"
    } else {
        "Update"
    };
    let mut entries = kept.as_array().cloned().unwrap_or_default();
    let mine =
        |e: &Value| e.get("subresource").is_none() && e["manager"] == manager.as_str() && e["operation"] == operation;
    for e in entries.iter_mut().filter(|e| e.get("subresource").is_none()) {
        for path in &changed {
            remove_field(&mut e["fieldsV1"], path);
        }
    }
    entries.retain(|e| {
        mine(e) || e.get("subresource").is_some() || e["fieldsV1"].as_object().is_some_and(|m| !m.is_empty())
    });
    let i = match entries.iter().position(mine) {
        Some(i) => i,
        None => {
            entries.push(json!({"manager": manager, "operation": operation,
                "apiVersion": new.get("apiVersion").cloned().unwrap_or(json!("v1")), "fieldsType": "FieldsV1", "fieldsV1": {}}));
            entries.len() - 1
        }
    };
    entries[i]["time"] = json!(now);
    for path in changed.iter().filter(|(_, present)| *present) {
        let mut at = &mut entries[i]["fieldsV1"];
        for k in &path.0 {
            at = &mut at[k.as_str()];
        }
        *at = json!({});
    }
    new["metadata"]["managedFields"] = Value::Array(entries);
}

/// What a write changed, as FieldsV1 paths, each with whether the field is there after it.
fn changed_fields(old: &Value, new: &Value) -> Vec<(Vec<String>, bool)> {
    let mut out = Vec::new();
    let mut keys = |parent: &[&str], a: Option<&Value>, b: Option<&Value>| {
        let (a, b) = (a.and_then(Value::as_object), b.and_then(Value::as_object));
        let mut names: Vec<&String> = a.into_iter().chain(b).flat_map(|m| m.keys()).collect();
        names.sort();
        names.dedup();
        for k in names {
            let (x, y) = (a.and_then(|m| m.get(k)), b.and_then(|m| m.get(k)));
            if x != y {
                let mut path: Vec<String> = parent.iter().map(|p| p.to_string()).collect();
                path.push(format!("f:{k}"));
                out.push((path, y.is_some()));
            }
        }
    };
    for k in ["labels", "annotations"] {
        keys(
            &["f:metadata", &format!("f:{k}")],
            old.pointer(&format!("/metadata/{k}")),
            new.pointer(&format!("/metadata/{k}")),
        );
    }
    keys(&["f:spec"], old.get("spec"), new.get("spec"));
    for k in ["finalizers", "ownerReferences"] {
        let (a, b) = (old["metadata"].get(k), new["metadata"].get(k));
        if a != b {
            out.push((vec!["f:metadata".into(), format!("f:{k}")], b.is_some()));
        }
    }
    out
}

/// Take `path` out of a FieldsV1 set, and the sets it leaves empty.
fn remove_field(set: &mut Value, path: &(Vec<String>, bool)) {
    fn go(set: &mut Value, path: &[String]) {
        let Some(m) = set.as_object_mut() else { return };
        match path {
            [] => {}
            [last] => {
                m.remove(last);
            }
            [first, rest @ ..] => {
                if let Some(child) = m.get_mut(first) {
                    go(child, rest);
                    if child.as_object().is_some_and(|c| c.is_empty()) {
                        m.remove(first);
                    }
                }
            }
        }
    }
    go(set, &path.0);
}

/// The API server's 409 for a write whose resourceVersion is not the stored one.
fn modified_since(r: &Resource, name: &str) -> ApiError {
    status::status(
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
            r.qualified()
        ),
        json!({"name":name,"group":r.group,"kind":r.plural}),
    )
}
