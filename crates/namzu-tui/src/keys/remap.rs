//! The list's keys moved by the config file's `keys:` section (k9s's hotkeys habit): each
//! action's name to the keys that take its place. A remap only moves keys: the action behind a key
//! is the same command, and what a write asks (its confirmation, a typed id) is decided below the
//! key table, so no remap can put a destructive verb on a key without its confirmation. A name
//! that is no action, a text that is no key, or a key that would mean two things is one line at
//! start, and the UI does not open.

use super::{Binding, Command, Context, Key, LIST, bindings};
use namzu_domain::safety::KeyNames;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use std::collections::BTreeMap;

/// Each action of the list the config file may move, by its name in `keys:`.
pub(crate) const ACTIONS: &[(&str, Command)] = &[
    ("up", Command::Up),
    ("down", Command::Down),
    ("page-up", Command::PageUp),
    ("page-down", Command::PageDown),
    ("top", Command::Top),
    ("bottom", Command::Bottom),
    ("filter", Command::Filter),
    ("problems", Command::Problems),
    ("usage", Command::Resources),
    ("sort", Command::NextSort),
    ("reverse-sort", Command::ReverseSort),
    ("command", Command::OpenCommandLine),
    ("all-namespaces", Command::AllNamespaces),
    ("every-namespace", Command::EveryNamespace),
    ("next-namespace", Command::NextNamespace),
    ("refresh", Command::Refresh),
    ("detail", Command::Detail),
    ("copy", Command::Copy),
    ("yaml", Command::Yaml),
    ("logs", Command::Logs),
    ("shell", Command::Shell),
    ("forward", Command::Forward),
    ("history", Command::History),
    ("step-back", Command::StepBack),
    ("step-forward", Command::StepForward),
    ("mark", Command::Mark),
    ("suspend", Command::Suspend),
    ("resume", Command::Resume),
    ("delete", Command::Delete),
    ("refresh-template", Command::RefreshTemplate),
    ("contexts", Command::Contexts),
    ("sent", Command::Sent),
    ("help", Command::Help),
    ("quit", Command::Quit),
];

/// Keys no remap takes away: Ctrl-C quits from anywhere.
const FIXED: &[(Key, Command)] = &[(Key::Ctrl('c'), Command::Quit)];

/// The list's key table with the config file's moves applied (none: the defaults).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyMap {
    /// Each moved action, its name and its keys in place of its defaults.
    moved: Vec<(&'static str, Command, Vec<Key>)>,
}

impl KeyMap {
    /// The moves of the config file's `keys:`, checked against the whole list: the error is one
    /// line, naming the entry at fault.
    pub fn from_config(keys: &BTreeMap<String, KeyNames>) -> Result<KeyMap, String> {
        let mut moved = Vec::new();
        for (name, names) in keys {
            let Some(&(action, command)) = ACTIONS.iter().find(|(n, _)| n == name) else {
                let known: Vec<&str> = ACTIONS.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "keys.{name}: no such action (the actions: {})",
                    known.join(", ")
                ));
            };
            let texts = names.names();
            if texts.is_empty() {
                return Err(format!("keys.{name}: give a key"));
            }
            let parsed = texts
                .iter()
                .map(|t| parse(t).map_err(|why| format!("keys.{name}: {why}")))
                .collect::<Result<Vec<Key>, String>>()?;
            moved.push((action, command, parsed));
        }
        let map = KeyMap { moved };
        map.check()?;
        Ok(map)
    }

    /// No key of the list means two things once the moves are applied.
    fn check(&self) -> Result<(), String> {
        let table = self.list();
        for (i, (key, command)) in table.iter().enumerate() {
            if let Some((_, other)) = table[i + 1..].iter().find(|(k, c)| k == key && c != command) {
                let who = |c: &Command| {
                    ACTIONS
                        .iter()
                        .find(|(_, a)| a == c)
                        .map_or_else(|| format!("{c:?}").to_lowercase(), |(n, _)| (*n).to_string())
                };
                let (a, b) = (who(command), who(other));
                return Err(format!(
                    "keys: {} would be both {a} and {b}: move the other one too, or choose another key",
                    display(*key)
                ));
            }
        }
        Ok(())
    }

    /// The key that asks for `command` on the list now, as the footer names it (what a status
    /// line tells the user to press).
    pub(crate) fn key_for(&self, command: Command) -> String {
        if let Some(k) = self.moved_keys(command).and_then(|keys| keys.first()) {
            return display(*k);
        }
        LIST.iter()
            .flat_map(|b| b.keys.iter())
            .find(|(_, c)| *c == command)
            .map_or_else(String::new, |(k, _)| display(*k))
    }

    /// Whether the file moved any key.
    pub fn is_default(&self) -> bool {
        self.moved.is_empty()
    }

    /// The keys of `command` now, if the file moved it.
    fn moved_keys(&self, command: Command) -> Option<&[Key]> {
        self.moved
            .iter()
            .find(|(_, c, _)| *c == command)
            .map(|(_, _, keys)| keys.as_slice())
    }

    /// A binding's keys as they are now: its defaults but the moved ones (Ctrl-C stays), then
    /// the keys moved onto its commands.
    fn keys_of(&self, b: &Binding) -> Vec<(Key, Command)> {
        let mut keys: Vec<(Key, Command)> = b
            .keys
            .iter()
            .filter(|(k, c)| self.moved_keys(*c).is_none() || FIXED.contains(&(*k, *c)))
            .copied()
            .collect();
        for (_, command, moved) in &self.moved {
            if b.keys.iter().any(|(_, c)| c == command) {
                keys.extend(moved.iter().map(|k| (*k, *command)));
            }
        }
        keys
    }

    /// The whole list's table now.
    fn list(&self) -> Vec<(Key, Command)> {
        LIST.iter().flat_map(|b| self.keys_of(b)).collect()
    }

    /// The command a key press asks for in `context`, if any (the list's as moved).
    pub(crate) fn command_for(&self, context: Context, event: KeyEvent) -> Option<Command> {
        if context != Context::List || self.is_default() {
            return super::command_for(context, event);
        }
        self.list()
            .into_iter()
            .find(|(key, _)| key.matches(event))
            .map(|(_, command)| command)
    }

    /// A binding's label now: the default, or its keys as they are once moved.
    pub(crate) fn label(&self, b: &Binding) -> String {
        if !self.touches(b) {
            return b.label.to_string();
        }
        let mut names: Vec<String> = Vec::new();
        for (k, _) in self.keys_of(b) {
            let name = display(k);
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names.join(" ")
    }

    /// A binding's footer hint now: each `KEY words` part with the key it was moved to, and only
    /// the parts whose command `applies` (a resume on a Running row does not).
    pub(crate) fn hint(&self, b: &Binding, applies: &dyn Fn(Command) -> bool) -> String {
        b.hint
            .split(" · ")
            .filter_map(|part| {
                let (first, rest) = part.split_once(' ').unwrap_or((part, ""));
                let command = b.keys.iter().find(|(k, _)| display(*k) == first).map(|(_, c)| *c);
                if command.is_some_and(|c| !applies(c)) {
                    return None;
                }
                let moved = command.and_then(|c| self.moved_keys(c)).and_then(|keys| keys.first());
                Some(match moved {
                    Some(k) => format!("{} {rest}", display(*k)),
                    None => part.to_string(),
                })
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }

    fn touches(&self, b: &Binding) -> bool {
        b.keys.iter().any(|(_, c)| self.moved_keys(*c).is_some())
    }

    /// What the help says of the moves: one line per action moved (none: nothing).
    pub(crate) fn said(&self) -> Vec<String> {
        self.moved
            .iter()
            .map(|(name, _, keys)| {
                let keys: Vec<String> = keys.iter().map(|k| display(*k)).collect();
                format!("{name} → {} (the config file's keys:)", keys.join(" "))
            })
            .collect()
    }

    /// The footer's hints for `context` with the moves applied, the list's only where they
    /// `apply` to the rows the keys would act on.
    pub(crate) fn footer(
        &self,
        context: Context,
        width: usize,
        fleet: bool,
        applies: &dyn Fn(Command) -> bool,
    ) -> String {
        super::footer_of(bindings(context), width, fleet, |b| {
            if context == Context::List {
                self.hint(b, applies)
            } else {
                b.hint.to_string()
            }
        })
    }
}

/// A key as the config file writes it: one character (`X`, `;`), `ctrl-x`, or a name (`space`,
/// `enter`, `tab`, `backspace`, `up`, `down`, `left`, `right`, `pgup`, `pgdn`, `home`, `end`,
/// `insert`, `delete`, `f1`…`f12`).
pub(crate) fn parse(text: &str) -> Result<Key, String> {
    let mut chars = text.chars();
    if let (Some(c), None) = (chars.next(), chars.next())
        && !c.is_control()
    {
        return Ok(Key::Char(c));
    }
    let lower = text.to_lowercase();
    if let Some(rest) = lower.strip_prefix("ctrl-").or_else(|| lower.strip_prefix("ctrl+")) {
        let mut chars = rest.chars();
        if let (Some(c), None) = (chars.next(), chars.next())
            && c.is_ascii_alphanumeric()
        {
            return Ok(Key::Ctrl(c));
        }
    }
    let code = match lower.as_str() {
        "space" => return Ok(Key::Char(' ')),
        "enter" | "return" => KeyCode::Enter,
        "tab" => KeyCode::Tab,
        "backspace" => KeyCode::Backspace,
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "pgup" | "pageup" => KeyCode::PageUp,
        "pgdn" | "pagedown" => KeyCode::PageDown,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "insert" => KeyCode::Insert,
        "delete" | "del" => KeyCode::Delete,
        f if f.starts_with('f') && f[1..].parse::<u8>().is_ok_and(|n| (1..=12).contains(&n)) => {
            KeyCode::F(f[1..].parse().unwrap_or(1))
        }
        _ => {
            return Err(format!(
                "{text:?} is not a key (one character, ctrl-x, space, enter, tab, backspace, up, down, left, right, pgup, pgdn, home, end, insert, delete, f1…f12)"
            ));
        }
    };
    Ok(Key::Code(code))
}

/// A key as the footer and the help name it.
pub(crate) fn display(key: Key) -> String {
    match key {
        Key::Char(' ') => "space".into(),
        Key::Char(c) => c.to_string(),
        Key::Ctrl(c) => format!("Ctrl-{}", c.to_ascii_uppercase()),
        Key::Code(code) => match code {
            KeyCode::Enter => "Enter".into(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::Backspace => "Backspace".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::Insert => "Insert".into(),
            KeyCode::Delete => "Delete".into(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::F(n) => format!("F{n}"),
            other => format!("{other:?}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::KeyModifiers;

    fn map(yaml: &str) -> Result<KeyMap, String> {
        let config = namzu_domain::safety::SafetyConfig::parse(yaml)?;
        KeyMap::from_config(&config.keys)
    }

    fn press(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
    }

    #[test]
    fn every_list_action_has_a_name() {
        for b in LIST {
            for (_, c) in b.keys {
                assert!(
                    *c == Command::ClearFilter || ACTIONS.iter().any(|(_, a)| a == c),
                    "{c:?} has no name in keys:"
                );
            }
        }
    }

    #[test]
    fn a_remap_moves_the_key_and_keeps_the_command() {
        let m = map("keys:\n  delete: X\n  logs: [L, ctrl-l]\n").unwrap();
        assert_eq!(m.command_for(Context::List, press('X')), Some(Command::Delete));
        assert_eq!(m.command_for(Context::List, press('D')), None, "D moved away");
        assert_eq!(
            m.command_for(Context::List, KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL)),
            None,
            "Ctrl-D too: every default key of delete"
        );
        assert_eq!(m.command_for(Context::List, press('L')), Some(Command::Logs));
        assert_eq!(m.command_for(Context::List, press('l')), None);
        // the log pane's keys are its own
        assert_eq!(m.command_for(Context::Logs, press('l')), Some(Command::Close));
        let footer = m.footer(Context::List, 400, false, &|_| true);
        assert!(footer.contains("X delete") && footer.contains("L logs"), "{footer}");
        assert!(!footer.contains("D delete"), "{footer}");
        let label = LIST.iter().find(|b| b.hint.contains("delete")).map(|b| m.label(b));
        assert_eq!(label.as_deref(), Some("S R X"));
        // quit moved: Ctrl-C still quits
        assert_eq!(
            (m.key_for(Command::Delete), m.key_for(Command::Suspend)),
            ("X".into(), "S".into())
        );
        let m = map("keys:\n  quit: Q\n").unwrap();
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(m.command_for(Context::List, ctrl_c), Some(Command::Quit));
        assert_eq!(m.command_for(Context::List, press('q')), None);
    }

    #[test]
    fn an_unknown_action_a_bad_key_or_a_conflict_is_one_line() {
        let e = map("keys:\n  nuke: X\n").unwrap_err();
        assert!(e.starts_with("keys.nuke: no such action (the actions: up, down"), "{e}");
        let e = map("keys:\n  delete: ctrl-alt-x\n").unwrap_err();
        assert!(e.starts_with("keys.delete: \"ctrl-alt-x\" is not a key"), "{e}");
        let e = map("keys:\n  logs: j\n").unwrap_err();
        assert_eq!(
            e,
            "keys: j would be both down and logs: move the other one too, or choose another key"
        );
        // moving both is fine
        assert!(map("keys:\n  logs: j\n  down: J\n").is_ok());
        let e = map("keys:\n  delete: ctrl-c\n").unwrap_err();
        assert!(e.contains("Ctrl-C would be both"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn keys_parse_as_the_file_writes_them() {
        assert_eq!(parse("X"), Ok(Key::Char('X')));
        assert_eq!(parse("space"), Ok(Key::Char(' ')));
        assert_eq!(parse("Ctrl-K"), Ok(Key::Ctrl('k')));
        assert_eq!(parse("f5"), Ok(Key::Code(KeyCode::F(5))));
        assert_eq!(parse("PgDn"), Ok(Key::Code(KeyCode::PageDown)));
        assert!(parse("f13").is_err() && parse("").is_err());
    }
}
