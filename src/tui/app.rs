//! The UI state and `update`, the only function that changes it. Pure: no I/O, no clock.

use super::action::{Action, Effect, RowKey};
use crate::cluster::inventory::Scope;
use crate::cluster::wait::Waited;
use crate::cluster::write::{Outcome, Plan};
use crate::domain::fence::{EpochChoice, Verb};
use crate::domain::naming::{WorkspaceId, validate_namespace};
use crate::domain::select::{SortKey, compare};
use crate::domain::state::State;
use crate::domain::workspace::Workspace;
use chrono::{DateTime, Utc};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

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
    /// Delete only: what the user typed.
    pub typed: String,
}

impl Confirm {
    /// What a delete asks to be typed: the id, or `delete N` for several.
    pub fn phrase(&self) -> String {
        match self.targets.as_slice() {
            [(_, id)] => id.clone(),
            many => format!("delete {}", many.len()),
        }
    }

    pub fn ready(&self) -> bool {
        self.verb != Verb::Delete || self.typed == self.phrase()
    }
}

#[derive(Debug, Clone)]
pub enum Overlay {
    Detail {
        key: RowKey,
        text: Option<Result<String, String>>,
        scroll: u16,
    },
    Yaml {
        key: RowKey,
        text: String,
        scroll: u16,
    },
    Help,
    Confirm(Confirm),
    Sent {
        scroll: u16,
    },
}

/// The result of an action on one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowNote {
    pub text: String,
    pub ok: bool,
}

#[derive(Debug, Clone)]
pub struct App {
    pub context: String,
    pub server: String,
    pub scope: Scope,
    pub home_namespace: String,
    pub namespaces: Vec<String>,
    pub read_only: bool,
    pub can_patch: Option<bool>,
    pub can_delete: Option<bool>,
    pub now: DateTime<Utc>,
    pub rows: Vec<Workspace>,
    pub objects: BTreeMap<RowKey, Value>,
    pub warnings: Vec<String>,
    pub loaded_at: Option<DateTime<Utc>>,
    pub refresh_error: Option<String>,
    pub refreshing: bool,
    pub filter: String,
    pub filter_editing: bool,
    pub sort: SortKey,
    pub reverse: bool,
    pub selected: usize,
    pub marks: BTreeSet<RowKey>,
    pub notes: BTreeMap<RowKey, RowNote>,
    pub status: String,
    pub overlays: Vec<Overlay>,
    /// This session's writes (from the write path's audit entries).
    pub sent: Vec<Value>,
    pub quit: bool,
    /// Why the UI ended other than by the user's choice.
    pub fatal: Option<String>,
}

pub fn key_of(w: &Workspace) -> RowKey {
    (w.namespace.clone(), w.id.clone())
}

impl App {
    pub fn new(context: &str, server: &str, namespace: &str, all: bool, read_only: bool, now: DateTime<Utc>) -> App {
        App {
            context: context.into(),
            server: server.into(),
            scope: if all {
                Scope::All
            } else {
                Scope::Namespace(namespace.into())
            },
            home_namespace: namespace.into(),
            namespaces: vec![namespace.into()],
            read_only,
            can_patch: None,
            can_delete: None,
            now,
            rows: Vec::new(),
            objects: BTreeMap::new(),
            warnings: Vec::new(),
            loaded_at: None,
            refresh_error: None,
            refreshing: false,
            filter: String::new(),
            filter_editing: false,
            sort: SortKey::Name,
            reverse: false,
            selected: 0,
            marks: BTreeSet::new(),
            notes: BTreeMap::new(),
            status: String::new(),
            overlays: Vec::new(),
            sent: Vec::new(),
            quit: false,
            fatal: None,
        }
    }

    /// The effects to run at start: the first inventory and the RBAC check.
    pub fn start(&mut self) -> Vec<Effect> {
        self.refreshing = true;
        vec![
            Effect::Refresh(self.scope.clone()),
            Effect::CheckAccess(self.scope.clone()),
        ]
    }

    /// Rows after the filter, in sort order.
    pub fn visible(&self) -> Vec<&Workspace> {
        let needle = self.filter.to_lowercase();
        let mut out: Vec<&Workspace> = self
            .rows
            .iter()
            .filter(|w| {
                needle.is_empty() || {
                    let hay = [
                        w.id.as_str(),
                        w.template.as_deref().unwrap_or(""),
                        w.state.as_str(),
                        w.diagnosis.as_ref().map_or("", |d| d.kind.as_str()),
                        w.namespace.as_str(),
                    ];
                    hay.iter().any(|h| h.to_lowercase().contains(&needle))
                }
            })
            .collect();
        out.sort_by(|a, b| {
            let o = compare(a, b, self.sort);
            if self.reverse { o.reverse() } else { o }
        });
        out
    }

    pub fn selected_key(&self) -> Option<RowKey> {
        self.visible().get(self.selected).map(|w| key_of(w))
    }

    pub fn counts(&self) -> BTreeMap<State, usize> {
        let mut m = BTreeMap::new();
        for w in &self.rows {
            *m.entry(w.state).or_insert(0) += 1;
        }
        m
    }

    /// Why an action may not be taken, if it may not.
    pub fn disabled(&self, verb: Verb) -> Option<String> {
        if self.read_only {
            return Some(format!("{} is disabled: read-only mode", verb.as_str()));
        }
        let (allowed, rbac_verb) = match verb {
            Verb::Delete => (self.can_delete, "delete"),
            _ => (self.can_patch, "patch"),
        };
        (allowed == Some(false)).then(|| {
            let scope = match &self.scope {
                Scope::All => "cluster-wide".to_string(),
                Scope::Namespace(ns) => format!("in namespace {ns}"),
            };
            format!(
                "{} is disabled: RBAC does not let you {rbac_verb} sandboxes.agents.x-k8s.io {scope}",
                verb.as_str()
            )
        })
    }

    /// Namespaces the switch may cycle through: only names Kubernetes accepts, whatever the
    /// server listed (a name reaches every URL the TUI builds).
    fn learn_namespaces(&mut self, found: Vec<String>) {
        for ns in found {
            if validate_namespace(&ns).is_ok() && !self.namespaces.contains(&ns) {
                self.namespaces.push(ns);
            }
        }
        self.namespaces.sort();
    }

    fn clamp(&mut self) {
        let n = self.visible().len();
        self.selected = if n == 0 { 0 } else { self.selected.min(n - 1) };
    }

    fn refresh(&mut self) -> Vec<Effect> {
        if self.refreshing {
            return Vec::new();
        }
        self.refreshing = true;
        vec![Effect::Refresh(self.scope.clone())]
    }

    fn switch_scope(&mut self, scope: Scope) -> Vec<Effect> {
        self.scope = scope;
        self.rows.clear();
        self.marks.clear();
        self.selected = 0;
        self.can_patch = None;
        self.can_delete = None;
        self.refreshing = true;
        self.status = match &self.scope {
            Scope::All => "all namespaces".into(),
            Scope::Namespace(ns) => format!("namespace {ns}"),
        };
        vec![
            Effect::Refresh(self.scope.clone()),
            Effect::CheckAccess(self.scope.clone()),
        ]
    }

    fn open_confirm(&mut self, verb: Verb) -> Vec<Effect> {
        if let Some(why) = self.disabled(verb) {
            self.status = why;
            return Vec::new();
        }
        let targets: Vec<RowKey> = if self.marks.is_empty() {
            self.selected_key().into_iter().collect()
        } else {
            self.marks.iter().cloned().collect()
        };
        if targets.is_empty() {
            self.status = "no workspace selected".into();
            return Vec::new();
        }
        let mut confirm = Confirm {
            verb,
            targets,
            take_over: false,
            previews: BTreeMap::new(),
            focus: Focus::Cancel,
            typed: String::new(),
        };
        let effects = previews(&mut confirm);
        self.overlays.push(Overlay::Confirm(confirm));
        effects
    }
}

/// The read-only preview of an action: the fresh read the confirmation shows. `None` for a row
/// whose id cannot name a Sandbox (listed, never written).
fn preview_plan(verb: Verb, key: &RowKey, take_over: bool) -> Option<Plan> {
    Some(Plan {
        verb,
        namespace: key.0.clone(),
        id: WorkspaceId::parse(&key.1).ok()?,
        epoch: if take_over {
            EpochChoice::TakeOver
        } else {
            EpochChoice::Stored
        },
        dry_run: true,
        expected_uid: None,
    })
}

/// The confirmed write: it carries exactly the epoch and uid the confirmation showed, so a
/// holder that took over (or a Sandbox replaced) since then is refused, not followed.
fn confirmed(verb: Verb, key: &RowKey, preview: Option<&Outcome>) -> Result<Plan, RowNote> {
    match preview {
        Some(Outcome::DryRun { epoch, uid, .. }) => Ok(Plan {
            verb,
            namespace: key.0.clone(),
            id: WorkspaceId::parse(&key.1).map_err(|e| RowNote {
                text: e.to_string(),
                ok: false,
            })?,
            epoch: EpochChoice::Explicit(epoch.carried),
            dry_run: false,
            expected_uid: uid.clone(),
        }),
        Some(other) => Err(note_for(verb, other)),
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
        match preview_plan(c.verb, k, c.take_over) {
            Some(plan) => effects.push(Effect::Preview {
                plan,
                take_over: c.take_over,
            }),
            None => {
                let message = WorkspaceId::parse(&k.1)
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
        Action::Tick(now) => {
            app.now = now;
            Vec::new()
        }
        Action::Loaded { scope, result } => {
            if scope != app.scope {
                return Vec::new(); // an answer for a scope we left
            }
            app.refreshing = false;
            match result {
                Ok(loaded) => {
                    let selected = app.selected_key();
                    app.rows = loaded.rows;
                    app.objects = loaded.objects.into_iter().collect();
                    app.warnings = loaded.warnings;
                    app.learn_namespaces(loaded.namespaces);
                    app.loaded_at = Some(app.now);
                    app.refresh_error = None;
                    let keys: BTreeSet<RowKey> = app.rows.iter().map(key_of).collect();
                    app.marks.retain(|k| keys.contains(k));
                    if let Some(k) = selected
                        && let Some(i) = app.visible().iter().position(|w| key_of(w) == k)
                    {
                        app.selected = i;
                    }
                    app.clamp();
                }
                // the last good rows stay on screen under the error
                Err(e) => app.refresh_error = Some(e),
            }
            Vec::new()
        }
        Action::Access {
            scope,
            patch,
            delete,
            namespaces,
        } => {
            if scope == app.scope {
                app.can_patch = patch;
                app.can_delete = delete;
            }
            app.learn_namespaces(namespaces);
            Vec::new()
        }
        Action::Detail { key, result } => {
            if let Some(Overlay::Detail { key: k, text, .. }) = app.overlays.last_mut()
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
            if let Some(Overlay::Confirm(c)) = app.overlays.last_mut()
                && c.take_over == take_over
                && c.targets.contains(&key)
            {
                c.previews.insert(key, outcome);
            }
            Vec::new()
        }
        Action::Done { key, verb, outcome } => {
            let note = note_for(verb, &outcome);
            app.status = format!("{}: {}", key.1, note.text);
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
            let note = match waited {
                Waited::Confirmed => RowNote {
                    text: format!("{} confirmed", verb.past()),
                    ok: true,
                },
                Waited::TimedOut {
                    waiting_for, diagnosis, ..
                } => RowNote {
                    text: format!(
                        "timed out waiting for {waiting_for}{}",
                        diagnosis.map_or(String::new(), |d| format!(" ({}: {})", d.kind.as_str(), d.message))
                    ),
                    ok: false,
                },
                Waited::Failed(m) => RowNote {
                    text: format!("wait failed: {m}"),
                    ok: false,
                },
            };
            app.status = format!("{}: {}", key.1, note.text);
            app.notes.insert(key, note);
            app.refresh()
        }
    }
}

/// The row's note after an action.
pub fn note_for(verb: Verb, outcome: &Outcome) -> RowNote {
    let (text, ok) = match outcome {
        Outcome::Applied { epoch, .. } => (format!("{} ({})", verb.past(), epoch.describe()), true),
        Outcome::Unchanged { .. } => ("already there: nothing sent".into(), true),
        Outcome::AlreadyGone => ("already gone".into(), true),
        Outcome::DryRun { .. } => ("dry run".into(), true),
        Outcome::Refused { message } => (format!("refused: {message}"), false),
        Outcome::NotApplied { message, .. } => (format!("not applied: {message}"), false),
        Outcome::Conflict { message } => (format!("changed concurrently: {message}"), false),
        Outcome::NotFound => ("not found".into(), false),
        Outcome::ClaimOwned { claim } => (
            format!("refused: owned by SandboxClaim {claim}; delete the claim instead"),
            false,
        ),
        Outcome::ReadOnly => ("read-only: nothing sent".into(), false),
        Outcome::Failed(e) => (e.to_string(), false),
    };
    RowNote { text, ok }
}

fn on_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && key.code == KeyCode::Char('c') {
        app.quit = true;
        return Vec::new();
    }
    if app.filter_editing {
        match key.code {
            KeyCode::Esc => {
                app.filter.clear();
                app.filter_editing = false;
            }
            KeyCode::Enter => app.filter_editing = false,
            KeyCode::Backspace => {
                app.filter.pop();
            }
            KeyCode::Char(c) => app.filter.push(c),
            _ => {}
        }
        app.selected = 0;
        app.clamp();
        return Vec::new();
    }
    if let Some(top) = app.overlays.last_mut() {
        let answer = on_overlay_key(top, key, &mut app.status, &mut app.notes);
        return match answer {
            None => {
                app.overlays.pop();
                Vec::new()
            }
            Some(effects) => {
                if let Some(Effect::Write { .. }) = effects.first() {
                    app.overlays.pop();
                    app.marks.clear();
                }
                effects
            }
        };
    }
    let n = app.visible().len();
    let page = 10;
    match key.code {
        KeyCode::Char('q') => app.quit = true,
        KeyCode::Up | KeyCode::Char('k') => app.selected = app.selected.saturating_sub(1),
        KeyCode::Down | KeyCode::Char('j') => app.selected = (app.selected + 1).min(n.saturating_sub(1)),
        KeyCode::PageUp => app.selected = app.selected.saturating_sub(page),
        KeyCode::PageDown => app.selected = (app.selected + page).min(n.saturating_sub(1)),
        KeyCode::Home | KeyCode::Char('g') => app.selected = 0,
        KeyCode::End | KeyCode::Char('G') => app.selected = n.saturating_sub(1),
        KeyCode::Char('/') => app.filter_editing = true,
        KeyCode::Esc if !app.filter.is_empty() => app.filter.clear(),
        KeyCode::Char('o') => {
            let i = SortKey::ALL.iter().position(|(_, k)| *k == app.sort).unwrap_or(0);
            let (name, next) = SortKey::ALL[(i + 1) % SortKey::ALL.len()];
            app.sort = next;
            app.status = format!("sorted by {name}");
        }
        KeyCode::Char('O') => {
            app.reverse = !app.reverse;
            app.status = if app.reverse {
                "reverse order".into()
            } else {
                "normal order".into()
            };
        }
        KeyCode::Char(' ') => {
            if let Some(k) = app.selected_key()
                && !app.marks.remove(&k)
            {
                app.marks.insert(k);
            }
            app.selected = (app.selected + 1).min(n.saturating_sub(1));
        }
        KeyCode::Char('a') => {
            let scope = if app.scope == Scope::All {
                Scope::Namespace(app.home_namespace.clone())
            } else {
                Scope::All
            };
            return app.switch_scope(scope);
        }
        KeyCode::Char('n') => {
            let current = match &app.scope {
                Scope::Namespace(ns) => app.namespaces.iter().position(|n| n == ns),
                Scope::All => None,
            };
            let next = current.map_or(0, |i| (i + 1) % app.namespaces.len());
            let ns = app.namespaces[next].clone();
            app.home_namespace = ns.clone();
            return app.switch_scope(Scope::Namespace(ns));
        }
        KeyCode::Char('r') if ctrl => return app.refresh(),
        KeyCode::F(5) => return app.refresh(),
        KeyCode::Enter => {
            if let Some(k) = app.selected_key() {
                app.overlays.push(Overlay::Detail {
                    key: k.clone(),
                    text: None,
                    scroll: 0,
                });
                return vec![Effect::Detail(k)];
            }
        }
        KeyCode::Char('y') => {
            if let Some(k) = app.selected_key() {
                let text = app.objects.get(&k).map(yaml).unwrap_or_default();
                app.overlays.push(Overlay::Yaml {
                    key: k,
                    text,
                    scroll: 0,
                });
            }
        }
        KeyCode::Char('w') => app.overlays.push(Overlay::Sent { scroll: 0 }),
        KeyCode::Char('?') => app.overlays.push(Overlay::Help),
        KeyCode::Char('S') => return app.open_confirm(Verb::Suspend),
        KeyCode::Char('R') => return app.open_confirm(Verb::Resume),
        KeyCode::Char('D') => return app.open_confirm(Verb::Delete),
        _ => {}
    }
    Vec::new()
}

/// Keys on the top overlay: `None` closes it; `Some(effects)` keeps it (or a confirm's writes).
fn on_overlay_key(
    top: &mut Overlay,
    key: KeyEvent,
    status: &mut String,
    notes: &mut BTreeMap<RowKey, RowNote>,
) -> Option<Vec<Effect>> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let scroll_by = |s: &mut u16, code: KeyCode| match code {
        KeyCode::Up | KeyCode::Char('k') => *s = s.saturating_sub(1),
        KeyCode::Down | KeyCode::Char('j') => *s = s.saturating_add(1),
        KeyCode::PageUp => *s = s.saturating_sub(10),
        KeyCode::PageDown => *s = s.saturating_add(10),
        _ => {}
    };
    match top {
        Overlay::Confirm(c) => match key.code {
            KeyCode::Esc => None,
            KeyCode::Tab | KeyCode::Left | KeyCode::Right | KeyCode::BackTab => {
                c.focus = if c.focus == Focus::Cancel {
                    Focus::Confirm
                } else {
                    Focus::Cancel
                };
                Some(Vec::new())
            }
            // take-over: `t`, or Ctrl-T while typing a delete confirmation
            KeyCode::Char('t') if ctrl || c.verb != Verb::Delete => {
                c.take_over = !c.take_over;
                c.previews.clear();
                Some(previews(c))
            }
            KeyCode::Backspace if c.verb == Verb::Delete => {
                c.typed.pop();
                Some(Vec::new())
            }
            KeyCode::Char(ch) if c.verb == Verb::Delete => {
                c.typed.push(ch);
                Some(Vec::new())
            }
            KeyCode::Enter => match c.focus {
                Focus::Cancel => None,
                Focus::Confirm if !c.ready() => {
                    *status = format!("type {:?} to confirm the delete", c.phrase());
                    Some(Vec::new())
                }
                Focus::Confirm => {
                    let wait = c.verb != Verb::Delete;
                    let mut writes = Vec::new();
                    for k in &c.targets {
                        match confirmed(c.verb, k, c.previews.get(k)) {
                            Ok(plan) => writes.push(Effect::Write { plan, wait }),
                            Err(note) => {
                                notes.insert(k.clone(), note);
                            }
                        }
                    }
                    // the dialog closes even when nothing was left to send
                    if writes.is_empty() {
                        *status = "nothing sent".into();
                        return None;
                    }
                    Some(writes)
                }
            },
            _ => Some(Vec::new()),
        },
        Overlay::Detail { scroll, .. } | Overlay::Yaml { scroll, .. } | Overlay::Sent { scroll } => match key.code {
            KeyCode::Esc | KeyCode::Char('q') => None,
            code => {
                scroll_by(scroll, code);
                Some(Vec::new())
            }
        },
        Overlay::Help => match key.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('?') => None,
            _ => Some(Vec::new()),
        },
    }
}

/// The Sandbox as YAML, without managedFields.
pub fn yaml(obj: &Value) -> String {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    serde_yaml::to_string(&o).unwrap_or_default()
}
