//! The answers every handler gives (JSON, an API error) and the RBAC checks before them: below
//! the router and the handlers it calls (`events` among them), so they never reach back up.

use super::super::resources::Resource;
use super::super::status::{self, ApiError};
use super::super::wire::{Body, Req, full};
use hyper::Response;
use serde_json::Value;

pub(crate) fn json_response(code: u16, body: &Value, retry_after: Option<u32>) -> Response<Body> {
    let mut response = encoded_response(code, serde_json::to_vec(body).expect("json"));
    if let Some(s) = retry_after {
        response.headers_mut().insert("retry-after", http::HeaderValue::from(s));
    }
    response
}

pub(crate) fn error_response(e: &ApiError) -> Response<Body> {
    json_response(e.code, &e.body, e.retry_after)
}

/// A subresource (`pods/log`, `pods/exec`) authorized as RBAC does: the rule must name
/// `resource/subresource` (or `*`, or `*/subresource`).
pub(crate) fn authorize_sub(
    req: &Req,
    group: &str,
    resource: &str,
    sub: &str,
    verb: &str,
    ns: Option<&str>,
    name: &str,
) -> Result<(), ApiError> {
    let full = format!("{resource}/{sub}");
    match &req.user {
        Some(u) if !u.can(verb, group, &full, ns) => Err(status::forbidden_resource(
            &u.name, verb, group, resource, &full, ns, name,
        )),
        _ => Ok(()),
    }
}

pub(crate) fn authorize(req: &Req, r: &Resource, verb: &str, ns: Option<&str>, name: &str) -> Result<(), ApiError> {
    match &req.user {
        Some(u) if !u.can(verb, r.group, r.plural, ns) => Err(status::forbidden(&u.name, verb, r, ns, name)),
        _ => Ok(()),
    }
}

pub(crate) type Answer = Result<(u16, Value), ApiError>;

pub(crate) fn encoded_response(code: u16, body: Vec<u8>) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .header("cache-control", "no-cache, private")
        .body(full(body))
        .expect("response")
}
