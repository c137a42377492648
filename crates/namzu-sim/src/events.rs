//! `events.k8s.io/v1`: the core/v1 Events the model records, served in the newer group as the
//! API server converts them (`involvedObject` → `regarding`, `message` → `note`,
//! `reportingComponent` → `reportingController`, `source` / `firstTimestamp` / `lastTimestamp`
//! / `count` → `deprecated*`; `eventTime` as recorded, else the first timestamp). GET of one,
//! LIST (label and field selectors on the converted object: `regarding.name`, `regarding.uid`,
//! `reason`, `type`) and WATCH; writes are refused (the sim's events are the model's). Also the
//! helpers that record a core/v1 Event the way a recorder does.

use super::SimState;
use super::http::reply::{authorize, error_response, json_response};
use super::resources::{EVENTS, EVENTS_V1};
use super::selector::Selector;
use super::status;
use super::store::{EventType, rkey};
use super::table;
use super::wire::{Body, Req};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use http_body_util::{BodyExt, StreamBody};
use hyper::Response;
use hyper::body::Frame;
use serde_json::{Value, json};
use std::convert::Infallible;
use tokio::sync::{broadcast, mpsc};

pub(crate) const GROUP: &str = "events.k8s.io";

/// A core/v1 Event as `events.k8s.io/v1` shows it.
pub(crate) fn to_v1(core: &Value) -> Value {
    let mut out = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": core["metadata"].clone()});
    let copy = |out: &mut Value, from: &str, to: &str| {
        if let Some(v) = core.get(from).filter(|v| !v.is_null()) {
            out[to] = v.clone();
        }
    };
    copy(&mut out, "involvedObject", "regarding");
    copy(&mut out, "related", "related");
    copy(&mut out, "message", "note");
    copy(&mut out, "reason", "reason");
    copy(&mut out, "type", "type");
    copy(&mut out, "action", "action");
    copy(&mut out, "series", "series");
    copy(&mut out, "reportingComponent", "reportingController");
    copy(&mut out, "reportingInstance", "reportingInstance");
    copy(&mut out, "source", "deprecatedSource");
    copy(&mut out, "firstTimestamp", "deprecatedFirstTimestamp");
    copy(&mut out, "lastTimestamp", "deprecatedLastTimestamp");
    copy(&mut out, "count", "deprecatedCount");
    let event_time = core
        .get("eventTime")
        .filter(|v| !v.is_null())
        .cloned()
        .or_else(|| core.get("firstTimestamp").filter(|v| !v.is_null()).map(micro));
    out["eventTime"] = event_time.unwrap_or(Value::Null);
    out
}

/// A whole-second time as a MicroTime (`…T12:00:00.000000Z`).
fn micro(t: &Value) -> Value {
    match t.as_str().and_then(|s| s.strip_suffix('Z')) {
        Some(base) if !base.contains('.') => json!(format!("{base}.000000Z")),
        _ => t.clone(),
    }
}

/// Who records an event.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reporter {
    pub component: &'static str,
    /// The host or instance (`sim-node-1` for the kubelet).
    pub instance: &'static str,
}

pub(crate) const SANDBOX_CONTROLLER: Reporter = Reporter {
    component: "sandbox-controller",
    instance: "agent-sandbox-controller-0",
};
pub(crate) const CLAIM_CONTROLLER: Reporter = Reporter {
    component: "sandboxclaim-controller",
    instance: "agent-sandbox-controller-0",
};
pub(crate) const POOL_CONTROLLER: Reporter = Reporter {
    component: "sandboxwarmpool-controller",
    instance: "agent-sandbox-controller-0",
};
pub(crate) const KUBELET: Reporter = Reporter {
    component: "kubelet",
    instance: "sim-node-1",
};
pub(crate) const SCHEDULER: Reporter = Reporter {
    component: "default-scheduler",
    instance: "default-scheduler-sim",
};

/// A core/v1 Event about `object` as a recorder writes it: `involvedObject` with kind, name,
/// namespace, uid and apiVersion, first/last timestamp, count, source, reportingComponent.
pub(crate) fn core_event(
    name: &str,
    object: &Value,
    reason: &str,
    message: &str,
    type_: &str,
    by: Reporter,
    at: &str,
) -> Value {
    let s = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
    let ns = s("/metadata/namespace");
    let mut source = json!({"component": by.component});
    if by.component == "kubelet" {
        source["host"] = json!(by.instance);
    }
    json!({"metadata": {"name": name, "namespace": ns, "creationTimestamp": at},
        "involvedObject": {"apiVersion": s("/apiVersion"), "kind": s("/kind"), "name": s("/metadata/name"),
            "namespace": ns, "uid": s("/metadata/uid"), "resourceVersion": s("/metadata/resourceVersion")},
        "reason": reason, "message": message, "type": type_, "count": 1,
        "firstTimestamp": at, "lastTimestamp": at, "eventTime": null,
        "source": source, "reportingComponent": by.component, "reportingInstance": by.instance})
}

/// Serve `/apis/events.k8s.io/v1/[namespaces/{ns}/]events[/{name}]`.
pub(crate) fn serve(
    st: &mut SimState,
    req: &Req,
    ns: Option<&str>,
    name: Option<&str>,
    now: DateTime<Utc>,
) -> Response<Body> {
    let verb = match (req.method.as_str(), name) {
        ("GET", Some(_)) => "get",
        ("GET", None) if matches!(req.param("watch"), Some("1" | "true")) => "watch",
        ("GET", None) => "list",
        _ => return error_response(&status::method_not_allowed()),
    };
    if let Err(e) = authorize(req, &EVENTS_V1, verb, ns, name.unwrap_or("")) {
        return error_response(&e);
    }
    if let Some(name) = name {
        return match st.store.get(&EVENTS, ns.unwrap_or(""), name) {
            Some(e) => json_response(200, &to_v1(e), None),
            None => error_response(&status::not_found(&EVENTS_V1, name)),
        };
    }
    let parse = |k: &str| Selector::parse(req.param(k).unwrap_or(""));
    let (labels, fields) = match (parse("labelSelector"), parse("fieldSelector")) {
        (Ok(l), Ok(f)) => (l, f),
        (Err(m), _) | (_, Err(m)) => return error_response(&status::bad_request(&m)),
    };
    let items: Vec<Value> = st
        .store
        .list(&EVENTS, ns)
        .map(to_v1)
        .filter(|e| labels.matches_labels(e) && fields.matches_fields(e))
        .collect();
    let rv = st.store.resource_version().to_string();
    if verb == "watch" {
        // from a resourceVersion: what changed since (410 once forgotten); else the current state
        let first = match req.param("resourceVersion").and_then(|v| v.parse::<u64>().ok()) {
            Some(rv) if rv > 0 => match st.store.events_since(rv, &rkey(&EVENTS)) {
                Some(since) => since
                    .iter()
                    .filter(|e| ns.is_none_or(|n| n == e.namespace))
                    .map(|e| (kind_of(e.kind), to_v1(&e.object)))
                    .filter(|(_, o)| labels.matches_labels(o) && fields.matches_fields(o))
                    .map(|(k, o)| line(k, &o))
                    .collect(),
                None => {
                    let gone = status::gone(&format!("too old resource version: {rv}"));
                    return watch(st, vec![line("ERROR", &gone.body)], true, ns, labels, fields);
                }
            },
            _ => items.iter().map(|o| line("ADDED", o)).collect(),
        };
        return watch(st, first, false, ns, labels, fields);
    }
    if req.accept.contains("as=Table") {
        let t = table::table(
            &EVENTS_V1,
            &items,
            &json!({"resourceVersion": rv}),
            req.param("includeObject").unwrap_or("Metadata"),
            now,
        );
        return json_response(200, &t, None);
    }
    json_response(
        200,
        &json!({"kind": "EventList", "apiVersion": "events.k8s.io/v1",
            "metadata": {"resourceVersion": rv}, "items": items}),
        None,
    )
}

fn line(kind: &str, object: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

fn kind_of(k: EventType) -> &'static str {
    match k {
        EventType::Added => "ADDED",
        EventType::Modified => "MODIFIED",
        EventType::Deleted => "DELETED",
    }
}

/// A watch of converted events: `first` (the current ones, or what changed since the client's
/// resourceVersion), then each change.
fn watch(
    st: &SimState,
    first: Vec<Bytes>,
    gone: bool,
    ns: Option<&str>,
    labels: Selector,
    fields: Selector,
) -> Response<Body> {
    let mut feed = st.store.events.subscribe();
    let mut closes = st.store.watch_generation.subscribe();
    let from = st.store.resource_version();
    let (core, ns) = (rkey(&EVENTS), ns.map(str::to_string));
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    tokio::spawn(async move {
        for b in first {
            if tx.send(b).await.is_err() {
                return;
            }
        }
        if gone {
            return;
        }
        loop {
            tokio::select! {
                _ = tx.closed() => return,
                _ = closes.changed() => return,
                ev = feed.recv() => match ev {
                    Ok(e) if e.rv > from && e.rkey == core && ns.as_deref().is_none_or(|n| n == e.namespace) => {
                        let object = to_v1(&e.object);
                        if labels.matches_labels(&object)
                            && fields.matches_fields(&object)
                            && tx.send(line(kind_of(e.kind), &object)).await.is_err()
                        {
                            return;
                        }
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    });
    let body = futures::stream::unfold(rx, |mut rx| async move {
        let b = rx.recv().await?;
        Some((Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .header("transfer-encoding", "chunked")
        .body(StreamBody::new(body).boxed_unsync())
        .expect("response")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_maps_fields_as_the_api_server_does() {
        let pod = json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns","uid":"u1"}});
        let core = core_event(
            "p.1",
            &pod,
            "Pulled",
            "pulled",
            "Normal",
            KUBELET,
            "2026-11-29T12:00:00Z",
        );
        assert_eq!(core["involvedObject"]["uid"], "u1");
        assert_eq!(core["source"]["host"], "sim-node-1");
        let v1 = to_v1(&core);
        assert_eq!(v1["regarding"]["name"], "p");
        assert_eq!(v1["note"], "pulled");
        assert_eq!(v1["reportingController"], "kubelet");
        assert_eq!(v1["deprecatedCount"], 1);
        assert_eq!(v1["eventTime"], "2026-11-29T12:00:00.000000Z");
    }
}
