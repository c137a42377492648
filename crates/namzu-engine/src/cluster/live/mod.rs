//! The inventory kept live (docs/ARCHITECTURE.md, "Live inventory"): per scope one watch per
//! kind — Sandboxes, the pods and PVCs the inventory pass selects (`inventory/mod.rs` says why that
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
use super::inventory::{Query, Scope};
use super::resources::{self, NAMESPACES, SANDBOXES};
use chrono::{DateTime, Utc};
use namzu_domain::drift::{OverlayFlags, TemplateFetch};
use namzu_domain::mirror::{Kind, Listed, Mirror, ObjectKey, Readable, RowChange};
use namzu_domain::object::name;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::sync::watch;

mod follower;
mod pulse;
mod tap;
mod watcher;

pub use pulse::PulseAsk;
pub use tap::RecordTo;
pub(crate) use tap::{READABLE, kind_name};

use follower::{Follower, Spawn};

/// How often the API server is asked whether it still answers.
pub(crate) const PROBE_EVERY: Duration = Duration::from_secs(10);
/// How long the probe waits for its answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the API server is asked while a watch is reconnecting: the first answer after an
/// outage wakes every waiting watch (issue 28: live again within a second or two, not after the
/// backoff grown during the outage).
const PROBE_IN_TROUBLE: Duration = Duration::from_millis(500);

/// One watch: a kind, cluster-wide or in one namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamName {
    pub kind: Kind,
    pub namespace: Option<String>,
}

impl std::fmt::Display for StreamName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind.label())?;
        match &self.namespace {
            Some(ns) => write!(f, " in {ns}"),
            None => Ok(()),
        }
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
    /// Before `Synced`: workspaces whose Sandbox is in, each once, with what is still loading
    /// unknown (`?`); `Synced`'s rows derive them again in full.
    Provisional(Vec<RowChange>),
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
    /// The pulse over the last `since`, while it is asked for ([`LiveOptions::pulse`]), with
    /// what it could not read.
    Pulse {
        since: chrono::Duration,
        pulse: Box<namzu_domain::pulse::Pulse>,
        warnings: Vec<String>,
        /// How long computing it took (the view says so).
        took: Duration,
    },
}

/// Tuning; the defaults are the product's.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// Re-list interval where the user may not watch.
    pub poll_every: Duration,
    pub probe_every: Duration,
    /// `timeoutSeconds` of each watch request: the server ends it, the client watches again.
    pub watch_seconds: u32,
    /// Record what the watches see (issue 43): `record`, `list -w` and the TUI.
    pub record: Option<RecordTo>,
    /// While this says so, the follow also computes the pulse (`pulse.rs`): the TUI's `:pulse`.
    pub pulse: Option<watch::Receiver<Option<PulseAsk>>>,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            poll_every: Duration::from_secs(2),
            probe_every: PROBE_EVERY,
            watch_seconds: 290,
            record: None,
            pulse: None,
        }
    }
}

/// What a watch task hands the mirror.
enum Feed {
    /// A list's objects, held as text until the mirror takes them.
    Reset(StreamName, Vec<Listed>),
    /// A streaming list begins: the objects it sends until `Listed` are one observation, of
    /// this moment (the recording stamps them so, however long they take to come).
    Listing(StreamName),
    /// A streaming list's first state is complete: these are all the objects there are.
    Listed(StreamName, BTreeSet<ObjectKey>),
    /// An object added or changed, as text (the mirror and the recording share it).
    Applied(StreamName, Listed),
    Deleted(StreamName, Value),
    Status(StreamName, StreamStatus),
    /// The kind may not be listed here.
    Forbidden(StreamName, String),
    /// The kind's API group is not served.
    NotServed(StreamName),
    Warning(String),
    Fatal(String),
    /// A read by name: `None` when it failed (the row keeps what the watches show).
    /// An object read by name (`found`: `None` when the read failed, else what it found).
    ByName {
        kind: Kind,
        key: ObjectKey,
        found: Option<Option<Value>>,
    },
    /// A template read by name.
    Template {
        key: ObjectKey,
        fetch: TemplateFetch,
    },
    /// For the recording only: a kind the inventory does not hold, an audit entry.
    Extra(tap::Extra),
    /// For the live pulse only (the one numbered so): a claim, a pool or an Event.
    Pulse(u64, tap::Extra),
}

/// Why every watch must start over: the probe failed at `since`.
#[derive(Debug, Clone)]
struct Cut {
    generation: u64,
    since: DateTime<Utc>,
    why: String,
}

/// Follow `scope` until `out` is closed: rows and statuses as they change.
pub(crate) async fn follow(
    conn: Connection,
    scope: Scope,
    query: Query,
    flags: OverlayFlags,
    options: LiveOptions,
    out: UnboundedSender<LiveEvent>,
) {
    // the plan's access check and the version asked together: one round trip before the
    // watches open, not two (the first rows wait for them)
    let (streams, streaming) = tokio::join!(plan(&conn, &scope, &out), serves_streaming_lists(&conn));
    let streams = match streams {
        Ok(s) => s,
        Err(e) => {
            let _ = out.send(LiveEvent::Failed(e.to_string()));
            return;
        }
    };
    let (feed, feeds) = unbounded_channel();
    let (cut_tx, cut_rx) = watch::channel(Cut {
        generation: 0,
        since: conn.clock.now(),
        why: String::new(),
    });
    let (wake_tx, wake_rx) = watch::channel(0u64);
    let streaming = Arc::new(AtomicBool::new(streaming));
    let spawn = Spawn {
        selector: query.selector,
        feed,
        cuts: cut_rx,
        wakes: wake_rx,
        streaming,
        options: options.clone(),
    };
    // a label selector watches part of the Sandboxes: recorded, that part would replay as the
    // whole fleet (`list --at` short of rows, `leaks --at` calling their disks and policies
    // orphaned), so a selected follow records nothing
    let mut tap = options.record.clone().filter(|_| spawn.selector.is_none()).map(|to| {
        if to.everything {
            start_extra(&conn, &scope, &to, &spawn.feed);
        }
        tap::Tap::new(&conn, &scope, to)
    });
    let mut state = Follower::new(conn.clone(), scope.clone(), Mirror::new(flags), spawn, out);
    if !streams.iter().any(|s| s.kind == Kind::Pods) {
        for kind in [Kind::Pods, Kind::Pvcs, Kind::Templates, Kind::Policies] {
            state.mirror.set_readable(kind, None, Readable::Forbidden);
        }
    }
    for name in streams {
        state.start(name);
    }
    run(&conn, &mut state, feeds, &mut tap, &options, (cut_tx, wake_tx)).await;
    if let Some(tap) = &mut tap {
        tap.finish();
        for w in tap.warnings.drain(..) {
            let _ = state.out.send(LiveEvent::Warning(w));
        }
    }
}

/// `record`'s watches beyond the inventory's, and its tail of the audit log.
fn start_extra(conn: &Connection, scope: &Scope, to: &RecordTo, feed: &UnboundedSender<Feed>) {
    let namespace = match scope {
        Scope::All => None,
        Scope::Namespace(ns) => Some(ns.clone()),
    };
    for kind in tap::EXTRA_KINDS {
        tokio::spawn(tap::watch_extra(
            conn.clone(),
            kind,
            namespace.clone(),
            feed.clone(),
            tap::Extras::Recorded,
        ));
    }
    if let Some(audit) = &to.audit {
        tokio::spawn(tap::tail_audit(audit.clone(), conn.context.clone(), feed.clone()));
    }
}

/// The follow's loop, until nobody reads it or it cannot go on.
async fn run(
    conn: &Connection,
    state: &mut Follower,
    mut feeds: tokio::sync::mpsc::UnboundedReceiver<Feed>,
    tap: &mut Option<tap::Tap>,
    options: &LiveOptions,
    (cut_tx, wake_tx): (watch::Sender<Cut>, watch::Sender<u64>),
) {
    let mut buffer = Vec::new();
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    let mut probes = tokio::time::interval(options.probe_every);
    probes.reset();
    let mut fast_probes = tokio::time::interval(PROBE_IN_TROUBLE.min(options.probe_every));
    fast_probes.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_answer = conn.clock.now();
    // a probe failed and none has answered since
    let mut outage = false;
    let mut asks = options.pulse.clone();
    // what is asked already is taken on the first turn
    if let Some(asks) = asks.as_mut() {
        asks.mark_changed();
    }
    loop {
        tokio::select! {
            _ = state.out.closed() => return,
            ask = next_ask(&mut asks) => state.ask_pulse(ask),
            n = feeds.recv_many(&mut buffer, 4096) => {
                if n == 0 {
                    return;
                }
                for f in buffer.drain(..) {
                    if let Some(tap) = tap.as_mut() {
                        tap.take(&f);
                    }
                    if let Some(f) = state.pulse_takes(f)
                        && !state.take(f)
                    {
                        return;
                    }
                }
                state.flush();
                if state.synced {
                    state.pulse_due(conn.clock.now());
                }
                if let Some(tap) = tap.as_mut() {
                    if state.synced {
                        tap.synced();
                    }
                    for w in tap.warnings.drain(..) {
                        let _ = state.out.send(LiveEvent::Warning(w));
                    }
                }
            }
            _ = ticks.tick() => {
                let timed = state.mirror.timed();
                if state.synced && !timed.is_empty() {
                    let rows = state.mirror.rows(&timed, conn.clock.now());
                    let _ = state.out.send(LiveEvent::Rows(rows));
                }
                if state.synced {
                    state.pulse_due(conn.clock.now());
                }
                if let Some(tap) = tap.as_mut() {
                    tap.tick();
                    for w in tap.warnings.drain(..) {
                        let _ = state.out.send(LiveEvent::Warning(w));
                    }
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

/// What the pulse is asked next (`None`: no longer asked, or nobody can ask any more, when the
/// asks end); never ready when nobody asks.
async fn next_ask(asks: &mut Option<watch::Receiver<Option<PulseAsk>>>) -> Option<PulseAsk> {
    let Some(a) = asks.as_mut() else {
        return std::future::pending().await;
    };
    match a.changed().await {
        Ok(()) => a.borrow_and_update().clone(),
        Err(_) => {
            *asks = None;
            None
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
