//! Each context the UI shows: its rules, its health, its watch streams, and what a live event does to it.

use super::*;

/// One context as the UI knows it apart from its rows: its rules, what RBAC lets the user do
/// there, and how its reads stand.
#[derive(Debug, Clone, Default)]
pub struct ContextView {
    pub name: String,
    pub server: String,
    /// Its own namespace, read while the fleet reads each context's own.
    pub namespace: String,
    pub rules: ContextRules,
    /// Why it refuses every write (`--read-only`, or its readOnly rule), if it does.
    pub read_only: Option<String>,
    /// SelfSubjectAccessReview's answers (`None` until they come).
    pub can_patch: Option<bool>,
    pub can_delete: Option<bool>,
    /// Why it could not be opened: it is never read, and its status says so.
    pub open_error: Option<String>,
    pub loaded_at: Option<DateTime<Utc>>,
    /// The last read's error; its rows stay on screen under it.
    pub refresh_error: Option<String>,
    pub refreshing: bool,
    /// Live mode: how each watch stands.
    pub streams: BTreeMap<StreamName, StreamStatus>,
    pub warnings: Vec<String>,
    /// The current Follow's generation here: reports of older ones are dropped.
    pub follow_generation: u64,
}

/// How a context's data stands, for its status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Loading,
    /// Every watch is live.
    Live,
    /// The first full state is not in yet (the rows so far are provisional).
    Syncing,
    /// Some kinds are re-listed or unreadable (the user may not watch them).
    Polled,
    /// A watch lost the server: the data is as of `since`.
    Reconnecting {
        since: DateTime<Utc>,
        why: String,
    },
    /// Not read at all (it could not be opened, or its read failed): the last good rows stay.
    Error(String),
}

impl ContextView {
    pub(super) fn new(o: ContextOptions, read_only_flag: bool) -> ContextView {
        let read_only = namzu_engine::ops::write::rules::read_only(&o.rules, &o.name, read_only_flag);
        ContextView {
            name: o.name,
            server: o.server,
            namespace: o.namespace,
            rules: o.rules,
            read_only,
            open_error: o.open_error,
            ..Default::default()
        }
    }

    /// Since when its data may be out of date: `None` while every watch is live (or polled),
    /// else the oldest moment a reconnecting watch was last known good.
    pub fn stale_since(&self) -> Option<DateTime<Utc>> {
        self.streams
            .values()
            .filter_map(|s| match s {
                StreamStatus::Reconnecting { since, .. } => Some(*since),
                _ => None,
            })
            .min()
    }

    pub fn health(&self) -> Health {
        if let Some(why) = self.open_error.as_ref().or(self.refresh_error.as_ref()) {
            return Health::Error(why.clone());
        }
        let reconnecting = self
            .streams
            .values()
            .filter_map(|s| match s {
                StreamStatus::Reconnecting { since, why } => Some((*since, why)),
                _ => None,
            })
            .min_by_key(|(since, _)| *since);
        if let Some((since, why)) = reconnecting {
            return Health::Reconnecting {
                since,
                why: why.clone(),
            };
        }
        if self.streams.is_empty() {
            Health::Loading
        } else if self.refreshing || self.streams.values().any(|s| *s == StreamStatus::Syncing) {
            Health::Syncing
        } else if self
            .streams
            .values()
            .all(|s| matches!(s, StreamStatus::Live | StreamStatus::NotServed))
        {
            Health::Live
        } else {
            Health::Polled
        }
    }

    /// It can be read: it was opened.
    pub(super) fn readable(&self) -> bool {
        self.open_error.is_none()
    }
}

/// A warning is said once in the status line (it then expires), not on every screen.
pub(super) fn app_warn(
    warned: &mut BTreeSet<String>,
    status: &mut String,
    several_contexts: bool,
    context: &str,
    w: String,
) {
    let line = if several_contexts { format!("{context}: {w}") } else { w };
    if warned.insert(line.clone()) {
        *status = line;
    }
}

/// A report of a context's live inventory (the context is one the UI has).
pub(super) fn on_live(app: &mut App, context: &str, event: LiveEvent) {
    let now = app.now;
    // while replaying, the watches keep the live rows aside current: `:at now` shows them
    let event = match (app.replay.as_mut(), event) {
        (Some(replay), LiveEvent::Rows(changes)) => return replay.live.apply(context, changes),
        (Some(replay), LiveEvent::Provisional(changes)) => {
            let known = &replay.live.index;
            let new: Vec<RowChange> = changes
                .into_iter()
                .filter(|c| matches!(c, RowChange::Upsert(w) if !known.contains_key(&WorkspaceKey::new(Some(context), &w.namespace, &w.id))))
                .collect();
            return replay.live.apply(context, new);
        }
        (Some(replay), event @ LiveEvent::Synced { .. }) => {
            replay.live.confirm_context(context);
            event
        }
        (_, event) => event,
    };
    match event {
        LiveEvent::Rows(changes) => {
            app.keep_selection(|inv| inv.apply(context, changes));
            if let Some(c) = app.context_mut(context) {
                c.refresh_error = None;
            }
        }
        // the first screen fills before the first full state; rows an earlier full state
        // showed stay as they were until this one's
        LiveEvent::Provisional(changes) => {
            let known = &app.inventory.index;
            let new: Vec<RowChange> = changes
                .into_iter()
                .filter(|c| match c {
                    RowChange::Upsert(w) => !known.contains_key(&WorkspaceKey::new(Some(context), &w.namespace, &w.id)),
                    RowChange::Remove(..) => false,
                })
                .collect();
            if !new.is_empty() {
                app.keep_selection(|inv| inv.apply(context, new));
            }
        }
        LiveEvent::Status { stream, status } => {
            if let Some(c) = app.context_mut(context) {
                c.streams.insert(stream, status);
            }
        }
        LiveEvent::Synced { namespaces } => {
            app.keep_selection(|inv| inv.confirm_context(context));
            if let Some(c) = app.context_mut(context) {
                c.refreshing = false;
                c.loaded_at = Some(now);
            }
            app.learn_namespaces(namespaces);
        }
        LiveEvent::Warning(w) => {
            if let Some(c) = app.context_mut(context)
                && !c.warnings.contains(&w)
            {
                c.warnings.push(w.clone());
            }
            app_warn(&mut app.warned, &mut app.status, app.several_contexts, context, w);
        }
        LiveEvent::Pulse {
            since,
            pulse,
            warnings,
            took,
        } => {
            let scope = app.scope_in(context);
            super::pulse::answered(app, context, &scope, since, Ok((*pulse, warnings)), took);
        }
        LiveEvent::Failed(why) => {
            super::pulse::failed(app, context, &why);
            if let Some(c) = app.context_mut(context) {
                c.refreshing = false;
                // nothing is watched any more: no watch may say it is live
                c.streams.clear();
                c.refresh_error = Some(why);
            }
        }
    }
}
