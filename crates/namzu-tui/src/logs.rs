//! The log pane (`l` on a row): the workspace's own pod's log, streaming. Its memory is bounded —
//! a ring of at most [`RING_LINES`] lines and [`RING_BYTES`] bytes of text (each line at most
//! 64 KiB, cut by the reader); the oldest lines go first, and the pane says how many went.
//! Pure state and keys: the stream runs on the I/O task and arrives as actions.

use super::action::Effect;
use crate::keys::Command;
use namzu_domain::naming::WorkspaceKey;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use std::collections::VecDeque;

/// The most lines the pane holds.
pub const RING_LINES: usize = 20_000;
/// The most bytes of text the pane holds.
pub const RING_BYTES: usize = 16 * 1024 * 1024;
/// Lines a page key moves.
const PAGE: usize = 20;

/// Where the stream stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogState {
    Opening,
    Streaming,
    /// The stream ended (everything read, or the pod went): why.
    Ended(String),
    /// It could not be read: why (a suspended workspace, a container that never started, …).
    Failed(String),
}

/// One line of the pane: the log's own, or what the pane says between them (a restart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Log(String),
    Note(String),
}

impl Line {
    pub fn text(&self) -> &str {
        match self {
            Line::Log(t) | Line::Note(t) => t,
        }
    }
}

#[derive(Debug, Clone)]
pub struct LogPane {
    pub key: WorkspaceKey,
    /// The container asked for (`None`: the pod's default one).
    pub container: Option<String>,
    /// The previous instance of the container (`p` toggles).
    pub previous: bool,
    /// Which stream's lines are taken: a reopened stream's generation (older lines are dropped).
    pub stream: u64,
    /// The pod and container read, once the stream is open.
    pub source: String,
    pub state: LogState,
    lines: VecDeque<Line>,
    bytes: usize,
    /// Lines the ring let go.
    pub evicted: u64,
    /// Keep the newest line in view.
    pub follow: bool,
    pub wrap: bool,
    /// Lines between the bottom of the view and the newest line (0 while following).
    pub offset: usize,
    pub search: String,
    /// The search is being typed.
    pub searching: bool,
    /// The line (by its index in the ring) the last search step stopped on.
    pub matched: Option<usize>,
    /// What the pane says of the last key (a search's result, a save).
    pub note: String,
}

impl LogPane {
    pub fn new(key: WorkspaceKey, stream: u64) -> LogPane {
        LogPane {
            key,
            container: None,
            previous: false,
            stream,
            source: String::new(),
            state: LogState::Opening,
            lines: VecDeque::new(),
            bytes: 0,
            evicted: 0,
            follow: true,
            wrap: false,
            offset: 0,
            search: String::new(),
            searching: false,
            matched: None,
            note: String::new(),
        }
    }

    /// The effect that opens this pane's stream.
    pub fn open(&self) -> Effect {
        Effect::Logs {
            key: self.key.clone(),
            container: self.container.clone(),
            previous: self.previous,
            stream: self.stream,
        }
    }

    pub fn lines(&self) -> &VecDeque<Line> {
        &self.lines
    }

    /// Lines arrive: kept in the ring (made safe for the terminal); a view scrolled up stays on
    /// the lines it shows.
    pub fn push(&mut self, lines: impl IntoIterator<Item = Line>) {
        for line in lines {
            // a note carries the cluster's words too (a container's name, an error)
            let line = match line {
                Line::Log(t) => Line::Log(namzu_engine::present::layout::terminal_safe(t)),
                Line::Note(t) => Line::Note(namzu_engine::present::layout::terminal_safe(t)),
            };
            self.bytes += line.text().len();
            self.lines.push_back(line);
            if !self.follow {
                self.offset += 1;
            }
            // the bound holds after every line, not only after a batch
            while self.lines.len() > RING_LINES || (self.bytes > RING_BYTES && self.lines.len() > 1) {
                if let Some(gone) = self.lines.pop_front() {
                    self.bytes -= gone.text().len();
                    self.evicted += 1;
                    self.matched = self.matched.and_then(|m| m.checked_sub(1));
                }
            }
        }
        self.offset = self.offset.min(self.lines.len().saturating_sub(1));
    }

    /// Start over for another stream (another container instance): the ring empties.
    fn restart(&mut self, stream: u64) -> Effect {
        self.stream = stream;
        self.lines.clear();
        (self.bytes, self.evicted, self.offset, self.matched) = (0, 0, 0, None);
        self.follow = true;
        self.state = LogState::Opening;
        self.open()
    }

    /// The log as text, for saving.
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(self.bytes + self.lines.len());
        for l in &self.lines {
            out.push_str(l.text());
            out.push('\n');
        }
        out
    }

    /// The file a save writes (in the temporary directory): the workspace, container and time.
    pub fn file_name(&self, stamp: &str) -> String {
        let safe = |s: &str| -> String {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        };
        let container = self.container.as_deref().unwrap_or("default");
        let previous = if self.previous { "-previous" } else { "" };
        let context = match self.key.context.as_deref() {
            None | Some("") => String::new(),
            Some(c) => format!("{}-", safe(c)),
        };
        format!(
            "namzu-{context}{}-{}-{}{previous}-{}.log",
            safe(&self.key.namespace),
            safe(&self.key.id),
            safe(container),
            safe(stamp)
        )
    }

    /// The next (or previous) line holding the search text, from the one last matched (else the
    /// view's bottom); the view moves to it and stops following.
    fn step(&mut self, forward: bool) {
        if self.search.is_empty() {
            self.note = "no search: / to type one".into();
            return;
        }
        let needle = self.search.to_lowercase();
        let n = self.lines.len();
        let hits: Vec<usize> = (0..n)
            .filter(|i| self.lines[*i].text().to_lowercase().contains(&needle))
            .collect();
        if hits.is_empty() {
            self.matched = None;
            self.note = format!("no line holds {:?}", self.search);
            return;
        }
        let from = self.matched.unwrap_or(n.saturating_sub(1 + self.offset));
        let next = if forward {
            hits.iter().copied().find(|i| *i > from).unwrap_or(hits[0])
        } else {
            hits.iter()
                .rev()
                .copied()
                .find(|i| *i < from)
                .unwrap_or(hits[hits.len() - 1])
        };
        let position = hits.iter().position(|i| *i == next).unwrap_or(0) + 1;
        self.matched = Some(next);
        self.follow = false;
        self.offset = n - 1 - next;
        self.note = format!("match {position} of {}", hits.len());
    }

    /// A key while the search is typed.
    fn on_search_key(&mut self, command: Option<Command>, key: KeyEvent) {
        match (command, key.code) {
            (Some(Command::ClearFilter), _) => {
                self.search.clear();
                self.searching = false;
                self.matched = None;
            }
            (Some(Command::Keep), _) => {
                self.searching = false;
                self.matched = None;
                self.step(false);
            }
            (_, KeyCode::Backspace) => {
                self.search.pop();
            }
            (_, KeyCode::Char(c)) => self.search.push(c),
            _ => {}
        }
    }
}

/// What a key on the pane comes to.
pub(crate) enum Reply {
    Stay(Vec<Effect>),
    Close,
    /// Save the ring to a file of this name.
    Save {
        name: String,
        text: String,
    },
}

/// A key on the log pane; `next_stream` numbers a stream it opens anew, `stamp` names a save.
pub(crate) fn on_key(
    pane: &mut LogPane,
    command: Option<Command>,
    key: KeyEvent,
    next_stream: u64,
    stamp: &str,
) -> Reply {
    if pane.searching {
        pane.on_search_key(command, key);
        return Reply::Stay(Vec::new());
    }
    let Some(command) = command else {
        return Reply::Stay(Vec::new());
    };
    pane.note.clear();
    let last = pane.lines.len().saturating_sub(1);
    let up = |pane: &mut LogPane, by: usize| {
        pane.follow = false;
        pane.offset = (pane.offset + by).min(last);
    };
    let down = |pane: &mut LogPane, by: usize| {
        pane.offset = pane.offset.saturating_sub(by);
        // back at the newest line: follow again, as `less +F` does
        pane.follow = pane.offset == 0;
    };
    match command {
        Command::Close => return Reply::Close,
        Command::Up => up(pane, 1),
        Command::Down => down(pane, 1),
        Command::PageUp => up(pane, PAGE),
        Command::PageDown => down(pane, PAGE),
        Command::Top => up(pane, usize::MAX / 2),
        Command::Bottom => down(pane, usize::MAX),
        Command::Follow => {
            pane.follow = !pane.follow;
            if pane.follow {
                pane.offset = 0;
            }
        }
        Command::Wrap => pane.wrap = !pane.wrap,
        Command::Filter => {
            pane.searching = true;
            pane.search.clear();
        }
        Command::NextMatch => pane.step(false),
        Command::PrevMatch => pane.step(true),
        Command::Previous => {
            pane.previous = !pane.previous;
            return Reply::Stay(vec![pane.restart(next_stream)]);
        }
        Command::Save => {
            return Reply::Save {
                name: pane.file_name(stamp),
                text: pane.text(),
            };
        }
        _ => {}
    }
    Reply::Stay(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::KeyModifiers;

    fn pane() -> LogPane {
        LogPane::new(WorkspaceKey::new(None, "agents", "alpha"), 1)
    }

    fn key() -> KeyEvent {
        KeyEvent::new(KeyCode::Null, KeyModifiers::NONE)
    }

    #[test]
    fn the_ring_keeps_the_newest_lines_within_its_bounds() {
        let mut p = pane();
        p.push((0..RING_LINES + 5).map(|i| Line::Log(format!("line {i}"))));
        assert_eq!(p.lines().len(), RING_LINES);
        assert_eq!(p.evicted, 5);
        assert_eq!(p.lines().front().unwrap().text(), "line 5");
        let big = "x".repeat(60 * 1024);
        p.push((0..400).map(|_| Line::Log(big.clone())));
        assert!(p.bytes <= RING_BYTES, "{}", p.bytes);
    }

    #[test]
    fn a_view_scrolled_up_stays_put_and_the_bottom_follows_again() {
        let mut p = pane();
        p.push((0..100).map(|i| Line::Log(format!("{i}"))));
        on_key(&mut p, Some(Command::PageUp), key(), 2, "t");
        assert!(!p.follow);
        assert_eq!(p.offset, PAGE);
        p.push((0..3).map(|i| Line::Log(format!("new {i}"))));
        assert_eq!(p.offset, PAGE + 3, "the same lines stay in view");
        on_key(&mut p, Some(Command::Bottom), key(), 2, "t");
        assert!(p.follow && p.offset == 0);
    }

    #[test]
    fn search_steps_through_matches_and_wraps() {
        let mut p = pane();
        p.push(["boot", "ERROR one", "ok", "error two", "ok"].map(|s| Line::Log(s.into())));
        p.search = "error".into();
        on_key(&mut p, Some(Command::NextMatch), key(), 2, "t");
        assert_eq!((p.matched, p.note.as_str()), (Some(3), "match 2 of 2"));
        on_key(&mut p, Some(Command::NextMatch), key(), 2, "t");
        assert_eq!(p.matched, Some(1));
        on_key(&mut p, Some(Command::NextMatch), key(), 2, "t");
        assert_eq!(p.matched, Some(3), "wraps to the newest");
        on_key(&mut p, Some(Command::PrevMatch), key(), 2, "t");
        assert_eq!(p.matched, Some(1), "wraps to the oldest");
    }

    #[test]
    fn previous_reopens_and_save_names_the_file() {
        let mut p = pane();
        p.push([Line::Log("x".into())]);
        let Reply::Stay(effects) = on_key(&mut p, Some(Command::Previous), key(), 7, "t") else {
            panic!("stays")
        };
        assert!(matches!(
            effects.as_slice(),
            [Effect::Logs {
                previous: true,
                stream: 7,
                ..
            }]
        ));
        assert!(p.lines().is_empty());
        let Reply::Save { name, .. } = on_key(&mut p, Some(Command::Save), key(), 8, "20261201T100000Z") else {
            panic!("saves")
        };
        assert_eq!(name, "namzu-agents-alpha-default-previous-20261201T100000Z.log");
    }
}
