//! The API server: hyper over loopback, routing, auth, faults, the verbs, strict mode, the record.

use super::auth::authenticate;
use super::clock::k8s_time;
use super::faults::FaultAction;
use super::record::Recorded;
use super::resources::{CASCADE, NAMESPACES, Resource, Target, parse_path};
use super::selector::Selector;
use super::status::{self, ApiError};
use super::store::meta;
use super::wire::{Body, Req, full, query_pairs};
use super::{Shared, SimState, discovery, events, exec, logs, table, watch};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::{Value, json};
use std::sync::Arc;

pub(super) fn json_response(code: u16, body: &Value, retry_after: Option<u32>) -> Response<Body> {
    let mut response = encoded_response(code, serde_json::to_vec(body).expect("json"));
    if let Some(s) = retry_after {
        response.headers_mut().insert("retry-after", http::HeaderValue::from(s));
    }
    response
}

pub(super) fn error_response(e: &ApiError) -> Response<Body> {
    json_response(e.code, &e.body, e.retry_after)
}

/// Serve one request; `Err` closes the connection with no answer (an injected reset).
pub async fn handle(shared: Arc<Shared>, mut req: Request<Incoming>) -> Result<Response<Body>, std::io::Error> {
    let header = |k: &str| {
        req.headers()
            .get(k)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (content_type, accept, authorization, user_agent) = (
        header("content-type"),
        header("accept"),
        header("authorization"),
        header("user-agent"),
    );
    let method = req.method().as_str().to_uppercase();
    let path = req.uri().path().to_string();
    let raw_query = req.uri().query().unwrap_or("").to_string();
    // a WebSocket exec: hyper hands the connection over once the 101 is sent
    let websocket = header("upgrade").eq_ignore_ascii_case("websocket");
    let (ws_key, ws_protocols) = (header("sec-websocket-key"), header("sec-websocket-protocol"));
    let exec_path = exec::exec_target(&path).is_some();
    let upgrade = (websocket && exec_path).then(|| (hyper::upgrade::on(&mut req), ws_key, ws_protocols));
    let raw_body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body = if raw_body.is_empty() {
        None
    } else {
        Some(
            serde_json::from_slice(&raw_body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw_body).into_owned())),
        )
    };
    let mut rec = Recorded {
        method: method.clone(),
        path: path.clone(),
        query: raw_query.clone(),
        content_type: content_type.clone(),
        body: body.clone(),
        status: 0,
        user: String::new(),
        user_agent,
        bytes: 0,
    };

    let user = {
        let st = shared.lock();
        match authenticate(
            &st.users,
            Some(&authorization).filter(|a| !a.is_empty()).map(String::as_str),
        ) {
            Ok(u) => u.cloned(),
            Err(_) => {
                drop(st);
                let e = status::unauthorized();
                rec.status = e.code;
                shared.lock().record.push(rec);
                return Ok(error_response(&e));
            }
        }
    };
    rec.user = user.as_ref().map_or("admin".to_string(), |u| u.name.clone());

    let fault = {
        let mut st = shared.lock();
        st.faults.iter_mut().find_map(|f| f.fire(&method, &path))
    };
    let lost = fault == Some(FaultAction::Lost);
    match fault {
        Some(FaultAction::Delay(d)) => tokio::time::sleep(d).await,
        Some(FaultAction::Lost) => {}
        Some(FaultAction::Hang) => {
            shared.lock().record.push(rec);
            return std::future::pending().await;
        }
        Some(FaultAction::Reset) => {
            shared.lock().record.push(rec);
            return Err(std::io::Error::other("injected connection reset"));
        }
        Some(FaultAction::Mutate(m)) => {
            let now = shared.clock.now();
            shared.lock().mutate(&path, &m, now);
        }
        Some(FaultAction::Raw { code, body }) => {
            rec.status = code;
            shared.lock().record.push(rec);
            let answer = Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(full(body.into_bytes()))
                .expect("response");
            return Ok(answer);
        }
        Some(FaultAction::Status {
            code,
            reason,
            message,
            retry_after,
        }) => {
            // the Retry-After header, and the Status's details.retryAfterSeconds, as the API server sends both
            let details = retry_after.map_or(json!({}), |s| json!({"retryAfterSeconds": s}));
            let mut e = status::status(code, &reason, &message, details);
            e.retry_after = retry_after;
            rec.status = code;
            shared.lock().record.push(rec);
            return Ok(error_response(&e));
        }
        None => {}
    }

    let req = Req {
        method,
        path,
        query: query_pairs(&raw_query),
        content_type,
        accept,
        body,
        raw_body,
        user,
    };
    let response = match upgrade {
        Some((on, key, protocols)) => exec_upgrade(&shared, &req, rec, Some((on, &key, &protocols))),
        // SPDY (a client's fallback) is not spoken: the same checks, then "upgrade required"
        None if exec_path => exec_upgrade(&shared, &req, rec, None),
        None => route(&shared, &req, rec),
    };
    if lost {
        return Err(std::io::Error::other("injected: the answer was lost"));
    }
    Ok(response)
}

/// Serve and record under one lock, so the record's order is the order writes were applied.
fn route(shared: &Arc<Shared>, req: &Req, mut rec: Recorded) -> Response<Body> {
    let now = shared.clock.now();
    let mut st = shared.lock();
    let response = serve(&mut st, req, now);
    rec.status = response.status().as_u16();
    rec.bytes = hyper::body::Body::size_hint(response.body()).exact().unwrap_or(0);
    st.record.push(rec);
    response
}

/// `pods/exec` over WebSocket: authorized (`get` and `create` on `pods/exec`), the pod and
/// container checked, then the 101 and the session.
fn exec_upgrade(
    shared: &Arc<Shared>,
    req: &Req,
    mut rec: Recorded,
    websocket: Option<(hyper::upgrade::OnUpgrade, &str, &str)>,
) -> Response<Body> {
    let now = shared.clock.now();
    let mut st = shared.lock();
    st.tick(now);
    let (ns, name) = exec::exec_target(&req.path).unwrap_or_default();
    let answer = authorize_sub(req, "", "pods", "exec", "get", Some(&ns), &name)
        .and_then(|()| authorize_sub(req, "", "pods", "exec", "create", Some(&ns), &name))
        .and_then(|()| exec::prepare(&st, &ns, &name, &req.query))
        .and_then(|session| {
            let Some((on, key, protocols)) = websocket else {
                return Err(status::bad_request("Upgrade request required"));
            };
            let protocol = exec::choose_protocol(protocols).ok_or_else(|| {
                status::bad_request(&format!(
                    "unable to upgrade: unsupported subprotocols {protocols:?}: the server speaks v5.channel.k8s.io and v4.channel.k8s.io"
                ))
            })?;
            Ok(exec::upgrade(session, key, protocol, on))
        });
    let response = answer.unwrap_or_else(|e| error_response(&e));
    rec.status = response.status().as_u16();
    st.record.push(rec);
    response
}

/// The Sandbox a write was to, if it was to one: the controller then looks at that one only.
fn written_sandbox(req: &Req, result: &Answer) -> Option<(String, String)> {
    let Some(Target::Objects {
        plural,
        namespace,
        name,
        ..
    }) = parse_path(&req.path)
    else {
        return None;
    };
    if plural != "sandboxes" {
        return None;
    }
    let name = name.or_else(|| {
        let (_, created) = result.as_ref().ok()?;
        Some(meta(created, "name").to_string())
    })?;
    Some((namespace.unwrap_or_default(), name))
}

fn serve(st: &mut SimState, req: &Req, now: chrono::DateTime<chrono::Utc>) -> Response<Body> {
    // reads see what the controller last did; writes wake it (below), time wakes it (tick)
    st.tick(now);
    let served = st.served();
    let target = parse_path(&req.path);
    let result = match (req.method.as_str(), target) {
        ("GET", Some(Target::Version)) => Ok((200, discovery::version())),
        ("GET", Some(Target::CoreGroups)) => Ok((200, discovery::core_versions())),
        ("GET", Some(Target::Groups)) => Ok((200, discovery::group_list(&served))),
        ("GET", Some(Target::CoreResources)) => discovery::resources(&served, "", "v1")
            .map(|d| (200, d))
            .ok_or_else(|| status::path_not_found(&req.path)),
        ("GET", Some(Target::GroupVersions(g))) => discovery::group(&served, &g)
            .map(|d| (200, d))
            .ok_or_else(|| status::path_not_found(&req.path)),
        ("GET", Some(Target::GroupResources(g, v))) => discovery::resources(&served, &g, &v)
            .map(|d| (200, d))
            .ok_or_else(|| status::path_not_found(&req.path)),
        ("POST", Some(Target::SelfSubjectAccessReview)) => Ok(access_review(req)),
        ("GET", Some(Target::OpenApiIndex)) => Ok((200, discovery::openapi_index(&served))),
        ("GET", Some(Target::OpenApi(g, v))) => discovery::openapi(&served, &g, &v)
            .map(|d| (200, d))
            .ok_or_else(|| status::path_not_found(&req.path)),
        (
            _,
            Some(Target::Objects {
                group,
                version,
                plural,
                namespace,
                name,
                subresource,
            }),
        ) => {
            let Some(r) = served
                .iter()
                .find(|r| r.group == group && r.version == version && r.plural == plural)
                .copied()
            else {
                return error_response(&status::path_not_found(&req.path));
            };
            if let (Some("log"), "pods", "", Some(ns), Some(name)) = (
                subresource.as_deref(),
                r.plural,
                r.group,
                namespace.as_deref(),
                name.as_deref(),
            ) {
                if req.method != "GET" {
                    return error_response(&status::method_not_allowed());
                }
                return match authorize_sub(req, "", "pods", "log", "get", Some(ns), name)
                    .and_then(|()| logs::serve(st, req, ns, name, now))
                {
                    Ok(response) => response,
                    Err(e) => error_response(&e),
                };
            }
            if r.group == events::GROUP && r.plural == "events" && subresource.is_none() {
                return events::serve(st, req, namespace.as_deref(), name.as_deref(), now);
            }
            if subresource.is_some()
                || (r.namespaced && namespace.is_none() && name.is_some())
                || (!r.namespaced && namespace.is_some())
            {
                return error_response(&status::path_not_found(&req.path));
            }
            if req.method == "GET" && name.is_none() && matches!(req.param("watch"), Some("1" | "true")) {
                return match authorize(req, &r, "watch", namespace.as_deref(), "") {
                    Err(e) => error_response(&e),
                    Ok(()) => watch::start(st, &r, namespace.as_deref(), req),
                };
            }
            // a plain list is encoded straight from the store: no copy of what it serves
            if req.method == "GET" && name.is_none() && !req.accept.contains("as=Table") {
                return match authorize(req, &r, "list", namespace.as_deref(), "")
                    .and_then(|()| list_encoded(st, req, &r, namespace.as_deref()))
                {
                    Ok(body) => encoded_response(200, body),
                    Err(e) => error_response(&e),
                };
            }
            objects(st, req, &r, namespace.as_deref(), name.as_deref(), now)
        }
        (_, Some(_)) => Err(status::method_not_allowed()),
        (_, None) => Err(status::path_not_found(&req.path)),
    };
    let writes = matches!(req.method.as_str(), "POST" | "PATCH" | "PUT" | "DELETE");
    if writes {
        st.written(written_sandbox(req, &result), now);
    }
    match result {
        Ok((code, body)) => json_response(code, &body, None),
        Err(e) => error_response(&e),
    }
}

/// A subresource (`pods/log`, `pods/exec`) authorized as RBAC does: the rule must name
/// `resource/subresource` (or `*`, or `*/subresource`).
fn authorize_sub(
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

pub(super) fn authorize(req: &Req, r: &Resource, verb: &str, ns: Option<&str>, name: &str) -> Result<(), ApiError> {
    match &req.user {
        Some(u) if !u.can(verb, r.group, r.plural, ns) => Err(status::forbidden(&u.name, verb, r, ns, name)),
        _ => Ok(()),
    }
}

fn access_review(req: &Req) -> (u16, Value) {
    let attrs = req
        .body
        .as_ref()
        .and_then(|b| b.pointer("/spec/resourceAttributes"))
        .cloned()
        .unwrap_or(json!({}));
    let f = |k: &str| attrs.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let ns = f("namespace");
    let resource = match f("subresource") {
        sub if sub.is_empty() => f("resource"),
        sub => format!("{}/{sub}", f("resource")),
    };
    let allowed = req.user.as_ref().is_none_or(|u| {
        u.can(
            &f("verb"),
            &f("group"),
            &resource,
            Some(ns.as_str()).filter(|n| !n.is_empty()),
        )
    });
    let mut out = json!({"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{},
        "spec":{"resourceAttributes":attrs},"status":{"allowed":allowed}});
    if !allowed {
        out["status"]["reason"] = json!("no RBAC policy matched");
    }
    (201, out)
}

type Answer = Result<(u16, Value), ApiError>;

fn objects(
    st: &mut SimState,
    req: &Req,
    r: &Resource,
    ns: Option<&str>,
    name: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> Answer {
    let verb = match (req.method.as_str(), name) {
        ("GET", Some(_)) => "get",
        ("GET", None) => "list",
        ("POST", None) => "create",
        ("PATCH", Some(_)) => "patch",
        ("PUT", Some(_)) => "update",
        ("DELETE", Some(_)) => "delete",
        _ => return Err(status::method_not_allowed()),
    };
    authorize(req, r, verb, ns, name.unwrap_or(""))?;
    let ns_key = ns.unwrap_or("");
    let now_s = k8s_time(now);
    let table_wanted = req.accept.contains("as=Table");
    match verb {
        "get" => {
            let obj = st
                .store
                .get(r, ns_key, name.unwrap_or(""))
                .cloned()
                .ok_or_else(|| status::not_found(r, name.unwrap_or("")))?;
            if table_wanted {
                let rv = st.store.resource_version().to_string();
                return Ok((
                    200,
                    table::table(
                        r,
                        &[obj],
                        &json!({"resourceVersion": rv}),
                        req.param("includeObject").unwrap_or("Metadata"),
                        now,
                    ),
                ));
            }
            Ok((200, obj))
        }
        "list" => list(st, req, r, ns, now),
        "create" => {
            let mut obj = req
                .body
                .clone()
                .filter(Value::is_object)
                .ok_or_else(|| status::bad_request("the body of the request must be a JSON object"))?;
            if let Some(ns) = ns {
                match obj.pointer("/metadata/namespace").and_then(Value::as_str) {
                    Some(other) if other != ns => {
                        return Err(status::bad_request(
                            "the namespace of the provided object does not match the namespace sent on the request",
                        ));
                    }
                    _ => obj["metadata"]["namespace"] = json!(ns),
                }
                if st.store.get(&NAMESPACES, "", ns).is_none() {
                    return Err(status::not_found(&NAMESPACES, ns));
                }
            }
            validate(r, &obj, None)?;
            st.store.create(r, obj, &now_s).map(|o| (201, o))
        }
        "patch" => patch(st, req, r, ns_key, name.unwrap_or("")),
        "update" => update(st, req, r, ns_key, name.unwrap_or("")),
        "delete" => delete(st, req, r, ns_key, name.unwrap_or(""), &now_s),
        _ => Err(status::method_not_allowed()),
    }
}

/// One page of a LIST: the objects (borrowed from the store) and the list's metadata.
fn page<'a>(
    st: &'a SimState,
    req: &Req,
    r: &Resource,
    ns: Option<&'a str>,
) -> Result<(Vec<&'a Value>, Value), ApiError> {
    let labels = Selector::parse(req.param("labelSelector").unwrap_or("")).map_err(|m| status::bad_request(&m))?;
    let fields = Selector::parse(req.param("fieldSelector").unwrap_or("")).map_err(|m| status::bad_request(&m))?;
    let limit = req
        .param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let after = req
        .param("continue")
        .filter(|c| !c.is_empty())
        .map(decode_continue)
        .transpose()?;
    // the page after the continue key, in key order
    let after_key = after.as_deref().map(|k| k.split_once('\u{0}').unwrap_or((k, "")));
    let mut matching = st
        .store
        .list_after(r, ns, after_key)
        .filter(|o| labels.matches_labels(o) && fields.matches_fields(o));
    let items: Vec<&Value> = match limit {
        Some(l) => matching.by_ref().take(l).collect(),
        None => matching.by_ref().collect(),
    };
    // as the API server: the count of what is left only without a selector (with one, finding
    // it would mean filtering everything left); with one, only whether anything is
    let selected = req.param("labelSelector").is_some_and(|s| !s.is_empty())
        || req.param("fieldSelector").is_some_and(|s| !s.is_empty());
    let remaining = if selected {
        usize::from(matching.next().is_some())
    } else {
        matching.count()
    };
    let rv = st.store.resource_version().to_string();
    let mut meta = json!({"resourceVersion": rv});
    if remaining > 0
        && let Some(last) = items.last()
    {
        meta["continue"] = json!(encode_continue(&object_key(last)));
        if !selected {
            meta["remainingItemCount"] = json!(remaining);
        }
    }
    Ok((items, meta))
}

/// A LIST as a Table (kubectl's `get` without `-o`).
fn list(st: &SimState, req: &Req, r: &Resource, ns: Option<&str>, now: chrono::DateTime<chrono::Utc>) -> Answer {
    let (items, meta) = page(st, req, r, ns)?;
    let items: Vec<Value> = items.into_iter().cloned().collect();
    Ok((
        200,
        table::table(r, &items, &meta, req.param("includeObject").unwrap_or("Metadata"), now),
    ))
}

/// A LIST as JSON, written from the store's objects as they are.
fn list_encoded(st: &SimState, req: &Req, r: &Resource, ns: Option<&str>) -> Result<Vec<u8>, ApiError> {
    let (items, metadata) = page(st, req, r, ns)?;
    let body = ListBody {
        kind: format!("{}List", r.kind),
        api_version: r.api_version(),
        metadata,
        // the core API omits kind and apiVersion on list items
        items: items
            .into_iter()
            .map(|object| ListItem {
                object,
                core: r.group.is_empty(),
            })
            .collect(),
    };
    Ok(serde_json::to_vec(&body).expect("json"))
}

#[derive(serde::Serialize)]
struct ListBody<'a> {
    kind: String,
    #[serde(rename = "apiVersion")]
    api_version: String,
    metadata: Value,
    items: Vec<ListItem<'a>>,
}

struct ListItem<'a> {
    object: &'a Value,
    /// Drop kind and apiVersion, as the core API does in lists.
    core: bool,
}

impl serde::Serialize for ListItem<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self.core, self.object.as_object()) {
            (true, Some(fields)) => s.collect_map(fields.iter().filter(|(k, _)| *k != "kind" && *k != "apiVersion")),
            _ => self.object.serialize(s),
        }
    }
}

fn encoded_response(code: u16, body: Vec<u8>) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .header("cache-control", "no-cache, private")
        .body(full(body))
        .expect("response")
}

fn object_key(o: &Value) -> String {
    format!("{}\u{0}{}", meta(o, "namespace"), meta(o, "name"))
}

fn encode_continue(key: &str) -> String {
    key.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_continue(token: &str) -> Result<String, ApiError> {
    let bad = || {
        status::status(
            410,
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
            json!({}),
        )
    };
    if !token.len().is_multiple_of(2) {
        return Err(bad());
    }
    let bytes: Result<Vec<u8>, _> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&token[i..i + 2], 16))
        .collect();
    bytes.ok().and_then(|b| String::from_utf8(b).ok()).ok_or_else(bad)
}

/// Keep what a write to the main resource cannot change.
fn keep_immutable(r: &Resource, old: &Value, new: &mut Value) {
    for k in [
        "uid",
        "name",
        "namespace",
        "creationTimestamp",
        "generation",
        "deletionTimestamp",
    ] {
        match old["metadata"].get(k) {
            Some(v) => new["metadata"][k] = v.clone(),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove(k);
                }
            }
        }
    }
    new["kind"] = old["kind"].clone();
    new["apiVersion"] = old["apiVersion"].clone();
    if r.has_status {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        }
    }
}

fn invalid(r: &Resource, name: &str, field_message: &str) -> ApiError {
    status::status(
        422,
        "Invalid",
        &format!("{} \"{name}\" is invalid: {field_message}", r.kind_qualified()),
        json!({"name":name,"group":r.group,"kind":r.kind}),
    )
}

/// The schema rules the real server enforces that matter here.
fn validate(r: &Resource, obj: &Value, old: Option<&Value>) -> Result<(), ApiError> {
    let name = meta(obj, "name");
    for map in ["labels", "annotations"] {
        if let Some(m) = obj["metadata"].get(map).filter(|m| !m.is_null()) {
            let ok = m.as_object().is_some_and(|m| m.values().all(Value::is_string));
            if !ok {
                return Err(invalid(
                    r,
                    name,
                    &format!("metadata.{map}: Invalid value: must be a map of strings"),
                ));
            }
        }
    }
    if r.plural == "sandboxes" {
        if let Some(mode) = obj.pointer("/spec/operatingMode")
            && mode != "Running"
            && mode != "Suspended"
        {
            return Err(invalid(
                r,
                name,
                &format!("spec.operatingMode: Unsupported value: {mode}: supported values: \"Running\", \"Suspended\""),
            ));
        }
        if let Some(old) = old
            && old.pointer("/spec/volumeClaimTemplates") != obj.pointer("/spec/volumeClaimTemplates")
        {
            return Err(invalid(
                r,
                name,
                "spec: Invalid value: \"object\": volumeClaimTemplates is immutable",
            ));
        }
    }
    Ok(())
}

fn patch(st: &mut SimState, req: &Req, r: &Resource, ns: &str, name: &str) -> Answer {
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
    let old = existing(st, r, ns, name)?;
    let mut new = old.clone();
    match ct.as_str() {
        "application/json-patch+json" => {
            let ops: json_patch::Patch = serde_json::from_slice(&req.raw_body).map_err(|_| status::patch_invalid())?;
            json_patch::patch(&mut new, &ops).map_err(|_| status::patch_invalid())?;
        }
        // strategic merge is served for the core types only, and modelled as a merge patch
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
    commit(st, req, r, old, new)
}

fn update(st: &mut SimState, req: &Req, r: &Resource, ns: &str, name: &str) -> Answer {
    let old = existing(st, r, ns, name)?;
    let new = req
        .body
        .clone()
        .filter(Value::is_object)
        .ok_or_else(|| status::bad_request("the body of the request must be a JSON object"))?;
    commit(st, req, r, old, new)
}

/// The stored object a write applies to, or the API's 404.
fn existing(st: &SimState, r: &Resource, ns: &str, name: &str) -> Result<Value, ApiError> {
    st.store
        .get(r, ns, name)
        .cloned()
        .ok_or_else(|| status::not_found(r, name))
}

/// Store a written object: optimistic concurrency on resourceVersion, immutables kept, validated.
fn commit(st: &mut SimState, req: &Req, r: &Resource, old: Value, mut new: Value) -> Answer {
    let name = meta(&old, "name").to_string();
    let sent_rv = new
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty());
    if sent_rv.is_some_and(|v| Some(v) != old.pointer("/metadata/resourceVersion").and_then(Value::as_str)) {
        return Err(status::status(
            409,
            "Conflict",
            &format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                r.qualified()
            ),
            json!({"name":name,"group":r.group,"kind":r.plural}),
        ));
    }
    keep_immutable(r, &old, &mut new);
    new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
    validate(r, &new, Some(&old))?;
    if req.param("dryRun").is_some() {
        return Ok((200, new));
    }
    Ok((200, st.store.update(r, new)))
}

fn delete(st: &mut SimState, req: &Req, r: &Resource, ns: &str, name: &str, now: &str) -> Answer {
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
        return Err(status::precondition_rv(r, name));
    }
    if req.param("dryRun").is_some()
        || opts
            .get("dryRun")
            .is_some_and(|d| d.as_array().is_some_and(|a| !a.is_empty()))
    {
        return Ok((200, old));
    }
    let deleted = st.store.delete(r, ns, name, now, &CASCADE).expect("present");
    if deleted.pointer("/metadata/deletionTimestamp").is_some() && st.store.get(r, ns, name).is_some() {
        return Ok((200, deleted));
    }
    Ok((
        200,
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",
        "details":{"name":name,"group":r.group,"kind":r.plural,"uid":have("uid")}}),
    ))
}
