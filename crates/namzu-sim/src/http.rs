//! The API server: hyper over loopback, auth, faults, the latency, the record; what a request
//! is routed to (`router`), lists (`list`), writes (`write`) and what a write is checked against
//! (`admission`) each in a module of its own.

use super::auth::authenticate;
use super::faults::{FaultAction, Gate};
use super::record::Recorded;
use super::status;
use super::wire::{Body, Req, full, query_pairs};
use super::{Shared, SimState, exec, portforward};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::{Value, json};
use std::sync::Arc;

mod admission;
mod list;
pub(super) mod reply;
mod router;
mod write;

use reply::{authorize_sub, encoded_response, error_response};
use router::{Reply, serve};

/// Serve one request; `Err` closes the connection with no answer (an injected reset).
pub(crate) async fn handle(shared: Arc<Shared>, mut req: Request<Incoming>) -> Result<Response<Body>, std::io::Error> {
    let _counted = shared.in_flight();
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
    let forward_path = portforward::portforward_target(&path).is_some();
    let upgrade =
        (websocket && (exec_path || forward_path)).then(|| (hyper::upgrade::on(&mut req), ws_key, ws_protocols));
    let raw_body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body = parsed_body(&raw_body);
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
        user_agent: user_agent.clone(),
        bytes: 0,
    };

    let Some(user) = authenticated(&shared, &authorization) else {
        let e = status::unauthorized();
        rec.status = e.code;
        shared.lock().record.push(rec);
        return Ok(error_response(&e));
    };
    rec.user = user.as_ref().map_or("admin".to_string(), |u| u.name.clone());

    let fault = {
        let mut st = shared.lock();
        st.faults.iter_mut().find_map(|f| f.fire(&method, &path))
    };
    let lost = fault == Some(FaultAction::Lost);
    let Injected {
        rec,
        mut hold,
        continue_with,
    } = match inject(&shared, fault, &path, rec).await {
        Ok(injected) => injected,
        Err(answer) => return answer,
    };

    let mut query = query_pairs(&raw_query);
    // a list that never ends is served from its first page, whatever token came back
    if continue_with.is_some() {
        query.retain(|(k, _)| k != "continue");
    }
    let req = Req {
        method,
        path,
        query,
        content_type,
        accept,
        body,
        raw_body,
        user,
        user_agent,
    };
    let response = match upgrade {
        Some((on, key, protocols)) if forward_path => {
            portforward_upgrade(&shared, &req, rec, Some((on, &key, &protocols)))
        }
        None if forward_path => portforward_upgrade(&shared, &req, rec, None),
        Some((on, key, protocols)) => exec_upgrade(&shared, &req, rec, Some((on, &key, &protocols))),
        // SPDY (a client's fallback) is not spoken: the same checks, then "upgrade required"
        None if exec_path => exec_upgrade(&shared, &req, rec, None),
        None => route(&shared, &req, rec, hold.take(), continue_with).await,
    };
    if let Some(gate) = hold {
        gate.hold().await;
    }
    if lost {
        return Err(std::io::Error::other("injected: the answer was lost"));
    }
    Ok(response)
}

/// A request's body: JSON when it parses, else its text; `None` when empty.
fn parsed_body(raw_body: &[u8]) -> Option<Value> {
    if raw_body.is_empty() {
        return None;
    }
    Some(
        serde_json::from_slice(raw_body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(raw_body).into_owned())),
    )
}

/// Who the bearer token says the caller is (`Some(None)`: no users configured, or no token);
/// `None` when the token is refused.
fn authenticated(shared: &Shared, authorization: &str) -> Option<Option<super::auth::User>> {
    let st = shared.lock();
    authenticate(&st.users, Some(authorization).filter(|a| !a.is_empty()))
        .ok()
        .map(|u| u.cloned())
}

/// What an injected fault leaves of a request still to be served: its record, a gate to hold
/// the answer at, a continue token to serve pages under.
struct Injected {
    rec: Recorded,
    hold: Option<Gate>,
    continue_with: Option<String>,
}

/// The fault that fired on this request, done: `Err` is the answer it makes instead (or the
/// connection it resets), the request recorded.
async fn inject(
    shared: &Arc<Shared>,
    fault: Option<FaultAction>,
    path: &str,
    mut rec: Recorded,
) -> Result<Injected, Result<Response<Body>, std::io::Error>> {
    let mut hold = None;
    let mut continue_with = None;
    match fault {
        Some(FaultAction::ContinueTokens(token)) => continue_with = Some(token.concat()),
        Some(FaultAction::Delay(d)) => tokio::time::sleep(d).await,
        Some(FaultAction::Lost) => {}
        Some(FaultAction::Hold(gate)) => hold = Some(gate),
        Some(FaultAction::Hang) => {
            shared.lock().record.push(rec);
            return Err(std::future::pending().await);
        }
        Some(FaultAction::Reset) => {
            shared.lock().record.push(rec);
            return Err(Err(std::io::Error::other("injected connection reset")));
        }
        Some(FaultAction::Mutate(m)) => {
            let now = shared.clock.now();
            shared.lock().mutate(path, &m, now);
        }
        Some(FaultAction::Raw { code, body }) => {
            rec.status = code;
            shared.lock().record.push(rec);
            let answer = Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(full(body.into_bytes()))
                .expect("response");
            return Err(Ok(answer));
        }
        Some(FaultAction::Endless { head, drip }) => {
            rec.status = 200;
            shared.lock().record.push(rec);
            return Err(Ok(endless(head, drip)));
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
            return Err(Ok(error_response(&e)));
        }
        None => {}
    }
    Ok(Injected {
        rec,
        hold,
        continue_with,
    })
}

/// A 200 whose body is `head`, then `drip` every 20 ms, never ending.
fn endless(head: String, drip: String) -> Response<Body> {
    use http_body_util::StreamBody;
    use hyper::body::Frame;
    let first = futures::stream::once(async move { bytes::Bytes::from(head) });
    let rest = futures::stream::unfold(bytes::Bytes::from(drip), |drip| async move {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        Some((drip.clone(), drip))
    });
    let body = futures::StreamExt::map(futures::StreamExt::chain(first, rest), |b| {
        Ok::<_, std::convert::Infallible>(Frame::data(b))
    });
    let mut response = Response::new(StreamBody::new(body).boxed_unsync());
    response
        .headers_mut()
        .insert("content-type", http::HeaderValue::from_static("text/plain"));
    response
}

/// Serve a request, the server's lock held for the store's work only, so requests on other
/// connections are served meanwhile: a write (its test-and-set, its new resourceVersion) and its
/// record under one hold, so the record's order is the order writes were applied; a LIST's page
/// taken under it and encoded after, off the runtime's threads, then recorded.
async fn route(
    shared: &Arc<Shared>,
    req: &Req,
    rec: Recorded,
    hold: Option<Gate>,
    continue_with: Option<String>,
) -> Response<Body> {
    let now = shared.clock.now();
    let (reply, unrecorded) = {
        let mut st = shared.lock();
        match serve(&mut st, req, now) {
            Reply::Now(response) => {
                record(&mut st, rec, &response);
                (Reply::Now(response), None)
            }
            page => (page, Some(rec)),
        }
    };
    // (a test's gate: the store's work done and the lock released, the answer not yet made)
    if let Some(gate) = hold {
        gate.hold().await;
    }
    let page = match reply {
        Reply::Now(response) => return response,
        Reply::Page(mut page) => {
            if let Some(token) = continue_with {
                page.set_continue(token);
            }
            page
        }
    };
    let response = match tokio::task::spawn_blocking(move || page.encode()).await {
        Ok(body) => encoded_response(200, body),
        Err(e) => error_response(&status::status(
            500,
            "InternalError",
            &format!("encoding the list failed: {e}"),
            json!({}),
        )),
    };
    if let Some(rec) = unrecorded {
        record(&mut shared.lock(), rec, &response);
    }
    response
}

fn record(st: &mut SimState, mut rec: Recorded, response: &Response<Body>) {
    rec.status = response.status().as_u16();
    rec.bytes = hyper::body::Body::size_hint(response.body()).exact().unwrap_or(0);
    st.record.push(rec);
}

/// A pod's WebSocket subresource (`exec`, `portforward`) authorized as the API server does: the
/// upgrade is a GET, which servers before 1.35 (without
/// `AuthorizePodWebsocketUpgradeCreatePermission`) authorize with `get` alone; from 1.35 `create`
/// is needed too, as it always is for a POST.
fn authorize_upgrade(
    req: &Req,
    sub: &str,
    ns: &str,
    name: &str,
    server_minor: u32,
) -> Result<(), crate::status::ApiError> {
    let verbs: &[&str] = match (req.method.as_str(), server_minor >= 35) {
        ("GET", false) => &["get"],
        ("GET", true) => &["get", "create"],
        _ => &["create"],
    };
    verbs
        .iter()
        .try_for_each(|verb| authorize_sub(req, "", "pods", sub, verb, Some(ns), name))
}

/// `pods/exec` over WebSocket: authorized as the API server does, then the pod and container
/// checked, then the 101 and the session. The upgrade is a GET, which servers before 1.35
/// (without `AuthorizePodWebsocketUpgradeCreatePermission`) authorize with `get` on `pods/exec`
/// alone; from 1.35 `create` is needed too, as it always is for a POST.
pub(super) fn exec_upgrade(
    shared: &Arc<Shared>,
    req: &Req,
    mut rec: Recorded,
    websocket: Option<(hyper::upgrade::OnUpgrade, &str, &str)>,
) -> Response<Body> {
    let now = shared.clock.now();
    let mut st = shared.lock();
    st.tick(now);
    let (ns, name) = exec::exec_target(&req.path).unwrap_or_default();
    let answer = authorize_upgrade(req, "exec", &ns, &name, st.server_minor)
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

/// `pods/portforward` over WebSocket: authorized as exec is (`get` for the upgrade's GET before
/// 1.35, `create` too from 1.35, `create` for a POST), then the pod checked, then the 101.
pub(super) fn portforward_upgrade(
    shared: &Arc<Shared>,
    req: &Req,
    mut rec: Recorded,
    websocket: Option<(hyper::upgrade::OnUpgrade, &str, &str)>,
) -> Response<Body> {
    let now = shared.clock.now();
    let mut st = shared.lock();
    st.tick(now);
    let (ns, name) = portforward::portforward_target(&req.path).unwrap_or_default();
    let answer = authorize_upgrade(req, "portforward", &ns, &name, st.server_minor).and_then(|()| {
            // the protocol first: kubectl's SPDY (tunnelled in WebSocket, or its POST fallback)
            // names its ports inside SPDY streams, so a missing `ports` is not its problem
            let spdy = || {
                status::bad_request(
                    "unable to upgrade connection: the simulated server forwards ports over WebSocket (v4.channel.k8s.io, as kube-rs speaks it) only, not SPDY, tunnelled or not",
                )
            };
            let Some((on, key, protocols)) = websocket else {
                return Err(spdy());
            };
            let protocol = portforward::choose_protocol(protocols).ok_or_else(spdy)?;
            let forward = portforward::prepare(&st, &ns, &name, &req.query)?;
            portforward::upgrade(Arc::clone(shared), forward, key, protocol, on)
        });
    let response = answer.unwrap_or_else(|e| error_response(&e));
    rec.status = response.status().as_u16();
    st.record.push(rec);
    response
}
