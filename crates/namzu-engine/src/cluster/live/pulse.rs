//! The pulse, live (issue 44): while a front-end asks for it (the TUI's `:pulse`), the follow
//! also watches the claims, warm pools and Events of its scope, and computes the pulse
//! (`domain::pulse`, what `kubectl namzu pulse` prints) from those and from the Sandboxes and
//! pods its mirror already holds. It computes at most once a second, and only when something it
//! reads changed, the user asked again, or [`WINDOW_STEP`] passed (the window slides): a refresh
//! sends no request. The three watches start when first asked (one LIST each, the Events' once
//! the claims and pools are in, so a pod's Events are kept only where claims or pools are) and
//! stop when nobody asks any more.

use super::tap::{Extra, Extras, watch_extra};
use super::{Feed, LiveEvent};
use crate::cluster::connect::Connection;
use crate::cluster::inventory::Scope;
use crate::cluster::kinds::{CLAIMS, EVENTS, WARM_POOLS};
use chrono::{DateTime, Duration, Utc};
use namzu_domain::mirror::{Mirror, ObjectKey};
use namzu_domain::object::{namespace, str_at};
use namzu_domain::pulse::{self, Inputs};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;

/// What a front-end asks of a follow: the pulse over the last `since`. `asked` changes when the
/// user asks again (`r`): the next tick computes even if nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PulseAsk {
    pub since: Duration,
    pub asked: u64,
}

/// With nothing changed, the pulse is computed again this often: its window slides with time.
const WINDOW_STEP: Duration = Duration::seconds(5);

const CLAIM: &str = "SandboxClaim";
const POOL: &str = "SandboxWarmPool";
const EVENT: &str = "Event";

/// The Events the pulse reads: about the pods, Sandboxes, claims and pools a start is made of.
fn about_a_start(kind: &str, o: &Value) -> bool {
    kind != EVENT
        || matches!(
            str_at(o, &["involvedObject", "kind"]),
            Some("Pod" | "Sandbox" | "SandboxClaim" | "SandboxWarmPool")
        )
}

const PULSE_EXTRAS: Extras = Extras {
    keep: about_a_start,
    wrap: Feed::Pulse,
};

/// The pulse's own watches and what they hold.
pub(super) struct LivePulse {
    pub(super) ask: PulseAsk,
    claims: BTreeMap<ObjectKey, Value>,
    pools: BTreeMap<ObjectKey, Value>,
    events: BTreeMap<ObjectKey, Value>,
    /// Namespaces that held claims or pools.
    busy: BTreeSet<String>,
    /// Kinds whose first state is in (or that cannot be read).
    first: BTreeSet<&'static str>,
    /// Kinds that cannot be read, with the API's word.
    unreadable: BTreeMap<&'static str, String>,
    /// Something the pulse reads changed since it was last computed.
    pub(super) dirty: bool,
    sent: Option<(DateTime<Utc>, u64)>,
    /// The watches: they stop when this is dropped.
    tasks: JoinSet<()>,
}

impl LivePulse {
    /// Start the claims' and pools' watches in `scope`.
    pub(super) fn start(conn: &Connection, scope: &Scope, feed: &UnboundedSender<Feed>, ask: PulseAsk) -> LivePulse {
        let mut tasks = JoinSet::new();
        for kind in [(&CLAIMS, CLAIM), (&WARM_POOLS, POOL)] {
            tasks.spawn(watch_extra(
                conn.clone(),
                kind,
                in_scope(scope),
                feed.clone(),
                PULSE_EXTRAS,
            ));
        }
        LivePulse {
            ask,
            claims: BTreeMap::new(),
            pools: BTreeMap::new(),
            events: BTreeMap::new(),
            busy: BTreeSet::new(),
            first: BTreeSet::new(),
            unreadable: BTreeMap::new(),
            dirty: true,
            sent: None,
            tasks,
        }
    }

    fn held(&mut self, kind: &str) -> Option<&mut BTreeMap<ObjectKey, Value>> {
        match kind {
            CLAIM => Some(&mut self.claims),
            POOL => Some(&mut self.pools),
            EVENT => Some(&mut self.events),
            _ => None,
        }
    }

    /// A pod's Events are kept only in namespaces with claims or pools (other apps' pods come
    /// and go by the thousand); a claim or pool's namespace joins them.
    fn kept(&mut self, kind: &str, o: &Value) -> bool {
        match kind {
            CLAIM | POOL => {
                if !self.busy.contains(namespace(o)) {
                    self.busy.insert(namespace(o).to_string());
                }
                true
            }
            _ => str_at(o, &["involvedObject", "kind"]) != Some("Pod") || self.busy.contains(namespace(o)),
        }
    }

    /// One report of the pulse's watches.
    pub(super) fn take(&mut self, extra: Extra, conn: &Connection, scope: &Scope, feed: &UnboundedSender<Feed>) {
        self.dirty = true;
        match extra {
            Extra::Reset { kind, objects, .. } => {
                let mut kept = BTreeMap::new();
                for o in objects {
                    if self.kept(kind, &o) {
                        kept.insert(ObjectKey::of(&o), lean(o));
                    }
                }
                if let Some(held) = self.held(kind) {
                    *held = kept;
                }
                self.first_state(kind, conn, scope, feed);
            }
            Extra::Applied(kind, o) => {
                if self.kept(kind, &o)
                    && let Some(held) = self.held(kind)
                {
                    held.insert(ObjectKey::of(&o), lean(o));
                }
            }
            Extra::Deleted(kind, o) => {
                if let Some(held) = self.held(kind) {
                    held.remove(&ObjectKey::of(&o));
                }
            }
            Extra::Unreadable { kind, why, .. } => {
                self.unreadable.insert(kind, why);
                self.first_state(kind, conn, scope, feed);
            }
            Extra::Audit(_) => {}
        }
    }

    /// Once the claims and the pools are in, the Events' watch starts.
    fn first_state(&mut self, kind: &'static str, conn: &Connection, scope: &Scope, feed: &UnboundedSender<Feed>) {
        let was = self.first.contains(CLAIM) && self.first.contains(POOL);
        self.first.insert(kind);
        if !was && self.first.contains(CLAIM) && self.first.contains(POOL) {
            let events = watch_extra(
                conn.clone(),
                (&EVENTS, EVENT),
                in_scope(scope),
                feed.clone(),
                PULSE_EXTRAS,
            );
            self.tasks.spawn(events);
        }
    }

    /// The pulse, when it is due: every watch has its first state, and something changed, the
    /// user asked again or the window moved on.
    pub(super) fn due(&mut self, mirror: &Mirror, now: DateTime<Utc>) -> Option<LiveEvent> {
        if ![CLAIM, POOL, EVENT].iter().all(|k| self.first.contains(k)) {
            return None;
        }
        let fresh = self
            .sent
            .is_some_and(|(at, asked)| asked == self.ask.asked && now - at < WINDOW_STEP);
        if fresh && !self.dirty {
            return None;
        }
        self.dirty = false;
        self.sent = Some((now, self.ask.asked));
        let (sandboxes, pods) = mirror.pulse_objects();
        let claims: Vec<Value> = self.claims.values().cloned().collect();
        let pools: Vec<Value> = self.pools.values().cloned().collect();
        let events: Vec<Value> = self.events.values().cloned().collect();
        let mut warnings = Vec::new();
        for (kind, why) in &self.unreadable {
            warnings.push(match *kind {
                EVENT => {
                    format!("warning: {why}; causes told by Events (controller errors, pulls, scheduling) are unknown")
                }
                _ => format!("warning: {why}; the pulse leaves its part unknown"),
            });
        }
        if self.unreadable.contains_key(CLAIM) && self.unreadable.contains_key(POOL) {
            warnings
                .push("note: the agent-sandbox extensions (warm pools, claims) are not installed or readable".into());
        }
        let pulse = pulse::pulse(&Inputs {
            claims: &claims,
            sandboxes: &sandboxes,
            pools: &pools,
            pods: &pods,
            events: (!self.unreadable.contains_key(EVENT)).then_some(events.as_slice()),
            now,
            since: self.ask.since,
        });
        Some(LiveEvent::Pulse {
            since: self.ask.since,
            pulse: Box::new(pulse),
            warnings,
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
