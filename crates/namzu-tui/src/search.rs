//! Finding a text in lines, as less and vim do: shared by the log pane (`l`) and the YAML view
//! (`y`). Which lines hold it (any case), the step to the next or previous match (wrapping), how a
//! match is highlighted, and the YAML view's own search state and keys.

use crate::keys::Command;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Modifier, Style};

/// Whether `text` holds `needle`, ignoring case (`needle` may be in any case).
pub(crate) fn holds(text: &str, needle: &str) -> bool {
    text.to_lowercase().contains(&needle.to_lowercase())
}

/// From `from`, the next match (`forward`: the first of `hits` after it) or the previous (the
/// last before it), wrapping around; with its place among the hits (from 1). `hits` are in order.
pub(crate) fn step(hits: &[usize], from: usize, forward: bool) -> Option<(usize, usize)> {
    let (&first, &last) = (hits.first()?, hits.last()?);
    let next = if forward {
        hits.iter().copied().find(|i| *i > from).unwrap_or(first)
    } else {
        hits.iter().rev().copied().find(|i| *i < from).unwrap_or(last)
    };
    let position = hits.iter().position(|i| *i == next).unwrap_or(0) + 1;
    Some((next, position))
}

/// How a line shows under a search: the match stepped to reversed, every other line holding the
/// text bold.
pub(crate) fn line_style(matched: bool, holding: bool) -> Style {
    match (matched, holding) {
        (true, _) => Style::default().add_modifier(Modifier::REVERSED),
        (false, true) => Style::default().add_modifier(Modifier::BOLD),
        _ => Style::default(),
    }
}

/// A search over a text that does not change while it is read (the YAML view).
#[derive(Debug, Clone, Default)]
pub struct Find {
    /// The text searched for (empty: none).
    pub text: String,
    /// The prompt, open: what is typed so far.
    pub typing: Option<String>,
    /// The line (of the text's own lines) the last step stopped on.
    pub matched: Option<usize>,
    /// What the last step found ("match 2 of 5", "no line holds …").
    pub note: String,
    /// The width the text was last wrapped to: a match's row is counted in it.
    pub width: std::cell::Cell<usize>,
}

impl Find {
    /// A key on the view: `/` opens the prompt, `n`/`N` step; while typing, letters, Backspace,
    /// Enter (search from the top of the view) and Esc (no search). Returns whether it took the
    /// key; `scroll` moves to a match (with a few lines above it).
    pub(crate) fn on_key(&mut self, text: &str, scroll: &mut u16, command: Option<Command>, key: KeyEvent) -> bool {
        if let Some(typed) = &mut self.typing {
            match (command, key.code) {
                (Some(Command::ClearFilter), _) => {
                    self.typing = None;
                    self.text.clear();
                    self.matched = None;
                    self.note.clear();
                }
                (Some(Command::Keep), _) => {
                    self.text = std::mem::take(typed);
                    self.typing = None;
                    // from the line at the top of the view, so a match on it is found too
                    let top = self.line_at(text, *scroll);
                    self.go(text, scroll, top.checked_sub(1), true);
                }
                (_, KeyCode::Backspace) => {
                    typed.pop();
                }
                (_, KeyCode::Char(c)) => typed.push(c),
                _ => {}
            }
            return true;
        }
        match command {
            Some(Command::Filter) => self.typing = Some(String::new()),
            Some(Command::NextMatch) => self.go(text, scroll, self.matched, true),
            Some(Command::PrevMatch) => self.go(text, scroll, self.matched, false),
            _ => return false,
        }
        true
    }

    /// Step from `from` (none: before the first line) to the next or previous match.
    fn go(&mut self, text: &str, scroll: &mut u16, from: Option<usize>, forward: bool) {
        if self.text.is_empty() {
            self.note = "no search: / to type one".into();
            return;
        }
        let hits: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| holds(l, &self.text))
            .map(|(i, _)| i)
            .collect();
        let from = from.map_or(if forward { usize::MAX } else { 0 }, |f| f);
        // no line yet: forward from before the first, back from after the last
        let found = if from == usize::MAX && forward {
            hits.first().map(|&f| (f, 1))
        } else {
            step(&hits, from, forward)
        };
        let Some((line, position)) = found else {
            self.matched = None;
            self.note = format!("no line holds {:?}", self.text);
            return;
        };
        self.matched = Some(line);
        self.note = format!("match {position} of {}", hits.len());
        // three rows of what comes before it stay in view
        let row = self.row_of(text, line);
        *scroll = u16::try_from(row.saturating_sub(3)).unwrap_or(u16::MAX);
    }

    /// The row (wrapped at the last width) where line `line` starts.
    fn row_of(&self, text: &str, line: usize) -> usize {
        let width = self.width.get().max(1);
        text.lines()
            .take(line)
            .map(|l| namzu_engine::present::layout::wrap(l, width).len().max(1))
            .sum()
    }

    /// The line shown at row `row` (wrapped at the last width).
    fn line_at(&self, text: &str, row: u16) -> usize {
        let width = self.width.get().max(1);
        let mut rows = 0;
        for (i, l) in text.lines().enumerate() {
            rows += namzu_engine::present::layout::wrap(l, width).len().max(1);
            if rows > usize::from(row) {
                return i;
            }
        }
        0
    }

    /// What the view's title says of the search: the prompt, or what the last step found.
    pub(crate) fn said(&self) -> String {
        match &self.typing {
            Some(t) => format!("search: {t}▏"),
            None if !self.note.is_empty() => format!("/{} · {}", self.text, self.note),
            None => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::KeyModifiers;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn search(find: &mut Find, text: &str, scroll: &mut u16, needle: &str) {
        find.on_key(text, scroll, Some(Command::Filter), key(KeyCode::Null));
        for c in needle.chars() {
            find.on_key(text, scroll, None, key(KeyCode::Char(c)));
        }
        find.on_key(text, scroll, Some(Command::Keep), key(KeyCode::Enter));
    }

    #[test]
    fn steps_wrap_both_ways() {
        assert_eq!(step(&[2, 5, 9], 5, true), Some((9, 3)));
        assert_eq!(step(&[2, 5, 9], 9, true), Some((2, 1)));
        assert_eq!(step(&[2, 5, 9], 2, false), Some((9, 3)));
        assert_eq!(step(&[], 2, false), None);
    }

    #[test]
    fn the_yaml_search_goes_down_from_the_top_of_the_view_and_n_and_shift_n_step() {
        let text: String = (0..60)
            .map(|i| {
                if i % 20 == 7 {
                    format!("  holderEpoch: \"{i}\"\n")
                } else {
                    format!("  line{i}: x\n")
                }
            })
            .collect();
        let mut find = Find::default();
        find.width.set(80);
        let mut scroll = 0;
        search(&mut find, &text, &mut scroll, "HOLDEREPOCH");
        assert_eq!((find.matched, find.note.as_str()), (Some(7), "match 1 of 3"));
        assert_eq!(scroll, 4, "three lines above the match stay in view");
        find.on_key(&text, &mut scroll, Some(Command::NextMatch), key(KeyCode::Char('n')));
        assert_eq!(find.matched, Some(27));
        find.on_key(&text, &mut scroll, Some(Command::PrevMatch), key(KeyCode::Char('N')));
        find.on_key(&text, &mut scroll, Some(Command::PrevMatch), key(KeyCode::Char('N')));
        assert_eq!((find.matched, find.note.as_str()), (Some(47), "match 3 of 3"), "wraps");
        search(&mut find, &text, &mut scroll, "nothing");
        assert_eq!(find.note, "no line holds \"nothing\"");
    }
}
