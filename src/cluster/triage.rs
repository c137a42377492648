//! The reads of triage: one workspace's pod by identity, its container's log as a bounded stream
//! of lines, and everything its history is made of. The rules (which pod, which container, why
//! none) are `domain/triage.rs`'s; the timeline `domain/timeline.rs`'s.

use super::audit::AuditLog;
use super::connect::Connection;
use super::error::{ApiCall, ClusterError};
use super::kinds::EVENTS_V1;
use super::resources::{self, CLAIMS, EVENTS, PODS, PVCS, SANDBOXES};
use crate::domain::naming::{WorkspaceId, is_path_safe_name, validate_namespace};
use crate::domain::object::{claim_owner, str_at};
use crate::domain::pod::{Index, find, pvc_names};
use crate::domain::timeline::{Inputs, MAX_AUDIT_ENTRIES, MAX_EVENTS_PER_OBJECT, NewestEvents, Regarding};
use futures::io::AsyncBufRead;
use serde_json::Value;

/// A batch of log lines is handed over at this many lines…
const BATCH_LINES: usize = 4096;
/// …or this many bytes, whichever comes first.
const BATCH_BYTES: usize = 1024 * 1024;

/// The longest log line kept whole; the rest of a longer one is cut (a line with no newline
/// never grows memory past this).
pub const MAX_LOG_LINE: usize = 64 * 1024;

/// A workspace's Sandbox and the pod standing under it (by the Sandbox's name, else its
/// `status.selector`), read fresh.
#[derive(Debug, Clone)]
pub struct PodRead {
    pub sandbox: Value,
    pub pod: Option<Value>,
}

/// The Sandbox and its pod; `Ok(None)` when no such Sandbox exists.
pub async fn read_pod(conn: &Connection, namespace: &str, id: &WorkspaceId) -> Result<Option<PodRead>, ClusterError> {
    let name = id.sandbox_name();
    let Some(sandbox) = resources::get(conn, &SANDBOXES, namespace, &name).await? else {
        return Ok(None);
    };
    let pod = match resources::get(conn, &PODS, namespace, crate::domain::pod::pod_name(&sandbox)).await? {
        Some(p) => Some(p),
        None => match str_at(&sandbox, &["status", "selector"]) {
            Some(selector) => {
                let listed = resources::list(conn, &PODS, Some(namespace), Some(selector)).await?;
                let index = Index::new(&listed);
                match find(&sandbox, &index).map(|p| crate::domain::object::name(p).to_string()) {
                    // the listed copy is pruned: the whole pod by name
                    Some(n) => resources::get(conn, &PODS, namespace, &n).await?,
                    None => None,
                }
            }
            None => None,
        },
    };
    Ok(Some(PodRead { sandbox, pod }))
}

/// What a log read asks for (kubectl's flags).
#[derive(Debug, Clone, Default)]
pub struct LogAsk {
    pub container: String,
    pub previous: bool,
    pub follow: bool,
    pub since_seconds: Option<i64>,
    pub since_time: Option<chrono::DateTime<chrono::Utc>>,
    pub tail_lines: Option<i64>,
    pub timestamps: bool,
}

/// Open the log of `pod`'s container: the answer's body, to be read with [`LogLines`].
pub async fn open_log(
    conn: &Connection,
    namespace: &str,
    pod: &str,
    ask: &LogAsk,
) -> Result<impl AsyncBufRead + Unpin + use<>, ClusterError> {
    let op = ApiCall {
        verb: "get",
        resource: "pods/log".into(),
        namespace: Some(namespace.to_string()),
        name: pod.to_string(),
    };
    validate_namespace(namespace).map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    if !is_path_safe_name(pod) {
        return Err(ClusterError::Other(format!("{op}: invalid name {pod:?}")));
    }
    let params = kube::api::LogParams {
        container: Some(ask.container.clone()),
        follow: ask.follow,
        previous: ask.previous,
        since_seconds: ask.since_seconds,
        // the API takes whole seconds: a follow's resume skips what it printed of that second
        since_time: ask
            .since_time
            .and_then(|t| k8s_openapi::jiff::Timestamp::from_second(t.timestamp()).ok()),
        tail_lines: ask.tail_lines,
        timestamps: ask.timestamps,
        ..Default::default()
    };
    let url = format!("/api/v1/namespaces/{namespace}/pods");
    let request = kube::core::Request::new(url)
        .logs(pod, &params)
        .map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    conn.bounded(&op, conn.client.request_stream(request)).await
}

/// Lines of a log body, each at most [`MAX_LOG_LINE`] bytes (a longer one is cut and says so),
/// invalid UTF-8 replaced.
pub struct LogLines<R> {
    body: R,
    line: Vec<u8>,
    cut: bool,
}

impl<R: AsyncBufRead + Unpin> LogLines<R> {
    pub fn new(body: R) -> Self {
        LogLines {
            body,
            line: Vec::new(),
            cut: false,
        }
    }

    /// The next line without its newline; `Ok(None)` at the end of the stream (a last line
    /// without a newline comes out first).
    pub async fn next_line(&mut self) -> std::io::Result<Option<String>> {
        use futures::io::AsyncBufReadExt;
        loop {
            let chunk = self.body.fill_buf().await?;
            if chunk.is_empty() {
                if self.line.is_empty() && !self.cut {
                    return Ok(None);
                }
                return Ok(Some(self.take()));
            }
            let (upto, newline) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            let room = MAX_LOG_LINE.saturating_sub(self.line.len());
            if upto > room {
                self.cut = true;
            }
            self.line.extend_from_slice(&chunk[..upto.min(room)]);
            self.body.consume_unpin(upto + usize::from(newline));
            if newline {
                return Ok(Some(self.take()));
            }
        }
    }

    fn take(&mut self) -> String {
        let mut text = String::from_utf8_lossy(&self.line).into_owned();
        if text.ends_with('\r') {
            text.pop();
        }
        if std::mem::take(&mut self.cut) {
            text.push_str(&format!(" … [line cut at {} KiB]", MAX_LOG_LINE / 1024));
        }
        self.line.clear();
        text
    }
}

/// Everything one workspace's history is made of.
#[derive(Debug, Clone, Default)]
pub struct HistoryRead {
    pub sandbox: Value,
    pub pod: Option<Value>,
    pub claim: Option<Value>,
    pub pvcs: Vec<Value>,
    /// Both APIs' events of the Sandbox, its pod, disks and claim (duplicates dropped later).
    pub events: Vec<Value>,
    /// Reads that were not allowed or not served, each one line.
    pub warnings: Vec<String>,
    /// The audit log's entries for this workspace in this context: the newest
    /// [`MAX_AUDIT_ENTRIES`].
    pub audit: Vec<Value>,
    /// Events of these objects beyond each one's newest [`MAX_EVENTS_PER_OBJECT`] (per API): not
    /// held, not shown (and said so in `warnings`).
    pub events_not_shown: usize,
}

impl HistoryRead {
    /// What the timeline and the start-up waterfall are made from (`domain/timeline.rs`), for
    /// `history` and the TUI's `h` alike.
    pub fn inputs(&self) -> Inputs<'_> {
        Inputs {
            sandbox: &self.sandbox,
            pod: self.pod.as_ref(),
            claim: self.claim.as_ref(),
            pvcs: &self.pvcs,
            events: &self.events,
            audit: &self.audit,
        }
    }
}

/// Read one workspace's history: a handful of requests (the Sandbox, its pod, claim and disks by
/// name, the events of each name by field selector), however big the namespace.
pub async fn read_history(
    conn: &Connection,
    namespace: &str,
    id: &WorkspaceId,
    audit: &AuditLog,
) -> Result<Option<HistoryRead>, ClusterError> {
    let Some(PodRead { sandbox, pod }) = read_pod(conn, namespace, id).await? else {
        return Ok(None);
    };
    // only the Sandbox's own pod is its history; another under its name is said, not shown
    let mut warnings = Vec::new();
    let pod = match (pod, crate::domain::object::uid(&sandbox)) {
        (Some(p), Some(owner)) if crate::domain::pod::owned_by(&p, owner) => Some(p),
        (Some(p), _) => {
            warnings.push(format!(
                "pod {} is not this workspace's (its owner is not the Sandbox): left out",
                crate::domain::object::name(&p)
            ));
            None
        }
        (None, _) => None,
    };
    let mut out = HistoryRead {
        sandbox,
        pod,
        warnings,
        ..Default::default()
    };
    if let Some(claim) = claim_owner(&out.sandbox).filter(|c| is_path_safe_name(c)) {
        match resources::get(conn, &CLAIMS, namespace, claim).await {
            Ok(c) => out.claim = c,
            Err(e) => out.warnings.push(format!("SandboxClaim {claim}: {e}")),
        }
    }
    for pvc in pvc_names(&out.sandbox) {
        match resources::get(conn, &PVCS, namespace, &pvc).await {
            Ok(Some(p)) => out.pvcs.push(p),
            Ok(None) => {}
            Err(e) => out.warnings.push(format!("PersistentVolumeClaim {pvc}: {e}")),
        }
    }
    // the objects whose events are shown, as `kubectl describe` finds them: kind, name and uid
    let mut objects = vec![Regarding::of(SANDBOXES.kind, &out.sandbox)];
    objects.extend(out.pod.iter().map(|p| Regarding::of(PODS.kind, p)));
    objects.extend(out.pvcs.iter().map(|p| Regarding::of(PVCS.kind, p)));
    objects.extend(out.claim.iter().map(|c| Regarding::of(CLAIMS.kind, c)));
    // the pod is named after the Sandbox: one selector finds both objects' events
    let mut names: Vec<String> = objects.iter().map(|o| o.name.clone()).collect();
    names.sort();
    names.dedup();
    let named = |n: &str| NewestEvents::new(objects.iter().filter(|o| o.name == n).cloned().collect());
    let mut v1_served = true;
    // each object's events not kept, the larger of the two APIs' counts (the same events, served
    // twice)
    let mut not_shown: Vec<(Regarding, usize)> = Vec::new();
    let mut kept = |out: &mut HistoryRead, events: NewestEvents| {
        let (events, dropped) = events.finish();
        out.events.extend(events);
        for (r, n) in dropped {
            match not_shown.iter_mut().find(|(o, _)| *o == r) {
                Some((_, most)) => *most = (*most).max(n),
                None => not_shown.push((r, n)),
            }
        }
    };
    for n in &names {
        let by_name = format!("involvedObject.name={n}");
        match resources::list_fields_into(conn, &EVENTS, namespace, &by_name, named(n)).await {
            Ok(events) => kept(&mut out, events),
            Err(e) if e.is_forbidden() => out.warnings.push(format!("events: {e}")),
            Err(e) => return Err(e),
        }
        if !v1_served {
            continue;
        }
        let by_name = format!("regarding.name={n}");
        match resources::list_fields_into(conn, &EVENTS_V1, namespace, &by_name, named(n)).await {
            Ok(events) => kept(&mut out, events),
            // not served by this server (or not to this user): the core API's copy is the same
            Err(ClusterError::Api { code: 404 | 400, .. }) => v1_served = false,
            Err(e) if e.is_forbidden() => v1_served = false,
            Err(e) => return Err(e),
        }
    }
    out.events_not_shown = not_shown.iter().map(|(_, n)| n).sum();
    if out.events_not_shown > 0 {
        out.warnings.push(format!(
            "{} older event{} not shown (the newest {MAX_EVENTS_PER_OBJECT} of each object are)",
            out.events_not_shown,
            if out.events_not_shown == 1 { "" } else { "s" },
        ));
    }
    // the newest entries only, read from the log's end
    let of_this_workspace = |e: &mut Value| {
        let s = |k: &str| e.get(k).and_then(Value::as_str);
        s("workspace") == Some(id.as_str())
            && s("namespace") == Some(namespace)
            && (s("server") == Some(conn.server.as_str()) || s("context") == Some(conn.context.as_str()))
    };
    match audit.read_newest(MAX_AUDIT_ENTRIES, of_this_workspace) {
        Ok(read) => {
            out.audit = read.entries;
            if read.more {
                out.warnings.push(format!(
                    "older audit entries of this workspace not shown (the newest {MAX_AUDIT_ENTRIES} are; `kubectl namzu audit` lists them all)"
                ));
            }
        }
        Err(e) => out.warnings.push(format!("the audit log: {e}")),
    }
    Ok(Some(out))
}

/// Something a log read says besides its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogNote {
    /// The container restarted: the new instance's log follows.
    Restarted { container: String, restart: i64 },
    /// The stream ended or broke with the container still running: reading on from the last line.
    Reconnecting { why: String },
    /// The container is not running (a crash loop's back-off): its next start is followed.
    Waiting { container: String, state: String },
}

/// How a log read ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEnd {
    /// Everything asked for was read (no follow), or the reader went away.
    Done,
    /// The pod was deleted (the workspace suspended or deleted).
    PodDeleted { pod: String },
    /// The pod ran to an end (Succeeded or Failed): nothing more will be written.
    PodFinished { pod: String, phase: String },
    /// The container ended for good (an init container, or one its restart policy leaves).
    ContainerFinished { container: String, state: String },
    /// Another pod (another uid) stands under the name: it is not followed.
    Replaced { pod: String, old: String, new: String },
}

impl LogEnd {
    /// The line a user reads when a follow ends, if it says more than "done".
    pub fn message(&self) -> Option<String> {
        match self {
            LogEnd::Done => None,
            LogEnd::PodDeleted { pod } => Some(format!(
                "pod {pod} was deleted (the workspace was suspended or deleted): the stream ended"
            )),
            LogEnd::PodFinished { pod, phase } => Some(format!("pod {pod} is {phase}: the stream ended")),
            LogEnd::ContainerFinished { container, state } => Some(format!(
                "container {container} has ended and will not start again ({state}): the stream ended"
            )),
            LogEnd::Replaced { pod, old, new } => Some(format!(
                "pod {pod} was replaced (uid {old} → {new}): not followed; read it again for the new pod"
            )),
        }
    }
}

/// A reopen that failed for a reason that passes (a timeout, the server unreachable or busy).
fn transient(e: &ClusterError) -> bool {
    match e {
        ClusterError::Timeout { .. } | ClusterError::Unreachable { .. } | ClusterError::Other(_) => true,
        ClusterError::Api { code, .. } => *code == 429 || *code >= 500,
        _ => false,
    }
}

/// Whether the container is running now.
fn running(pod: &Value, container: &str) -> bool {
    crate::domain::triage::container_status(pod, container)
        .and_then(|s| s.get("state"))
        .and_then(|s| s.get("running"))
        .is_some()
}

/// What a log reader is told as it goes: lines in batches (all those that had arrived), notes.
/// Returning `false` stops the read (a closed stdout, a closed pane).
pub trait LogSink {
    fn lines(&mut self, lines: Vec<String>) -> bool;
    fn note(&mut self, note: LogNote);
}

/// Read a container's log into `sink`; with `ask.follow`, across restarts of the container until
/// the pod is deleted, finishes or is replaced. A stream the server ends (or that breaks) is
/// opened again after the last line read (each line's time is asked for, and stripped unless
/// `keep_stamps`), so no line is shown twice.
pub async fn read_log(
    conn: &Connection,
    namespace: &str,
    mut pod: Value,
    mut ask: LogAsk,
    keep_stamps: bool,
    sink: &mut impl LogSink,
) -> Result<LogEnd, ClusterError> {
    use crate::domain::object::{name, uid};
    use crate::domain::triage::{Resume, instance};
    let ns = namespace.to_string();
    let pod_name = name(&pod).to_string();
    let pod_uid = uid(&pod).unwrap_or("?").to_string();
    ask.timestamps = ask.timestamps || ask.follow;
    let mut resume = Resume::default();
    // reopens that failed in a row: a server restarting or a network blip is waited out
    let mut failed_reopens = 0u32;
    let mut opened = false;
    loop {
        let body = match open_log(conn, &ns, &pod_name, &ask).await {
            Ok(body) => body,
            Err(ClusterError::Api { code: 404 | 410, .. }) if opened => {
                return Ok(LogEnd::PodDeleted { pod: pod_name });
            }
            Err(e) if opened && transient(&e) => {
                failed_reopens += 1;
                sink.note(LogNote::Reconnecting { why: e.to_string() });
                let backoff = 250u64 << failed_reopens.min(5);
                tokio::time::sleep(std::time::Duration::from_millis(backoff)).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        (opened, failed_reopens) = (true, 0);
        let mut lines = LogLines::new(body);
        let mut batch = Vec::new();
        let mut batch_bytes = 0usize;
        let broke = loop {
            // every line that has arrived goes in one batch: a burst costs one hand-over
            let next = if batch.is_empty() {
                Ok(lines.next_line().await)
            } else {
                tokio::time::timeout(std::time::Duration::ZERO, lines.next_line()).await
            };
            match next {
                Ok(Ok(Some(line))) => {
                    let shown = if ask.follow {
                        resume.line(&line, keep_stamps)
                    } else {
                        Some(line)
                    };
                    batch_bytes += shown.as_ref().map_or(0, String::len);
                    batch.extend(shown);
                    // a batch is handed over at 4,096 lines or 1 MiB, whichever comes first
                    if batch.len() >= BATCH_LINES || batch_bytes >= BATCH_BYTES {
                        batch_bytes = 0;
                        if !sink.lines(std::mem::take(&mut batch)) {
                            return Ok(LogEnd::Done);
                        }
                    }
                }
                // nothing more has arrived yet: hand over what has
                Err(_) => {
                    batch_bytes = 0;
                    if !sink.lines(std::mem::take(&mut batch)) {
                        return Ok(LogEnd::Done);
                    }
                }
                Ok(Ok(None)) => break None,
                Ok(Err(e)) => break Some(e.to_string()),
            }
        };
        if !batch.is_empty() && !sink.lines(batch) {
            return Ok(LogEnd::Done);
        }
        if !ask.follow {
            // a read that broke off is not a log read to its end
            return match broke {
                Some(why) => Err(ClusterError::Other(format!(
                    "the log of pod {pod_name} broke off before its end: {why}"
                ))),
                None => Ok(LogEnd::Done),
            };
        }
        let before = instance(&pod, &ask.container);
        let mut said_waiting = false;
        let now = loop {
            let now = match resources::get(conn, &PODS, &ns, &pod_name).await {
                Ok(None) | Err(ClusterError::Api { code: 410, .. }) => return Ok(LogEnd::PodDeleted { pod: pod_name }),
                Ok(Some(p)) if uid(&p) != Some(pod_uid.as_str()) => {
                    return Ok(LogEnd::Replaced {
                        new: uid(&p).unwrap_or("?").to_string(),
                        old: pod_uid,
                        pod: pod_name,
                    });
                }
                Ok(Some(p)) => p,
                Err(e) => return Err(e),
            };
            let phase = crate::domain::pod::phase(&now).to_string();
            if instance(&now, &ask.container) != before || running(&now, &ask.container) {
                break now;
            }
            if matches!(phase.as_str(), "Succeeded" | "Failed") {
                return Ok(LogEnd::PodFinished { pod: pod_name, phase });
            }
            // an instance that ended for good (an init container done, a restart policy that
            // does not restart it) has no next start to wait for
            if !crate::domain::triage::will_restart(&now, &ask.container) {
                return Ok(LogEnd::ContainerFinished {
                    container: ask.container.clone(),
                    state: crate::domain::triage::state_words(&now, &ask.container),
                });
            }
            // not running (a crash loop's back-off): its next instance is followed when it starts
            if !said_waiting {
                sink.note(LogNote::Waiting {
                    container: ask.container.clone(),
                    state: crate::domain::triage::state_words(&now, &ask.container),
                });
                said_waiting = true;
            }
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        };
        let after = instance(&now, &ask.container);
        if after != before {
            sink.note(LogNote::Restarted {
                container: ask.container.clone(),
                restart: after.0,
            });
            // the new instance's log from its start
            (ask.since_seconds, ask.since_time, ask.tail_lines) = (None, None, None);
            resume.restarted();
        } else {
            sink.note(LogNote::Reconnecting {
                why: broke.unwrap_or_else(|| "the server ended the stream".into()),
            });
            // on from the last line shown (none shown yet: as first asked)
            if let Some(since) = resume.since() {
                (ask.since_seconds, ask.tail_lines, ask.since_time) = (None, None, Some(since));
                resume.reconnected();
            }
            // a server that ends every stream at once is not asked again in a tight loop
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        pod = now;
    }
}
