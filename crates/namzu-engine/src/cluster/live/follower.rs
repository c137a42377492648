//! The mirror's side of the live inventory: what the watches report becomes rows, and reads by
//! name fill in what the selectors cannot see. Until every watch has its first state, each
//! workspace whose Sandbox is in goes out once as a provisional row (what is still loading
//! unknown, shown `?`), so the screen fills as the Sandboxes arrive; the first full state then
//! derives every row again and says `Synced`.

use super::pulse::{LivePulse, PulseAsk};
use super::watcher::Watcher;
use super::{Cut, Feed, LiveEvent, LiveOptions, StreamName, StreamStatus};
use crate::cluster::connect::Connection;
use crate::cluster::inventory::{self, Scope};
use crate::cluster::resources::{self, TEMPLATES};
use namzu_domain::annotations::SANDBOX_NAME_HASH;
use namzu_domain::drift::TemplateFetch;
use namzu_domain::mirror::{Kind, Mirror, ObjectKey, Readable, SandboxKey};
use namzu_domain::object::{name, namespace};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// What starting a watch needs.
pub(super) struct Spawn {
    /// The Sandbox label selector (`-l`).
    pub(super) selector: Option<String>,
    pub(super) feed: UnboundedSender<Feed>,
    pub(super) cuts: watch::Receiver<Cut>,
    /// Bumped when the API server answers again after an outage.
    pub(super) wakes: watch::Receiver<u64>,
    pub(super) streaming: Arc<AtomicBool>,
    pub(super) options: LiveOptions,
}

/// The mirror and what it still owes the screen.
pub(super) struct Follower {
    conn: Connection,
    scope: Scope,
    pub(super) mirror: Mirror,
    /// Watches whose first state has not come yet: until all have, rows go out provisional.
    pending: BTreeSet<StreamName>,
    /// Before the first full state: workspaces whose Sandbox came since the last provisional
    /// rows went out, and those already out (each goes out provisional once).
    arrived: BTreeSet<SandboxKey>,
    provisional: BTreeSet<SandboxKey>,
    pub(super) synced: bool,
    touched: BTreeSet<SandboxKey>,
    /// Workspaces whose Sandbox itself changed: what they read by name is read again.
    changed: BTreeSet<SandboxKey>,
    looked_up: HashSet<(Kind, ObjectKey)>,
    /// Reads by name not answered yet: the first screen waits for them.
    reads_in_flight: usize,
    /// Namespaces with a watch of their own, per kind not readable cluster-wide.
    per_namespace: BTreeMap<Kind, BTreeSet<String>>,
    spawn: Spawn,
    watchers: JoinSet<()>,
    reads: JoinSet<()>,
    /// Watches waiting to reconnect.
    pub(super) reconnecting: BTreeSet<StreamName>,
    pub(super) out: UnboundedSender<LiveEvent>,
    /// The pulse, while a front-end asks for it, and how many were started (each one's number).
    pulse: Option<LivePulse>,
    pulses_asked: u64,
}

impl Follower {
    pub(super) fn new(
        conn: Connection,
        scope: Scope,
        mirror: Mirror,
        spawn: Spawn,
        out: UnboundedSender<LiveEvent>,
    ) -> Follower {
        Follower {
            conn,
            scope,
            mirror,
            pending: BTreeSet::new(),
            arrived: BTreeSet::new(),
            provisional: BTreeSet::new(),
            synced: false,
            touched: BTreeSet::new(),
            changed: BTreeSet::new(),
            looked_up: HashSet::new(),
            reads_in_flight: 0,
            per_namespace: BTreeMap::new(),
            spawn,
            watchers: JoinSet::new(),
            reads: JoinSet::new(),
            reconnecting: BTreeSet::new(),
            out,
            pulse: None,
            pulses_asked: 0,
        }
    }

    /// The pulse asked for (its watches started), or no longer (its watches stopped).
    pub(super) fn ask_pulse(&mut self, ask: Option<PulseAsk>) {
        match (ask, self.pulse.as_mut()) {
            (None, _) => self.pulse = None,
            (Some(ask), Some(pulse)) => pulse.ask = ask,
            (Some(ask), None) => {
                self.pulses_asked += 1;
                let id = self.pulses_asked;
                let pulse = LivePulse::start(&self.conn, &self.scope, &self.spawn.feed, (id, ask), &self.mirror);
                self.pulse = Some(pulse);
            }
        }
    }

    /// A report of the pulse's own watches is the pulse's (`None`); any other goes on, and
    /// what the pulse reads of the mirror (its Sandboxes and pods) may have changed with it.
    pub(super) fn pulse_takes(&mut self, f: Feed) -> Option<Feed> {
        let Some(pulse) = self.pulse.as_mut() else {
            return Some(f);
        };
        match f {
            Feed::Pulse(id, extra) => {
                // what an earlier pulse's watches left queued is not this one's
                if id == pulse.id {
                    pulse.take(extra, &self.conn, &self.spawn.feed);
                }
                None
            }
            f => {
                pulse.inventory(&f);
                Some(f)
            }
        }
    }

    /// The pulse out, if it is due (a tick, once the inventory has its first state).
    pub(super) fn pulse_due(&mut self, now: chrono::DateTime<chrono::Utc>) {
        if let Some(event) = self.pulse.as_mut().and_then(|p| p.due(now)) {
            let _ = self.out.send(event);
        }
    }

    pub(super) fn start(&mut self, name: StreamName) {
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
    pub(super) fn take(&mut self, f: Feed) -> bool {
        match f {
            Feed::Reset(s, objects) => {
                if s.kind == Kind::Sandboxes {
                    let keys = objects.iter().map(|o| o.key.clone());
                    if !self.synced {
                        self.arrived.extend(keys.clone());
                    }
                    self.changed.extend(keys);
                }
                self.touched
                    .extend(self.mirror.reset(s.kind, s.namespace.as_deref(), objects));
                self.pending.remove(&s);
            }
            // for the recording only (when a streaming list began)
            Feed::Listing(_) => {}
            Feed::Listed(s, listed) => {
                let touched = self.mirror.retain(s.kind, s.namespace.as_deref(), &listed);
                self.touched.extend(touched);
                self.pending.remove(&s);
            }
            Feed::Applied(s, object) => {
                if s.kind == Kind::Sandboxes {
                    if !self.synced {
                        self.arrived.insert(object.key.clone());
                    }
                    self.changed.insert(object.key.clone());
                }
                self.touched.extend(self.mirror.apply_listed(s.kind, object));
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
            Feed::ByName { kind, key, found } => {
                self.reads_in_flight -= 1;
                if let Some(found) = found {
                    self.touched
                        .extend(self.mirror.read_by_name(kind, &key.namespace, &key.name, found));
                }
            }
            Feed::Template { key, fetch } => {
                self.reads_in_flight -= 1;
                self.touched
                    .extend(self.mirror.template_read(&key.namespace, &key.name, fetch));
            }
            Feed::Extra(_) | Feed::Pulse(..) => {}
        }
        true
    }

    /// Derive what changed and send it; read by name what the selectors could not see.
    pub(super) fn flush(&mut self) {
        self.start_per_namespace();
        if !self.pending.is_empty() {
            self.send_provisional();
            return;
        }
        self.read_by_name();
        if !self.synced && self.reads_in_flight > 0 {
            self.send_provisional();
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
            (self.arrived, self.provisional) = Default::default();
            let _ = self.out.send(LiveEvent::Synced {
                namespaces: self.mirror.namespaces(),
            });
        }
    }

    /// Before the first full state: the workspaces that arrived and are not on screen yet, as
    /// provisional rows — every kind whose first state is not in yet (or whose reads by name are
    /// out) unknown. Only the Sandboxes decide that a row exists: none goes out before its own.
    fn send_provisional(&mut self) {
        let arrived = std::mem::take(&mut self.arrived);
        let new: BTreeSet<SandboxKey> = arrived.difference(&self.provisional).cloned().collect();
        if new.is_empty() {
            return;
        }
        let mut loading: BTreeSet<Kind> = self.pending.iter().map(|s| s.kind).collect();
        if self.reads_in_flight > 0 {
            loading.extend([Kind::Pods, Kind::Pvcs, Kind::Templates]);
        }
        let rows = self.mirror.rows_while_loading(&new, &loading, self.conn.clock.now());
        self.provisional.extend(new);
        if !rows.is_empty() {
            let _ = self.out.send(LiveEvent::Provisional(rows));
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
        for (kind, key) in wanted {
            let count = per_namespace.entry(key.namespace.clone()).or_default();
            *count += 1;
            if *count > inventory::BY_NAME_LIMIT {
                if self.conn.verbose && *count == inventory::BY_NAME_LIMIT + 1 {
                    crate::errln!(
                        "more than {} objects in {} lack the {SANDBOX_NAME_HASH} label: the rest are read when their workspaces change",
                        inventory::BY_NAME_LIMIT,
                        key.namespace
                    );
                }
                continue;
            }
            if self.conn.verbose {
                crate::errln!(
                    "reading {} {}/{} by name (not labelled {SANDBOX_NAME_HASH})",
                    kind.label(),
                    key.namespace,
                    key.name
                );
            }
            self.looked_up.insert((kind, key.clone()));
            let (conn, feed) = (self.conn.clone(), self.spawn.feed.clone());
            self.reads_in_flight += 1;
            self.reads.spawn(async move {
                // a failed read leaves the row as the watched data shows it
                let found = resources::get(&conn, resources::ApiKind::of(kind), &key.namespace, &key.name)
                    .await
                    .ok();
                let _ = feed.send(Feed::ByName { kind, key, found });
            });
        }
        for key in self.mirror.wanted_templates(&self.touched) {
            if !self.looked_up.insert((Kind::Templates, key.clone())) {
                continue;
            }
            let (conn, feed) = (self.conn.clone(), self.spawn.feed.clone());
            self.reads_in_flight += 1;
            self.reads.spawn(async move {
                let fetch = match resources::get(&conn, &TEMPLATES, &key.namespace, &key.name).await {
                    Ok(Some(found)) => TemplateFetch::Found(found),
                    Ok(None) => TemplateFetch::NotFound,
                    Err(_) => TemplateFetch::Unreadable,
                };
                let _ = feed.send(Feed::Template { key, fetch });
            });
        }
    }
}
