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
    // a round trip: the answer (a watch's head) comes this much later, on the runtime's timer
    let latency = shared.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
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
        ("GET", Some(Target::Version)) => Ok((200, discovery::version(st.server_minor))),
        ("GET", Some(Target::OpenApiV2)) => {
            let (body, content_type) = discovery::openapi_v2(st.server_minor, req.accept.contains("protobuf"));
            return Response::builder()
                .status(200)
                .header("content-type", content_type)
                .body(full(body))
                .expect("response");
        }
        // OpenAPI v3 is served from Kubernetes 1.27 (beta from 1.24; the sim serves it from 1.27)
        ("GET", Some(Target::OpenApiIndex | Target::OpenApi(..))) if st.server_minor < 27 => {
            Err(status::path_not_found(&req.path))
        }
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
        ("GET", Some(Target::OpenApi(g, v))) => discovery::openapi(&served, &g, &v, st.server_minor)
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
            if let (Some("status"), true, Some(name)) = (subresource.as_deref(), r.has_status, name.as_deref())
                && r.namespaced == namespace.is_some()
            {
                status_subresource(st, req, &r, namespace.as_deref().unwrap_or(""), name)
            } else {
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
    // the sim speaks JSON only: a protobuf body (kubectl ≥ 1.32 sends one for core kinds) gets
    // 415, on which clients send JSON instead
    if matches!(verb, "create" | "update" | "patch")
        && req.content_type.starts_with("application/vnd.kubernetes.protobuf")
    {
        return Err(status::unsupported_media(&req.content_type));
    }
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
            admit_custom(r, &mut obj);
            validate(r, &obj, None)?;
            if dry_run(req) {
                return st.store.create_dry(r, obj, &now_s).map(|o| (201, o));
            }
            st.store.create(r, obj, &now_s).map(|o| (201, o))
        }
        "patch" => patch(st, req, r, ns_key, name.unwrap_or(""), &now_s),
        "update" => update(st, req, r, ns_key, name.unwrap_or("")),
        "delete" => delete(st, req, r, ns_key, name.unwrap_or(""), now),
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
    list_version(st, req)?;
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
    // a custom resource's list always has `continue` (empty when nothing follows)
    if r.is_custom() {
        meta["continue"] = json!("");
    }
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
    let (items, mut meta) = page(st, req, r, ns)?;
    // a Table's metadata has no empty continue (a list of custom resources does)
    if meta["continue"] == ""
        && let Some(m) = meta.as_object_mut()
    {
        m.remove("continue");
    }
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

/// A LIST's `resourceVersion` and `resourceVersionMatch`, as the API server validates and
/// honours them: the sim keeps no old snapshots, so any version it can serve is the newest.
fn list_version(st: &SimState, req: &Req) -> Result<(), ApiError> {
    let rv = req.param("resourceVersion").unwrap_or("");
    let list_options = |m: &str| {
        status::status(
            422,
            "Invalid",
            &format!("ListOptions.meta.k8s.io \"\" is invalid: {m}"),
            json!({"group": "meta.k8s.io", "kind": "ListOptions"}),
        )
    };
    let rvm = req.param("resourceVersionMatch").unwrap_or("");
    match rvm {
        "" | "NotOlderThan" | "Exact" => {}
        other => {
            return Err(list_options(&format!(
                "resourceVersionMatch: Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\", \"\""
            )));
        }
    }
    if !rvm.is_empty() && rv.is_empty() {
        return Err(list_options(
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ));
    }
    if rvm == "Exact" && rv == "0" {
        return Err(list_options(
            "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ));
    }
    if rv.is_empty() || rv == "0" {
        return Ok(());
    }
    let asked: u64 = rv.parse().map_err(|_| {
        status::bad_request(&format!(
            "invalid resource version: strconv.ParseUint: parsing \"{rv}\": invalid syntax"
        ))
    })?;
    let current = st.store.resource_version();
    if asked > current {
        // the API server waits up to 3 s for its cache to catch up, then gives up
        let mut e = status::status(
            504,
            "Timeout",
            &format!("Too large resource version: {asked}, current: {current}"),
            json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}),
        );
        e.retry_after = Some(1);
        return Err(e);
    }
    if rvm == "Exact" && asked < current {
        // a snapshot of the past: the sim has none, so it is as good as compacted
        return Err(status::status(
            410,
            "Expired",
            "The resourceVersion for the provided list is too old.",
            json!({}),
        ));
    }
    Ok(())
}

/// A continue token that does not decode: 400 (an expired one would be 410; the sim's never expire).
fn decode_continue(token: &str) -> Result<String, ApiError> {
    let bad = || status::bad_request(&format!("continue key is not valid: illegal continue token: {token:?}"));
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
    if let Some(m) = obj.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in m {
            if let Some(why) = qualified_name_error(k) {
                return Err(invalid(
                    r,
                    name,
                    &format!("metadata.labels: Invalid value: {k:?}: {why}"),
                ));
            }
            if let Some(v) = v.as_str()
                && let Some(why) = label_value_error(v)
            {
                return Err(invalid(
                    r,
                    name,
                    &format!("metadata.labels: Invalid value: {v:?}: {why}"),
                ));
            }
        }
    }
    if let Some(m) = obj.pointer("/metadata/annotations").and_then(Value::as_object) {
        for k in m.keys() {
            if let Some(why) = qualified_name_error(k) {
                return Err(invalid(
                    r,
                    name,
                    &format!("metadata.annotations: Invalid value: {k:?}: {why}"),
                ));
            }
        }
    }
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

const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn name_part_ok(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A label or annotation key's error, as `IsQualifiedName` words it; `None` when valid.
fn qualified_name_error(key: &str) -> Option<String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        let label_ok = |l: &str| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        };
        if p.is_empty() || p.len() > 253 || !p.split('.').all(label_ok) {
            return Some("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string());
        }
    }
    if name.is_empty() {
        return Some("name part must be non-empty".to_string());
    }
    if name.len() > 63 {
        return Some("name part must be no more than 63 characters".to_string());
    }
    (!name_part_ok(name)).then(|| NAME_PART.to_string())
}

/// A label value's error; `None` when valid (empty is valid).
fn label_value_error(v: &str) -> Option<String> {
    if v.is_empty() {
        return None;
    }
    if v.len() > 63 {
        return Some("must be no more than 63 characters".to_string());
    }
    (!name_part_ok(v)).then(|| "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string())
}

/// `?dryRun=All`: answer as if written, write nothing.
fn dry_run(req: &Req) -> bool {
    req.query.iter().any(|(k, v)| k == "dryRun" && !v.is_empty())
}

/// The Sandbox spec fields of agent-sandbox's CRDs (v1.0 and 0.5.x): anything else is pruned.
const SANDBOX_SPEC: [&str; 7] = [
    "operatingMode",
    "podTemplate",
    "replicas",
    "service",
    "shutdownPolicy",
    "shutdownTime",
    "volumeClaimTemplates",
];

/// What the API server does to a custom resource before validation: the CRD's defaults applied
/// and unknown fields pruned (a Sandbox's top level and spec; pod templates keep everything).
fn admit_custom(r: &Resource, obj: &mut Value) {
    if !r.is_custom() {
        return;
    }
    if let Some(o) = obj.as_object_mut() {
        o.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "spec" | "status"));
    }
    if r.plural == "sandboxes"
        && let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.retain(|k, _| SANDBOX_SPEC.contains(&k.as_str()));
        if r.version != "v1alpha1" {
            spec.entry("operatingMode").or_insert(json!("Running"));
            spec.entry("shutdownPolicy").or_insert(json!("Retain"));
        }
    }
}

/// A Sandbox's status as its CRD's schema checks it: `podIPs` are strings, a condition's
/// `reason` is at least one character and `status` True/False/Unknown.
fn status_errors(r: &Resource, obj: &Value) -> Option<String> {
    if r.plural != "sandboxes" {
        return None;
    }
    let status = obj.get("status")?;
    if let Some(ips) = status.get("podIPs").and_then(Value::as_array) {
        for (i, ip) in ips.iter().enumerate() {
            if !ip.is_string() {
                let kind = if ip.is_object() { "object" } else { "value" };
                return Some(format!(
                    "status.podIPs[{i}]: Invalid value: \"{kind}\": status.podIPs[{i}] in body must be of type string: \"{kind}\""
                ));
            }
        }
    }
    if let Some(conds) = status.get("conditions").and_then(Value::as_array) {
        for (i, c) in conds.iter().enumerate() {
            let reason = c.get("reason").and_then(Value::as_str).unwrap_or("");
            if reason.is_empty() {
                return Some(format!(
                    "status.conditions[{i}].reason: Invalid value: \"\": status.conditions[{i}].reason in body should be at least 1 chars long"
                ));
            }
            // ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$
            let b = reason.as_bytes();
            let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':');
            if !b[0].is_ascii_alphabetic()
                || !b.iter().all(inner)
                || !(b[b.len() - 1].is_ascii_alphanumeric() || b[b.len() - 1] == b'_')
            {
                return Some(format!(
                    "status.conditions[{i}].reason: Invalid value: \"{reason}\": status.conditions[{i}].reason in body should match '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'"
                ));
            }
            let st = c.get("status").and_then(Value::as_str).unwrap_or("");
            if !matches!(st, "True" | "False" | "Unknown") {
                return Some(format!(
                    "status.conditions[{i}].status: Unsupported value: \"{st}\": supported values: \"True\", \"False\", \"Unknown\""
                ));
            }
        }
    }
    None
}

/// A body patched as its content type says: JSON Patch, merge patch (strategic merge for the
/// core kinds, modelled as a merge patch).
fn apply_patch(req: &Req, r: &Resource, ct: &str, old: &Value) -> Result<Value, ApiError> {
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
fn status_subresource(st: &mut SimState, req: &Req, r: &Resource, ns: &str, name: &str) -> Answer {
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
fn server_side_apply(st: &mut SimState, req: &Req, r: &Resource, ns: &str, name: &str, now: &str) -> Answer {
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
            commit(st, req, r, old, new)
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

fn patch(st: &mut SimState, req: &Req, r: &Resource, ns: &str, name: &str, now: &str) -> Answer {
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
    admit_custom(r, &mut new);
    validate(r, &new, Some(&old))?;
    if dry_run(req) {
        if r.is_custom() {
            super::store::sort_keys(&mut new);
        }
        return Ok((200, new));
    }
    Ok((200, st.store.update(r, new)))
}

fn delete(
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

/// A DELETE with the garbage collector's delay: a pod bound to a node is marked Terminating
/// (its kubelet confirms later); anything else goes now and its dependents later.
fn delete_later(
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
        st.gc_due.push(super::GcDue::Pod {
            at,
            namespace: ns.to_string(),
            name: name.to_string(),
            uid: uid.to_string(),
        });
        return st.store.update(r, marked);
    }
    let deleted = st.store.delete(r, ns, name, now, &[]).unwrap_or_else(|| old.clone());
    st.gc_due.push(super::GcDue::Dependents {
        at,
        namespace: ns.to_string(),
        owner_uid: uid.to_string(),
    });
    deleted
}
