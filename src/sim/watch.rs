//! `?watch=1`: ADDED/MODIFIED/DELETED as JSON lines from a resourceVersion; 410 when too old.

use super::SimState;
use super::resources::Resource;
use super::selector::Selector;
use super::status;
use super::store::{Event, rkey};
use super::wire::{Body, Req};
use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::Response;
use hyper::body::Frame;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

fn line(kind: &str, object: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(&json!({"type":kind,"object":object})).expect("json");
    bytes.push(b'\n');
    Bytes::from(bytes)
}

fn too_old(rv: &str) -> Bytes {
    line("ERROR", &status::gone(&format!("too old resource version: {rv}")).body)
}

struct Filter {
    rkey: String,
    namespace: Option<String>,
    labels: Selector,
    fields: Selector,
}

impl Filter {
    fn admits(&self, e: &Event) -> bool {
        e.rkey == self.rkey
            && self.namespace.as_deref().is_none_or(|ns| ns == e.namespace)
            && self.labels.matches_labels(&e.object)
            && self.fields.matches_fields(&e.object)
    }
}

/// Start a watch: the replay is taken and the live feed subscribed under the same lock, so no
/// event falls between them.
pub fn start(st: &mut SimState, r: &Resource, namespace: Option<&str>, req: &Req) -> Response<Body> {
    let parse = |k: &str| Selector::parse(req.param(k).unwrap_or(""));
    let (labels, fields) = match (parse("labelSelector"), parse("fieldSelector")) {
        (Ok(l), Ok(f)) => (l, f),
        (Err(m), _) | (_, Err(m)) => {
            let e = status::bad_request(&m);
            return Response::builder()
                .status(400)
                .body(super::wire::full(serde_json::to_vec(&e.body).expect("json")))
                .expect("response");
        }
    };
    let filter = Filter {
        rkey: rkey(r),
        namespace: namespace.map(str::to_string),
        labels,
        fields,
    };
    let rv_param = req.param("resourceVersion").unwrap_or("").to_string();
    let timeout = req
        .param("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(1800));

    let mut first: Vec<Bytes> = Vec::new();
    let mut from_rv = st.store.resource_version();
    let mut gone = false;
    match rv_param.parse::<u64>() {
        Ok(rv) if rv > 0 => match st.store.events_since(rv, &filter.rkey) {
            Some(events) => {
                first.extend(
                    events
                        .iter()
                        .filter(|e| filter.admits(e))
                        .map(|e| line(e.kind.as_str(), &e.object)),
                );
            }
            None => {
                first.push(too_old(&rv_param));
                gone = true;
            }
        },
        _ => {
            first.extend(
                st.store
                    .list(r, namespace)
                    .filter(|o| filter.labels.matches_labels(o) && filter.fields.matches_fields(o))
                    .map(|o| line("ADDED", o)),
            );
        }
    }
    if let Ok(rv) = rv_param.parse::<u64>() {
        from_rv = from_rv.max(rv);
    }
    let feed = st.store.events.subscribe();
    let (tx, rx) = mpsc::channel::<Bytes>(1024);
    tokio::spawn(pump(first, gone, feed, tx, filter, from_rv, timeout));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .header("transfer-encoding", "chunked")
        .body(StreamBody::new(stream).boxed_unsync())
        .expect("response")
}

async fn pump(
    first: Vec<Bytes>,
    gone: bool,
    mut feed: broadcast::Receiver<Arc<Event>>,
    tx: mpsc::Sender<Bytes>,
    filter: Filter,
    from_rv: u64,
    timeout: Duration,
) {
    for b in first {
        if tx.send(b).await.is_err() {
            return;
        }
    }
    if gone {
        return;
    }
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut deadline => return,
            _ = tx.closed() => return,
            ev = feed.recv() => match ev {
                Ok(e) if e.rv > from_rv && filter.admits(&e) => {
                    if tx.send(line(e.kind.as_str(), &e.object)).await.is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let _ = tx.send(too_old(&from_rv.to_string())).await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
    }
}
