//! Routing a request to what serves it: discovery and OpenAPI, access reviews, the objects'
//! verbs, the subresources (`log`, `status`), lists and watches.

use super::super::clock::k8s_time;
use super::super::controller::Written;
use super::super::resources::{NAMESPACES, Resource, Target, parse_path};
use super::super::status;
use super::super::store::meta;
use super::super::wire::{Body, Req, full};
use super::super::{SimState, discovery, events, logs, pod_admission, table, watch};
use super::admission::{admit_custom, validate};
use super::list::Page;
use super::reply::{Answer, authorize, authorize_sub, error_response, json_response};
use super::write::{delete, dry_run, patch, status_subresource, update};
use hyper::Response;
use serde_json::{Value, json};
use std::ops::ControlFlow;

/// What [`serve`] made under the server's lock.
pub(super) enum Reply {
    /// The answer itself.
    Now(Response<Body>),
    /// A LIST's page, encoded once the lock is released.
    Page(Page),
}

/// What a write touched: the Sandbox written (its pass alone follows), a claim, a warm pool or a
/// template (the claims' and pools' passes and the Sandboxes they change), a pod or a disk (the
/// passes of the Sandboxes that read it), or anything else (every pass).
pub(super) fn written_object(req: &Req, result: &Answer) -> Written {
    let Some(Target::Objects {
        plural,
        namespace,
        name,
        ..
    }) = parse_path(&req.path)
    else {
        return Written::Other;
    };
    // a write refused changed nothing
    if result.is_err() {
        return Written::Nothing;
    }
    match plural.as_str() {
        "sandboxclaims" | "sandboxwarmpools" | "sandboxtemplates" => Written::ClaimOrPool,
        // one pod or disk written (a collection's delete is every pass)
        // the object as written, else (a delete answered with a Status) its name; a collection
        // (no name, no object) is every pass
        "pods" | "persistentvolumeclaims" => match (result, name) {
            (Ok((_, object)), _) if object["kind"] != "Status" && !meta(object, "name").is_empty() => {
                Written::Near(object.clone())
            }
            (_, Some(name)) => Written::Near(json!({"metadata": {"namespace": namespace, "name": name}})),
            (_, None) => Written::Other,
        },
        "sandboxes" => {
            let name = name.or_else(|| {
                let (_, created) = result.as_ref().ok()?;
                Some(meta(created, "name").to_string())
            });
            match name {
                Some(name) => Written::Sandbox((namespace.unwrap_or_default(), name)),
                None => Written::Other,
            }
        }
        _ => Written::Other,
    }
}

/// Serve a request under the server's lock: every answer but a LIST's is made here; a LIST's
/// page is taken here and encoded once the lock is released.
pub(super) fn serve(st: &mut SimState, req: &Req, now: chrono::DateTime<chrono::Utc>) -> Reply {
    // reads see what the controller last did; writes wake it (below), time wakes it (tick)
    st.tick(now);
    let served = st.served();
    let target = parse_path(&req.path);
    // a review (SelfSubjectAccessReview) is a POST that stores nothing: it wakes no controller
    let stores = matches!(target, Some(Target::Objects { .. }));
    let result = match (req.method.as_str(), target) {
        ("GET", Some(Target::Version)) => Ok((200, discovery::version(st.server_minor))),
        ("GET", Some(Target::OpenApiV2)) => {
            let (body, content_type) = discovery::openapi_v2(st.server_minor, req.accept.contains("protobuf"));
            return Reply::Now(
                Response::builder()
                    .status(200)
                    .header("content-type", content_type)
                    .body(full(body))
                    .expect("response"),
            );
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
                return Reply::Now(error_response(&status::path_not_found(&req.path)));
            };
            if let (Some("log"), "pods", "", Some(ns), Some(name)) = (
                subresource.as_deref(),
                r.plural,
                r.group,
                namespace.as_deref(),
                name.as_deref(),
            ) {
                return serve_log(st, req, ns, name, now);
            }
            if r.group == events::GROUP && r.plural == "events" && subresource.is_none() {
                return Reply::Now(events::serve(st, req, namespace.as_deref(), name.as_deref(), now));
            }
            if let (Some("status"), true, Some(name)) = (subresource.as_deref(), r.has_status, name.as_deref())
                && r.namespaced == namespace.is_some()
            {
                status_subresource(st, req, &r, namespace.as_deref().unwrap_or(""), name)
            } else {
                match collection(
                    st,
                    req,
                    &r,
                    (namespace.as_deref(), name.as_deref()),
                    subresource.is_some(),
                    now,
                ) {
                    ControlFlow::Continue(answer) => answer,
                    ControlFlow::Break(reply) => return reply,
                }
            }
        }
        (_, Some(_)) => Err(status::method_not_allowed()),
        (_, None) => Err(status::path_not_found(&req.path)),
    };
    let writes = matches!(req.method.as_str(), "POST" | "PATCH" | "PUT" | "DELETE");
    if writes && stores {
        st.written(written_object(req, &result), now);
    }
    Reply::Now(match result {
        Ok((code, body)) => json_response(code, &body, None),
        Err(e) => error_response(&e),
    })
}

/// `pods/log`: a GET, authorized on the subresource, then served.
fn serve_log(st: &mut SimState, req: &Req, ns: &str, name: &str, now: chrono::DateTime<chrono::Utc>) -> Reply {
    if req.method != "GET" {
        return Reply::Now(error_response(&status::method_not_allowed()));
    }
    Reply::Now(
        match authorize_sub(req, "", "pods", "log", "get", Some(ns), name)
            .and_then(|()| logs::serve(st, req, ns, name, now))
        {
            Ok(response) => response,
            Err(e) => error_response(&e),
        },
    )
}

/// A resource's objects (no subresource): a watch, a LIST's page (`Break`: the reply made here),
/// else the object verbs' answer.
fn collection(
    st: &mut SimState,
    req: &Req,
    r: &Resource,
    (namespace, name): (Option<&str>, Option<&str>),
    subresource: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> ControlFlow<Reply, Answer> {
    if subresource || (r.namespaced && namespace.is_none() && name.is_some()) || (!r.namespaced && namespace.is_some())
    {
        return ControlFlow::Break(Reply::Now(error_response(&status::path_not_found(&req.path))));
    }
    if req.method == "GET" && name.is_none() && matches!(req.param("watch"), Some("1" | "true")) {
        return ControlFlow::Break(Reply::Now(match authorize(req, r, "watch", namespace, "") {
            Err(e) => error_response(&e),
            Ok(()) => watch::start(st, r, namespace, req),
        }));
    }
    // a list's page is taken here (shared objects, no copy) and encoded after the
    // lock is released: a large LIST does not hold up other requests
    if req.method == "GET" && name.is_none() {
        return ControlFlow::Break(
            match authorize(req, r, "list", namespace, "").and_then(|()| Page::take(st, req, r, namespace, now)) {
                Ok(page) => Reply::Page(page),
                Err(e) => Reply::Now(error_response(&e)),
            },
        );
    }
    ControlFlow::Continue(objects(st, req, r, namespace, name, now))
}

pub(super) fn access_review(req: &Req) -> (u16, Value) {
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

/// The verbs on one object, and create (a LIST is a [`Page`], taken in `serve`).
pub(super) fn objects(
    st: &mut SimState,
    req: &Req,
    r: &Resource,
    ns: Option<&str>,
    name: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> Answer {
    let verb = match (req.method.as_str(), name) {
        ("GET", Some(_)) => "get",
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
            if r.group.is_empty()
                && r.plural == "pods"
                && let Some(why) = pod_admission::refusal(&st.store, &obj)
            {
                let name = meta(&obj, "name");
                return Err(status::status(
                    403,
                    "Forbidden",
                    &format!("pods {name:?} is forbidden: {why}"),
                    json!({"name": name, "kind": "pods"}),
                ));
            }
            // a new claim is Pending until the volume controller binds it
            if r.plural == "persistentvolumeclaims" && r.group.is_empty() && obj.pointer("/status/phase").is_none() {
                obj["status"]["phase"] = json!("Pending");
            }
            if dry_run(req) {
                return st.store.create_dry(r, obj, &now_s).map(|o| (201, o));
            }
            st.store.create(r, obj, &now_s).map(|o| (201, o))
        }
        "patch" => patch(st, req, r, ns_key, name.unwrap_or(""), &now_s),
        "update" => update(st, req, r, ns_key, name.unwrap_or(""), &now_s),
        "delete" => delete(st, req, r, ns_key, name.unwrap_or(""), now),
        _ => Err(status::method_not_allowed()),
    }
}
