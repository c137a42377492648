//! The confirmation popup: what a write will do (its dry-run previews), the typed phrase, and the plan bound to what was confirmed.

use super::*;
use namzu_engine::ops::write::rules::{self, Unbound};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Cancel,
    Confirm,
}

/// A pending action, waiting for the user's yes.
#[derive(Debug, Clone)]
pub struct Confirm {
    pub verb: Verb,
    pub targets: Vec<WorkspaceKey>,
    pub take_over: bool,
    /// The fresh read per target: the dry-run outcome (None until it arrives).
    pub previews: BTreeMap<WorkspaceKey, Outcome>,
    pub focus: Focus,
    /// The confirmation is typed: a delete's always, every write's in a `confirm: typed` context.
    pub asks_typed: bool,
    /// The targets' contexts whose `confirm: typed` rule asks for the typing.
    pub typed_rule: Vec<String>,
    /// What the user typed (a typed confirmation only).
    pub typed: String,
    /// A resume that refreshes the pod template from the SandboxTemplate (`F`).
    pub refresh: bool,
    /// The epoch and the exact request are shown (`v`): the consequences come first, these
    /// under the toggle.
    pub show_request: bool,
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

/// The read-only preview of an action: the fresh read the confirmation shows (`ops::write::rules`).
/// `None` for a row whose id cannot name a Sandbox (listed, never written).
pub(super) fn preview_plan(verb: Verb, key: &WorkspaceKey, take_over: bool, refresh: bool) -> Option<Plan> {
    // the TUI knows no overlay flags: a refresh uses only the overlays the stored hash shows
    rules::preview(verb, &key.namespace, &key.id, take_over, refresh.then(Default::default))
}

/// The confirmed write, bound to what the confirmation showed (`ops::write::rules::bind`): the
/// epoch and uid shown, and a refresh's hash.
pub(super) fn confirmed(c: &Confirm, key: &WorkspaceKey) -> Result<Plan, RowNote> {
    let shown = c.previews.get(key);
    let unbound = |u: Unbound<'_>| match u {
        Unbound::Shown(other) => note_for(c.verb, key, other),
        Unbound::NotShown => RowNote {
            text: "not read yet: nothing sent; try again".into(),
            ok: false,
        },
    };
    let Some(plan) = preview_plan(c.verb, key, c.take_over, c.refresh) else {
        // a row whose id names no Sandbox: its preview says why
        return Err(match shown {
            Some(Outcome::DryRun { .. }) => RowNote {
                text: WorkspaceId::parse(&key.id)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default(),
                ok: false,
            },
            Some(other) => unbound(Unbound::Shown(other)),
            None => unbound(Unbound::NotShown),
        });
    };
    let write = Plan { dry_run: false, ..plan };
    rules::bind(write, shown).map_err(unbound)
}

/// The fresh reads a confirmation shows; a row that cannot be written is refused at once.
pub(super) fn previews(c: &mut Confirm) -> Vec<Effect> {
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

/// The row's note after an action: the same sentence the CLI prints, first line only.
pub(crate) fn note_for(verb: Verb, key: &WorkspaceKey, outcome: &Outcome) -> RowNote {
    RowNote {
        text: wording::outcome_line(verb, &key.namespace, outcome, false),
        ok: wording::succeeded(outcome, false),
    }
}

pub(super) fn on_confirm_key(
    c: &mut Confirm,
    command: Option<Command>,
    key: KeyEvent,
    status: &mut String,
    notes: &mut BTreeMap<WorkspaceKey, RowNote>,
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
        (Some(Command::ShowRequest), _) => {
            c.show_request = !c.show_request;
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
                // one batch per context, the rows in the order shown
                let mut writes: Vec<Effect> = Vec::new();
                for k in &c.targets {
                    match confirmed(c, k) {
                        Ok(plan) => {
                            let context = k.context_name();
                            match writes.iter_mut().find_map(|e| match e {
                                Effect::Writes { context: c, writes, .. } if c == context => Some(writes),
                                _ => None,
                            }) {
                                Some(group) => group.push((k.clone(), plan)),
                                None => writes.push(Effect::Writes {
                                    context: context.to_string(),
                                    writes: vec![(k.clone(), plan)],
                                    take_over: c.take_over,
                                    wait,
                                }),
                            }
                        }
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
