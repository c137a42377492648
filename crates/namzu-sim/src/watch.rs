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
pub(crate) fn start(st: &mut SimState, r: &Resource, namespace: Option<&str>, req: &Req) -> Response<Body> {
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
    let bookmarks = matches!(req.param("allowWatchBookmarks"), Some("true" | "1"));
    let initial_events = match initial_events(st, req, bookmarks) {
        Ok(initial) => initial,
        Err(refused) => return *refused,
    };

    // taken under the lock, encoded by the stream's own task
    let mut first: Vec<Pending> = Vec::new();
    let mut from_rv = st.store.resource_version();
    let mut gone = false;
    let current = |st: &SimState| {
        st.store
            .shared_after(r, namespace, None)
            .filter(|o| filter.labels.matches_labels(o) && filter.fields.matches_fields(o))
            .map(|o| Pending::Added(o.clone()))
            .collect::<Vec<_>>()
    };
    match rv_param.parse::<u64>() {
        _ if initial_events => {
            first.extend(current(st));
            first.push(Pending::Line(bookmark(r, from_rv, true)));
        }
        Ok(rv) if rv > 0 => match st.store.events_since(rv, &filter.rkey) {
            Some(events) => {
                first.extend(events.into_iter().filter(|e| filter.admits(e)).map(Pending::Event));
            }
            None => {
                first.push(Pending::Line(too_old(&rv_param)));
                gone = true;
            }
        },
        _ => first.extend(current(st)),
    }
    if let Ok(rv) = rv_param.parse::<u64>()
        && !initial_events
    {
        from_rv = from_rv.max(rv);
    }
    let stream = Stream {
        feed: st.store.events.subscribe(),
        closes: st.store.watch_generation.subscribe(),
        filter,
        from_rv,
        timeout,
        bookmarks: bookmarks.then(|| (r.kind.to_string(), r.api_version())),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(1024);
    tokio::spawn(pump(first, gone, stream, tx));
    let counter = st.store.watch_bytes.clone();
    let body = futures::stream::unfold(rx, move |mut rx| {
        let counter = counter.clone();
        async move {
            let b = rx.recv().await?;
            counter.fetch_add(b.len() as u64, std::sync::atomic::Ordering::Relaxed);
            Some((Ok::<_, Infallible>(Frame::data(b)), rx))
        }
    });
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .header("transfer-encoding", "chunked")
        .body(StreamBody::new(body).boxed_unsync())
        .expect("response")
}

/// Whether the watch starts with the initial events (a streaming list, KEP-3157), its
/// parameters validated as the API server does; `Err` is the refusal.
fn initial_events(st: &SimState, req: &Req, bookmarks: bool) -> Result<bool, Box<Response<Body>>> {
    // before 1.27 the parameters do not exist: a server ignores them (a plain watch)
    let knows_watch_list = st.server_minor >= 27;
    let initial_events = match req.param("sendInitialEvents").filter(|_| knows_watch_list) {
        Some("true" | "1") => true,
        None | Some("false" | "0") => false,
        Some(other) => {
            return Err(Box::new(invalid(&format!(
                "sendInitialEvents: Invalid value: \"{other}\""
            ))));
        }
    };
    // the API server's own validation of a streaming list (KEP-3157)
    match (
        initial_events,
        req.param("resourceVersionMatch").filter(|_| knows_watch_list),
    ) {
        (true, _) if !st.watch_list => {
            return Err(Box::new(invalid(
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            )));
        }
        (true, Some("NotOlderThan")) if bookmarks => {}
        (true, Some("NotOlderThan")) => {
            return Err(Box::new(invalid(
                "allowWatchBookmarks: Required value: allowWatchBookmarks must be true when sendInitialEvents is set",
            )));
        }
        (true, _) => {
            return Err(Box::new(invalid(
                "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )));
        }
        (false, Some(_)) => {
            return Err(Box::new(invalid(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            )));
        }
        (false, None) => {}
    }
    Ok(initial_events)
}

fn invalid(message: &str) -> Response<Body> {
    let e = status::invalid(message);
    Response::builder()
        .status(e.code)
        .body(super::wire::full(serde_json::to_vec(&e.body).expect("json")))
        .expect("response")
}

/// A BOOKMARK: the newest resourceVersion, so a client that watches again resumes from it; the
/// `k8s.io/initial-events-end` one closes a streaming list's initial state.
fn bookmark(r: &Resource, rv: u64, initial_events_end: bool) -> Bytes {
    bookmark_of(r.kind, &r.api_version(), rv, initial_events_end)
}

fn bookmark_of(kind: &str, api_version: &str, rv: u64, initial_events_end: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if initial_events_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    line(
        "BOOKMARK",
        &json!({"kind": kind, "apiVersion": api_version, "metadata": metadata}),
    )
}

/// A line of a watch's start, taken under the server's lock and encoded by the stream's task.
enum Pending {
    Line(Bytes),
    Added(Arc<Value>),
    Event(Arc<Event>),
}

impl Pending {
    fn encode(self) -> Bytes {
        match self {
            Pending::Line(b) => b,
            Pending::Added(o) => line("ADDED", &o),
            Pending::Event(e) => line(e.kind.as_str(), &e.object),
        }
    }
}

/// One open watch's live part.
struct Stream {
    feed: broadcast::Receiver<Arc<Event>>,
    closes: tokio::sync::watch::Receiver<u64>,
    filter: Filter,
    from_rv: u64,
    timeout: Duration,
    /// kind and apiVersion, when the client asked for bookmarks.
    bookmarks: Option<(String, String)>,
}

/// How often an idle watch that asked for them gets a bookmark (the API server's is a minute).
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

async fn pump(first: Vec<Pending>, gone: bool, mut w: Stream, tx: mpsc::Sender<Bytes>) {
    for p in first {
        if tx.send(p.encode()).await.is_err() {
            return;
        }
    }
    if gone {
        return;
    }
    let mut newest = w.from_rv;
    let deadline = tokio::time::sleep(w.timeout);
    tokio::pin!(deadline);
    let mut marks = tokio::time::interval_at(tokio::time::Instant::now() + BOOKMARK_EVERY, BOOKMARK_EVERY);
    let mark = |rv: u64, w: &Stream| w.bookmarks.as_ref().map(|(k, v)| bookmark_of(k, v, rv, false));
    loop {
        tokio::select! {
            _ = &mut deadline => {
                // as the API server does: a last bookmark, so the next watch starts from here
                if let Some(b) = mark(newest, &w) {
                    let _ = tx.send(b).await;
                }
                return;
            }
            _ = tx.closed() => return,
            _ = w.closes.changed() => return,
            _ = marks.tick() => {
                if let Some(b) = mark(newest, &w)
                    && tx.send(b).await.is_err()
                {
                    return;
                }
            }
            ev = w.feed.recv() => match ev {
                Ok(e) if e.rv > w.from_rv => {
                    newest = newest.max(e.rv);
                    if w.filter.admits(&e) && tx.send(line(e.kind.as_str(), &e.object)).await.is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let _ = tx.send(too_old(&w.from_rv.to_string())).await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
    }
}
