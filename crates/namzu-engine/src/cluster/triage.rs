//! The reads of triage: one workspace's pod by identity, its container's log as a bounded stream
//! of lines, and everything its history is made of. The rules (which pod, which container, why
//! none) are `domain/triage.rs`'s; the timeline `domain/timeline.rs`'s.

use super::audit::AuditLog;
use super::connect::Connection;
use super::error::{ApiCall, ClusterError};
use super::kinds::EVENTS_V1;
use super::resources::{self, CLAIMS, EVENTS, PODS, PVCS, SANDBOXES};
use futures::io::AsyncBufRead;
use namzu_domain::naming::{WorkspaceId, is_path_safe_name, validate_namespace};
use namzu_domain::object::{claim_owner, str_at};
use namzu_domain::pod::{Index, find, pvc_names};
use namzu_domain::timeline::{Inputs, MAX_AUDIT_ENTRIES, MAX_EVENTS_PER_OBJECT, NewestEvents, Regarding};
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
    let pod = match resources::get(conn, &PODS, namespace, namzu_domain::pod::pod_name(&sandbox)).await? {
        Some(p) => Some(p),
        None => match str_at(&sandbox, &["status", "selector"]) {
            Some(selector) => {
                let listed = resources::list(conn, &PODS, Some(namespace), Some(selector)).await?;
                let index = Index::new(&listed);
                match find(&sandbox, &index).map(|p| namzu_domain::object::name(p).to_string()) {
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
pub(crate) async fn open_log(
    conn: &Connection,
    namespace: &str,
    pod: &str,
    ask: &LogAsk,
) -> Result<impl AsyncBufRead + Unpin + use<>, ClusterError> {
    let op = log_call(namespace, pod);
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

/// A piece of a log body: a whole line, or — when long lines are passed whole — a part of one
/// that goes on in the next piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    /// The text, without its newline.
    pub text: String,
    /// The line goes on in the next piece (no newline after this one).
    pub more: bool,
    /// This piece goes on with a line begun in the previous one.
    pub goes_on: bool,
}

/// Lines of a log body, invalid UTF-8 replaced. Each line is at most [`MAX_LOG_LINE`] bytes (a
/// longer one is cut and says so), or with [`LogLines::whole`] a longer line comes whole, in
/// pieces of at most that size: memory stays bounded either way.
pub(crate) struct LogLines<R> {
    body: R,
    line: Vec<u8>,
    cut: bool,
    whole: bool,
    /// A part of the current line was handed out already.
    goes_on: bool,
}

impl<R: AsyncBufRead + Unpin> LogLines<R> {
    pub(crate) fn new(body: R) -> Self {
        LogLines {
            body,
            line: Vec::new(),
            cut: false,
            whole: false,
            goes_on: false,
        }
    }

    /// Long lines passed whole, in parts, instead of cut.
    pub(crate) fn whole(body: R) -> Self {
        LogLines {
            whole: true,
            ..LogLines::new(body)
        }
    }

    /// The next line without its newline; `Ok(None)` at the end of the stream (a last line
    /// without a newline comes out first). A long line cut, or in parts with [`LogLines::whole`].
    pub(crate) async fn next_piece(&mut self) -> std::io::Result<Option<Piece>> {
        use futures::io::AsyncBufReadExt;
        loop {
            let chunk = self.body.fill_buf().await?;
            if chunk.is_empty() {
                if self.line.is_empty() && !self.cut && !self.goes_on {
                    return Ok(None);
                }
                return Ok(Some(self.take()));
            }
            let (upto, newline) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            let room = MAX_LOG_LINE.saturating_sub(self.line.len());
            if upto > room && self.whole {
                self.line.extend_from_slice(&chunk[..room]);
                self.body.consume_unpin(room);
                return Ok(Some(self.part()));
            }
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

    /// What is held of a long line, up to its last whole character (a character split between
    /// reads, or a `\r` that may come before the newline, stays for the next part).
    fn part(&mut self) -> Piece {
        let mut split = utf8_boundary(&self.line);
        if split == self.line.len() && self.line.last() == Some(&b'\r') {
            split -= 1;
        }
        if split == 0 {
            split = self.line.len();
        }
        let text = String::from_utf8_lossy(&self.line[..split]).into_owned();
        self.line.drain(..split);
        Piece {
            text,
            more: true,
            goes_on: std::mem::replace(&mut self.goes_on, true),
        }
    }

    fn take(&mut self) -> Piece {
        let mut text = String::from_utf8_lossy(&self.line).into_owned();
        if text.ends_with('\r') {
            text.pop();
        }
        if std::mem::take(&mut self.cut) {
            text.push_str(&format!(" … [line cut at {} KiB]", MAX_LOG_LINE / 1024));
        }
        self.line.clear();
        Piece {
            text,
            more: false,
            goes_on: std::mem::take(&mut self.goes_on),
        }
    }
}

/// Where `bytes` may be split without cutting a UTF-8 character in two: before a last
/// character whose bytes have not all arrived, else at the end.
fn utf8_boundary(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=len.min(3) {
        let b = bytes[len - back];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue; // a continuation byte: look further back for its lead
        }
        let needs = match b {
            0xf0..=0xf7 => 4,
            0xe0..=0xef => 3,
            0xc0..=0xdf => 2,
            _ => 1,
        };
        return if needs > back { len - back } else { len };
    }
    len
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
    let pod = match (pod, namzu_domain::object::uid(&sandbox)) {
        (Some(p), Some(owner)) if namzu_domain::pod::owned_by(&p, owner) => Some(p),
        (Some(p), _) => {
            warnings.push(format!(
                "pod {} is not this workspace's (its owner is not the Sandbox): left out",
                namzu_domain::object::name(&p)
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

/// Why a log body ended before its end.
enum Broke {
    /// A read without -f ran past the request timeout.
    TimedOut(std::time::Duration),
    /// The stream broke (a reset, a read error).
    Failed(String),
}

/// The request a log read is, as errors name it.
fn log_call(namespace: &str, pod: &str) -> ApiCall {
    ApiCall {
        verb: "get",
        resource: "pods/log".into(),
        namespace: Some(namespace.to_string()),
        name: pod.to_string(),
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
    namzu_domain::triage::container_status(pod, container)
        .and_then(|s| s.get("state"))
        .and_then(|s| s.get("running"))
        .is_some()
}

/// What a log reader is told as it goes: lines in batches (all those that had arrived), notes.
/// Returning `false` stops the read (a closed stdout, a closed pane).
pub trait LogSink {
    fn lines(&mut self, lines: Vec<String>) -> bool;
    fn note(&mut self, note: LogNote);
    /// Whether lines longer than [`MAX_LOG_LINE`] are wanted whole, in parts through
    /// [`LogSink::part`] (a pipe), instead of cut (a screen).
    fn whole_lines(&self) -> bool {
        false
    }
    /// A part of a long line that goes on in the next part or line (no newline after it).
    fn part(&mut self, _text: String) -> bool {
        true
    }
}

/// Lines on their way to the sink: batched, and a long line's parts handed out as they come.
struct Batcher {
    batch: Vec<String>,
    bytes: usize,
    /// A long line handed out in parts: whether its first part was shown (a follow's replay
    /// after a reconnect skips it whole), and whether its end is still to come.
    shown_part: bool,
    open_part: bool,
}

impl Default for Batcher {
    fn default() -> Self {
        Batcher {
            batch: Vec::new(),
            bytes: 0,
            shown_part: true,
            open_part: false,
        }
    }
}

impl Batcher {
    /// Hand over what has come; `false` when the sink wants no more.
    fn flush(&mut self, sink: &mut impl LogSink) -> bool {
        self.bytes = 0;
        sink.lines(std::mem::take(&mut self.batch))
    }

    /// One piece read (`shown`: what of it is shown; `more`: a part whose line goes on);
    /// `false` when the sink wants no more.
    fn take(&mut self, shown: Option<String>, more: bool, sink: &mut impl LogSink) -> bool {
        if more {
            // the lines before it first, then the part, unbatched
            (self.shown_part, self.open_part) = (shown.is_some(), true);
            if !self.flush(sink) {
                return false;
            }
            return shown.is_none_or(|text| sink.part(text));
        }
        self.open_part = false;
        self.bytes += shown.as_ref().map_or(0, String::len);
        self.batch.extend(shown);
        // a batch is handed over at 4,096 lines or 1 MiB, whichever comes first
        if self.batch.len() >= BATCH_LINES || self.bytes >= BATCH_BYTES {
            return self.flush(sink);
        }
        true
    }

    /// The stream ended: what is left goes; `false` when the sink wants no more.
    fn finish(mut self, sink: &mut impl LogSink) -> bool {
        // a long line whose end never came is ended here, so what follows starts a line
        if self.open_part && self.shown_part {
            self.batch.push(String::new());
        }
        self.batch.is_empty() || sink.lines(self.batch)
    }
}

/// After a followed stream ended: wait for the container's next instance (or for it to run
/// again) and return the pod then; `Err` inside is how the log ends instead (the pod deleted,
/// replaced or finished, the container done for good).
async fn next_instance(
    conn: &Connection,
    ns: &str,
    pod_name: &str,
    pod_uid: &str,
    container: &str,
    before: &(i64, String),
    sink: &mut impl LogSink,
) -> Result<Result<Value, LogEnd>, ClusterError> {
    use namzu_domain::object::uid;
    use namzu_domain::triage::instance;
    let mut said_waiting = false;
    loop {
        let now = match resources::get(conn, &PODS, ns, pod_name).await {
            Ok(None) | Err(ClusterError::Api { code: 410, .. }) => {
                return Ok(Err(LogEnd::PodDeleted {
                    pod: pod_name.to_string(),
                }));
            }
            Ok(Some(p)) if uid(&p) != Some(pod_uid) => {
                return Ok(Err(LogEnd::Replaced {
                    new: uid(&p).unwrap_or("?").to_string(),
                    old: pod_uid.to_string(),
                    pod: pod_name.to_string(),
                }));
            }
            Ok(Some(p)) => p,
            Err(e) => return Err(e),
        };
        let phase = namzu_domain::pod::phase(&now).to_string();
        if instance(&now, container) != *before || running(&now, container) {
            return Ok(Ok(now));
        }
        if matches!(phase.as_str(), "Succeeded" | "Failed") {
            return Ok(Err(LogEnd::PodFinished {
                pod: pod_name.to_string(),
                phase,
            }));
        }
        // an instance that ended for good (an init container done, a restart policy that
        // does not restart it) has no next start to wait for
        if !namzu_domain::triage::will_restart(&now, container) {
            return Ok(Err(LogEnd::ContainerFinished {
                container: container.to_string(),
                state: namzu_domain::triage::state_words(&now, container),
            }));
        }
        // not running (a crash loop's back-off): its next instance is followed when it starts
        if !said_waiting {
            sink.note(LogNote::Waiting {
                container: container.to_string(),
                state: namzu_domain::triage::state_words(&now, container),
            });
            said_waiting = true;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// How a followed log goes on: a new instance from its start, the same one from the last line
/// shown (after a pause, so a server that ends every stream at once is not asked in a loop).
async fn reopen_from(
    ask: &mut LogAsk,
    resume: &mut namzu_domain::triage::Resume,
    restarted: bool,
    now: &Value,
    broke: Option<String>,
    sink: &mut impl LogSink,
) {
    if restarted {
        let after = namzu_domain::triage::instance(now, &ask.container);
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
}

/// How a stream that ended ends the read: a timeout is an error; without `follow` the read is
/// over (an error when it broke off); with it, `Ok` with why it broke, to be opened again.
fn stream_ended(
    broke: Option<Broke>,
    follow: bool,
    ns: &str,
    pod_name: &str,
) -> Result<Option<String>, Result<LogEnd, ClusterError>> {
    let broke = match broke {
        Some(Broke::TimedOut(after)) => {
            return Err(Err(ClusterError::Timeout {
                op: Box::new(log_call(ns, pod_name)),
                after,
            }));
        }
        Some(Broke::Failed(why)) => Some(why),
        None => None,
    };
    if !follow {
        // a read that broke off is not a log read to its end
        return Err(match broke {
            Some(why) => Err(ClusterError::Other(format!(
                "the log of pod {pod_name} broke off before its end: {why}"
            ))),
            None => Ok(LogEnd::Done),
        });
    }
    Ok(broke)
}

/// Read a container's log into `sink`; with `ask.follow`, across restarts of the container until
/// the pod is deleted, finishes or is replaced. A stream the server ends (or that breaks) is
/// opened again after the last line read (each line's time is asked for, and stripped unless
/// `keep_stamps`), so no line is shown twice. Without `ask.follow` the read, its body included,
/// ends within the connection's request timeout: a body that never ends is
/// [`ClusterError::Timeout`], after the lines that came.
pub async fn read_log(
    conn: &Connection,
    namespace: &str,
    mut pod: Value,
    mut ask: LogAsk,
    keep_stamps: bool,
    sink: &mut impl LogSink,
) -> Result<LogEnd, ClusterError> {
    use namzu_domain::object::{name, uid};
    use namzu_domain::triage::{Resume, instance};
    let ns = namespace.to_string();
    let pod_name = name(&pod).to_string();
    let pod_uid = uid(&pod).unwrap_or("?").to_string();
    ask.timestamps = ask.timestamps || ask.follow;
    let mut resume = Resume::default();
    // reopens that failed in a row: a server restarting or a network blip is waited out
    let mut failed_reopens = 0u32;
    let mut opened = false;
    // a read without -f is one request, bounded as every other one: its body too
    let deadline = match (ask.follow, conn.timeout) {
        (false, Some(after)) => Some((tokio::time::Instant::now() + after, after)),
        _ => None,
    };
    let whole = sink.whole_lines();
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
        let mut lines = if whole {
            LogLines::whole(body)
        } else {
            LogLines::new(body)
        };
        let mut b = Batcher::default();
        let broke = loop {
            if let Some((at, after)) = deadline
                && tokio::time::Instant::now() >= at
            {
                break Some(Broke::TimedOut(after));
            }
            // every line that has arrived goes in one batch: a burst costs one hand-over
            let next = if b.batch.is_empty() {
                match deadline {
                    Some((at, after)) => match tokio::time::timeout_at(at, lines.next_piece()).await {
                        Ok(next) => Ok(next),
                        Err(_) => break Some(Broke::TimedOut(after)),
                    },
                    None => Ok(lines.next_piece().await),
                }
            } else {
                tokio::time::timeout(std::time::Duration::ZERO, lines.next_piece()).await
            };
            match next {
                Ok(Ok(Some(piece))) => {
                    let shown = if piece.goes_on {
                        b.shown_part.then_some(piece.text)
                    } else if ask.follow {
                        resume.line(&piece.text, keep_stamps)
                    } else {
                        Some(piece.text)
                    };
                    if !b.take(shown, piece.more, sink) {
                        return Ok(LogEnd::Done);
                    }
                }
                // nothing more has arrived yet: hand over what has
                Err(_) => {
                    if !b.flush(sink) {
                        return Ok(LogEnd::Done);
                    }
                }
                Ok(Ok(None)) => break None,
                Ok(Err(e)) => break Some(Broke::Failed(e.to_string())),
            }
        };
        if !b.finish(sink) {
            return Ok(LogEnd::Done);
        }
        let broke = match stream_ended(broke, ask.follow, &ns, &pod_name) {
            Ok(broke) => broke,
            Err(end) => return end,
        };
        let before = instance(&pod, &ask.container);
        let now = match next_instance(conn, &ns, &pod_name, &pod_uid, &ask.container, &before, sink).await? {
            Ok(now) => now,
            Err(end) => return Ok(end),
        };
        let restarted = before != instance(&now, &ask.container);
        reopen_from(&mut ask, &mut resume, restarted, &now, broke, sink).await;
        pod = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every piece of `body` read `cap` bytes at a time.
    fn pieces(body: &[u8], cap: usize, whole: bool) -> Vec<Piece> {
        let reader = futures::io::BufReader::with_capacity(cap, body);
        let mut lines = if whole {
            LogLines::whole(reader)
        } else {
            LogLines::new(reader)
        };
        let mut out = Vec::new();
        while let Ok(Some(p)) = futures::executor::block_on(lines.next_piece()) {
            out.push(p);
        }
        out
    }

    #[test]
    fn a_long_line_is_cut_or_passed_whole_in_parts() {
        // a three-byte character astride every boundary, a \r\n ending
        let long: String = "€".repeat(MAX_LOG_LINE / 3 * 2 + 5);
        let body = format!("a\n{long}\r\nb");
        for cap in [7, 4096, 1 << 20] {
            let cut = pieces(body.as_bytes(), cap, false);
            assert_eq!(cut.len(), 3);
            assert!(cut[1].text.ends_with(" … [line cut at 64 KiB]"));
            assert!(cut.iter().all(|p| !p.more && !p.goes_on));
            let parts = pieces(body.as_bytes(), cap, true);
            assert_eq!(parts.first().map(|p| p.text.as_str()), Some("a"));
            assert_eq!(parts.last().map(|p| (p.text.as_str(), p.goes_on)), Some(("b", false)));
            let middle = &parts[1..parts.len() - 1];
            assert!(middle.len() >= 3, "{}", middle.len());
            assert!(middle.iter().all(|p| p.text.len() <= MAX_LOG_LINE));
            assert!(middle[..middle.len() - 1].iter().all(|p| p.more));
            assert!(!middle[0].goes_on && middle[1..].iter().all(|p| p.goes_on));
            let joined: String = middle.iter().map(|p| p.text.as_str()).collect();
            assert_eq!(joined, long, "whole, no character split, the \\r dropped");
        }
    }
}
