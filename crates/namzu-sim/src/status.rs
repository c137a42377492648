//! `Status` bodies worded as kube-apiserver words them.

use super::resources::Resource;
use serde_json::{Value, json};

/// An API error: HTTP code and a Status body.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: u16,
    pub body: Value,
    /// `Retry-After` seconds, for 429/503.
    pub retry_after: Option<u32>,
}

pub(crate) fn status(code: u16, reason: &str, message: &str, details: Value) -> ApiError {
    ApiError {
        code,
        body: json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":message,"reason":reason,"details":details,"code":code}),
        retry_after: None,
    }
}

fn details(r: &Resource, name: &str) -> Value {
    let mut d = json!({"group": r.group, "kind": r.plural});
    if !name.is_empty() {
        d["name"] = json!(name);
    }
    d
}

pub(crate) fn not_found(r: &Resource, name: &str) -> ApiError {
    status(
        404,
        "NotFound",
        &format!("{} \"{name}\" not found", r.qualified()),
        details(r, name),
    )
}

pub(crate) fn already_exists(r: &Resource, name: &str) -> ApiError {
    status(
        409,
        "AlreadyExists",
        &format!("{} \"{name}\" already exists", r.qualified()),
        details(r, name),
    )
}

/// A DELETE precondition that does not hold, as the API server's `BeforeDelete` words it: the
/// conflict names the Kind (`Sandbox.agents.x-k8s.io`), and so does `details.kind`.
pub(crate) fn precondition_rv(r: &Resource, name: &str, want: &str, have: &str) -> ApiError {
    status(
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on {} \"{name}\": the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({have}). The object might have been modified",
            r.kind_qualified()
        ),
        json!({"name": name, "group": r.group, "kind": r.kind}),
    )
}

pub(crate) fn precondition_uid(r: &Resource, name: &str, want: &str, have: &str) -> ApiError {
    status(
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on {} \"{name}\": the UID in the precondition ({want}) does not match the UID in record ({have}). The object might have been deleted and then recreated",
            r.kind_qualified()
        ),
        json!({"name": name, "group": r.group, "kind": r.kind}),
    )
}

/// A JSON Patch that applies but fails (a `test` that does not hold, a path that is not there).
pub(crate) fn patch_invalid() -> ApiError {
    status(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
        json!({}),
    )
}

/// A JSON Patch body that does not decode: 400, as the API server answers.
pub(crate) fn patch_undecodable(why: &str) -> ApiError {
    bad_request(&format!("error decoding patch: {why}"))
}

pub(crate) fn bad_request(message: &str) -> ApiError {
    status(400, "BadRequest", message, json!({}))
}

/// 422: a request whose parameters the API server's validation refuses.
pub(crate) fn invalid(message: &str) -> ApiError {
    status(422, "Invalid", message, json!({}))
}

pub(crate) fn unauthorized() -> ApiError {
    status(401, "Unauthorized", "Unauthorized", json!({}))
}

/// Worded like the RBAC authorizer.
pub(crate) fn forbidden(user: &str, verb: &str, r: &Resource, namespace: Option<&str>, name: &str) -> ApiError {
    forbidden_resource(user, verb, r.group, r.plural, r.plural, namespace, name)
}

/// Worded like the RBAC authorizer, for `resource` (`pods/log` for a subresource) of the
/// `plural` type in `group`.
pub(crate) fn forbidden_resource(
    user: &str,
    verb: &str,
    group: &str,
    plural: &str,
    resource: &str,
    namespace: Option<&str>,
    name: &str,
) -> ApiError {
    let qualified = if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    };
    let subject = if name.is_empty() {
        qualified
    } else {
        format!("{qualified} \"{name}\"")
    };
    let scope = match namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_string(),
    };
    let mut details = json!({"group": group, "kind": plural});
    if !name.is_empty() {
        details["name"] = json!(name);
    }
    status(
        403,
        "Forbidden",
        &format!(
            "{subject} is forbidden: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{group}\" {scope}"
        ),
        details,
    )
}

pub(crate) fn gone(message: &str) -> ApiError {
    status(410, "Expired", message, json!({}))
}

pub(crate) fn unsupported_media(content_type: &str) -> ApiError {
    status(
        415,
        "UnsupportedMediaType",
        &format!(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json (got {content_type})"
        ),
        json!({}),
    )
}

pub(crate) fn method_not_allowed() -> ApiError {
    status(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        json!({}),
    )
}

pub(crate) fn path_not_found(path: &str) -> ApiError {
    status(
        404,
        "NotFound",
        &format!("the server could not find the requested resource ({path})"),
        json!({}),
    )
}
