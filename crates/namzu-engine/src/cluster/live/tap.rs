//! The flight recorder's tap on a live follow (issue 43, docs/recorder.md): every change the
//! watches report goes into the context's store as it comes, at no extra request. Until every
//! watch has its first state the tap only gathers it; then a session starts with that state as
//! its keyframe. One recorder holds a store at a time (its lock): another follow of the same
//! context either waits as a standby and takes over when the holder ends (`record`), or records
//! nothing meanwhile (`list -w`, the TUI). `record` also watches claims, warm pools and the
//! workspaces' Events, and tails this machine's audit log.

use super::Feed;
use crate::cluster::connect::Connection;
use crate::cluster::error::ClusterError;
use crate::cluster::inventory::Scope;
use crate::cluster::resources::{self, ApiKind, Watched};
use chrono::{DateTime, Duration, Utc};
use namzu_domain::drift::TemplateFetch;
use namzu_domain::mirror::{Kind, Listed, ObjectKey};
use namzu_recorder::{Key, Limits, LockError, Packed, Store, Writer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use tokio::sync::mpsc::UnboundedSender;

/// Where and how a follow records.
#[derive(Debug, Clone)]
pub struct RecordTo {
    /// The recordings' directory (a store per context under it).
    pub root: PathBuf,
    pub limits: Limits,
    /// Wait for the recorder holding the context's store to end, then take over (`record`);
    /// else record nothing while another does.
    pub standby: bool,
    /// Watch claims, warm pools and the workspaces' Events too, and this machine's audit log
    /// (`record`); else only what the inventory watches anyway.
    pub everything: bool,
    /// This machine's audit log.
    pub audit: Option<PathBuf>,
}

/// A change from a watch the inventory does not hold, or from the audit log.
#[derive(Debug)]
pub(super) enum Extra {
    Reset {
        kind: &'static str,
        namespace: Option<String>,
        objects: Vec<Value>,
    },
    Applied(&'static str, Value),
    Deleted(&'static str, Value),
    Audit(Value),
    /// The kind is not served or may not be read here (`namespace`: `None` everywhere): left
    /// alone, with the API's word.
    Unreadable {
        kind: &'static str,
        plural: &'static str,
        namespace: Option<String>,
        why: String,
    },
}

/// What the recording calls each kind the inventory watches.
pub(crate) fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Sandboxes => "Sandbox",
        Kind::Pods => "Pod",
        Kind::Pvcs => "PersistentVolumeClaim",
        Kind::Templates => "SandboxTemplate",
        Kind::Policies => "CiliumNetworkPolicy",
    }
}

/// The pseudo-kind that records a kind as not served or not readable (`name` = the kind).
pub(crate) const READABLE: &str = "Readable";

/// A beat at least this often while nothing changes: a recorder killed without a word leaves a
/// recording complete up to its last beat.
const BEAT_EVERY: i64 = 10;

pub(super) struct Tap {
    store: Store,
    to: RecordTo,
    conn: Connection,
    scope: String,
    session: String,
    /// Gathered until the session starts, as compact JSON ([`namzu_recorder::pack`]): a
    /// `Value` tree of every object would cost the TUI ~100 MiB at 5,000 workspaces.
    state: BTreeMap<Key, Packed>,
    ready: bool,
    writer: Option<Writer>,
    /// The standby's lock, once the holder let go.
    standby: Option<std::sync::mpsc::Receiver<std::io::Result<File>>>,
    /// Stopped recording (a disk error): said once.
    failed: bool,
    /// While one report is recorded: the instant it came at.
    report_at: Option<DateTime<Utc>>,
    /// The streaming lists under way, and when each began.
    listing: std::collections::HashMap<super::StreamName, DateTime<Utc>>,
    /// Streams that said they are live since: a streaming list says so just before its end
    /// (`Listed`); a change after it instead is a resumed watch's.
    listing_live: std::collections::HashSet<super::StreamName>,
    pub(super) warnings: Vec<String>,
}

impl Tap {
    pub(super) fn new(conn: &Connection, scope: &Scope, to: RecordTo) -> Tap {
        let store = Store::open(&to.root, &conn.context);
        let now = conn.clock.now();
        Tap {
            store,
            scope: match scope {
                Scope::All => "-A".to_string(),
                Scope::Namespace(ns) => ns.clone(),
            },
            session: format!("{}-{}", std::process::id(), now.timestamp_millis()),
            to,
            conn: conn.clone(),
            state: BTreeMap::new(),
            ready: false,
            writer: None,
            standby: None,
            failed: false,
            report_at: None,
            listing: std::collections::HashMap::new(),
            listing_live: std::collections::HashSet::new(),
            warnings: Vec::new(),
        }
    }

    /// The instant of the report being recorded, else the clock's.
    fn now(&self) -> DateTime<Utc> {
        self.report_at.unwrap_or_else(|| self.conn.clock.now())
    }

    fn io(&mut self, r: std::io::Result<()>) {
        if let Err(e) = r {
            self.writer = None;
            self.state = BTreeMap::new();
            self.failed = true;
            self.warnings.push(format!(
                "warning: the recording in {} stopped: {e}",
                self.store.dir.display()
            ));
        }
    }

    fn put(&mut self, kind: &str, mut obj: Value) {
        // of managedFields only who wrote and when (`history --between`): never the field sets
        if let Some(entries) = obj.pointer_mut("/metadata/managedFields").and_then(Value::as_array_mut) {
            for e in entries.iter_mut().filter_map(Value::as_object_mut) {
                e.retain(|k, _| matches!(k.as_str(), "manager" | "operation" | "time"));
            }
        }
        let now = self.now();
        match self.writer.as_mut() {
            Some(w) => {
                let r = w.put(now, kind, obj);
                self.io(r);
            }
            None => match namzu_recorder::pack(&obj) {
                Ok(packed) => {
                    self.state.insert(Key::of(kind, &obj), packed);
                }
                Err(e) => self.io(Err(e)),
            },
        }
    }

    /// An object of an inventory kind as a watch reported it. Its text is the one the mirror
    /// keeps: held once for both. (A template's projection keeps its managedFields whole, so
    /// it goes through `put` and is trimmed.)
    fn put_listed(&mut self, kind: Kind, listed: &Listed) {
        if kind == Kind::Templates {
            return self.put(kind_name(kind), listed.value());
        }
        let key = Key {
            kind: kind_name(kind).to_string(),
            ns: listed.key.namespace.clone(),
            name: listed.key.name.clone(),
        };
        let now = self.now();
        match self.writer.as_mut() {
            Some(w) => {
                let r = w.put_packed(now, key, listed.text().clone());
                self.io(r);
            }
            None => {
                self.state.insert(key, listed.text().clone());
            }
        }
    }

    fn delete(&mut self, key: Key) {
        let now = self.now();
        match self.writer.as_mut() {
            Some(w) => {
                let r = w.delete(now, &key);
                self.io(r);
            }
            None => {
                self.state.remove(&key);
            }
        }
    }

    /// The kind's objects in `namespace` (all with `None`) are those `keep` says.
    fn only(&mut self, kind: &str, namespace: Option<&str>, keep: &dyn Fn(&Key) -> bool) {
        let now = self.now();
        match self.writer.as_mut() {
            Some(w) => {
                let r = w.only(now, kind, namespace, keep);
                self.io(r);
            }
            None => self
                .state
                .retain(|k, _| !(k.kind == kind && namespace.is_none_or(|ns| k.ns == ns) && !keep(k))),
        }
    }

    fn readable(&mut self, kind: Kind, namespace: Option<&str>, what: &str) {
        let obj = serde_json::json!({
            "metadata": {"name": kind_name(kind), "namespace": namespace.unwrap_or("")},
            "readable": what,
        });
        self.put(READABLE, obj);
    }

    /// Record one report of the watches (before `state.take` applies it to the mirror). A
    /// report is one observation: a list's objects all carry the instant it came at (read one
    /// by one, a list of 10,000 took long enough for the clock to move, and a replay in between
    /// had half of it).
    pub(super) fn take(&mut self, f: &Feed) {
        if self.failed {
            return;
        }
        let now = self.conn.clock.now();
        // a change after the stream said it is live is a resumed watch's, not the list's
        if let Feed::Applied(s, _) = f
            && self.listing_live.remove(s)
        {
            self.listing.remove(s);
        }
        // a streaming list's objects, and the end that drops what it lacks, are of the moment
        // it began: the server's snapshot, not the time each took to come (a watcher at
        // 10,000 Sandboxes recorded half a list a step of the clock later)
        self.report_at = Some(match f {
            Feed::Applied(s, _) | Feed::Listed(s, _) => self.listing.get(s).copied().unwrap_or(now),
            _ => now,
        });
        self.record(f);
        self.report_at = None;
        match f {
            Feed::Listing(s) => {
                self.listing.insert(s.clone(), now);
            }
            // a list that ends otherwise (a LIST instead, or a watch resumed mid-list, which
            // says it is live before any change) leaves no instant behind: later changes would
            // carry the old one
            Feed::Listed(s, _) | Feed::Reset(s, _) => {
                self.listing.remove(s);
                self.listing_live.remove(s);
            }
            Feed::Status(s, super::StreamStatus::Live) if self.listing.contains_key(s) => {
                self.listing_live.insert(s.clone());
            }
            _ => {}
        }
    }

    fn record(&mut self, f: &Feed) {
        match f {
            Feed::Reset(s, objects) => {
                let kind = kind_name(s.kind);
                for o in objects {
                    self.put_listed(s.kind, o);
                }
                let keys: std::collections::BTreeSet<&ObjectKey> = objects.iter().map(|o| &o.key).collect();
                self.only(kind, s.namespace.as_deref(), &|k| {
                    keys.contains(&ObjectKey::new(&k.ns, &k.name))
                });
            }
            Feed::Listed(s, keys) => {
                self.only(kind_name(s.kind), s.namespace.as_deref(), &|k| {
                    keys.contains(&ObjectKey::new(&k.ns, &k.name))
                });
            }
            Feed::Applied(s, o) => self.put_listed(s.kind, o),
            Feed::Deleted(s, o) => self.delete(Key::of(kind_name(s.kind), o)),
            Feed::Forbidden(s, _) => self.readable(s.kind, s.namespace.as_deref(), "Forbidden"),
            Feed::NotServed(s) => self.readable(s.kind, s.namespace.as_deref(), "NotServed"),
            Feed::ByName {
                kind,
                key,
                found: Some(found),
            } => match found {
                Some(o) => self.put(kind_name(*kind), o.clone()),
                None => self.delete(Key {
                    kind: kind_name(*kind).to_string(),
                    ns: key.namespace.clone(),
                    name: key.name.clone(),
                }),
            },
            Feed::Template { key, fetch } => match fetch {
                TemplateFetch::Found(o) => self.put(kind_name(Kind::Templates), o.clone()),
                TemplateFetch::NotFound => self.delete(Key {
                    kind: kind_name(Kind::Templates).to_string(),
                    ns: key.namespace.clone(),
                    name: key.name.clone(),
                }),
                TemplateFetch::Unreadable => {}
            },
            Feed::Extra(extra) => self.extra(extra),
            _ => {}
        }
    }

    fn extra(&mut self, extra: &Extra) {
        match extra {
            Extra::Reset {
                kind,
                namespace,
                objects,
            } => {
                for o in objects {
                    self.put(kind, o.clone());
                }
                let keys: std::collections::BTreeSet<Key> = objects.iter().map(|o| Key::of(kind, o)).collect();
                self.only(kind, namespace.as_deref(), &|k| keys.contains(k));
            }
            Extra::Applied(kind, o) => self.put(kind, o.clone()),
            Extra::Deleted(kind, o) => self.delete(Key::of(kind, o)),
            Extra::Audit(entry) => {
                let now = self.now();
                if let Some(w) = self.writer.as_mut() {
                    let r = w.audit(now, entry.clone());
                    self.io(r);
                }
            }
            Extra::Unreadable { plural, why, .. } => self.warnings.push(format!("note: not recording {plural}: {why}")),
        }
    }

    /// Every watch has its first state: the session starts (or waits for the store's holder).
    pub(super) fn synced(&mut self) {
        if self.ready || self.failed {
            return;
        }
        self.ready = true;
        match self.store.lock(false) {
            Ok(lock) => self.begin(lock),
            Err(LockError::Busy) if self.to.standby => {
                self.warnings.push(format!(
                    "another recorder is recording context \"{}\" into {}: standing by until it ends",
                    self.conn.context,
                    self.store.dir.display()
                ));
                let (tx, rx) = std::sync::mpsc::channel();
                let store = self.store.clone();
                std::thread::spawn(move || {
                    let _ = tx.send(store.lock(true).map_err(|e| match e {
                        LockError::Io(e) => e,
                        LockError::Busy => std::io::Error::other("busy"),
                    }));
                });
                self.standby = Some(rx);
            }
            // `list -w` and the TUI leave the recording to the recorder that holds it
            Err(LockError::Busy) => {
                self.state = BTreeMap::new();
                self.failed = true;
            }
            Err(LockError::Io(e)) => self.io(Err(e)),
        }
    }

    fn begin(&mut self, lock: File) {
        let state = std::mem::take(&mut self.state);
        let now = self.now();
        match Writer::begin(
            &self.store,
            lock,
            self.to.limits,
            &self.session,
            &self.scope,
            now,
            state,
        ) {
            Ok(w) => {
                if w.repaired > 0 {
                    self.warnings.push(format!(
                        "note: cut a torn tail of {} bytes off the recording in {} (a recorder stopped mid-write)",
                        w.repaired,
                        self.store.dir.display()
                    ));
                }
                self.writer = Some(w);
                if self.to.everything {
                    self.warnings
                        .push(format!("recording into {}", self.store.dir.display()));
                }
            }
            Err(e) => self.io(Err(e)),
        }
    }

    /// Once a second: a standby whose lock came takes over; a quiet recording beats.
    pub(super) fn tick(&mut self) {
        if let Some(rx) = &self.standby {
            match rx.try_recv() {
                Ok(Ok(lock)) => {
                    self.standby = None;
                    self.begin(lock);
                }
                Ok(Err(e)) => {
                    self.standby = None;
                    self.io(Err(e));
                }
                Err(_) => {}
            }
        }
        let now = self.now();
        if let Some(w) = self.writer.as_mut()
            && now - w.last_at() >= Duration::seconds(BEAT_EVERY)
        {
            let r = w.beat(now);
            self.io(r);
        }
    }

    /// The follow ended: the session's stop record.
    pub(super) fn finish(&mut self) {
        let now = self.now();
        if let Some(w) = self.writer.take() {
            let r = w.stop(now);
            self.io(r);
        }
    }
}

/// The kinds `record` watches beyond the inventory's.
pub(super) const EXTRA_KINDS: [(&ApiKind, &str); 3] = [
    (&crate::cluster::kinds::CLAIMS, "SandboxClaim"),
    (&crate::cluster::kinds::WARM_POOLS, "SandboxWarmPool"),
    (&crate::cluster::kinds::EVENTS, "Event"),
];

/// Only the workspaces' Events are kept (about a Sandbox, its pod, its disks or its claim), and
/// the warm pools' progress Events (what `capacity` tells of a pool).
fn wanted(kind: &str, o: &Value) -> bool {
    use namzu_domain::object::str_at;
    kind != "Event"
        || str_at(o, &["involvedObject", "name"]).is_some_and(|n| n.contains("namzu-ws-"))
        || str_at(o, &["involvedObject", "kind"]) == Some("SandboxWarmPool")
}

/// Whose a watch beyond the inventory's is: which objects it keeps, and the report its changes
/// travel in.
#[derive(Clone, Copy)]
pub(super) enum Extras {
    /// The recording's: the workspaces' Events only, reported as [`Feed::Extra`].
    Recorded,
    /// The live pulse's (`pulse.rs`), numbered: a pulse asked again never takes what the
    /// watches of an earlier one left queued.
    Pulse(u64),
}

impl Extras {
    fn keep(self, kind: &str, o: &Value) -> bool {
        match self {
            Extras::Recorded => wanted(kind, o),
            Extras::Pulse(_) => super::pulse::about_a_start(kind, o),
        }
    }

    fn wrap(self, extra: Extra) -> Feed {
        match self {
            Extras::Recorded => Feed::Extra(extra),
            Extras::Pulse(id) => Feed::Pulse(id, extra),
        }
    }
}

/// Watch `kind` in `namespace` (all with `None`) beyond the inventory's watches: a LIST, then a
/// watch from its resourceVersion, again from the newest on the server's timeout, a LIST again
/// on 410 or an error (after a pause). A kind not served or not readable is reported once as
/// [`Extra::Unreadable`] and left alone.
pub(super) async fn watch_extra(
    conn: Connection,
    (kind, name): (&'static ApiKind, &'static str),
    namespace: Option<String>,
    feed: UnboundedSender<Feed>,
    extras: Extras,
) {
    use futures::StreamExt;
    let mut version: Option<String> = None;
    let mut warned = false;
    let ns = namespace.as_deref();
    loop {
        let from = match version.clone() {
            Some(v) => v,
            None => match resources::list_versioned::<Vec<Value>>(&conn, kind, ns, None).await {
                Ok((items, v)) => {
                    let objects = items.into_iter().filter(|o| extras.keep(name, o)).collect();
                    let reset = Extra::Reset {
                        kind: name,
                        namespace: namespace.clone(),
                        objects,
                    };
                    if feed.send(extras.wrap(reset)).is_err() {
                        return;
                    }
                    v
                }
                Err(e) if e.is_not_found() || e.is_forbidden() => {
                    let _ = feed.send(extras.wrap(Extra::Unreadable {
                        kind: name,
                        plural: kind.plural,
                        namespace: namespace.clone(),
                        why: e.to_string(),
                    }));
                    return;
                }
                Err(e) => {
                    // said once, not on every try: the part it feeds waits meanwhile
                    if !warned {
                        warned = true;
                        let _ = feed.send(Feed::Warning(format!(
                            "warning: {} could not be listed ({e}); trying again every 2 s",
                            kind.plural
                        )));
                    }
                    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
                    continue;
                }
            },
        };
        let stream = match resources::watch(&conn, kind, ns, None, &from, false, 290).await {
            Ok(s) => s,
            Err(e) => {
                version = None;
                if !matches!(e, ClusterError::Api { code: 410, .. }) {
                    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
                }
                continue;
            }
        };
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            let (keep, extra) = match item {
                Ok(Watched::Applied(o, v)) => {
                    version = Some(v);
                    (extras.keep(name, &o), Extra::Applied(name, o))
                }
                Ok(Watched::Deleted(o, v)) => {
                    version = Some(v);
                    (extras.keep(name, &o), Extra::Deleted(name, o))
                }
                Ok(Watched::Bookmark { resource_version, .. }) => {
                    version = Some(resource_version);
                    continue;
                }
                Err(_) => {
                    version = None;
                    break;
                }
            };
            if keep && feed.send(extras.wrap(extra)).is_err() {
                return;
            }
        }
    }
}

/// Tail this machine's audit log: each entry appended for `context` goes to the recording.
pub(super) async fn tail_audit(path: PathBuf, context: String, feed: UnboundedSender<Feed>) {
    use std::io::{Read, Seek, SeekFrom};
    let mut offset = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut ticks = tokio::time::interval(std::time::Duration::from_millis(500));
    loop {
        ticks.tick().await;
        if feed.is_closed() {
            return;
        }
        let Ok(mut file) = File::open(&path) else { continue };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < offset {
            offset = 0;
        }
        let mut new = Vec::new();
        if file.seek(SeekFrom::Start(offset)).is_err() || file.read_to_end(&mut new).is_err() {
            continue;
        }
        // whole lines only: a line being written waits for its newline
        let Some(end) = new.iter().rposition(|b| *b == b'\n') else {
            continue;
        };
        for line in new[..end].split(|b| *b == b'\n') {
            let Ok(entry) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            if entry.get("context").and_then(Value::as_str) == Some(context.as_str()) {
                let _ = feed.send(Feed::Extra(Extra::Audit(entry)));
            }
        }
        offset += end as u64 + 1;
    }
}
