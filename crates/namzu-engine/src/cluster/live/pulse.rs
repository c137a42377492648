//! The pulse, live (issue 44): while a front-end asks for it (the TUI's `:pulse`), the follow
//! also watches the claims, warm pools and Events of its scope, and computes the pulse
//! (`domain::pulse`, what `kubectl namzu pulse` prints) from those and from the Sandboxes and
//! pods its mirror already holds. It computes when something it reads changed, the user asked
//! again, or [`WINDOW_STEP`] passed (the window slides) — at once if the last was at least
//! [`AT_MOST_EVERY`] ago, else on the next tick: a refresh sends no request. The claims' and
//! pools' watches start when first asked (one LIST each); once both are in, the Events are
//! watched in each namespace that holds claims or pools (one more as a claim or pool turns up
//! elsewhere) — never the whole cluster's Events, which other apps' pods make by the thousand.
//! Every watch stops when nobody asks any more.

use super::tap::{Extra, Extras, watch_extra};
use super::{Feed, LiveEvent};
use crate::cluster::connect::Connection;
use crate::cluster::inventory::Scope;
use crate::cluster::kinds::{CLAIMS, EVENTS, WARM_POOLS};
use chrono::{DateTime, Duration, Utc};
use namzu_domain::mirror::{Kind, Mirror, ObjectKey};
use namzu_domain::object::{namespace, str_at};
use namzu_domain::projection::{PULSE_POD, PULSE_SANDBOX, project};
use namzu_domain::pulse::{self, Inputs};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// What a front-end asks of a follow: the pulse over the last `since`. `asked` changes when the
/// user asks again (`r`): the next tick computes even if nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PulseAsk {
    pub since: Duration,
    pub asked: u64,
}

/// With nothing changed, the pulse is computed again this often: its window slides with time.
const WINDOW_STEP: std::time::Duration = std::time::Duration::from_secs(5);
/// The pulse is computed at most this often (a busy cluster changes many times a second).
const AT_MOST_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

const CLAIM: &str = "SandboxClaim";
const POOL: &str = "SandboxWarmPool";
const EVENT: &str = "Event";

/// The Events the pulse reads: about the pods, Sandboxes, claims and pools a start is made of.
pub(super) fn about_a_start(kind: &str, o: &Value) -> bool {
    kind != EVENT
        || matches!(
            str_at(o, &["involvedObject", "kind"]),
            Some("Pod" | "Sandbox" | "SandboxClaim" | "SandboxWarmPool")
        )
}

/// Objects by namespace and name, held in one slice (what `domain::pulse` reads, never copied
/// to compute) with each one's place.
#[derive(Default)]
struct Held {
    objects: Vec<Value>,
    at: HashMap<ObjectKey, usize>,
}

impl Held {
    fn put(&mut self, o: Value) {
        let key = ObjectKey::of(&o);
        match self.at.get(&key) {
            Some(&i) => self.objects[i] = o,
            None => {
                self.at.insert(key, self.objects.len());
                self.objects.push(o);
            }
        }
    }

    fn remove(&mut self, key: &ObjectKey) {
        if let Some(i) = self.at.remove(key) {
            self.objects.swap_remove(i);
            if let Some(moved) = self.objects.get(i) {
                self.at.insert(ObjectKey::of(moved), i);
            }
        }
    }

    /// Keep in `namespace` (everywhere with `None`) only what `keep` says.
    fn retain(&mut self, namespace: Option<&str>, keep: impl Fn(&ObjectKey) -> bool) {
        let gone: Vec<ObjectKey> = self
            .at
            .keys()
            .filter(|k| namespace.is_none_or(|n| k.namespace == n) && !keep(k))
            .cloned()
            .collect();
        for k in &gone {
            self.remove(k);
        }
    }
}

/// The pulse's own watches, and what it reads: their claims, pools and Events, and its own
/// copy of the inventory's Sandboxes and pods pruned to the pulse's fields (kept as the watches
/// report them, so a refresh parses nothing).
pub(super) struct LivePulse {
    /// Its number: its watches' reports carry it.
    pub(super) id: u64,
    pub(super) ask: PulseAsk,
    claims: Held,
    pools: Held,
    events: Held,
    sandboxes: Held,
    pods: Held,
    /// Namespaces that held claims or pools: Events are kept there only.
    busy: BTreeSet<String>,
    /// Kinds whose first state is in (or that cannot be read); `Event` once its watches are
    /// planned.
    first: BTreeSet<&'static str>,
    /// Namespaces whose Events are watched, and those of them whose first state is not in yet.
    events_watched: BTreeSet<String>,
    events_pending: BTreeSet<String>,
    /// Kinds that cannot be read, with the API's word.
    unreadable: BTreeMap<&'static str, String>,
    /// Something the pulse reads changed since it was last computed.
    dirty: bool,
    /// When it was last computed (the machine's monotonic time: the follow's clock may be
    /// pinned), for which ask.
    sent: Option<(Instant, u64)>,
    /// The watches: they stop when this is dropped.
    tasks: JoinSet<()>,
}

impl LivePulse {
    /// Start the claims' and pools' watches in `scope`, with the Sandboxes and pods the
    /// inventory holds now.
    pub(super) fn start(
        conn: &Connection,
        scope: &Scope,
        feed: &UnboundedSender<Feed>,
        (id, ask): (u64, PulseAsk),
        mirror: &Mirror,
    ) -> LivePulse {
        let mut tasks = JoinSet::new();
        for kind in [(&CLAIMS, CLAIM), (&WARM_POOLS, POOL)] {
            tasks.spawn(watch_extra(
                conn.clone(),
                kind,
                in_scope(scope),
                feed.clone(),
                Extras::Pulse(id),
            ));
        }
        let (mut sandboxes, mut pods) = (Held::default(), Held::default());
        let (held_sandboxes, held_pods) = mirror.pulse_objects();
        held_sandboxes.into_iter().for_each(|o| sandboxes.put(o));
        held_pods.into_iter().for_each(|o| pods.put(o));
        LivePulse {
            id,
            ask,
            claims: Held::default(),
            pools: Held::default(),
            events: Held::default(),
            sandboxes,
            pods,
            busy: BTreeSet::new(),
            first: BTreeSet::new(),
            events_watched: BTreeSet::new(),
            events_pending: BTreeSet::new(),
            unreadable: BTreeMap::new(),
            dirty: true,
            sent: None,
            tasks,
        }
    }

    fn held(&mut self, kind: &str) -> Option<&mut Held> {
        match kind {
            CLAIM => Some(&mut self.claims),
            POOL => Some(&mut self.pools),
            EVENT => Some(&mut self.events),
            _ => None,
        }
    }

    /// Events are kept only in namespaces with claims or pools (other apps' pods come and go by
    /// the thousand); a claim or pool's namespace joins them.
    fn kept(&mut self, kind: &str, o: &Value) -> bool {
        match kind {
            CLAIM | POOL => {
                if !self.busy.contains(namespace(o)) {
                    self.busy.insert(namespace(o).to_string());
                }
                true
            }
            _ => self.busy.contains(namespace(o)),
        }
    }

    /// One report of the pulse's watches.
    pub(super) fn take(&mut self, extra: Extra, conn: &Connection, feed: &UnboundedSender<Feed>) {
        self.dirty = true;
        match extra {
            Extra::Reset {
                kind,
                namespace,
                objects,
            } => {
                let kept: Vec<Value> = objects.into_iter().filter(|o| self.kept(kind, o)).map(lean).collect();
                if let Some(held) = self.held(kind) {
                    let listed: BTreeSet<ObjectKey> = kept.iter().map(ObjectKey::of).collect();
                    held.retain(namespace.as_deref(), |k| listed.contains(k));
                    kept.into_iter().for_each(|o| held.put(o));
                }
                if kind == EVENT
                    && let Some(ns) = &namespace
                {
                    self.events_pending.remove(ns);
                }
                self.first_state(kind, conn, feed);
            }
            Extra::Applied(kind, o) => {
                if self.kept(kind, &o)
                    && let Some(held) = self.held(kind)
                {
                    held.put(lean(o));
                }
                // a claim or pool in a namespace not watched yet: its Events too
                self.watch_events(conn, feed);
            }
            Extra::Deleted(kind, o) => {
                if let Some(held) = self.held(kind) {
                    held.remove(&ObjectKey::of(&o));
                }
            }
            Extra::Unreadable {
                kind, why, namespace, ..
            } => {
                if kind == EVENT
                    && let Some(ns) = &namespace
                {
                    self.events_pending.remove(ns);
                }
                self.unreadable.insert(kind, why);
                self.first_state(kind, conn, feed);
            }
            Extra::Audit(_) => {}
        }
    }

    /// A report of the inventory's watches: its Sandboxes and pods, as the pulse reads them.
    pub(super) fn inventory(&mut self, f: &Feed) {
        let (held, keep) = match f {
            Feed::Reset(s, _) | Feed::Listed(s, _) | Feed::Applied(s, _) | Feed::Deleted(s, _) => match s.kind {
                Kind::Sandboxes => (&mut self.sandboxes, PULSE_SANDBOX),
                Kind::Pods => (&mut self.pods, PULSE_POD),
                _ => return,
            },
            Feed::ByName {
                kind: Kind::Pods,
                found: Some(Some(_)),
                ..
            } => (&mut self.pods, PULSE_POD),
            _ => return,
        };
        self.dirty = true;
        let pruned = |mut o: Value| {
            project(&mut o, keep);
            o
        };
        match f {
            Feed::Reset(s, objects) => {
                let listed: BTreeSet<&ObjectKey> = objects.iter().map(|o| &o.key).collect();
                held.retain(s.namespace.as_deref(), |k| listed.contains(k));
                objects.iter().for_each(|o| held.put(pruned(o.value())));
            }
            Feed::Listed(s, listed) => held.retain(s.namespace.as_deref(), |k| listed.contains(k)),
            Feed::Applied(_, o) => held.put(pruned(o.value())),
            Feed::ByName {
                found: Some(Some(o)), ..
            } => held.put(pruned(o.clone())),
            Feed::Deleted(_, o) => held.remove(&ObjectKey::of(o)),
            _ => {}
        }
    }

    /// Once the claims and the pools are in, the Events are watched where they are.
    fn first_state(&mut self, kind: &'static str, conn: &Connection, feed: &UnboundedSender<Feed>) {
        let was = self.first.contains(CLAIM) && self.first.contains(POOL);
        self.first.insert(kind);
        if !was && self.first.contains(CLAIM) && self.first.contains(POOL) {
            // with no claims and no pools readable no Event can explain a start: none is read
            self.first.insert(EVENT);
            self.watch_events(conn, feed);
        }
    }

    /// An Events watch for each namespace with claims or pools that has none yet (once the
    /// claims and pools are in).
    fn watch_events(&mut self, conn: &Connection, feed: &UnboundedSender<Feed>) {
        if !self.first.contains(EVENT) {
            return;
        }
        let new: Vec<String> = self.busy.difference(&self.events_watched).cloned().collect();
        for ns in new {
            self.events_watched.insert(ns.clone());
            self.events_pending.insert(ns.clone());
            let extras = Extras::Pulse(self.id);
            let events = watch_extra(conn.clone(), (&EVENTS, EVENT), Some(ns), feed.clone(), extras);
            self.tasks.spawn(events);
        }
    }

    /// The pulse, when it is due: every watch has its first state, the last was computed at
    /// least [`AT_MOST_EVERY`] ago, and since then something changed, the user asked again or
    /// the window moved on.
    pub(super) fn due(&mut self, now: DateTime<Utc>) -> Option<LiveEvent> {
        if ![CLAIM, POOL, EVENT].iter().all(|k| self.first.contains(k)) || !self.events_pending.is_empty() {
            return None;
        }
        if let Some((at, asked)) = self.sent {
            let since = at.elapsed();
            let moved = since >= WINDOW_STEP || asked != self.ask.asked;
            if since < AT_MOST_EVERY || !(self.dirty || moved) {
                return None;
            }
        }
        self.dirty = false;
        let started = Instant::now();
        self.sent = Some((started, self.ask.asked));
        let mut warnings = Vec::new();
        let extensions_missing = self.unreadable.contains_key(CLAIM) && self.unreadable.contains_key(POOL);
        for (kind, why) in self.unreadable.iter().filter(|_| !extensions_missing) {
            warnings.push(match *kind {
                EVENT => {
                    format!("warning: {why}; causes told by Events (controller errors, pulls, scheduling) are unknown")
                }
                _ => format!("warning: {why}; the pulse leaves its part unknown"),
            });
        }
        if extensions_missing {
            warnings
                .push("note: the agent-sandbox extensions (warm pools, claims) are not installed or readable".into());
        }
        let pulse = pulse::pulse(&Inputs {
            claims: &self.claims.objects,
            sandboxes: &self.sandboxes.objects,
            pools: &self.pools.objects,
            pods: &self.pods.objects,
            events: (!self.unreadable.contains_key(EVENT)).then_some(self.events.objects.as_slice()),
            now,
            since: self.ask.since,
        });
        Some(LiveEvent::Pulse {
            since: self.ask.since,
            pulse: Box::new(pulse),
            warnings,
            took: started.elapsed(),
        })
    }
}

fn in_scope(scope: &Scope) -> Option<String> {
    match scope {
        Scope::All => None,
        Scope::Namespace(ns) => Some(ns.clone()),
    }
}

/// An object without its managedFields: nothing the pulse reads is there.
fn lean(mut o: Value) -> Value {
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    o
}
