//! The UI state and `update`, the only function that changes it. Pure: no I/O, no clock.

mod command_line;
mod confirm;
mod contexts;
mod input;
mod inventory;
mod leaks;
mod order;
mod pulse;
mod replay;
mod switch;
#[cfg(test)]
mod tests;
mod triage;

use command_line::*;
pub use confirm::*;
pub use contexts::*;
pub(crate) use input::*;
pub(crate) use inventory::*;
pub(crate) use leaks::*;
pub(crate) use pulse::*;
pub(crate) use replay::*;
use switch::*;

use super::action::{Action, Effect};
pub use crate::context_options::ContextOptions;
use crate::keys::{self, Command, Context};
use chrono::{DateTime, Utc};
use namzu_domain::columns::Column;
use namzu_domain::fence::Verb;
use namzu_domain::filter::{Query, best, is_problem};
use namzu_domain::mirror::RowChange;
use namzu_domain::naming::WorkspaceKey;
use namzu_domain::naming::{WorkspaceId, validate_namespace};
use namzu_domain::safety::ContextRules;
use namzu_domain::select::{SortKey, compare};
use namzu_domain::state::State;
use namzu_domain::workspace::Workspace;
use namzu_engine::cluster::inventory::Scope;
use namzu_engine::cluster::live::{LiveEvent, StreamName, StreamStatus};
use namzu_engine::cluster::wait::Waited;
use namzu_engine::cluster::write::{Outcome, Plan};
use namzu_engine::present::outcome as wording;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Debug, Clone)]
pub enum Popup {
    Detail {
        key: WorkspaceKey,
        text: Option<Result<String, String>>,
        scroll: u16,
    },
    Yaml {
        key: WorkspaceKey,
        text: Option<Result<String, String>>,
        scroll: u16,
        /// `/`, `n`, `N`: the log pane's search, over the YAML's lines.
        find: crate::search::Find,
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
        key: WorkspaceKey,
        /// Laid out at the pane's width as it is drawn.
        text: Option<Result<namzu_engine::present::history::History, String>>,
        scroll: u16,
    },
    /// The leaks view (`:leaks`): read-only.
    Leaks(LeaksView),
    /// The pulse view (`:pulse`): read-only, read again while open.
    Pulse(PulseView),
    /// Words that stay until dismissed (a shell refused, in the tool's words).
    Message {
        title: String,
        text: String,
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

/// How long a status line stays.
pub(crate) const STATUS_FOR: chrono::TimeDelta = chrono::TimeDelta::seconds(8);

/// Where the UI starts.
#[derive(Debug, Clone)]
pub struct AppOptions {
    /// The contexts, in the order asked for (at least one).
    pub contexts: Vec<ContextOptions>,
    /// Several contexts were asked for: rows and messages name their context.
    pub several_contexts: bool,
    pub namespace: String,
    pub all_namespaces: bool,
    /// `--read-only`: every context refuses writes, whatever its rules.
    pub read_only: bool,
    pub now: DateTime<Utc>,
}

/// What the visible order was computed for: the view's choices and the rows' generation.
#[derive(Debug, Clone, PartialEq)]
struct OrderKey {
    view: ViewChoices,
    /// The inventory's generation: rows replaced since can be moved into place.
    generation: u64,
}

/// What every row's order was sorted for: the sort, reversed or not, the rows' generation.
type SortedFor = (SortKey, bool, u64);

/// What the user chose that orders the rows: the filter (with the pins it keeps), the context
/// picked, the sort and its direction, problems only.
#[derive(Debug, Clone, PartialEq)]
struct ViewChoices {
    filter: String,
    context: Option<String>,
    sort: SortKey,
    reverse: bool,
    problems: bool,
}

#[derive(Debug, Clone)]
pub struct App {
    /// Every context, in the order asked for; one unless several were.
    pub contexts: Vec<ContextView>,
    pub several_contexts: bool,
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
    pub notes: BTreeMap<WorkspaceKey, RowNote>,
    pub status: String,
    /// This session's writes (from the write path's audit entries).
    pub sent: Vec<Value>,
    pub quit: bool,
    /// Why the UI ended other than by the user's choice.
    pub fatal: Option<String>,
    /// A bulk action under way.
    pub bulk: Option<BulkProgress>,
    /// The visible rows' order (indices into the rows), kept until the rows, the filter or the
    /// sort change: a frame does not sort 10,000 rows again.
    order: RefCell<Option<(OrderKey, Vec<usize>)>>,
    /// Every row in sort order, the filter left out (the sort, its direction and the rows'
    /// generation it is for): a filter typed is a pass over it, not a sort.
    sorted: RefCell<Option<(SortedFor, Vec<usize>)>>,
    /// Log streams opened so far: each pane's stream is numbered, a late line of another dropped.
    pub log_streams: u64,
    /// A shell to run now (kubectl's arguments): the loop steps the UI aside for it.
    pub shell: Option<Vec<String>>,
    /// What the terminal says above that shell: the pod, container, context and its badge.
    pub shell_banner: String,
    /// The status as last seen at a tick, and since when: it expires after [`STATUS_FOR`].
    status_seen: (String, DateTime<Utc>),
    /// Rows of the bulk action under way: their waits do not take the status line.
    bulk_members: BTreeSet<WorkspaceKey>,
    /// The last line of the scrolling popup on top, as the last frame laid it out.
    pub scroll_max: std::cell::Cell<u16>,
    /// Warnings already said once in the status line.
    warned: BTreeSet<String>,
    /// What each context's follow was last asked to compute (`pulse::sync`), and the asks' count.
    pulse_asked: BTreeMap<String, namzu_engine::cluster::live::PulseAsk>,
    pulse_seq: u64,
    /// The kubeconfig's contexts a single-context session may switch to (empty: it may not).
    pub kube_contexts: Vec<String>,
    /// `--read-only` was given: a context switched to refuses writes too.
    pub read_only_flag: bool,
    /// What is typed into the context picker, and every name it filters.
    pub picker: (String, Vec<String>),
    /// The list's keys, as the config file's `keys:` moved them.
    pub keys: keys::KeyMap,
    /// `:at TIME`: the list shows the recording at an instant (the live rows kept aside).
    pub replay: Option<Replay>,
    /// The rows changed since the last frame: the row the cursor was on before the first change
    /// (none: the list was empty). The cursor is put back on it once per frame ([`App::settle`]),
    /// so a burst of watch events costs one sort, not one per event.
    unsettled: Option<Option<WorkspaceKey>>,
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
pub fn key_of(w: &Workspace) -> WorkspaceKey {
    WorkspaceKey::new(w.context.as_deref(), &w.namespace, &w.id)
}

impl App {
    pub fn new(o: AppOptions) -> App {
        App {
            contexts: o
                .contexts
                .into_iter()
                .map(|c| ContextView::new(c, o.read_only))
                .collect(),
            several_contexts: o.several_contexts,
            scope: if o.all_namespaces {
                Scope::All
            } else {
                Scope::Namespace(o.namespace.clone())
            },
            home_namespace: o.namespace.clone(),
            own_namespaces: o.several_contexts,
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
                resources: false,
                pinned: BTreeSet::new(),
                places: Vec::new(),
                pins: 0,
            },
            popups: Vec::new(),
            notes: BTreeMap::new(),
            status: String::new(),
            sent: Vec::new(),
            quit: false,
            fatal: None,
            bulk: None,
            order: RefCell::new(None),
            sorted: RefCell::new(None),
            log_streams: 0,
            shell: None,
            shell_banner: String::new(),
            status_seen: (String::new(), o.now),
            bulk_members: BTreeSet::new(),
            scroll_max: std::cell::Cell::new(u16::MAX),
            warned: BTreeSet::new(),
            pulse_asked: BTreeMap::new(),
            pulse_seq: 0,
            kube_contexts: Vec::new(),
            read_only_flag: o.read_only,
            picker: Default::default(),
            keys: Default::default(),
            replay: None,
            unsettled: None,
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

    /// Follow the scope in context `i` live. A new Follow starts its watches over from a list:
    /// the context's rows it does not bring back by its first full state are gone.
    fn read(&mut self, i: usize) -> Effect {
        let scope = self.scope_in(&self.contexts[i].name);
        let c = &mut self.contexts[i];
        c.refreshing = true;
        let context = c.name.clone();
        c.follow_generation += 1;
        c.streams.clear();
        self.inventory.unconfirmed.insert(context.clone(), BTreeSet::new());
        Effect::Follow {
            context,
            scope,
            generation: c.follow_generation,
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

    /// Filter the list by `text` (as typed after `/`), from its first row; a term no name fits is
    /// said on the status line.
    pub(crate) fn set_filter(&mut self, text: &str) {
        self.view.unpin();
        self.view.filter = text.to_string();
        self.view.selected = 0;
        self.clamp();
        if let Err(e) = self.query() {
            self.status = e;
        }
    }

    /// The contexts in view that opened: what a view (`:leaks`, `:pulse`) reads.
    pub(crate) fn contexts_in_view(&self) -> Vec<String> {
        self.contexts
            .iter()
            .filter(|c| c.open_error.is_none())
            .map(|c| c.name.clone())
            .filter(|n| self.view.context.as_ref().is_none_or(|v| v == n))
            .collect()
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
                && query.as_ref().is_ok_and(|q| q.matches(w, self.now, self.several_contexts)))
    }

    /// The problem rows in view (the header's count).
    pub fn problem_count(&self) -> usize {
        self.inventory
            .rows()
            .iter()
            .filter(|w| self.in_view(w) && is_problem(w))
            .count()
    }

    pub fn selected_key(&self) -> Option<WorkspaceKey> {
        let i = *self.ordered().get(self.view.selected)?;
        Some(key_of(&self.inventory.rows()[i]))
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
    pub fn refusal(&self, verb: Verb, targets: &[WorkspaceKey]) -> Option<String> {
        let mut per_context: Vec<(&ContextView, usize)> = Vec::new();
        for key in targets {
            match per_context.iter_mut().find(|(c, _)| c.name == key.context_name()) {
                Some((_, n)) => *n += 1,
                None => per_context.extend(self.context_view(key.context_name()).map(|c| (c, 1))),
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
            let context = if self.several_contexts {
                format!(" in context {}", c.name)
            } else {
                String::new()
            };
            return Some(format!(
                "{} is disabled: RBAC does not let you {rbac_verb} sandboxes.agents.x-k8s.io {scope}{context}",
                verb.as_str()
            ));
        }
        // (the read-only rule said above, as the context's view holds it)
        match namzu_engine::ops::write::rules::check(&c.rules, &c.name, false, marked) {
            Err(namzu_engine::ops::write::rules::Refusal::Bulk(why)) => Some(why),
            _ => None,
        }
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

    /// Change the rows keeping the marks on rows that still exist; the cursor goes back on the
    /// same workspace at the next [`App::settle`].
    fn keep_selection(&mut self, change: impl FnOnce(&mut Inventory)) {
        if self.unsettled.is_none() {
            self.unsettled = Some(self.selected_key());
        }
        change(&mut self.inventory);
        let index = &self.inventory.index;
        self.view.marks.retain(|k| index.contains_key(k));
    }

    /// Once per frame, and before any key or answer is handled: the cursor back on the row it
    /// was on before the rows changed (the order is computed here, once).
    pub fn settle(&mut self) {
        let Some(selected) = self.unsettled.take() else {
            return;
        };
        // the view opens at the top: the cursor follows a row only once the user has moved it
        if !self.view.touched {
            self.view.selected = 0;
        } else if let Some(k) = selected
            && let Some(&row) = self.inventory.index.get(&k)
        {
            let place = self.ordered().iter().position(|&r| r == row);
            if let Some(i) = place {
                self.view.selected = i;
            }
        }
        self.clamp();
    }

    fn clamp(&mut self) {
        let n = self.ordered().len();
        self.view.selected = if n == 0 { 0 } else { self.view.selected.min(n - 1) };
    }

    /// Read every context again now (the refresh key), but one still being read: the watches
    /// start over from a list.
    pub fn reload(&mut self) -> Vec<Effect> {
        self.read_all(false)
    }

    fn switch_scope(&mut self, scope: Scope) -> Vec<Effect> {
        if let Some(why) = replay::refuses_scope(self) {
            self.status = why;
            return Vec::new();
        }
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

    /// Some target's row is in a mode a refresh takes (`domain::refresh::refreshes`).
    fn any_refreshable(&self, targets: &[WorkspaceKey]) -> bool {
        self.inventory
            .rows()
            .iter()
            .any(|w| namzu_domain::refresh::refreshes(w.mode) && targets.contains(&key_of(w)))
    }

    fn open_confirm(&mut self, verb: Verb, refresh: bool) -> Vec<Effect> {
        let targets: Vec<WorkspaceKey> = if self.view.marks.is_empty() {
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
        // a refresh of rows that are all running would only be refused after the typing
        if refresh && !self.any_refreshable(&targets) {
            let (s, f) = (
                self.keys.key_for(Command::Suspend),
                self.keys.key_for(Command::RefreshTemplate),
            );
            self.status =
                format!("{f} refreshes a Suspended workspace onto its template: suspend it first ({s}, then {f})");
            return Vec::new();
        }
        let mut typed_rule: Vec<String> = Vec::new();
        for key in &targets {
            let typed = self
                .context_view(key.context_name())
                .is_some_and(|c| c.rules.typed_by_rule());
            if typed && !typed_rule.iter().any(|c| c == key.context_name()) {
                typed_rule.push(key.context_name().to_string());
            }
        }
        let mut confirm = Confirm {
            verb,
            asks_typed: targets.iter().any(|k| {
                namzu_engine::ops::write::rules::asks_typed(
                    self.context_view(k.context_name()).map(|c| &c.rules),
                    verb,
                    false,
                    false,
                )
            }),
            typed_rule,
            targets,
            take_over: false,
            previews: BTreeMap::new(),
            focus: Focus::Cancel,
            typed: String::new(),
            refresh,
            show_request: false,
        };
        let effects = previews(&mut confirm);
        self.popups.push(Popup::Confirm(confirm));
        effects
    }
}

/// The one mutation: apply `action`, return the I/O it asks for (and what the live follows are
/// asked to compute now: the pulse while its view is open).
pub fn update(app: &mut App, action: Action) -> Vec<Effect> {
    let mut effects = dispatch(app, action);
    effects.extend(pulse::sync(app));
    effects
}

fn dispatch(app: &mut App, action: Action) -> Vec<Effect> {
    // a watch event only changes rows; anything else sees the cursor where the user left it
    if !matches!(action, Action::Live { .. }) {
        app.settle();
    }
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
        Action::AuditFailed(why) => {
            app.status = format!("warning: {why}; the write was sent but is not in the audit log");
            Vec::new()
        }
        Action::Tick(now) => {
            on_tick(app, now);
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
        | Action::ShellEnded(_)
        | Action::Forwarding(_) => triage::apply(app, action),
        Action::ContextOpened { context, result } => on_context_opened(app, context, result),
        Action::Leaks { .. } | Action::LeaksDeleted { .. } | Action::Replayed { .. } => on_view_answer(app, action),
        Action::Copied(said) => {
            app.status = said;
            Vec::new()
        }
        Action::Detail { key, result } => {
            if let Some(Popup::Detail { key: k, text, .. } | Popup::Yaml { key: k, text, .. }) = app.popups.last_mut()
                && *k == key
            {
                *text = Some(result);
            }
            Vec::new()
        }
        Action::Preview { .. }
        | Action::Done { .. }
        | Action::NotStarted { .. }
        | Action::Sent(_)
        | Action::WaitProgress { .. }
        | Action::Waited { .. } => {
            on_write_answer(app, action);
            Vec::new()
        }
    }
}

/// A write's answers: its preview, its end (done or not started), the audit's entries, the wait
/// after it.
fn on_write_answer(app: &mut App, action: Action) {
    match action {
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
        }
        Action::Done { key, verb, outcome } => {
            let note = note_for(verb, &key, &outcome);
            row_done(app, key, note);
        }
        Action::NotStarted { key, why } => {
            let note = RowNote {
                text: format!("not started ({why}): nothing sent"),
                ok: false,
            };
            row_done(app, key, note);
        }
        Action::Sent(entries) => {
            app.sent = entries;
        }
        Action::WaitProgress { key, message } => {
            app.notes.insert(
                key,
                RowNote {
                    text: message,
                    ok: true,
                },
            );
        }
        Action::Waited { key, verb, waited } => {
            let note = RowNote {
                text: format!("{} {}", verb.past(), wording::waited(&waited)),
                ok: waited == Waited::Confirmed,
            };
            // a bulk action's rows keep their summary in the status line
            if !app.bulk_members.remove(&key) {
                app.status = format!("{}: {}", key.who(app.several_contexts), note.text);
            }
            app.notes.insert(key, note);
            // the watches bring what the write changed
        }
        // `update` hands only a write's answers here
        _ => {}
    }
}

/// A view's read answered: the leaks, the pulse, a replay.
fn on_view_answer(app: &mut App, action: Action) -> Vec<Effect> {
    match action {
        Action::Leaks { context, scope, result } => leaks::answered(app, &context, &scope, result),
        Action::LeaksDeleted { context, scope, result } => return leaks::deleted(app, context, scope, result),
        Action::Replayed {
            context,
            scope,
            instant,
            result,
        } => replay::answered(app, &context, &scope, instant, result),
        _ => {}
    }
    Vec::new()
}

/// Time passes: a status line expires (a bulk action's progress stays while it runs).
fn on_tick(app: &mut App, now: DateTime<Utc>) {
    app.now = now;
    if app.status != app.status_seen.0 {
        app.status_seen = (app.status.clone(), now);
    } else if !app.status.is_empty() && app.bulk.is_none() && now - app.status_seen.1 > STATUS_FOR {
        app.status.clear();
        app.status_seen.0.clear();
    }
}

/// A row's write is over (sent, or kept from starting): its note, and the status line — a bulk
/// action's says how far it is instead, as the CLI's progress line does.
fn row_done(app: &mut App, key: WorkspaceKey, note: RowNote) {
    app.status = format!("{}: {}", key.who(app.several_contexts), note.text);
    // a bulk action says how far it is instead, as the CLI's progress line does
    if let Some(bulk) = &mut app.bulk {
        bulk.done += 1;
        bulk.failed += usize::from(!note.ok);
        let elapsed = (app.now - bulk.started).to_std().unwrap_or_default();
        app.status = wording::progress(bulk.verb, bulk.done, bulk.total, bulk.failed, elapsed);
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
}

/// The Sandbox as YAML, without managedFields.
pub(crate) fn yaml(obj: &Value) -> String {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    namzu_engine::present::yaml::yaml(&o)
}
