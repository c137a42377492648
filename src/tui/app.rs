//! The UI state and `update`, the only function that changes it. Pure: no I/O, no clock.

use super::action::{Action, Effect, RowKey};
use crate::cluster::inventory::Scope;
use crate::cluster::live::{LiveEvent, StreamName, StreamStatus};
use crate::cluster::wait::Waited;
use crate::cluster::write::{Outcome, Plan};
use crate::domain::columns::Column;
use crate::domain::fence::{EpochChoice, Verb};
use crate::domain::filter::{Query, best, is_problem};
use crate::domain::mirror::RowChange;
use crate::domain::naming::{WorkspaceId, validate_namespace};
use crate::domain::safety::ContextRules;
use crate::domain::select::{SortKey, compare};
use crate::domain::state::State;
use crate::domain::workspace::Workspace;
use crate::present::keys::{self, Command, Context};
use crate::present::outcome as said;
use chrono::{DateTime, Utc};
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Cancel,
    Confirm,
}

/// A pending action, waiting for the user's yes.
#[derive(Debug, Clone)]
pub struct Confirm {
    pub verb: Verb,
    pub targets: Vec<RowKey>,
    pub take_over: bool,
    /// The fresh read per target: the dry-run outcome (None until it arrives).
    pub previews: BTreeMap<RowKey, Outcome>,
    pub focus: Focus,
    /// The confirmation is typed: a delete's always, every write's in a `confirm: typed` context.
    pub asks_typed: bool,
    /// The targets' contexts whose `confirm: typed` rule asks for the typing.
    pub typed_rule: Vec<String>,
    /// What the user typed (a typed confirmation only).
    pub typed: String,
    /// A resume that refreshes the pod template from the SandboxTemplate (`F`).
    pub refresh: bool,
}

impl Confirm {
    /// What a typed confirmation asks for: the id, or `<verb> N` for several.
    pub fn phrase(&self) -> String {
        match self.targets.as_slice() {
            [one] => one.id.clone(),
            many => format!("{} {}", self.verb.as_str(), many.len()),
        }
    }

    pub fn ready(&self) -> bool {
        !self.asks_typed || self.typed == self.phrase()
    }
}

#[derive(Debug, Clone)]
pub enum Popup {
    Detail {
        key: RowKey,
        text: Option<Result<String, String>>,
        scroll: u16,
    },
    Yaml {
        key: RowKey,
        text: Option<Result<String, String>>,
        scroll: u16,
    },
    Help {
        scroll: u16,
    },
    Confirm(Confirm),
    Sent {
        scroll: u16,
    },
    /// The context picker: "all contexts" (0), then each context by name.
    Contexts {
        choices: Vec<String>,
        selected: usize,
    },
    /// The sort picker: every column the table can sort by.
    Sort {
        selected: usize,
    },
    /// The log pane of a row's own pod.
    Logs(Box<super::logs::LogPane>),
    /// A row's history: the timeline and the start-up waterfall.
    History {
        key: RowKey,
        text: Option<Result<String, String>>,
        scroll: u16,
    },
}

/// What a key on the popup on top comes to.
#[derive(Debug)]
enum PopupReply {
    /// The popup stays; run these effects.
    Stay(Vec<Effect>),
    /// The popup closes.
    Close,
    /// A confirmation was accepted: it closes, the marks clear, these writes run.
    Submit(Vec<Effect>),
    /// A context was picked (`None`: all of them): the picker closes, the list shows its rows.
    Pick(Option<String>),
    /// A sort was picked: the picker closes, the rows sort by it.
    PickSort(SortKey),
    /// Ctrl-C: the UI ends.
    Quit,
}

/// The result of an action on one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowNote {
    pub text: String,
    pub ok: bool,
}

/// What the cluster said, as of the last good refresh (or as the watches keep it).
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    rows: Vec<Workspace>,
    /// Where each row is in `rows`.
    index: HashMap<RowKey, usize>,
    /// Bumped on every change of the rows: the visible order is computed again after it.
    generation: u64,
    /// Since this generation every change replaced rows in place; `moved` are their indices.
    /// The visible order of an older generation is then mended, not sorted again.
    in_place_since: u64,
    moved: Vec<usize>,
    /// Namespaces the switch cycles through (every context's).
    pub namespaces: Vec<String>,
    /// Per context whose new Follow has not synced: the rows it has brought back (the others of
    /// that context go then).
    unconfirmed: BTreeMap<String, BTreeSet<RowKey>>,
}

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
    /// A watch is still reading its first state.
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
    /// Without watches: listed at this moment.
    Listed(DateTime<Utc>),
}

impl ContextView {
    fn new(o: ContextOptions, read_only_flag: bool) -> ContextView {
        let read_only = (read_only_flag || o.rules.read_only).then(|| o.rules.why_read_only(&o.name, read_only_flag));
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

    pub fn health(&self, live: bool) -> Health {
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
        match (live, self.loaded_at) {
            (false, Some(at)) => Health::Listed(at),
            (false, None) => Health::Loading,
            (true, _) if self.streams.is_empty() => Health::Loading,
            (true, _) if self.streams.values().any(|s| *s == StreamStatus::Syncing) => Health::Syncing,
            (true, _)
                if self
                    .streams
                    .values()
                    .all(|s| matches!(s, StreamStatus::Live | StreamStatus::NotServed)) =>
            {
                Health::Live
            }
            (true, _) => Health::Polled,
        }
    }

    /// It can be read: it was opened.
    fn readable(&self) -> bool {
        self.open_error.is_none()
    }
}

/// More rows changed than this between two frames: sort again rather than mend the order.
const MENDED_AT_MOST: usize = 256;

/// Data older than this shows dim.
pub const STALE_AFTER: chrono::TimeDelta = chrono::TimeDelta::seconds(10);

impl Inventory {
    pub fn rows(&self) -> &[Workspace] {
        &self.rows
    }

    /// A whole new set of rows (a re-list).
    pub fn replace(&mut self, rows: Vec<Workspace>) {
        self.rows = rows;
        self.reindex();
    }

    /// A context's rows replaced by a re-list of it; the other contexts' rows stay.
    fn replace_context(&mut self, context: &str, rows: Vec<Workspace>) {
        self.rows.retain(|w| w.context.as_deref() != Some(context));
        self.rows.extend(rows.into_iter().map(|w| tagged(w, context)));
        self.reindex();
    }

    fn reindex(&mut self) {
        self.index = self.rows.iter().enumerate().map(|(i, w)| (key_of(w), i)).collect();
        self.generation += 1;
        (self.in_place_since, self.moved) = (self.generation, Vec::new());
    }

    /// Rows replaced in place since generation `g`, when every change since was in place.
    fn moved_since(&self, g: u64) -> Option<&[usize]> {
        (g >= self.in_place_since).then_some(self.moved.as_slice())
    }

    /// Rows a context's watch changed: replaced in place, added at the end, removed.
    pub fn apply(&mut self, context: &str, changes: Vec<RowChange>) {
        let (mut removed, mut added) = (false, false);
        let mut moved = Vec::new();
        for change in changes {
            match change {
                RowChange::Upsert(w) => {
                    let w = tagged(*w, context);
                    let key = key_of(&w);
                    if let Some(seen) = self.unconfirmed.get_mut(context) {
                        seen.insert(key.clone());
                    }
                    match self.index.get(&key) {
                        Some(&i) => {
                            self.rows[i] = w;
                            moved.push(i);
                        }
                        None => {
                            self.index.insert(key, self.rows.len());
                            self.rows.push(w);
                            added = true;
                        }
                    }
                }
                RowChange::Remove(ns, id) => {
                    if let Some(i) = self.index.remove(&RowKey::new(context, &ns, &id)) {
                        self.rows[i].id.clear();
                        removed = true;
                    }
                }
            }
        }
        if removed {
            self.rows.retain(|w| !w.id.is_empty());
            self.reindex();
        } else if added || self.moved.len() + moved.len() > MENDED_AT_MOST {
            self.generation += 1;
            (self.in_place_since, self.moved) = (self.generation, Vec::new());
        } else {
            self.generation += 1;
            self.moved.extend(moved);
        }
    }

    /// A context's new Follow has synced: its rows the Follow did not bring back are gone.
    fn confirm_context(&mut self, context: &str) {
        if let Some(seen) = self.unconfirmed.remove(context) {
            let rows = std::mem::take(&mut self.rows);
            self.rows = rows
                .into_iter()
                .filter(|w| w.context.as_deref() != Some(context) || seen.contains(&key_of(w)))
                .collect();
            self.reindex();
        }
    }

    /// How many rows each context has.
    pub fn per_context(&self) -> BTreeMap<&str, usize> {
        let mut out = BTreeMap::new();
        for w in &self.rows {
            *out.entry(w.context.as_deref().unwrap_or_default()).or_insert(0) += 1;
        }
        out
    }
}

/// A row as its context reported it, named after that context.
fn tagged(mut w: Workspace, context: &str) -> Workspace {
    if w.context.as_deref() != Some(context) {
        w.context = Some(context.to_string());
    }
    w
}

/// How the user looks at the rows: filter, order, cursor, marks.
#[derive(Debug, Clone)]
pub struct TableView {
    pub filter: String,
    pub filter_editing: bool,
    pub sort: SortKey,
    pub reverse: bool,
    pub selected: usize,
    pub marks: BTreeSet<RowKey>,
    /// The context picked (`c`): only its rows show; `None` shows every context's.
    pub context: Option<String>,
    /// Only the problem rows (`p`).
    pub problems: bool,
    /// The command line being typed (`:`), if it is open.
    pub command: Option<String>,
    /// The user moved the cursor: until then it stays on the first row as rows arrive.
    pub touched: bool,
    /// Rows an action was just sent to: they stay in view, where they were, whatever the filter
    /// says of them now, until the filter changes.
    pub pinned: BTreeSet<RowKey>,
    /// Bumped whenever `pinned` changes (the visible order is computed again).
    pub pins: u64,
}

impl TableView {
    /// The filter (or what it shows) changed: the rows acted on need not stay any more.
    fn unpin(&mut self) {
        if !self.pinned.is_empty() {
            self.pinned.clear();
            self.pins += 1;
        }
    }
}

/// The sorts the table offers (`o`), in the picker's order: each names its column.
pub const SORTS: [(&str, SortKey, Column); 11] = [
    ("name", SortKey::Name, Column::Workspace),
    ("context", SortKey::Context, Column::Context),
    ("namespace", SortKey::Namespace, Column::Namespace),
    ("mode", SortKey::Mode, Column::Mode),
    ("state", SortKey::State, Column::State),
    ("age", SortKey::Age, Column::Age),
    ("mode-changed", SortKey::ModeChanged, Column::ModeChanged),
    ("epoch", SortKey::Epoch, Column::Epoch),
    ("template", SortKey::Template, Column::Template),
    ("drift", SortKey::Drift, Column::Drift),
    ("diagnosis", SortKey::Diagnosis, Column::Diagnosis),
];

/// The sort's name and column.
pub fn sort_name(key: SortKey) -> (&'static str, Column) {
    SORTS
        .iter()
        .find(|(_, k, _)| *k == key)
        .map_or(("name", Column::Workspace), |(n, _, c)| (*n, *c))
}

/// How long a status line stays.
pub const STATUS_FOR: chrono::TimeDelta = chrono::TimeDelta::seconds(8);

/// A context the UI is given: where it is, its safety rules, and why it could not be opened.
#[derive(Debug, Clone, Default)]
pub struct ContextOptions {
    pub name: String,
    pub server: String,
    /// Its own namespace (`-n`, else the context's): where it is read until one is chosen.
    pub namespace: String,
    pub rules: ContextRules,
    pub open_error: Option<String>,
}

/// Where the UI starts.
#[derive(Debug, Clone)]
pub struct AppOptions {
    /// The contexts, in the order asked for (at least one).
    pub contexts: Vec<ContextOptions>,
    /// Several contexts were asked for: rows and messages name their context.
    pub labelled: bool,
    pub namespace: String,
    pub all_namespaces: bool,
    /// `--read-only`: every context refuses writes, whatever its rules.
    pub read_only: bool,
    pub now: DateTime<Utc>,
    /// Keep the rows current with watches (else re-list on each refresh).
    pub live: bool,
}

/// What the visible order was computed for: the filter, the context picked, the sort, the rows.
type OrderKey = (String, Option<String>, SortKey, bool, bool, u64);

#[derive(Debug, Clone)]
pub struct App {
    /// Every context, in the order asked for; one unless several were.
    pub contexts: Vec<ContextView>,
    pub labelled: bool,
    pub scope: Scope,
    pub home_namespace: String,
    /// Across contexts, each reads its own namespace (as `list` does) until the user picks one
    /// for all; `-A` reads every namespace everywhere.
    pub own_namespaces: bool,
    pub now: DateTime<Utc>,
    pub inventory: Inventory,
    pub view: TableView,
    /// Popups, the top one last: it takes the keys.
    pub popups: Vec<Popup>,
    pub notes: BTreeMap<RowKey, RowNote>,
    pub status: String,
    /// This session's writes (from the write path's audit entries).
    pub sent: Vec<Value>,
    pub quit: bool,
    /// Why the UI ended other than by the user's choice.
    pub fatal: Option<String>,
    /// A bulk action under way.
    pub bulk: Option<BulkProgress>,
    pub live: bool,
    /// The visible rows' order (indices into the rows), kept until the rows, the filter or the
    /// sort change: a frame does not sort 10,000 rows again.
    order: RefCell<Option<(OrderKey, Vec<usize>)>>,
    /// Log streams opened so far: each pane's stream is numbered, a late line of another dropped.
    pub log_streams: u64,
    /// A shell to run now (kubectl's arguments): the loop steps the UI aside for it.
    pub shell: Option<Vec<String>>,
    /// The status as last seen at a tick, and since when: it expires after [`STATUS_FOR`].
    status_seen: (String, DateTime<Utc>),
    /// Rows of the bulk action under way: their waits do not take the status line.
    bulk_members: BTreeSet<RowKey>,
    /// The last line of the scrolling popup on top, as the last frame laid it out.
    pub scroll_max: std::cell::Cell<u16>,
    /// Warnings already said once in the status line.
    warned: BTreeSet<String>,
}

/// How far a bulk action is.
#[derive(Debug, Clone)]
pub struct BulkProgress {
    pub verb: Verb,
    pub total: usize,
    pub done: usize,
    pub failed: usize,
    pub started: DateTime<Utc>,
}

/// A row's key: the App names every row after its context.
pub fn key_of(w: &Workspace) -> RowKey {
    RowKey::new(w.context.as_deref().unwrap_or_default(), &w.namespace, &w.id)
}

impl App {
    pub fn new(o: AppOptions) -> App {
        App {
            contexts: o
                .contexts
                .into_iter()
                .map(|c| ContextView::new(c, o.read_only))
                .collect(),
            labelled: o.labelled,
            scope: if o.all_namespaces {
                Scope::All
            } else {
                Scope::Namespace(o.namespace.clone())
            },
            home_namespace: o.namespace.clone(),
            own_namespaces: o.labelled,
            now: o.now,
            inventory: Inventory {
                namespaces: vec![o.namespace],
                ..Default::default()
            },
            view: TableView {
                filter: String::new(),
                filter_editing: false,
                sort: SortKey::Name,
                reverse: false,
                selected: 0,
                marks: BTreeSet::new(),
                context: None,
                problems: false,
                command: None,
                touched: false,
                pinned: BTreeSet::new(),
                pins: 0,
            },
            popups: Vec::new(),
            notes: BTreeMap::new(),
            status: String::new(),
            sent: Vec::new(),
            quit: false,
            fatal: None,
            bulk: None,
            live: o.live,
            order: RefCell::new(None),
            log_streams: 0,
            shell: None,
            status_seen: (String::new(), o.now),
            bulk_members: BTreeSet::new(),
            scroll_max: std::cell::Cell::new(u16::MAX),
            warned: BTreeSet::new(),
        }
    }

    /// The effects to run at start: each context's first inventory and RBAC check.
    pub fn start(&mut self) -> Vec<Effect> {
        self.read_all(true)
    }

    /// Read every context that can be read (and is not being read, unless `again`), with its
    /// RBAC check when `access`.
    fn read_all(&mut self, access: bool) -> Vec<Effect> {
        let mut effects = Vec::new();
        for i in 0..self.contexts.len() {
            if !self.contexts[i].readable() || !access && self.contexts[i].refreshing {
                continue;
            }
            effects.push(self.read(i));
            if access {
                effects.push(Effect::CheckAccess {
                    context: self.contexts[i].name.clone(),
                    scope: self.scope_in(&self.contexts[i].name),
                });
            }
        }
        effects
    }

    /// Read the scope in context `i`: follow it live, or list it once. A new Follow starts its
    /// watches over from a list: the context's rows it does not bring back by its first full
    /// state are gone.
    fn read(&mut self, i: usize) -> Effect {
        let scope = self.scope_in(&self.contexts[i].name);
        let c = &mut self.contexts[i];
        c.refreshing = true;
        let context = c.name.clone();
        if self.live {
            c.follow_generation += 1;
            c.streams.clear();
            self.inventory.unconfirmed.insert(context.clone(), BTreeSet::new());
            Effect::Follow {
                context,
                scope,
                generation: c.follow_generation,
            }
        } else {
            Effect::Refresh { context, scope }
        }
    }

    /// What context `name` reads: every namespace, the one chosen, or its own.
    pub fn scope_in(&self, name: &str) -> Scope {
        match (&self.scope, self.own_namespaces, self.context_view(name)) {
            (Scope::Namespace(_), true, Some(c)) if !c.namespace.is_empty() => Scope::Namespace(c.namespace.clone()),
            (scope, _, _) => scope.clone(),
        }
    }

    /// The contexts read different namespaces: rows need their NAMESPACE.
    pub fn mixed_namespaces(&self) -> bool {
        let mut scopes = self.contexts.iter().map(|c| self.scope_in(&c.name));
        let first = scopes.next();
        scopes.any(|s| Some(s) != first)
    }

    /// The context named, if the UI has it.
    pub fn context_view(&self, name: &str) -> Option<&ContextView> {
        self.contexts.iter().find(|c| c.name == name)
    }

    fn context_mut(&mut self, name: &str) -> Option<&mut ContextView> {
        self.contexts.iter_mut().find(|c| c.name == name)
    }

    /// Rows after the filter, in sort order.
    pub fn visible(&self) -> Vec<&Workspace> {
        let key: OrderKey = (
            format!("{}\u{0}{}", self.view.filter, self.view.pins),
            self.view.context.clone(),
            self.view.sort,
            self.view.reverse,
            self.view.problems,
            self.inventory.generation,
        );
        let mut cache = self.order.borrow_mut();
        let fresh = match cache.take() {
            Some((k, order)) if k == key => order,
            // only rows replaced in place since: move those, keep the rest of the order
            Some((k, order)) if (&k.0, &k.1, k.2, k.3, k.4) == (&key.0, &key.1, key.2, key.3, key.4) => {
                match self.inventory.moved_since(k.5) {
                    Some(moved) => self.mend(order, moved),
                    None => self.order_rows(),
                }
            }
            _ => self.order_rows(),
        };
        let rows = self.inventory.rows();
        let out = fresh.iter().map(|&i| &rows[i]).collect();
        *cache = Some((key, fresh));
        out
    }

    /// The filter as typed, parsed; a term no name fits is said in the title, and shows nothing.
    pub fn query(&self) -> Result<Query, String> {
        Query::parse(&self.view.filter)
    }

    /// In the context picked (or every context).
    fn in_view(&self, w: &Workspace) -> bool {
        self.view.context.as_ref().is_none_or(|c| w.context.as_ref() == Some(c))
    }

    fn passes(&self, w: &Workspace, query: &Result<Query, String>) -> bool {
        self.in_view(w)
            && (!self.view.pinned.is_empty() && self.view.pinned.contains(&key_of(w))
                || (!self.view.problems || is_problem(w))
                // the context is a row's own word only where rows name one
                && query.as_ref().is_ok_and(|q| q.matches(w, self.now, self.labelled)))
    }

    /// The problem rows in view (the header's count).
    pub fn problem_count(&self) -> usize {
        self.inventory
            .rows()
            .iter()
            .filter(|w| self.in_view(w) && is_problem(w))
            .count()
    }

    fn ordering(&self, a: usize, b: usize) -> std::cmp::Ordering {
        let rows = self.inventory.rows();
        let o = compare(&rows[a], &rows[b], self.view.sort);
        if self.view.reverse { o.reverse() } else { o }
    }

    fn order_rows(&self) -> Vec<usize> {
        let query = self.query();
        let rows = self.inventory.rows();
        let mut order: Vec<usize> = (0..rows.len()).filter(|&i| self.passes(&rows[i], &query)).collect();
        order.sort_by(|&a, &b| self.ordering(a, b));
        order
    }

    /// The order with the `moved` rows taken out and put back where they now sort. `compare`
    /// breaks ties by name, so this is exactly the order a full sort gives.
    fn mend(&self, mut order: Vec<usize>, moved: &[usize]) -> Vec<usize> {
        let moved: BTreeSet<usize> = moved.iter().copied().collect();
        order.retain(|i| !moved.contains(i));
        let query = self.query();
        let rows = self.inventory.rows();
        for &m in moved.iter().filter(|&&m| self.passes(&rows[m], &query)) {
            let at = order.partition_point(|&i| self.ordering(i, m) != std::cmp::Ordering::Greater);
            order.insert(at, m);
        }
        order
    }

    pub fn selected_key(&self) -> Option<RowKey> {
        self.visible().get(self.view.selected).map(|w| key_of(w))
    }

    /// The states of the rows in view (the context picked, or every context's).
    pub fn counts(&self) -> BTreeMap<State, usize> {
        let mut m = BTreeMap::new();
        for w in self.inventory.rows().iter().filter(|w| self.in_view(w)) {
            *m.entry(w.state).or_insert(0) += 1;
        }
        m
    }

    /// Why `verb` may not be taken on `targets`, if it may not: a target's context is
    /// read-only, RBAC there says no, or more of its rows are marked than its maxBulk. With no
    /// target, one context's own refusal still says why.
    pub fn refusal(&self, verb: Verb, targets: &[RowKey]) -> Option<String> {
        let mut per_context: Vec<(&ContextView, usize)> = Vec::new();
        for key in targets {
            match per_context.iter_mut().find(|(c, _)| c.name == key.context) {
                Some((_, n)) => *n += 1,
                None => per_context.extend(self.context_view(&key.context).map(|c| (c, 1))),
            }
        }
        if let ([only], true) = (self.contexts.as_slice(), targets.is_empty()) {
            per_context.push((only, 0));
        }
        per_context
            .iter()
            .find_map(|&(c, marked)| self.context_refusal(c, verb, marked))
    }

    fn context_refusal(&self, c: &ContextView, verb: Verb, marked: usize) -> Option<String> {
        if let Some(why) = &c.read_only {
            return Some(format!("{} is disabled: {why}", verb.as_str()));
        }
        let (allowed, rbac_verb) = match verb {
            Verb::Delete => (c.can_delete, "delete"),
            _ => (c.can_patch, "patch"),
        };
        if allowed == Some(false) {
            let scope = match &self.scope {
                Scope::All => "cluster-wide".to_string(),
                Scope::Namespace(ns) => format!("in namespace {ns}"),
            };
            let context = if self.labelled {
                format!(" in context {}", c.name)
            } else {
                String::new()
            };
            return Some(format!(
                "{} is disabled: RBAC does not let you {rbac_verb} sandboxes.agents.x-k8s.io {scope}{context}",
                verb.as_str()
            ));
        }
        c.rules.refuse_bulk(&c.name, marked)
    }

    /// Namespaces the switch may cycle through: only names Kubernetes accepts, whatever the
    /// server listed (a name reaches every URL the TUI builds).
    fn learn_namespaces(&mut self, found: Vec<String>) {
        for ns in found {
            if validate_namespace(&ns).is_ok() && !self.inventory.namespaces.contains(&ns) {
                self.inventory.namespaces.push(ns);
            }
        }
        self.inventory.namespaces.sort();
    }

    /// Change the rows keeping the cursor on the same workspace and the marks on rows that
    /// still exist.
    fn keep_selection(&mut self, change: impl FnOnce(&mut Inventory)) {
        let selected = self.selected_key();
        change(&mut self.inventory);
        let index = &self.inventory.index;
        self.view.marks.retain(|k| index.contains_key(k));
        // the view opens at the top: the cursor follows a row only once the user has moved it
        if !self.view.touched {
            self.view.selected = 0;
        } else if let Some(k) = selected
            && let Some(i) = self.visible().iter().position(|w| key_of(w) == k)
        {
            self.view.selected = i;
        }
        self.clamp();
    }

    fn clamp(&mut self) {
        let n = self.visible().len();
        self.view.selected = if n == 0 { 0 } else { self.view.selected.min(n - 1) };
    }

    /// The periodic re-list; live rows need none.
    fn refresh(&mut self) -> Vec<Effect> {
        if self.live {
            return Vec::new();
        }
        self.reload()
    }

    /// Read every context again now (the refresh key), but one still being read: live, the
    /// watches start over from a list.
    fn reload(&mut self) -> Vec<Effect> {
        self.read_all(false)
    }

    fn switch_scope(&mut self, scope: Scope) -> Vec<Effect> {
        self.scope = scope;
        self.inventory.replace(Vec::new());
        self.view.marks.clear();
        self.view.selected = 0;
        for c in &mut self.contexts {
            c.streams.clear();
            c.can_patch = None;
            c.can_delete = None;
        }
        self.status = match &self.scope {
            Scope::All => "all namespaces".into(),
            Scope::Namespace(ns) => format!("namespace {ns}"),
        };
        self.read_all(true)
    }

    fn open_confirm(&mut self, verb: Verb, refresh: bool) -> Vec<Effect> {
        let targets: Vec<RowKey> = if self.view.marks.is_empty() {
            self.selected_key().into_iter().collect()
        } else {
            self.view.marks.iter().cloned().collect()
        };
        // every target's context is checked before anything is read or sent
        if let Some(why) = self.refusal(verb, &targets) {
            self.status = why;
            return Vec::new();
        }
        if targets.is_empty() {
            self.status = "no workspace selected".into();
            return Vec::new();
        }
        let mut typed_rule: Vec<String> = Vec::new();
        for key in &targets {
            let typed = self.context_view(&key.context).is_some_and(|c| c.rules.typed_by_rule());
            if typed && !typed_rule.contains(&key.context) {
                typed_rule.push(key.context.clone());
            }
        }
        let mut confirm = Confirm {
            verb,
            asks_typed: !typed_rule.is_empty()
                || targets
                    .iter()
                    .any(|k| self.context_view(&k.context).is_none_or(|c| c.rules.asks_typed(verb))),
            typed_rule,
            targets,
            take_over: false,
            previews: BTreeMap::new(),
            focus: Focus::Cancel,
            typed: String::new(),
            refresh,
        };
        let effects = previews(&mut confirm);
        self.popups.push(Popup::Confirm(confirm));
        effects
    }
}

/// The read-only preview of an action: the fresh read the confirmation shows. `None` for a row
/// whose id cannot name a Sandbox (listed, never written).
fn preview_plan(verb: Verb, key: &RowKey, take_over: bool, refresh: bool) -> Option<Plan> {
    Some(Plan {
        verb,
        namespace: key.namespace.clone(),
        id: WorkspaceId::parse(&key.id).ok()?,
        epoch: if take_over {
            EpochChoice::TakeOver
        } else {
            EpochChoice::Stored
        },
        dry_run: true,
        server_dry_run: false,
        expected_uid: None,
        // the TUI knows no overlay flags: a refresh uses only the overlays the stored hash shows
        refresh: refresh.then(Default::default),
    })
}

/// The confirmed write: it carries exactly the epoch and uid the confirmation showed, so a
/// holder that took over (or a Sandbox replaced) since then is refused, not followed; a refresh
/// also carries the hash shown, so one that would now write another template is refused.
fn confirmed(verb: Verb, key: &RowKey, preview: Option<&Outcome>) -> Result<Plan, RowNote> {
    match preview {
        Some(Outcome::DryRun {
            epoch, uid, refresh, ..
        }) => Ok(Plan {
            verb,
            namespace: key.namespace.clone(),
            id: WorkspaceId::parse(&key.id).map_err(|e| RowNote {
                text: e.to_string(),
                ok: false,
            })?,
            epoch: EpochChoice::Explicit(epoch.carried),
            dry_run: false,
            server_dry_run: false,
            expected_uid: uid.clone(),
            refresh: refresh.as_ref().map(|r| crate::domain::refresh::Ask {
                expected_hash: Some(r.hash.clone()),
                ..Default::default()
            }),
        }),
        Some(other) => Err(note_for(verb, key, other)),
        None => Err(RowNote {
            text: "not read yet: nothing sent; try again".into(),
            ok: false,
        }),
    }
}

/// The fresh reads a confirmation shows; a row that cannot be written is refused at once.
fn previews(c: &mut Confirm) -> Vec<Effect> {
    let mut effects = Vec::new();
    for k in &c.targets {
        match preview_plan(c.verb, k, c.take_over, c.refresh) {
            Some(plan) => effects.push(Effect::Preview {
                key: k.clone(),
                plan,
                take_over: c.take_over,
            }),
            None => {
                let message = WorkspaceId::parse(&k.id)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                c.previews.insert(k.clone(), Outcome::Refused { message });
            }
        }
    }
    effects
}

/// The one mutation: apply `action`, return the I/O it asks for.
pub fn update(app: &mut App, action: Action) -> Vec<Effect> {
    match action {
        Action::Key(key) => on_key(app, key),
        Action::Crashed(message) => {
            app.fatal = Some(message);
            app.quit = true;
            Vec::new()
        }
        Action::Terminated => {
            app.quit = true;
            Vec::new()
        }
        Action::Refresh => app.refresh(),
        Action::AuditFailed(why) => {
            app.status = format!("warning: {why}; the write was sent but is not in the audit log");
            Vec::new()
        }
        Action::Tick(now) => {
            app.now = now;
            // a status line expires (a bulk action's progress stays while it runs)
            if app.status != app.status_seen.0 {
                app.status_seen = (app.status.clone(), now);
            } else if !app.status.is_empty() && app.bulk.is_none() && now - app.status_seen.1 > STATUS_FOR {
                app.status.clear();
                app.status_seen.0.clear();
            }
            Vec::new()
        }
        Action::Loaded { context, scope, result } => {
            let now = app.now;
            if scope != app.scope_in(&context) {
                return Vec::new(); // an answer for a scope we left
            }
            let Some(c) = app.context_mut(&context) else {
                return Vec::new();
            };
            c.refreshing = false;
            match result {
                Ok(loaded) => {
                    c.warnings = loaded.warnings.clone();
                    for w in loaded.warnings {
                        app_warn(&mut app.warned, &mut app.status, app.labelled, &context, w);
                    }
                    let Some(c) = app.context_mut(&context) else {
                        return Vec::new();
                    };
                    c.loaded_at = Some(now);
                    c.refresh_error = None;
                    app.keep_selection(|inv| inv.replace_context(&context, loaded.rows));
                    app.learn_namespaces(loaded.namespaces);
                }
                // the last good rows stay on screen under the error
                Err(e) => c.refresh_error = Some(e),
            }
            Vec::new()
        }
        Action::Live {
            context,
            scope,
            generation,
            event,
        } => {
            let current = scope == app.scope_in(&context)
                && app
                    .context_view(&context)
                    .is_some_and(|c| c.follow_generation == generation);
            if current {
                on_live(app, &context, event);
            }
            Vec::new()
        }
        Action::Access {
            context,
            scope,
            patch,
            delete,
            namespaces,
        } => {
            if scope == app.scope_in(&context)
                && let Some(c) = app.context_mut(&context)
            {
                c.can_patch = patch;
                c.can_delete = delete;
            }
            app.learn_namespaces(namespaces);
            Vec::new()
        }
        Action::LogOpened { .. }
        | Action::LogLines { .. }
        | Action::LogNote { .. }
        | Action::LogEnded { .. }
        | Action::History { .. }
        | Action::ShellReady { .. }
        | Action::Saved(_)
        | Action::ShellEnded(_) => super::triage::apply(app, action),
        Action::Detail { key, result } => {
            if let Some(Popup::Detail { key: k, text, .. } | Popup::Yaml { key: k, text, .. }) = app.popups.last_mut()
                && *k == key
            {
                *text = Some(result);
            }
            Vec::new()
        }
        Action::Preview {
            key,
            take_over,
            outcome,
        } => {
            if let Some(Popup::Confirm(c)) = app.popups.last_mut()
                && c.take_over == take_over
                && c.targets.contains(&key)
            {
                c.previews.insert(key, outcome);
            }
            Vec::new()
        }
        Action::Done { key, verb, outcome } => {
            let note = note_for(verb, &key, &outcome);
            app.status = format!("{}: {}", key.who(app.labelled), note.text);
            // a bulk action says how far it is instead, as the CLI's progress line does
            if let Some(bulk) = &mut app.bulk {
                bulk.done += 1;
                bulk.failed += usize::from(!note.ok);
                let elapsed = (app.now - bulk.started).to_std().unwrap_or_default();
                app.status = said::progress(bulk.verb, bulk.done, bulk.total, bulk.failed, elapsed);
                if bulk.done >= bulk.total {
                    // "3 of 3 suspended": the rows stay where they were
                    app.status = format!("{} of {} {}", bulk.total - bulk.failed, bulk.total, bulk.verb.past());
                    if bulk.failed > 0 {
                        app.status.push_str(&format!(" · {} failed (see RESULT)", bulk.failed));
                    }
                    app.bulk = None;
                }
            }
            app.notes.insert(key, note);
            app.refresh()
        }
        Action::Sent(entries) => {
            app.sent = entries;
            Vec::new()
        }
        Action::WaitProgress { key, message } => {
            app.notes.insert(
                key,
                RowNote {
                    text: message,
                    ok: true,
                },
            );
            Vec::new()
        }
        Action::Waited { key, verb, waited } => {
            let note = RowNote {
                text: format!("{} {}", verb.past(), said::waited(&waited)),
                ok: waited == Waited::Confirmed,
            };
            // a bulk action's rows keep their summary in the status line
            if !app.bulk_members.remove(&key) {
                app.status = format!("{}: {}", key.who(app.labelled), note.text);
            }
            app.notes.insert(key, note);
            app.refresh()
        }
    }
}

/// A warning is said once in the status line (it then expires), not on every screen.
fn app_warn(warned: &mut BTreeSet<String>, status: &mut String, labelled: bool, context: &str, w: String) {
    let said = if labelled { format!("{context}: {w}") } else { w };
    if warned.insert(said.clone()) {
        *status = said;
    }
}

/// A report of a context's live inventory (the context is one the UI has).
fn on_live(app: &mut App, context: &str, event: LiveEvent) {
    let now = app.now;
    match event {
        LiveEvent::Rows(changes) => {
            app.keep_selection(|inv| inv.apply(context, changes));
            if let Some(c) = app.context_mut(context) {
                c.refresh_error = None;
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
            app_warn(&mut app.warned, &mut app.status, app.labelled, context, w);
        }
        LiveEvent::Failed(why) => {
            if let Some(c) = app.context_mut(context) {
                c.refreshing = false;
                // nothing is watched any more: no watch may say it is live
                c.streams.clear();
                c.refresh_error = Some(why);
            }
        }
    }
}

/// The row's note after an action: the same sentence the CLI prints, first line only.
pub fn note_for(verb: Verb, key: &RowKey, outcome: &Outcome) -> RowNote {
    RowNote {
        text: said::outcome_line(verb, &key.namespace, outcome, false),
        ok: said::succeeded(outcome, false),
    }
}

/// Where the keys go now: the filter being typed, the popup on top, or the list.
fn context(app: &App) -> Context {
    if app.view.filter_editing {
        return Context::Filtering;
    }
    if app.view.command.is_some() {
        return Context::Command;
    }
    match app.popups.last() {
        None => Context::List,
        Some(Popup::Confirm(c)) if c.asks_typed => Context::ConfirmTyped,
        Some(Popup::Confirm(_)) => Context::Confirm,
        Some(Popup::Detail { .. } | Popup::Yaml { .. } | Popup::Sent { .. } | Popup::History { .. }) => {
            Context::Scrolling
        }
        Some(Popup::Logs(pane)) if pane.searching => Context::LogSearch,
        Some(Popup::Logs(_)) => Context::Logs,
        Some(Popup::Help { .. }) => Context::HelpPopup,
        Some(Popup::Contexts { .. } | Popup::Sort { .. }) => Context::Picker,
    }
}

/// The footer's key hints for what has the keys now, fitted to `width`.
pub fn footer_keys(app: &App, width: usize) -> String {
    keys::footer(context(app), width, app.labelled)
}

fn on_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let context = context(app);
    let command = keys::command_for(context, key);
    if command == Some(Command::Quit) {
        app.quit = true;
        return Vec::new();
    }
    if context == Context::Filtering {
        on_filter_key(app, command, key);
        return Vec::new();
    }
    if context == Context::Command {
        return on_command_key(app, command, key);
    }
    if matches!(context, Context::Logs | Context::LogSearch) {
        return super::triage::on_pane_key(app, command, key);
    }
    if let Some(top) = app.popups.last_mut() {
        let last = app.scroll_max.get();
        let reply = on_popup_key(top, command, key, &mut app.status, &mut app.notes, last);
        return match reply {
            PopupReply::Stay(effects) => effects,
            PopupReply::Close => {
                app.popups.pop();
                Vec::new()
            }
            PopupReply::Submit(writes) => {
                app.popups.pop();
                app.view.marks.clear();
                // the rows acted on stay where they were, even once the filter no longer fits them
                app.view.pinned = writes
                    .iter()
                    .filter_map(|w| match w {
                        Effect::Write { key, .. } => Some(key.clone()),
                        _ => None,
                    })
                    .collect();
                app.view.pins += 1;
                if writes.len() > 1
                    && let Some(Effect::Write { plan, .. }) = writes.first()
                {
                    app.bulk_members = writes
                        .iter()
                        .filter_map(|w| match w {
                            Effect::Write { key, .. } => Some(key.clone()),
                            _ => None,
                        })
                        .collect();
                    app.bulk = Some(BulkProgress {
                        verb: plan.verb,
                        total: writes.len(),
                        done: 0,
                        failed: 0,
                        started: app.now,
                    });
                }
                writes
            }
            PopupReply::PickSort(sort) => {
                app.popups.pop();
                set_sort(app, sort);
                Vec::new()
            }
            PopupReply::Pick(context) => {
                app.popups.pop();
                show_context(app, context);
                Vec::new()
            }
            PopupReply::Quit => {
                app.quit = true;
                Vec::new()
            }
        };
    }
    match command {
        Some(c) => {
            if !matches!(c, Command::Help | Command::Quit) {
                app.view.touched = true;
            }
            on_list_command(app, c)
        }
        // a key that does nothing here says so
        None => {
            app.status = format!("no action on {} · ? for help", key_name(key));
            Vec::new()
        }
    }
}

/// A key as the status line names it.
fn key_name(key: KeyEvent) -> String {
    let ctrl = key.modifiers.contains(ratatui::crossterm::event::KeyModifiers::CONTROL);
    let name = match key.code {
        KeyCode::Char(c) => c.to_string(),
        KeyCode::F(n) => format!("F{n}"),
        other => format!("{other:?}"),
    };
    if ctrl { format!("Ctrl-{name}") } else { name }
}

/// Sort by `sort`; the same again reverses it.
fn set_sort(app: &mut App, sort: SortKey) {
    if app.view.sort == sort {
        app.view.reverse = !app.view.reverse;
    } else {
        app.view.sort = sort;
        app.view.reverse = false;
    }
    let (name, _) = sort_name(sort);
    let direction = if app.view.reverse { "▼" } else { "▲" };
    // ties sort by name, whose order starts with the context
    app.status = if app.labelled && sort != SortKey::Name {
        format!("sorted by {name} {direction}, each context's rows together within a value")
    } else {
        format!("sorted by {name} {direction}")
    };
}

/// The command line's commands, for completion.
const COMMANDS: [&str; 17] = [
    "ns", "ctx", "all", "sort", "filter", "problems", "logs", "shell", "history", "detail", "yaml", "sent", "help",
    "reverse", "refresh", "q", "quit",
];

/// The words the command line's `word`-th word may be, given the first.
fn completions(app: &App, first: &str) -> Vec<String> {
    match first {
        "ns" | "namespace" => std::iter::once("all".to_string())
            .chain(app.inventory.namespaces.iter().cloned())
            .collect(),
        "ctx" | "context" => std::iter::once("all".to_string())
            .chain(app.contexts.iter().map(|c| c.name.clone()))
            .collect(),
        "sort" => SORTS.iter().map(|(n, _, _)| n.to_string()).collect(),
        _ => Vec::new(),
    }
}

fn on_command_key(app: &mut App, command: Option<Command>, key: KeyEvent) -> Vec<Effect> {
    let Some(line) = app.view.command.as_mut() else {
        return Vec::new();
    };
    match (command, key.code) {
        (Some(Command::ClearFilter), _) => {
            app.view.command = None;
            app.status = "cancelled".into();
        }
        (Some(Command::Complete), _) => {
            let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
            let ends_in_space = line.ends_with(' ');
            let (first, partial) = match (words.as_slice(), ends_in_space) {
                ([], _) => (None, String::new()),
                ([one], false) => (None, one.clone()),
                ([one], true) => (Some(one.clone()), String::new()),
                ([one, .., last], false) => (Some(one.clone()), last.clone()),
                ([one, ..], true) => (Some(one.clone()), String::new()),
            };
            let candidates: Vec<String> = match &first {
                None => COMMANDS.iter().map(|c| c.to_string()).collect(),
                Some(f) => completions(app, f),
            };
            let fitting: Vec<&String> = candidates.iter().filter(|c| c.starts_with(&partial)).collect();
            let chosen = match fitting.as_slice() {
                [one] => Some((*one).clone()),
                [] => best(&partial, &candidates).cloned(),
                many => {
                    app.status = many.iter().map(|c| c.as_str()).collect::<Vec<_>>().join("  ");
                    None
                }
            };
            if let Some(word) = chosen {
                let line = app.view.command.get_or_insert_with(String::new);
                let keep = line.len() - if ends_in_space { 0 } else { partial.len() };
                line.truncate(keep);
                line.push_str(&word);
                line.push(' ');
            }
        }
        (Some(Command::Keep), _) => {
            let text = app.view.command.take().unwrap_or_default();
            return run_command(app, text.trim());
        }
        // a backspace on an empty line closes it
        (_, KeyCode::Backspace) if line.pop().is_none() => app.view.command = None,
        (_, KeyCode::Char(c)) => line.push(c),
        _ => {}
    }
    Vec::new()
}

/// Run a command line: `ns NAME`, `ctx NAME`, `sort COLUMN`, `q`, …
fn run_command(app: &mut App, text: &str) -> Vec<Effect> {
    let (first, rest) = text.split_once(' ').map_or((text, ""), |(a, b)| (a, b.trim()));
    let first = first.strip_prefix(':').unwrap_or(first);
    let pick = |app: &App, what: &str, rest: &str| -> Option<String> {
        let choices = completions(app, what);
        best(rest, &choices).cloned()
    };
    match first {
        "" => Vec::new(),
        "q" | "q!" | "quit" => {
            app.quit = true;
            Vec::new()
        }
        "help" | "?" => on_list_command(app, Command::Help),
        "logs" | "log" => on_list_command(app, Command::Logs),
        "shell" | "sh" => on_list_command(app, Command::Shell),
        "history" => on_list_command(app, Command::History),
        "detail" | "describe" => on_list_command(app, Command::Detail),
        "yaml" | "edit" => on_list_command(app, Command::Yaml),
        "sent" => on_list_command(app, Command::Sent),
        "refresh" => on_list_command(app, Command::Refresh),
        "reverse" => on_list_command(app, Command::ReverseSort),
        "problems" => on_list_command(app, Command::Problems),
        "filter" | "f" => {
            app.view.unpin();
            app.view.filter = rest.to_string();
            app.view.selected = 0;
            app.clamp();
            if let Err(e) = app.query() {
                app.status = e;
            }
            Vec::new()
        }
        "all" => {
            app.view.command = None;
            if app.scope == Scope::All {
                Vec::new()
            } else {
                app.switch_scope(Scope::All)
            }
        }
        "ns" | "namespace" if rest.is_empty() => {
            app.status = format!("namespaces: {}", app.inventory.namespaces.join("  "));
            Vec::new()
        }
        "ns" | "namespace" => match pick(app, "ns", rest) {
            Some(all) if all == "all" => app.switch_scope(Scope::All),
            Some(ns) => {
                app.home_namespace = ns.clone();
                app.own_namespaces = false;
                app.switch_scope(Scope::Namespace(ns))
            }
            // a namespace not listed (RBAC may hide the list): asked for by its exact name
            None if validate_namespace(rest).is_ok() => {
                app.home_namespace = rest.to_string();
                app.own_namespaces = false;
                app.switch_scope(Scope::Namespace(rest.to_string()))
            }
            None => {
                app.status = format!("no namespace {rest:?}");
                Vec::new()
            }
        },
        "ctx" | "context" if !app.labelled => {
            let here = app.contexts.first().map(|c| c.name.clone()).unwrap_or_default();
            app.status = if rest.is_empty() || rest == here {
                format!("context {here}: the only one in this session")
            } else {
                format!(
                    "this session reads context {here} only: open {rest} with --context {rest} (or several with --context {here},{rest})"
                )
            };
            Vec::new()
        }
        "ctx" | "context" => {
            let chosen = if rest.is_empty() { None } else { pick(app, "ctx", rest) };
            match chosen {
                None if rest.is_empty() => on_list_command(app, Command::Contexts),
                None => {
                    app.status = format!("no context {rest:?} in this session");
                    Vec::new()
                }
                Some(name) => {
                    let context = (name != "all").then_some(name);
                    show_context(app, context);
                    Vec::new()
                }
            }
        }
        "sort" => {
            match SORTS.iter().find(|(n, _, _)| *n == rest).or_else(|| {
                let names: Vec<String> = SORTS.iter().map(|(n, _, _)| n.to_string()).collect();
                best(rest, &names).and_then(|b| SORTS.iter().find(|(n, _, _)| n == b))
            }) {
                Some((_, key, _)) => set_sort(app, *key),
                None => app.status = format!("no column {rest:?} to sort by"),
            }
            Vec::new()
        }
        other => {
            app.status = format!("no command {other:?} · Tab completes · ? for help");
            Vec::new()
        }
    }
}

/// Show only `context`'s rows, or every context's.
fn show_context(app: &mut App, context: Option<String>) {
    app.status = match &context {
        Some(c) => format!("showing context {c} only (c: pick another)"),
        None => "showing every context".into(),
    };
    // marks of rows no longer shown would be acted on unseen: they go
    if let Some(c) = &context {
        app.view.marks.retain(|k| &k.context == c);
    }
    app.view.context = context;
    app.view.unpin();
    app.view.selected = 0;
    app.clamp();
}

fn on_filter_key(app: &mut App, command: Option<Command>, key: KeyEvent) {
    app.view.unpin();
    match (command, key.code) {
        (Some(Command::ClearFilter), _) => {
            app.view.filter.clear();
            app.view.filter_editing = false;
        }
        (Some(Command::Keep), _) => app.view.filter_editing = false,
        (_, KeyCode::Backspace) => {
            app.view.filter.pop();
        }
        (_, KeyCode::Char(c)) => app.view.filter.push(c),
        _ => {}
    }
    app.view.selected = 0;
    app.clamp();
}

fn on_list_command(app: &mut App, command: Command) -> Vec<Effect> {
    let n = app.visible().len();
    let last = n.saturating_sub(1);
    let page = 10;
    let view = &mut app.view;
    match command {
        Command::Up => view.selected = view.selected.saturating_sub(1),
        Command::Down => view.selected = (view.selected + 1).min(last),
        Command::PageUp => view.selected = view.selected.saturating_sub(page),
        Command::PageDown => view.selected = (view.selected + page).min(last),
        Command::Top => view.selected = 0,
        Command::Bottom => view.selected = last,
        Command::Filter => view.filter_editing = true,
        Command::ClearFilter => {
            view.unpin();
            view.filter.clear();
        }
        Command::NextSort => {
            let selected = SORTS.iter().position(|(_, k, _)| *k == view.sort).unwrap_or(0);
            app.popups.push(Popup::Sort { selected });
        }
        Command::ReverseSort => {
            let sort = view.sort;
            set_sort(app, sort);
        }
        Command::Problems => {
            view.unpin();
            view.problems = !view.problems;
            view.selected = 0;
            app.status = if app.view.problems {
                format!("problems only: {} (p: every row)", app.problem_count())
            } else {
                "every row".into()
            };
            app.clamp();
        }
        Command::CommandLine => view.command = Some(String::new()),
        Command::Mark => {
            if let Some(k) = app.selected_key()
                && !app.view.marks.remove(&k)
            {
                app.view.marks.insert(k);
            }
            app.view.selected = (app.view.selected + 1).min(last);
        }
        Command::AllNamespaces => {
            let scope = if app.scope == Scope::All {
                Scope::Namespace(app.home_namespace.clone())
            } else {
                Scope::All
            };
            return app.switch_scope(scope);
        }
        Command::NextNamespace => {
            let namespaces = &app.inventory.namespaces;
            let current = match &app.scope {
                Scope::Namespace(ns) => namespaces.iter().position(|n| n == ns),
                Scope::All => None,
            };
            let next = current.map_or(0, |i| (i + 1) % namespaces.len());
            let ns = namespaces[next].clone();
            app.home_namespace = ns.clone();
            // a namespace picked is read in every context
            app.own_namespaces = false;
            return app.switch_scope(Scope::Namespace(ns));
        }
        Command::Refresh => return app.reload(),
        Command::Detail => {
            if let Some(k) = app.selected_key() {
                app.popups.push(Popup::Detail {
                    key: k.clone(),
                    text: None,
                    scroll: 0,
                });
                return vec![Effect::Detail(k)];
            }
        }
        // the whole Sandbox, read when asked for: the inventory keeps only what it derives from
        Command::Yaml => {
            if let Some(k) = app.selected_key() {
                app.popups.push(Popup::Yaml {
                    key: k.clone(),
                    text: None,
                    scroll: 0,
                });
                return vec![Effect::Yaml(k)];
            }
        }
        Command::Sent => app.popups.push(Popup::Sent { scroll: 0 }),
        Command::Contexts if !app.labelled => {
            app.status = "one context: nothing to pick (open several with --context a,b or --all-contexts)".into()
        }
        Command::Contexts => {
            let choices: Vec<String> = app.contexts.iter().map(|c| c.name.clone()).collect();
            let selected = app
                .view
                .context
                .as_ref()
                .and_then(|picked| choices.iter().position(|c| c == picked))
                .map_or(0, |i| i + 1);
            app.popups.push(Popup::Contexts { choices, selected });
        }
        Command::Help => app.popups.push(Popup::Help { scroll: 0 }),
        Command::Suspend => return app.open_confirm(Verb::Suspend, false),
        Command::Resume => return app.open_confirm(Verb::Resume, false),
        Command::RefreshTemplate => return app.open_confirm(Verb::Resume, true),
        Command::Delete => return app.open_confirm(Verb::Delete, false),
        Command::Quit => app.quit = true,
        Command::Logs | Command::Shell | Command::History => return super::triage::on_list_command(app, command),
        Command::Close
        | Command::SwitchFocus
        | Command::Choose
        | Command::TakeOver
        | Command::Keep
        | Command::Follow
        | Command::Wrap
        | Command::NextMatch
        | Command::PrevMatch
        | Command::Previous
        | Command::Complete
        | Command::Save => {}
    }
    Vec::new()
}

/// A key on the popup on top.
fn on_popup_key(
    top: &mut Popup,
    command: Option<Command>,
    key: KeyEvent,
    status: &mut String,
    notes: &mut BTreeMap<RowKey, RowNote>,
    scroll_last: u16,
) -> PopupReply {
    if command == Some(Command::Quit) {
        return PopupReply::Quit;
    }
    match top {
        Popup::Confirm(c) => on_confirm_key(c, command, key, status, notes),
        Popup::Contexts { choices, selected } => match command {
            Some(Command::Close) => PopupReply::Close,
            Some(Command::Choose) => PopupReply::Pick(selected.checked_sub(1).map(|i| choices[i].clone())),
            // a page moves to the first or the last: the picker is one screen
            Some(c) => {
                *selected = moved(*selected, c, choices.len(), choices.len());
                PopupReply::Stay(Vec::new())
            }
            None => PopupReply::Stay(Vec::new()),
        },
        Popup::Sort { selected } => match command {
            Some(Command::Close) => PopupReply::Close,
            Some(Command::Choose) => PopupReply::PickSort(SORTS[*selected].1),
            Some(c) => {
                *selected = moved(*selected, c, SORTS.len(), SORTS.len() - 1);
                PopupReply::Stay(Vec::new())
            }
            None => PopupReply::Stay(Vec::new()),
        },
        // the log pane takes its keys before this
        Popup::Logs(_) => PopupReply::Stay(Vec::new()),
        Popup::Detail { scroll, .. }
        | Popup::Yaml { scroll, .. }
        | Popup::Sent { scroll }
        | Popup::Help { scroll }
        | Popup::History { scroll, .. } => match command {
            Some(Command::Close) => PopupReply::Close,
            // it stops at its last line (as the last frame laid it out)
            Some(c) => {
                let from = (*scroll).min(scroll_last);
                *scroll = moved(usize::from(from), c, 10, usize::from(scroll_last)) as u16;
                PopupReply::Stay(Vec::new())
            }
            None => PopupReply::Stay(Vec::new()),
        },
    }
}

/// Where a position in `0..=last` goes on a move key (a page is `page` steps); other keys leave it.
fn moved(position: usize, command: Command, page: usize, last: usize) -> usize {
    match command {
        Command::Up => position.saturating_sub(1),
        Command::Down => position.saturating_add(1).min(last),
        Command::PageUp => position.saturating_sub(page),
        Command::PageDown => position.saturating_add(page).min(last),
        Command::Top => 0,
        Command::Bottom => last,
        _ => position,
    }
}

fn on_confirm_key(
    c: &mut Confirm,
    command: Option<Command>,
    key: KeyEvent,
    status: &mut String,
    notes: &mut BTreeMap<RowKey, RowNote>,
) -> PopupReply {
    match (command, key.code) {
        (Some(Command::Close), _) => {
            *status = "cancelled".into();
            PopupReply::Close
        }
        (Some(Command::SwitchFocus), _) => {
            c.focus = match c.focus {
                Focus::Cancel => Focus::Confirm,
                Focus::Confirm => Focus::Cancel,
            };
            PopupReply::Stay(Vec::new())
        }
        (Some(Command::TakeOver), _) => {
            c.take_over = !c.take_over;
            c.previews.clear();
            PopupReply::Stay(previews(c))
        }
        (Some(Command::Choose), _) => match c.focus {
            Focus::Cancel => {
                *status = "cancelled".into();
                PopupReply::Close
            }
            Focus::Confirm if !c.ready() => {
                *status = format!("type {:?} to confirm the {}", c.phrase(), c.verb.as_str());
                PopupReply::Stay(Vec::new())
            }
            Focus::Confirm => {
                let wait = c.verb != Verb::Delete;
                let mut writes = Vec::new();
                for k in &c.targets {
                    match confirmed(c.verb, k, c.previews.get(k)) {
                        Ok(plan) => writes.push(Effect::Write {
                            key: k.clone(),
                            plan,
                            wait,
                        }),
                        Err(note) => {
                            notes.insert(k.clone(), note);
                        }
                    }
                }
                // the dialog closes even when nothing was left to send
                if writes.is_empty() {
                    *status = "nothing sent".into();
                    return PopupReply::Close;
                }
                PopupReply::Submit(writes)
            }
        },
        // a delete's confirmation is typed, and every write's where the context's rule says so
        // the text typed matches: the focus moves to the action, so Enter confirms
        (_, KeyCode::Backspace) if c.asks_typed => {
            c.typed.pop();
            if c.ready() {
                c.focus = Focus::Confirm;
            }
            PopupReply::Stay(Vec::new())
        }
        (_, KeyCode::Char(ch)) if c.asks_typed => {
            c.typed.push(ch);
            if c.ready() {
                c.focus = Focus::Confirm;
            }
            PopupReply::Stay(Vec::new())
        }
        _ => PopupReply::Stay(Vec::new()),
    }
}

/// The Sandbox as YAML, without managedFields.
pub fn yaml(obj: &Value) -> String {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    crate::present::yaml::yaml(&o)
}

/// `update` alone: keys and answers in, state and effects out; no server, no terminal.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::write::Request;
    use crate::domain::drift::{OverlayFlags, TemplateRead};
    use crate::domain::fence::{Change, EpochUse};
    use crate::domain::patch::Mode;
    use crate::domain::workspace::{Inputs, Observed, derive};
    use crate::tui::action::Loaded;
    use ratatui::crossterm::event::KeyModifiers;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-29T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn row(id: &str, mode: &str) -> Workspace {
        let sandbox = json!({"metadata": {"name": format!("namzu-ws-{id}"), "namespace": "ns", "uid": format!("uid-{id}")},
            "spec": {"operatingMode": mode, "podTemplate": {"metadata": {"labels": {"sandbox.namzu.ai/template": "t"}}}}});
        derive(&Inputs {
            sandbox: &sandbox,
            pods: Observed::Forbidden,
            pvcs: Observed::Forbidden,
            policies: crate::domain::egress::PolicyRead::NotServed,
            template: TemplateRead::NotFound,
            flags: &OverlayFlags::default(),
            now: now(),
        })
    }

    fn app(read_only: bool) -> App {
        let mut app = App::new(AppOptions {
            contexts: vec![ContextOptions {
                name: "ctx".into(),
                server: "https://x".into(),
                ..Default::default()
            }],
            labelled: false,
            namespace: "ns".into(),
            all_namespaces: false,
            read_only,
            now: now(),
            live: false,
        });
        let effects = app.start();
        assert_eq!(effects.len(), 2, "the first refresh and the access check");
        let loaded = Loaded {
            rows: vec![
                row("alpha", "Running"),
                row("bravo", "Running"),
                row("charlie", "Suspended"),
            ],
            warnings: Vec::new(),
            namespaces: vec!["ns".into(), "other".into()],
        };
        let scope = app.scope.clone();
        update(
            &mut app,
            Action::Loaded {
                context: "ctx".into(),
                scope,
                result: Ok(loaded),
            },
        );
        app
    }

    fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
        update(app, Action::Key(KeyEvent::new(code, KeyModifiers::NONE)))
    }

    fn dry_run(id: &str) -> Outcome {
        Outcome::DryRun {
            request: Request {
                method: "PATCH",
                path: format!("/x/namzu-ws-{id}"),
                content_type: "application/json-patch+json",
                body: json!([]),
            },
            epoch: EpochUse {
                carried: 4,
                stored: Some(4),
                raw: Some("4".into()),
            },
            change: Change::ModeChange,
            mode: Mode::Running,
            uid: Some(format!("uid-{id}")),
            per_sandbox_egress: false,
            refresh: None,
        }
    }

    /// The fresh read of `id` arrives for the open confirmation.
    fn previewed(app: &mut App, id: &str) {
        let outcome = dry_run(id);
        let key = RowKey::new("ctx", "ns", id);
        update(
            app,
            Action::Preview {
                key,
                take_over: false,
                outcome,
            },
        );
    }

    #[test]
    fn moving_marking_and_filtering() {
        let mut app = app(false);
        press(&mut app, KeyCode::Down);
        press(&mut app, KeyCode::Char(' '));
        assert_eq!(
            app.view.marks.iter().map(|k| k.id.as_str()).collect::<Vec<_>>(),
            ["bravo"]
        );
        assert_eq!(app.view.selected, 2, "marking moves down");
        press(&mut app, KeyCode::Char('/'));
        for c in "char".chars() {
            press(&mut app, KeyCode::Char(c));
        }
        press(&mut app, KeyCode::Enter);
        assert_eq!((app.view.filter.as_str(), app.visible().len()), ("char", 1));
        press(&mut app, KeyCode::Esc);
        assert!(app.view.filter.is_empty());
    }

    #[test]
    fn a_confirmed_suspend_carries_the_previewed_epoch_and_uid() {
        let mut app = app(false);
        let effects = press(&mut app, KeyCode::Char('S'));
        let [
            Effect::Preview {
                plan, take_over: false, ..
            },
        ] = effects.as_slice()
        else {
            panic!("{effects:?}")
        };
        assert!(plan.dry_run && plan.id.as_str() == "alpha");
        previewed(&mut app, "alpha");
        // focus starts on Cancel: Enter closes, nothing sent
        assert!(press(&mut app, KeyCode::Enter).is_empty());
        assert!(app.popups.is_empty());
        press(&mut app, KeyCode::Char('S'));
        previewed(&mut app, "alpha");
        press(&mut app, KeyCode::Tab);
        let effects = press(&mut app, KeyCode::Enter);
        let [Effect::Write { plan, wait: true, .. }] = effects.as_slice() else {
            panic!("{effects:?}")
        };
        assert_eq!(plan.epoch, EpochChoice::Explicit(4));
        assert_eq!(plan.expected_uid.as_deref(), Some("uid-alpha"));
        assert!(!plan.dry_run && app.popups.is_empty());
    }

    #[test]
    fn a_delete_needs_the_id_typed_and_take_over_rereads() {
        let mut app = app(false);
        press(&mut app, KeyCode::Char('D'));
        press(&mut app, KeyCode::Tab);
        assert!(
            press(&mut app, KeyCode::Enter).is_empty(),
            "nothing typed: nothing sent"
        );
        assert!(app.status.contains("type \"alpha\""), "{}", app.status);
        let effects = update(
            &mut app,
            Action::Key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL)),
        );
        assert!(matches!(effects.as_slice(), [Effect::Preview { take_over: true, .. }]));
        let Some(Popup::Confirm(c)) = app.popups.last() else {
            panic!()
        };
        assert!(c.take_over && c.typed.is_empty(), "Ctrl-T is not typed");
    }

    #[test]
    fn read_only_and_rbac_disable_actions_with_the_reason() {
        let mut app = app(true);
        assert!(press(&mut app, KeyCode::Char('S')).is_empty());
        assert!(
            app.popups.is_empty() && app.status.contains("read-only"),
            "{}",
            app.status
        );
        let mut app = super::tests::app(false);
        let scope = app.scope.clone();
        update(
            &mut app,
            Action::Access {
                context: "ctx".into(),
                scope,
                patch: Some(true),
                delete: Some(false),
                namespaces: vec!["bad/ns".into(), "third".into()],
            },
        );
        assert!(press(&mut app, KeyCode::Char('D')).is_empty());
        assert!(app.status.contains("RBAC does not let you delete"), "{}", app.status);
        assert_eq!(
            app.inventory.namespaces,
            ["ns", "other", "third"],
            "an invalid namespace is never offered"
        );
    }

    #[test]
    fn refreshes_and_failures_keep_the_last_good_rows() {
        let mut app = app(false);
        assert_eq!(update(&mut app, Action::Refresh).len(), 1);
        assert!(update(&mut app, Action::Refresh).is_empty(), "one refresh at a time");
        let scope = app.scope.clone();
        update(
            &mut app,
            Action::Loaded {
                context: "ctx".into(),
                scope,
                result: Err("etcd timed out".into()),
            },
        );
        assert_eq!(app.inventory.rows().len(), 3);
        assert_eq!(app.contexts[0].refresh_error.as_deref(), Some("etcd timed out"));
        // switching namespace re-lists there and asks for access again
        let effects = press(&mut app, KeyCode::Char('n'));
        assert_eq!(app.scope, Scope::Namespace("other".into()));
        assert_eq!(effects.len(), 2);
    }

    /// Rows changed in place between frames mend the cached order; it is always the order a
    /// full sort gives, under a filter and reversed too.
    #[test]
    fn a_mended_order_is_the_sorted_order() {
        let mut app = app(false);
        let ids: Vec<String> = (0..40).map(|i| format!("w{i:02}")).collect();
        app.inventory.replace(
            ids.iter()
                .map(|id| row(id, if id.ends_with('3') { "Suspended" } else { "Running" }))
                .collect(),
        );
        app.view.sort = SortKey::Epoch;
        for step in 0..60u64 {
            app.view.reverse = step % 7 == 0;
            app.view.filter = if step % 5 == 0 { "w1".into() } else { String::new() };
            app.visible();
            let mut w = app.inventory.rows()[(step * 13 % 40) as usize].clone();
            w.epoch.epoch = Some(step * 7 % 11);
            let (scope, generation) = (app.scope.clone(), app.contexts[0].follow_generation);
            update(
                &mut app,
                Action::Live {
                    context: "ctx".into(),
                    scope,
                    generation,
                    event: LiveEvent::Rows(vec![RowChange::Upsert(Box::new(w))]),
                },
            );
            let mended: Vec<String> = app.visible().iter().map(|w| w.id.clone()).collect();
            let sorted: Vec<String> = app
                .order_rows()
                .iter()
                .map(|&i| app.inventory.rows()[i].id.clone())
                .collect();
            assert_eq!(mended, sorted, "step {step}");
        }
    }

    fn typed(app: &mut App, text: &str) {
        for c in text.chars() {
            press(app, KeyCode::Char(c));
        }
    }

    #[test]
    fn the_command_line_completes_and_switches_namespace_by_a_fuzzy_name() {
        let mut app = app(false);
        press(&mut app, KeyCode::Char(':'));
        typed(&mut app, "n");
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.view.command.as_deref(), Some("ns "));
        typed(&mut app, "oth");
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.view.command.as_deref(), Some("ns other "));
        let effects = press(&mut app, KeyCode::Enter);
        assert_eq!(app.scope, Scope::Namespace("other".into()));
        assert_eq!(effects.len(), 2, "re-read there, and the access check");
        assert!(app.view.command.is_none());
        press(&mut app, KeyCode::Char(':'));
        typed(&mut app, "bogus");
        press(&mut app, KeyCode::Enter);
        assert!(app.status.starts_with("no command \"bogus\""), "{}", app.status);
        press(&mut app, KeyCode::Char(':'));
        typed(&mut app, "ctx elsewhere");
        press(&mut app, KeyCode::Enter);
        assert!(app.status.contains("--context elsewhere"), "{}", app.status);
        press(&mut app, KeyCode::Char(':'));
        typed(&mut app, "q");
        press(&mut app, KeyCode::Enter);
        assert!(app.quit);
    }

    #[test]
    fn unbound_keys_say_so_and_status_lines_expire() {
        let mut app = app(false);
        press(&mut app, KeyCode::Char('x'));
        assert_eq!(app.status, "no action on x · ? for help");
        update(&mut app, Action::Tick(now()));
        update(&mut app, Action::Tick(now() + chrono::TimeDelta::seconds(5)));
        assert!(!app.status.is_empty(), "not yet");
        update(&mut app, Action::Tick(now() + chrono::TimeDelta::seconds(10)));
        assert!(app.status.is_empty(), "expired");
    }

    #[test]
    fn sorting_picks_a_column_and_the_same_again_reverses() {
        let mut app = app(false);
        press(&mut app, KeyCode::Char('o'));
        assert!(matches!(app.popups.last(), Some(Popup::Sort { selected: 0 })));
        press(&mut app, KeyCode::End);
        press(&mut app, KeyCode::Enter);
        assert_eq!((app.view.sort, app.view.reverse), (SortKey::Diagnosis, false));
        press(&mut app, KeyCode::Char('o'));
        press(&mut app, KeyCode::Enter);
        assert_eq!((app.view.sort, app.view.reverse), (SortKey::Diagnosis, true));
        assert_eq!(app.status, "sorted by diagnosis ▼");
    }

    #[test]
    fn the_filter_takes_field_terms_and_negation() {
        let mut app = app(false);
        press(&mut app, KeyCode::Char('/'));
        typed(&mut app, "mode:susp");
        press(&mut app, KeyCode::Enter);
        let ids = |app: &App| app.visible().iter().map(|w| w.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&app), ["charlie"]);
        app.view.filter = "!mode:susp".into();
        assert_eq!(ids(&app), ["alpha", "bravo"]);
        app.view.filter = "state:bogus".into();
        assert!(ids(&app).is_empty() && app.query().is_err());
    }

    #[test]
    fn a_typed_confirmation_moves_the_focus_when_the_id_is_whole_and_escape_says_cancelled() {
        let mut app = app(false);
        press(&mut app, KeyCode::Char('D'));
        typed(&mut app, "alph");
        let focus = |app: &App| match app.popups.last() {
            Some(Popup::Confirm(c)) => Some(c.focus),
            _ => None,
        };
        assert_eq!(focus(&app), Some(Focus::Cancel));
        typed(&mut app, "a");
        assert_eq!(focus(&app), Some(Focus::Confirm));
        press(&mut app, KeyCode::Esc);
        assert!(app.popups.is_empty());
        assert_eq!(app.status, "cancelled");
    }

    #[test]
    fn popups_close_with_esc_and_ctrl_c_quits_from_anywhere() {
        let mut app = app(false);
        press(&mut app, KeyCode::Char('?'));
        assert!(matches!(app.popups.last(), Some(Popup::Help { .. })));
        press(&mut app, KeyCode::Esc);
        assert!(app.popups.is_empty());
        press(&mut app, KeyCode::Char('w'));
        update(
            &mut app,
            Action::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
        );
        assert!(app.quit);
    }
}
