//! The inventory kept live (docs/ARCHITECTURE.md, "Live inventory"): per scope one watch per
//! kind — Sandboxes, the pods and PVCs the inventory pass selects (`inventory.rs` says why that
//! selector is complete), and SandboxTemplates. Each starts from a streaming list
//! (`sendInitialEvents`, Kubernetes ≥ 1.32) or, where the server refuses one, a paged LIST; asks
//! for bookmarks so a watch that ends resumes from the newest resourceVersion; lists again once on
//! 410 Gone. Nothing is re-listed while the watches are healthy.
//!
//! A watch on a server that stopped answering can sit silent for minutes, so a probe
//! (`GET /version` every [`PROBE_EVERY`], as k9s checks its connection) cuts every watch when it
//! fails and each reconnects with backoff. Where the user may list but not watch a kind, that kind
//! is re-listed every poll interval instead, with one warning naming the missing verb.
//!
//! What the selectors cannot see (a foreign pod, an unlabelled disk) is read by name for the
//! workspaces that should have it, when the workspace first appears or changes; at most
//! [`inventory::BY_NAME_LIMIT`] per namespace per batch (`-v` says so).

use super::connect::Connection;
use super::error::ClusterError;
use super::inventory::{self, Query, Scope};
use super::resources::{self, CILIUM_POLICIES, NAMESPACES, PODS, PVCS, SANDBOXES, TEMPLATES, Watched};
use crate::domain::drift::{OverlayFlags, TemplateFetch};
use crate::domain::keys::SANDBOX_NAME_HASH;
use crate::domain::mirror::{Key, Kind, Mirror, Readable, RowChange};
use crate::domain::object::{name, namespace};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How often the API server is asked whether it still answers.
pub const PROBE_EVERY: Duration = Duration::from_secs(10);
/// How long the probe waits for its answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the API server is asked while a watch is reconnecting: the first answer after an
/// outage wakes every waiting watch (issue 28: live again within a second or two, not after the
/// backoff grown during the outage).
const PROBE_IN_TROUBLE: Duration = Duration::from_millis(500);
/// The longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// One watch: a kind, cluster-wide or in one namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamName {
    pub kind: Kind,
    pub namespace: Option<String>,
}

impl std::fmt::Display for StreamName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(kind_label(self.kind))?;
        match &self.namespace {
            Some(ns) => write!(f, " in {ns}"),
            None => Ok(()),
        }
    }
}

fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Sandboxes => "sandboxes",
        Kind::Pods => "pods",
        Kind::Pvcs => "pvcs",
        Kind::Templates => "templates",
        Kind::Policies => "policies",
    }
}

fn api_kind(kind: Kind) -> &'static resources::Kind {
    match kind {
        Kind::Sandboxes => &SANDBOXES,
        Kind::Pods => &PODS,
        Kind::Pvcs => &PVCS,
        Kind::Templates => &TEMPLATES,
        Kind::Policies => &CILIUM_POLICIES,
    }
}

/// How a watch stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamStatus {
    /// Reading its first state.
    Syncing,
    Live,
    /// The data is as of `since`; `why` is the API's error in one line.
    Reconnecting {
        since: DateTime<Utc>,
        why: String,
    },
    /// The user may list but not watch: re-listed every interval.
    Polling,
    /// Not readable at all: its columns show `?`.
    Forbidden,
    /// Templates nobody may list here: each read once by name.
    ByName,
    /// The API group is not served (CiliumNetworkPolicies without Cilium): nothing to watch.
    NotServed,
}

/// What the live inventory reports.
#[derive(Debug)]
pub enum LiveEvent {
    /// Rows to add, replace or remove.
    Rows(Vec<RowChange>),
    Status {
        stream: StreamName,
        status: StreamStatus,
    },
    /// Every watch has its first state: the rows so far are the whole inventory.
    Synced {
        namespaces: Vec<String>,
    },
    Warning(String),
    /// The inventory cannot be read at all (agent-sandbox missing, Sandboxes forbidden).
    Failed(String),
}

/// Tuning; the defaults are the product's.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// Re-list interval where the user may not watch.
    pub poll_every: Duration,
    pub probe_every: Duration,
    /// `timeoutSeconds` of each watch request: the server ends it, the client watches again.
    pub watch_seconds: u32,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            poll_every: Duration::from_secs(2),
            probe_every: PROBE_EVERY,
            watch_seconds: 290,
        }
    }
}

/// What a watch task hands the mirror.
enum Feed {
    Reset(StreamName, Vec<Value>),
    /// A streaming list's first state is complete: these are all the objects there are.
    Listed(StreamName, BTreeSet<(String, String)>),
    Applied(StreamName, Value),
    Deleted(StreamName, Value),
    Status(StreamName, StreamStatus),
    /// The kind may not be listed here.
    Forbidden(StreamName, String),
    /// The kind's API group is not served.
    NotServed(StreamName),
    Warning(String),
    Fatal(String),
    /// A read by name: `None` when it failed (the row keeps what the watches show).
    ByName(Kind, String, String, Option<Option<Value>>),
    Template(String, String, TemplateFetch),
}

/// Why every watch must start over: the probe failed at `since`.
#[derive(Debug, Clone)]
struct Cut {
    generation: u64,
    since: DateTime<Utc>,
    why: String,
}

/// Follow `scope` until `out` is closed: rows and statuses as they change.
pub async fn follow(
    conn: Connection,
    scope: Scope,
    query: Query,
    flags: OverlayFlags,
    options: LiveOptions,
    out: UnboundedSender<LiveEvent>,
) {
    let streams = match plan(&conn, &scope, &out).await {
        Ok(s) => s,
        Err(e) => {
            let _ = out.send(LiveEvent::Failed(e.to_string()));
            return;
        }
    };
    let (feed, mut feeds) = unbounded_channel();
    let (cut_tx, cut_rx) = watch::channel(Cut {
        generation: 0,
        since: conn.clock.now(),
        why: String::new(),
    });
    let (wake_tx, wake_rx) = watch::channel(0u64);
    let streaming = Arc::new(AtomicBool::new(serves_streaming_lists(&conn).await));
    let mut state = Follower {
        conn: conn.clone(),
        scope: scope.clone(),
        mirror: Mirror::new(flags),
        pending: BTreeSet::new(),
        synced: false,
        touched: BTreeSet::new(),
        changed: BTreeSet::new(),
        looked_up: HashSet::new(),
        reads_in_flight: 0,
        per_namespace: BTreeMap::new(),
        spawn: Spawn {
            selector: query.selector,
            feed,
            cuts: cut_rx,
            wakes: wake_rx,
            streaming,
            options: options.clone(),
        },
        watchers: JoinSet::new(),
        reads: JoinSet::new(),
        reconnecting: BTreeSet::new(),
        out,
    };
    if !streams.iter().any(|s| s.kind == Kind::Pods) {
        for kind in [Kind::Pods, Kind::Pvcs, Kind::Templates, Kind::Policies] {
            state.mirror.set_readable(kind, None, Readable::Forbidden);
        }
    }
    for name in streams {
        state.start(name);
    }
    let mut buffer = Vec::new();
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    let mut probes = tokio::time::interval(options.probe_every);
    probes.reset();
    let mut fast_probes = tokio::time::interval(PROBE_IN_TROUBLE.min(options.probe_every));
    fast_probes.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_answer = conn.clock.now();
    // a probe failed and none has answered since
    let mut outage = false;
    loop {
        tokio::select! {
            _ = state.out.closed() => return,
            n = feeds.recv_many(&mut buffer, 4096) => {
                if n == 0 {
                    return;
                }
                for f in buffer.drain(..) {
                    if !state.take(f) {
                        return;
                    }
                }
                state.flush();
            }
            _ = ticks.tick() => {
                let timed = state.mirror.timed();
                if state.synced && !timed.is_empty() {
                    let rows = state.mirror.rows(&timed, conn.clock.now());
                    let _ = state.out.send(LiveEvent::Rows(rows));
                }
            }
            _ = probes.tick() => {
                let answer = tokio::time::timeout(PROBE_TIMEOUT, conn.version()).await;
                match answer {
                    Ok(Ok(_)) => {
                        last_answer = conn.clock.now();
                        if std::mem::take(&mut outage) {
                            wake_tx.send_modify(|w| *w += 1);
                        }
                    }
                    failed => {
                        outage = true;
                        let why = match failed {
                            Ok(Err(e)) => e.to_string(),
                            _ => format!("the API server did not answer GET /version in {}s", PROBE_TIMEOUT.as_secs()),
                        };
                        let since = last_answer;
                        cut_tx.send_modify(|c| *c = Cut { generation: c.generation + 1, since, why });
                    }
                }
            }
            // while a watch waits to reconnect (or the last probe failed), ask more often: the
            // first answer wakes every waiting watch instead of leaving it to its backoff
            _ = fast_probes.tick(), if outage || !state.reconnecting.is_empty() => {
                match tokio::time::timeout(PROBE_TIMEOUT, conn.version()).await {
                    Ok(Ok(_)) => {
                        last_answer = conn.clock.now();
                        if std::mem::take(&mut outage) {
                            wake_tx.send_modify(|w| *w += 1);
                        }
                    }
                    _ => outage = true,
                }
            }
        }
    }
}

/// Which watches a scope needs: cluster-wide where the user may list Sandboxes cluster-wide,
/// else one set per namespace the user can see (as the inventory pass falls back).
async fn plan(
    conn: &Connection,
    scope: &Scope,
    out: &UnboundedSender<LiveEvent>,
) -> Result<Vec<StreamName>, ClusterError> {
    let kinds = [Kind::Sandboxes, Kind::Pods, Kind::Pvcs, Kind::Templates, Kind::Policies];
    let namespaces: Vec<Option<String>> = match scope {
        Scope::Namespace(ns) => vec![Some(ns.clone())],
        Scope::All => {
            let cluster_wide = super::access::can(conn, "list", SANDBOXES.group, SANDBOXES.plural, None).await;
            if cluster_wide.unwrap_or(true) {
                vec![None]
            } else {
                match resources::list(conn, &NAMESPACES, None, None).await {
                    Ok(list) => list.iter().map(|n| Some(name(n).to_string())).collect(),
                    Err(ClusterError::Forbidden { .. }) => {
                        let _ = out.send(LiveEvent::Warning(format!(
                            "warning: you may not list sandboxes or namespaces cluster-wide; showing namespace {} only",
                            conn.namespace
                        )));
                        vec![Some(conn.namespace.clone())]
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    };
    // namespace by namespace under -A: Sandboxes in each, the other kinds only where workspaces
    // turn up (`Follower::start_per_namespace`), so the watches follow the workspaces, not the
    // cluster's namespaces
    let fallback = *scope == Scope::All && namespaces.iter().all(Option::is_some);
    Ok(namespaces
        .into_iter()
        .flat_map(|ns| {
            kinds
                .into_iter()
                .filter(move |k| !fallback || *k == Kind::Sandboxes)
                .map(move |kind| StreamName {
                    kind,
                    namespace: ns.clone(),
                })
        })
        .collect())
}

/// Streaming lists are on by default from Kubernetes 1.32; an older server gets a LIST.
async fn serves_streaming_lists(conn: &Connection) -> bool {
    match conn.version().await {
        Ok(v) => {
            let minor: u32 = v.minor.trim_end_matches('+').parse().unwrap_or(0);
            v.major == "1" && minor >= 32
        }
        Err(_) => false,
    }
}

/// What starting a watch needs.
struct Spawn {
    /// The Sandbox label selector (`-l`).
    selector: Option<String>,
    feed: UnboundedSender<Feed>,
    cuts: watch::Receiver<Cut>,
    /// Bumped when the API server answers again after an outage.
    wakes: watch::Receiver<u64>,
    streaming: Arc<AtomicBool>,
    options: LiveOptions,
}

/// The mirror and what it still owes the screen.
struct Follower {
    conn: Connection,
    scope: Scope,
    mirror: Mirror,
    /// Watches whose first state has not come yet: no rows until all have (one full screen).
    pending: BTreeSet<StreamName>,
    synced: bool,
    touched: BTreeSet<Key>,
    /// Workspaces whose Sandbox itself changed: what they read by name is read again.
    changed: BTreeSet<Key>,
    looked_up: HashSet<(Kind, String, String)>,
    /// Reads by name not answered yet: the first screen waits for them.
    reads_in_flight: usize,
    /// Namespaces with a watch of their own, per kind not readable cluster-wide.
    per_namespace: BTreeMap<Kind, BTreeSet<String>>,
    spawn: Spawn,
    watchers: JoinSet<()>,
    reads: JoinSet<()>,
    /// Watches waiting to reconnect.
    reconnecting: BTreeSet<StreamName>,
    out: UnboundedSender<LiveEvent>,
}

impl Follower {
    fn start(&mut self, name: StreamName) {
        let watcher = Watcher {
            conn: self.conn.clone(),
            selector: match name.kind {
                Kind::Sandboxes => self.spawn.selector.clone(),
                Kind::Pods | Kind::Pvcs => Some(SANDBOX_NAME_HASH.to_string()),
                Kind::Templates | Kind::Policies => None,
            },
            name: name.clone(),
            feed: self.spawn.feed.clone(),
            cuts: self.spawn.cuts.clone(),
            wakes: self.spawn.wakes.clone(),
            streaming: self.spawn.streaming.clone(),
            options: self.spawn.options.clone(),
            live_since: None,
            saw_event: false,
        };
        if !self.synced {
            self.pending.insert(name);
        }
        self.watchers.spawn(watcher.run());
    }

    /// A kind that cannot be read cluster-wide is watched in each namespace with workspaces.
    fn start_per_namespace(&mut self) {
        for kind in [Kind::Pods, Kind::Pvcs, Kind::Templates, Kind::Policies] {
            let started = self.per_namespace.entry(kind).or_default().clone();
            for ns in self.mirror.unread(kind, &started) {
                self.per_namespace.entry(kind).or_default().insert(ns.clone());
                self.start(StreamName {
                    kind,
                    namespace: Some(ns),
                });
            }
        }
    }

    /// Apply one report; `false` when the inventory cannot go on.
    fn take(&mut self, f: Feed) -> bool {
        match f {
            Feed::Reset(s, objects) => {
                if s.kind == Kind::Sandboxes {
                    self.changed
                        .extend(objects.iter().map(|o| (namespace(o).to_string(), name(o).to_string())));
                }
                self.touched
                    .extend(self.mirror.reset(s.kind, s.namespace.as_deref(), objects));
                self.pending.remove(&s);
            }
            Feed::Listed(s, listed) => {
                let touched = self.mirror.retain(s.kind, s.namespace.as_deref(), &listed);
                self.touched.extend(touched);
                self.pending.remove(&s);
            }
            Feed::Applied(s, object) => {
                if s.kind == Kind::Sandboxes {
                    self.changed
                        .insert((namespace(&object).to_string(), name(&object).to_string()));
                }
                self.touched.extend(self.mirror.apply(s.kind, object));
            }
            Feed::Deleted(s, object) => {
                let touched = self.mirror.remove(s.kind, namespace(&object), name(&object));
                self.touched.extend(touched);
            }
            Feed::Status(stream, status) => {
                if matches!(status, StreamStatus::Reconnecting { .. }) {
                    self.reconnecting.insert(stream.clone());
                } else {
                    self.reconnecting.remove(&stream);
                }
                let _ = self.out.send(LiveEvent::Status { stream, status });
            }
            // the scope asked for may not be read: nothing to show; one namespace of a fallback
            // is skipped, as the one-shot pass skips it
            Feed::Forbidden(s, why) if s.kind == Kind::Sandboxes => {
                if self.scope != Scope::All || s.namespace.is_none() {
                    let _ = self.out.send(LiveEvent::Failed(why));
                    return false;
                }
                let _ = self.out.send(LiveEvent::Warning(format!("warning: {why}; skipped")));
                self.pending.remove(&s);
            }
            Feed::Forbidden(s, warning) => {
                let touched = self
                    .mirror
                    .set_readable(s.kind, s.namespace.as_deref(), Readable::Forbidden);
                self.touched.extend(touched);
                // cluster-wide refused: quietly namespace by namespace, as the inventory pass does
                if s.namespace.is_some() {
                    let _ = self.out.send(LiveEvent::Warning(warning));
                    let status = match s.kind {
                        Kind::Templates => StreamStatus::ByName,
                        _ => StreamStatus::Forbidden,
                    };
                    let _ = self.out.send(LiveEvent::Status {
                        stream: s.clone(),
                        status,
                    });
                }
                self.pending.remove(&s);
            }
            Feed::NotServed(s) => {
                let touched = self
                    .mirror
                    .set_readable(s.kind, s.namespace.as_deref(), Readable::NotServed);
                self.touched.extend(touched);
                let _ = self.out.send(LiveEvent::Status {
                    stream: s.clone(),
                    status: StreamStatus::NotServed,
                });
                self.pending.remove(&s);
            }
            Feed::Warning(w) => {
                let _ = self.out.send(LiveEvent::Warning(w));
            }
            Feed::Fatal(why) => {
                let _ = self.out.send(LiveEvent::Failed(why));
                return false;
            }
            Feed::ByName(kind, ns, n, read) => {
                self.reads_in_flight -= 1;
                if let Some(found) = read {
                    self.touched.extend(self.mirror.read_by_name(kind, &ns, &n, found));
                }
            }
            Feed::Template(ns, n, fetch) => {
                self.reads_in_flight -= 1;
                self.touched.extend(self.mirror.template_read(&ns, &n, fetch));
            }
        }
        true
    }

    /// Derive what changed and send it; read by name what the selectors could not see.
    fn flush(&mut self) {
        self.start_per_namespace();
        if !self.pending.is_empty() {
            return;
        }
        self.read_by_name();
        if !self.synced && self.reads_in_flight > 0 {
            return;
        }
        let touched = std::mem::take(&mut self.touched);
        if touched.is_empty() && self.synced {
            return;
        }
        let rows = self.mirror.rows(&touched, self.conn.clock.now());
        let _ = self.out.send(LiveEvent::Rows(rows));
        if !self.synced {
            self.synced = true;
            let _ = self.out.send(LiveEvent::Synced {
                namespaces: self.mirror.namespaces(),
            });
        }
    }

    fn read_by_name(&mut self) {
        // finished reads answered through the feed already: let their tasks go
        while self.reads.try_join_next().is_some() {}
        let changed = std::mem::take(&mut self.changed);
        let mut wanted = self.mirror.wanted_by_name(&changed);
        wanted.extend(
            self.mirror
                .wanted_by_name(&self.touched)
                .into_iter()
                .filter(|w| !self.looked_up.contains(w)),
        );
        wanted.sort();
        wanted.dedup();
        let mut per_namespace: BTreeMap<String, usize> = BTreeMap::new();
        for (kind, ns, n) in wanted {
            let count = per_namespace.entry(ns.clone()).or_default();
            *count += 1;
            if *count > inventory::BY_NAME_LIMIT {
                if self.conn.verbose && *count == inventory::BY_NAME_LIMIT + 1 {
                    crate::errln!(
                        "more than {} objects in {ns} lack the {SANDBOX_NAME_HASH} label: the rest are read when their workspaces change",
                        inventory::BY_NAME_LIMIT
                    );
                }
                continue;
            }
            if self.conn.verbose {
                crate::errln!(
                    "reading {} {ns}/{n} by name (not labelled {SANDBOX_NAME_HASH})",
                    kind_label(kind)
                );
            }
            self.looked_up.insert((kind, ns.clone(), n.clone()));
            let (conn, feed) = (self.conn.clone(), self.spawn.feed.clone());
            self.reads_in_flight += 1;
            self.reads.spawn(async move {
                // a failed read leaves the row as the watched data shows it
                let found = resources::get(&conn, api_kind(kind), &ns, &n).await.ok();
                let _ = feed.send(Feed::ByName(kind, ns, n, found));
            });
        }
        for (ns, t) in self.mirror.wanted_templates(&self.touched) {
            if !self.looked_up.insert((Kind::Templates, ns.clone(), t.clone())) {
                continue;
            }
            let (conn, feed) = (self.conn.clone(), self.spawn.feed.clone());
            self.reads_in_flight += 1;
            self.reads.spawn(async move {
                let fetch = match resources::get(&conn, &TEMPLATES, &ns, &t).await {
                    Ok(Some(found)) => TemplateFetch::Found(found),
                    Ok(None) => TemplateFetch::NotFound,
                    Err(_) => TemplateFetch::Unreadable,
                };
                let _ = feed.send(Feed::Template(ns, t, fetch));
            });
        }
    }
}

/// One watch's task.
struct Watcher {
    conn: Connection,
    name: StreamName,
    selector: Option<String>,
    feed: UnboundedSender<Feed>,
    cuts: watch::Receiver<Cut>,
    wakes: watch::Receiver<u64>,
    streaming: Arc<AtomicBool>,
    options: LiveOptions,
    /// When the watch last opened, and whether anything came on it since: a watch that ends at
    /// once with nothing on it is trouble (backoff), not a normal end.
    live_since: Option<std::time::Instant>,
    saw_event: bool,
}

/// `d` less up to half of it, at random: the watches of many clients (and of one client's kinds
/// and namespaces) that failed together do not come back in step.
fn jittered(d: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    d - d.mul_f64((random % 1000) as f64 / 2000.0)
}

/// A watch that stayed open this long was healthy, whatever ended it.
const HEALTHY_AFTER: Duration = Duration::from_secs(5);

/// How a watch ended without an error.
enum Ended {
    /// The server closed it (its timeout): watch again from the last resourceVersion.
    Closed,
    /// 410: the resourceVersion expired; list again.
    Gone,
    /// The probe failed: reconnect.
    Cut(Cut),
}

impl Watcher {
    fn send(&self, f: Feed) {
        let _ = self.feed.send(f);
    }

    fn live(&mut self) {
        self.live_since = Some(std::time::Instant::now());
        self.send(Feed::Status(self.name.clone(), StreamStatus::Live));
    }

    fn kind(&self) -> &'static resources::Kind {
        api_kind(self.name.kind)
    }

    async fn run(mut self) {
        let mut version: Option<String> = None;
        let mut trouble: Option<DateTime<Utc>> = None;
        let mut backoff = Duration::from_millis(500);
        // watches in a row that ended within HEALTHY_AFTER though they delivered events
        let mut streak = 0u32;
        // a resume from a resourceVersion kept over trouble was refused (410): listed again at
        // once, without a word; a second 410 in a row is trouble
        let mut relisted_at_once = false;
        loop {
            let result = match version.clone() {
                None => self.first_state(&mut version).await,
                Some(from) => self.resume(&from, &mut version).await,
            };
            let opened = self.live_since.take();
            let lasted = opened.is_some_and(|t| t.elapsed() >= HEALTHY_AFTER);
            let delivered = std::mem::take(&mut self.saw_event);
            // a watch that stayed open a while was healthy, whatever ended it; one that ended
            // quickly, events or not, counts toward a streak: the first reconnects at once, the
            // ones after back off (a server answering one event then 410 would otherwise be
            // asked again at once, forever)
            if lasted {
                (trouble, backoff, streak) = (None, Duration::from_millis(500), 0);
            } else if opened.is_some() && delivered {
                streak += 1;
            }
            let healthy = opened.is_some() && (lasted || (delivered && streak <= 1));
            // an expired resourceVersion refused when the watch opens is the same as inside it
            let result = match result {
                Err(ClusterError::Api { code: 410, .. }) => Ok(Ended::Gone),
                other => other,
            };
            if healthy {
                relisted_at_once = false;
            }
            let why = match result {
                // a fresh resume after trouble (an API server restart: its watch cache starts at
                // the current resourceVersion, so every resumed watch gets 410): list again now
                Ok(Ended::Gone) if !delivered && !relisted_at_once && version.is_some() => {
                    version = None;
                    relisted_at_once = true;
                    continue;
                }
                Ok(Ended::Closed) if healthy => continue,
                Ok(Ended::Gone) if healthy => {
                    version = None;
                    continue;
                }
                Ok(Ended::Closed) if delivered => {
                    format!("the API server ended the watch {streak} times in a row within seconds")
                }
                Ok(Ended::Gone) if delivered => {
                    version = None;
                    format!("the API server expired the resourceVersion (410) {streak} times in a row within seconds")
                }
                Ok(Ended::Closed) => "the API server ended the watch at once".to_string(),
                Ok(Ended::Gone) => {
                    version = None;
                    "the API server expired the resourceVersion (410) again".to_string()
                }
                Ok(Ended::Cut(cut)) => {
                    trouble.get_or_insert(cut.since);
                    cut.why
                }
                Err(ClusterError::Forbidden { op, .. }) if op.verb == "watch" => return self.poll().await,
                Err(e @ ClusterError::Forbidden { .. }) => {
                    return self.forbidden(&e);
                }
                // CiliumNetworkPolicies without Cilium, SandboxTemplates without the extensions
                Err(e) if matches!(self.name.kind, Kind::Policies | Kind::Templates) && e.is_not_found() => {
                    return self.send(Feed::NotServed(self.name.clone()));
                }
                Err(e) if self.name.kind == Kind::Sandboxes && e.is_not_found() => {
                    let e = inventory::explain_missing(&self.conn, e).await;
                    return self.send(Feed::Fatal(e.to_string()));
                }
                Err(e) => e.to_string(),
            };
            let since = *trouble.get_or_insert_with(|| self.conn.clock.now());
            self.send(Feed::Status(
                self.name.clone(),
                StreamStatus::Reconnecting { since, why },
            ));
            self.wakes.borrow_and_update();
            tokio::select! {
                _ = tokio::time::sleep(jittered(backoff)) => {}
                _ = self.cuts.changed() => {}
                // the API server answers again: reconnect now, and start the backoff over
                _ = self.wakes.changed() => backoff = Duration::from_millis(250),
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
            if self.feed.is_closed() {
                return;
            }
        }
    }

    /// The first state (again): a streaming list where served, else a LIST; then the watch.
    async fn first_state(&mut self, version: &mut Option<String>) -> Result<Ended, ClusterError> {
        let ns = self.name.namespace.clone();
        if self.streaming.load(Ordering::Relaxed) {
            let opened = resources::watch(
                &self.conn,
                self.kind(),
                ns.as_deref(),
                self.selector.as_deref(),
                "",
                true,
                self.options.watch_seconds,
            )
            .await;
            match opened {
                Ok(events) => return self.consume(events, version, true).await,
                // a server without streaming lists refuses the parameters: LIST instead, for good
                Err(ClusterError::Api { code: 400 | 422, .. }) => self.streaming.store(false, Ordering::Relaxed),
                Err(e) => return Err(e),
            }
        }
        let (objects, rv) =
            resources::list_versioned(&self.conn, self.kind(), ns.as_deref(), self.selector.as_deref()).await?;
        self.send(Feed::Reset(self.name.clone(), objects));
        *version = Some(rv.clone());
        self.resume(&rv, version).await
    }

    async fn resume(&mut self, from: &str, version: &mut Option<String>) -> Result<Ended, ClusterError> {
        let events = resources::watch(
            &self.conn,
            self.kind(),
            self.name.namespace.as_deref(),
            self.selector.as_deref(),
            from,
            false,
            self.options.watch_seconds,
        )
        .await?;
        self.live();
        self.consume(events, version, false).await
    }

    /// Read a watch until it ends. `initial`: a streaming list, whose objects are applied as
    /// they come (never held twice) and whose initial-events-end bookmark says which are all.
    async fn consume(
        &mut self,
        events: impl futures::Stream<Item = Result<Watched, ClusterError>>,
        version: &mut Option<String>,
        initial: bool,
    ) -> Result<Ended, ClusterError> {
        let mut listed: Option<BTreeSet<(String, String)>> = initial.then(BTreeSet::new);
        let key = |v: &Value| (namespace(v).to_string(), name(v).to_string());
        futures::pin_mut!(events);
        loop {
            let next = tokio::select! {
                _ = self.cuts.changed() => return Ok(Ended::Cut(self.cuts.borrow().clone())),
                next = events.next() => next,
            };
            match next {
                None => return Ok(Ended::Closed),
                Some(Err(ClusterError::Api { code: 410, .. })) => return Ok(Ended::Gone),
                Some(Err(e)) => return Err(e),
                Some(Ok(Watched::Applied(v, at))) => {
                    self.saw_event = true;
                    match &mut listed {
                        Some(set) => {
                            set.insert(key(&v));
                        }
                        // a watch that ends resumes after the last change it delivered
                        None if !at.is_empty() => *version = Some(at),
                        None => {}
                    }
                    self.send(Feed::Applied(self.name.clone(), v));
                }
                Some(Ok(Watched::Deleted(v, at))) => {
                    self.saw_event = true;
                    match &mut listed {
                        Some(set) => {
                            set.remove(&key(&v));
                        }
                        None if !at.is_empty() => *version = Some(at),
                        None => {}
                    }
                    self.send(Feed::Deleted(self.name.clone(), v));
                }
                Some(Ok(Watched::Bookmark {
                    resource_version,
                    initial_events_end,
                })) => {
                    self.saw_event = true;
                    // a bookmark without a resourceVersion says nothing of where to resume: it
                    // must not reset the resume point to "now"
                    if !resource_version.is_empty() {
                        *version = Some(resource_version);
                    }
                    if initial_events_end && let Some(set) = listed.take() {
                        self.send(Feed::Listed(self.name.clone(), set));
                        self.live();
                    }
                }
            }
        }
    }

    fn forbidden(&self, e: &ClusterError) {
        let warning = match self.name.kind {
            Kind::Sandboxes => e.to_string(),
            Kind::Templates => format!(
                "warning: {e}; templates there are read once by name (needs RBAC list and watch on sandboxtemplates)"
            ),
            Kind::Pods => format!("warning: {e}; POD, NODE and DIAGNOSIS show ? (needs RBAC list on pods)"),
            Kind::Pvcs => format!("warning: {e}; disk diagnosis shows ? (needs RBAC list on persistentvolumeclaims)"),
            Kind::Policies => {
                let ns = self.name.namespace.as_deref().unwrap_or("all namespaces");
                super::policies::warning(&[ns], 0).unwrap_or_else(|| e.to_string())
            }
        };
        self.send(Feed::Forbidden(self.name.clone(), warning));
    }

    /// The user may list but not watch: re-list every interval.
    async fn poll(self) {
        let kind = self.kind();
        let scope = match &self.name.namespace {
            Some(ns) => format!("in namespace {ns}"),
            None => "cluster-wide".into(),
        };
        self.send(Feed::Warning(format!(
            "warning: you may not watch {} {scope}; re-listing every {}s instead (needs RBAC watch on {})",
            kind.plural,
            self.options.poll_every.as_secs_f64(),
            kind.plural
        )));
        let mut trouble: Option<DateTime<Utc>> = None;
        loop {
            let listed = resources::list(
                &self.conn,
                kind,
                self.name.namespace.as_deref(),
                self.selector.as_deref(),
            )
            .await;
            match listed {
                Ok(objects) => {
                    trouble = None;
                    self.send(Feed::Reset(self.name.clone(), objects));
                    self.send(Feed::Status(self.name.clone(), StreamStatus::Polling));
                }
                Err(e @ ClusterError::Forbidden { .. }) => return self.forbidden(&e),
                Err(e) => {
                    let since = *trouble.get_or_insert_with(|| self.conn.clock.now());
                    self.send(Feed::Status(
                        self.name.clone(),
                        StreamStatus::Reconnecting {
                            since,
                            why: e.to_string(),
                        },
                    ));
                }
            }
            if self.feed.is_closed() {
                return;
            }
            tokio::time::sleep(self.options.poll_every).await;
        }
    }
}
