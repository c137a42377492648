//! Container logs as a kubelet keeps them, and `GET …/pods/{name}/log` as the API server serves
//! them: per (namespace, pod, container) a current and a previous instance, each a bounded ring
//! of (time, line) stamped by the sim's clock. A pod recreated under the same name starts with
//! empty logs (the ring remembers the pod's uid). `follow=true` streams new lines as they are
//! appended and ends when that instance ends (a restart) or the pod is deleted. Query parameters:
//! `container`, `previous`, `follow`, `tailLines`, `sinceSeconds`, `sinceTime`, `timestamps`,
//! `limitBytes`; errors worded as kube-apiserver and the kubelet word them.

use super::SimState;
use super::resources::PODS;
use super::status::{self, ApiError};
use super::store::{EventType, rkey};
use super::wire::{Body, Req, full};
use bytes::Bytes;
use chrono::{DateTime, Duration, Utc};
use http_body_util::{BodyExt, StreamBody};
use hyper::Response;
use hyper::body::Frame;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use tokio::sync::{broadcast, mpsc};

/// Lines kept per container instance (the kubelet rotates; the sim forgets the oldest).
const RING: usize = 5000;

/// How often a followed generated log gets a new line, in sim time.
const CHATTER_EVERY: i64 = 2;

/// What a follower of one instance hears.
#[derive(Debug, Clone)]
pub(crate) enum Feed {
    Line(DateTime<Utc>, String),
    /// The instance ended (the container restarted or the pod went away).
    End,
}

/// One run of a container: its lines, and the feed of its followers.
pub struct Instance {
    pub lines: VecDeque<(DateTime<Utc>, String)>,
    tx: broadcast::Sender<Feed>,
}

impl Default for Instance {
    fn default() -> Self {
        Instance {
            lines: VecDeque::new(),
            tx: broadcast::channel(1024).0,
        }
    }
}

impl Instance {
    fn push(&mut self, t: DateTime<Utc>, line: &str) {
        if self.lines.len() == RING {
            self.lines.pop_front();
        }
        self.lines.push_back((t, line.to_string()));
        let _ = self.tx.send(Feed::Line(t, line.to_string()));
    }

    fn end(&self) {
        let _ = self.tx.send(Feed::End);
    }

    fn followers(&self) -> usize {
        self.tx.receiver_count()
    }
}

/// The logs of one container of one pod.
#[derive(Default)]
pub struct ContainerLog {
    pub pod_uid: String,
    pub current: Instance,
    pub previous: Option<Instance>,
    /// A generated log: while followed it gets a line every couple of seconds of sim time.
    pub chatty: bool,
    beats: u64,
}

type Key = (String, String, String);

/// Every container's logs.
#[derive(Default)]
pub struct Logs {
    map: HashMap<Key, ContainerLog>,
    /// The containers someone has followed: only these can chatter.
    followed: HashSet<Key>,
}

impl std::fmt::Debug for Logs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Logs({} containers)", self.map.len())
    }
}

fn key(ns: &str, pod: &str, container: &str) -> Key {
    (ns.to_string(), pod.to_string(), container.to_string())
}

impl Logs {
    /// The log of `container` of the pod `uid`; a different pod under the name starts afresh.
    pub fn entry(&mut self, ns: &str, pod: &str, uid: &str, container: &str) -> &mut ContainerLog {
        let k = key(ns, pod, container);
        let stale = self.map.get(&k).is_some_and(|c| c.pod_uid != uid);
        if stale && let Some(old) = self.map.remove(&k) {
            old.current.end();
        }
        self.map.entry(k).or_insert_with(|| ContainerLog {
            pod_uid: uid.to_string(),
            ..ContainerLog::default()
        })
    }

    /// The log of `container` of the pod `uid`, if it has one.
    pub fn get(&self, ns: &str, pod: &str, uid: &str, container: &str) -> Option<&ContainerLog> {
        self.map.get(&key(ns, pod, container)).filter(|c| c.pod_uid == uid)
    }

    /// Whether the container of pod `uid` has logged anything (current or previous).
    pub fn has_any(&self, ns: &str, pod: &str, uid: &str, container: &str) -> bool {
        self.get(ns, pod, uid, container)
            .is_some_and(|c| !c.current.lines.is_empty() || c.previous.is_some())
    }

    pub fn append(&mut self, ns: &str, pod: &str, uid: &str, container: &str, t: DateTime<Utc>, line: &str) {
        self.entry(ns, pod, uid, container).current.push(t, line);
    }

    /// Replace an instance's lines with these (current, or previous).
    pub fn set(
        &mut self,
        ns: &str,
        pod: &str,
        uid: &str,
        container: &str,
        lines: Vec<(DateTime<Utc>, String)>,
        previous: bool,
    ) {
        let c = self.entry(ns, pod, uid, container);
        let target = if previous {
            c.previous.insert(Instance::default())
        } else {
            c.current.lines.clear();
            &mut c.current
        };
        for (t, line) in lines {
            target.push(t, &line);
        }
    }

    /// The container restarts: its current log becomes the previous one; followers of the old
    /// instance are told it ended.
    pub fn restart(&mut self, ns: &str, pod: &str, uid: &str, container: &str) {
        let c = self.entry(ns, pod, uid, container);
        let old = std::mem::take(&mut c.current);
        old.end();
        c.previous = Some(old);
    }

    /// The pod is gone: its logs go, and their followers end.
    pub fn forget_pod(&mut self, ns: &str, pod: &str) {
        self.map.retain(|(n, p, _), c| {
            let gone = n == ns && p == pod;
            if gone {
                c.current.end();
            }
            !gone
        });
    }

    /// Follow the current instance of a container.
    fn follow(&mut self, ns: &str, pod: &str, uid: &str, container: &str) -> broadcast::Receiver<Feed> {
        self.followed.insert(key(ns, pod, container));
        self.entry(ns, pod, uid, container).current.tx.subscribe()
    }

    /// A followed generated log gets a line when the last is a couple of seconds old.
    pub fn chatter(&mut self, now: DateTime<Utc>) {
        let map = &mut self.map;
        self.followed
            .retain(|k| map.get(k).is_some_and(|c| c.current.followers() > 0));
        for k in &self.followed {
            let Some(c) = self.map.get_mut(k).filter(|c| c.chatty) else {
                continue;
            };
            let last = c.current.lines.back().map(|(t, _)| *t);
            if last.is_none_or(|t| now - t >= Duration::seconds(CHATTER_EVERY)) {
                c.beats += 1;
                let line = chatter_line(c.beats);
                c.current.push(now, &line);
            }
        }
    }
}

/// The lines an agent workspace logs while it idles.
fn chatter_line(n: u64) -> String {
    match n % 4 {
        0 => format!("level=info msg=\"heartbeat\" sessions=0 uptime_ticks={n}"),
        1 => "level=info msg=\"waiting for work\" queue=agent-tasks".to_string(),
        2 => "level=debug msg=\"workspace sync\" path=/workspace changed=0".to_string(),
        _ => "level=info msg=\"model gateway ok\" latency_ms=41".to_string(),
    }
}

/// The startup lines of an agent container with no scenario log.
pub(crate) fn startup_lines(pod: &str, image: &str) -> Vec<String> {
    vec![
        format!("level=info msg=\"agent starting\" image={image}"),
        "level=info msg=\"mounted workspace\" path=/workspace".to_string(),
        format!("level=info msg=\"registered with control plane\" sandbox={pod}"),
        "level=info msg=\"listening\" addr=0.0.0.0:8080".to_string(),
        "level=info msg=\"ready\"".to_string(),
    ]
}

/// The lines of an agent run that ended in a fatal error (a crash loop's previous instance).
pub(crate) fn crash_lines(image: &str) -> Vec<String> {
    vec![
        format!("level=info msg=\"agent starting\" image={image}"),
        "level=info msg=\"mounted workspace\" path=/workspace".to_string(),
        "level=warn msg=\"model gateway not reachable, retrying\" attempt=1".to_string(),
        "level=warn msg=\"model gateway not reachable, retrying\" attempt=2".to_string(),
        "level=error msg=\"config: AGENT_API_KEY is not set\"".to_string(),
        "level=fatal msg=\"startup failed: missing credentials\" exit_code=1".to_string(),
    ]
}

/// Go's `time.RFC3339Nano`: trailing zeros of the fraction dropped.
pub(crate) fn rfc3339_nano(t: DateTime<Utc>) -> String {
    let base = t.format("%Y-%m-%dT%H:%M:%S");
    let nanos = t.timestamp_subsec_nanos();
    if nanos == 0 {
        return format!("{base}Z");
    }
    let frac = format!("{nanos:09}");
    format!("{base}.{}Z", frac.trim_end_matches('0'))
}

/// Go's `strconv.ParseBool`.
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// The containers a pod names (regular, then init), by name.
pub(crate) fn container_names(pod: &Value) -> (Vec<String>, Vec<String>) {
    let names = |p: &str| -> Vec<String> {
        pod.pointer(p)
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| c["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    (names("/spec/containers"), names("/spec/initContainers"))
}

/// The container a log or exec request means, validated as the API server does.
pub(crate) fn pick_container(pod: &Value, name: &str, asked: Option<&str>) -> Result<String, ApiError> {
    let (regular, init) = container_names(pod);
    match asked.filter(|c| !c.is_empty()) {
        Some(c) if regular.iter().chain(&init).any(|n| n == c) => Ok(c.to_string()),
        Some(c) => Err(status::bad_request(&format!(
            "container {c} is not valid for pod {name}"
        ))),
        None if regular.len() == 1 => Ok(regular[0].clone()),
        None if regular.is_empty() => Err(status::bad_request(&format!(
            "a container name must be specified for pod {name}"
        ))),
        None => {
            let mut msg = format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                regular.join(" ")
            );
            if !init.is_empty() {
                msg.push_str(&format!(" or one of the init containers: [{}]", init.join(" ")));
            }
            Err(status::bad_request(&msg))
        }
    }
}

/// A container's status in the pod, if the kubelet reported one.
pub(crate) fn container_status<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    ["/status/containerStatuses", "/status/initContainerStatuses"]
        .iter()
        .filter_map(|p| pod.pointer(p).and_then(Value::as_array))
        .flatten()
        .find(|c| c["name"] == container)
}

/// Which instance a request reads, and whether it can be followed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Which {
    Current { live: bool },
    Previous,
}

/// The kubelet's choice of instance (`validateContainerLogStatus`), or its error.
fn which(pod: &Value, name: &str, container: &str, previous: bool) -> Result<Which, ApiError> {
    let cs = container_status(pod, container).cloned().unwrap_or(json!({}));
    let state = &cs["state"];
    let last_terminated = cs.pointer("/lastState/terminated").filter(|t| !t.is_null());
    let bad = |m: String| Err(status::bad_request(&m));
    if previous {
        return match last_terminated {
            Some(_) => Ok(Which::Previous),
            None => bad(format!(
                "previous terminated container \"{container}\" in pod \"{name}\" not found"
            )),
        };
    }
    if state.get("running").is_some() {
        return Ok(Which::Current { live: true });
    }
    if state.get("terminated").is_some() {
        return Ok(Which::Current { live: false });
    }
    if last_terminated.is_some() {
        return Ok(Which::Previous);
    }
    match state.pointer("/waiting/reason").and_then(Value::as_str) {
        Some("ErrImagePull") => bad(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: image can't be pulled"
        )),
        Some("ImagePullBackOff") => bad(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: trying and failing to pull image"
        )),
        Some(reason) => bad(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: {reason}"
        )),
        None => bad(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start - no logs yet"
        )),
    }
}

/// What a log request asked for.
struct Options {
    container: Option<String>,
    previous: bool,
    follow: bool,
    timestamps: bool,
    tail: Option<usize>,
    since: Option<DateTime<Utc>>,
    limit: Option<usize>,
}

fn options(req: &Req, name: &str, now: DateTime<Utc>) -> Result<Options, ApiError> {
    let invalid = |field: &str, m: &str| {
        status::status(
            422,
            "Invalid",
            &format!("PodLogOptions \"{name}\" is invalid: {field}: {m}"),
            json!({"name": name, "kind": "PodLogOptions"}),
        )
    };
    let flag = |k: &str| -> Result<bool, ApiError> {
        match req.param(k) {
            None | Some("") => Ok(false),
            Some(v) => parse_bool(v)
                .ok_or_else(|| status::bad_request(&format!("strconv.ParseBool: parsing \"{v}\": invalid syntax"))),
        }
    };
    let int = |k: &str| -> Result<Option<i64>, ApiError> {
        match req.param(k) {
            None | Some("") => Ok(None),
            Some(v) => v
                .parse::<i64>()
                .map(Some)
                .map_err(|_| status::bad_request(&format!("strconv.ParseInt: parsing \"{v}\": invalid syntax"))),
        }
    };
    let tail = int("tailLines")?;
    if tail.is_some_and(|t| t < 0) {
        return Err(invalid(
            "tailLines",
            "Invalid value: must be greater than or equal to 0",
        ));
    }
    let limit = int("limitBytes")?;
    if limit.is_some_and(|l| l < 1) {
        return Err(invalid("limitBytes", "Invalid value: must be greater than 0"));
    }
    let since_seconds = int("sinceSeconds")?;
    if since_seconds.is_some_and(|s| s < 1) {
        return Err(invalid("sinceSeconds", "Invalid value: must be greater than 0"));
    }
    let since_time = match req.param("sinceTime").filter(|t| !t.is_empty()) {
        None => None,
        Some(t) => Some(
            DateTime::parse_from_rfc3339(t)
                .map_err(|_| status::bad_request(&format!("parsing time \"{t}\" as RFC3339: cannot parse")))?
                .with_timezone(&Utc),
        ),
    };
    if since_seconds.is_some() && since_time.is_some() {
        return Err(invalid(
            "sinceSeconds",
            "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
        ));
    }
    Ok(Options {
        container: req.param("container").map(str::to_string),
        previous: flag("previous")?,
        follow: flag("follow")?,
        timestamps: flag("timestamps")?,
        tail: tail.map(|t| t as usize),
        since: since_time.or(since_seconds.map(|s| now - Duration::seconds(s))),
        limit: limit.map(|l| l as usize),
    })
}

fn format_line(t: DateTime<Utc>, line: &str, timestamps: bool) -> String {
    if timestamps {
        format!("{} {line}\n", rfc3339_nano(t))
    } else {
        format!("{line}\n")
    }
}

fn text_response(code: u16, body: Body) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("content-type", "text/plain")
        .header("cache-control", "no-cache, private")
        .body(body)
        .expect("response")
}

/// Serve `GET /api/v1/namespaces/{ns}/pods/{name}/log` (authorization already done).
pub(crate) fn serve(
    st: &mut SimState,
    req: &Req,
    ns: &str,
    name: &str,
    now: DateTime<Utc>,
) -> Result<Response<Body>, ApiError> {
    let pod = st
        .store
        .get(&PODS, ns, name)
        .cloned()
        .ok_or_else(|| status::not_found(&PODS, name))?;
    let opts = options(req, name, now)?;
    let container = pick_container(&pod, name, opts.container.as_deref())?;
    // not scheduled: the API server has no kubelet to ask, and answers with nothing
    if pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        return Ok(text_response(200, full(Bytes::new())));
    }
    let which = which(&pod, name, &container, opts.previous)?;
    let uid = pod.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("");
    let log = st.controller.logs.entry(ns, name, uid, &container);
    let instance = match which {
        Which::Current { .. } => &log.current,
        Which::Previous => match &log.previous {
            Some(p) => p,
            None => return Ok(text_response(200, full(Bytes::new()))),
        },
    };
    let mut lines: Vec<&(DateTime<Utc>, String)> = instance
        .lines
        .iter()
        .filter(|(t, _)| opts.since.is_none_or(|s| *t >= s))
        .collect();
    if let Some(n) = opts.tail {
        lines = lines.split_off(lines.len().saturating_sub(n));
    }
    let mut text: String = lines.iter().map(|(t, l)| format_line(*t, l, opts.timestamps)).collect();
    let mut left = opts.limit;
    if let Some(limit) = left {
        let mut bytes = text.into_bytes();
        bytes.truncate(limit);
        left = Some(limit - bytes.len());
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    let live = matches!(which, Which::Current { live: true });
    if !opts.follow || !live || left == Some(0) {
        return Ok(text_response(200, full(text)));
    }
    // follow: what exists, then each new line, until the instance or the pod ends
    let feed = st.controller.logs.follow(ns, name, uid, &container);
    let pods = st.store.events.subscribe();
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let follow = Follow {
        feed,
        pods,
        pod_rkey: rkey(&PODS),
        ns: ns.to_string(),
        uid: uid.to_string(),
        container: container.clone(),
        timestamps: opts.timestamps,
        left,
    };
    tokio::spawn(follow.pump(text, tx));
    let body = futures::stream::unfold(rx, |mut rx| async move {
        let b = rx.recv().await?;
        Some((Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    Ok(Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .header("transfer-encoding", "chunked")
        .body(StreamBody::new(body).boxed_unsync())
        .expect("response"))
}

struct Follow {
    feed: broadcast::Receiver<Feed>,
    pods: broadcast::Receiver<std::sync::Arc<super::store::Event>>,
    pod_rkey: String,
    ns: String,
    uid: String,
    container: String,
    timestamps: bool,
    left: Option<usize>,
}

impl Follow {
    async fn pump(mut self, first: String, tx: mpsc::Sender<Bytes>) {
        if !first.is_empty() && tx.send(Bytes::from(first)).await.is_err() {
            return;
        }
        loop {
            tokio::select! {
                _ = tx.closed() => return,
                ev = self.pods.recv() => match ev {
                    // the pod went, or the container stopped running
                    Ok(e) if e.rkey == self.pod_rkey && e.namespace == self.ns
                        && e.object.pointer("/metadata/uid").and_then(Value::as_str) == Some(self.uid.as_str())
                        && (e.kind == EventType::Deleted
                            || container_status(&e.object, &self.container)
                                .is_some_and(|c| c.pointer("/state/running").is_none())) => return,
                    Err(broadcast::error::RecvError::Closed) => return,
                    _ => {}
                },
                feed = self.feed.recv() => match feed {
                    Ok(Feed::Line(t, line)) => {
                        let mut bytes = format_line(t, &line, self.timestamps).into_bytes();
                        if let Some(left) = self.left {
                            bytes.truncate(left);
                            self.left = Some(left - bytes.len());
                        }
                        if tx.send(Bytes::from(bytes)).await.is_err() || self.left == Some(0) {
                            return;
                        }
                    }
                    Ok(Feed::End) | Err(broadcast::error::RecvError::Closed) => return,
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn nano_times_drop_trailing_zeros() {
        let t = Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap();
        assert_eq!(rfc3339_nano(t), "2026-11-29T12:00:00Z");
        assert_eq!(rfc3339_nano(t + Duration::milliseconds(250)), "2026-11-29T12:00:00.25Z");
    }

    #[test]
    fn restart_moves_current_to_previous_and_a_new_pod_starts_empty() {
        let t = Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap();
        let mut logs = Logs::default();
        logs.append("ns", "p", "u1", "c", t, "one");
        logs.restart("ns", "p", "u1", "c");
        logs.append("ns", "p", "u1", "c", t, "two");
        let c = logs.get("ns", "p", "u1", "c").unwrap();
        assert_eq!(c.current.lines.len(), 1);
        assert_eq!(c.previous.as_ref().unwrap().lines[0].1, "one");
        assert!(logs.get("ns", "p", "u2", "c").is_none());
        assert!(
            !logs
                .entry("ns", "p", "u2", "c")
                .current
                .lines
                .iter()
                .any(|(_, l)| l == "two")
        );
    }
}
