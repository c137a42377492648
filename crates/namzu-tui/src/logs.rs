//! The log pane (`l` on a row): the workspace's own pod's log, streaming. Its memory is bounded —
//! a ring of at most [`RING_LINES`] lines and [`RING_BYTES`] bytes of text (each line at most
//! 64 KiB, cut by the reader); the oldest lines go first, and the pane says how many went.
//! Pure state and keys: the stream runs on the I/O task and arrives as actions.
//!
//! `l` on marked rows opens one pane over all of them (k9s's logs of marked pods, stern's habit):
//! each line after its workspace, coloured, each stream followed as `kubectl namzu logs -f`
//! follows several.

use super::action::Effect;
use crate::keys::Command;
use crate::search::{self, holds};
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
    /// A log line of the pane's workspace `.0` (a pane over several).
    Of(usize, String),
}

impl Line {
    /// The line as read: a log line starts with the server's timestamp (the pane always asks for
    /// it, so a reconnect resumes where it stopped and `t` can show it).
    pub fn text(&self) -> &str {
        match self {
            Line::Log(t) | Line::Note(t) | Line::Of(_, t) => t,
        }
    }

    /// The line as shown: a log line's timestamp only when `timestamps` is on.
    pub fn shown(&self, timestamps: bool) -> &str {
        match self {
            Line::Log(t) | Line::Of(_, t) if !timestamps => without_stamp(t),
            _ => self.text(),
        }
    }
}

/// A log line without its leading RFC 3339 timestamp (`2026-11-29T12:00:00.123456789Z text`);
/// a line that starts otherwise is kept whole.
fn without_stamp(line: &str) -> &str {
    match line.split_once(' ') {
        Some((stamp, rest))
            if stamp.len() >= 20
                && stamp.as_bytes()[4] == b'-'
                && stamp.as_bytes()[10] == b'T'
                && stamp.ends_with('Z') =>
        {
            rest
        }
        _ => line,
    }
}

/// What is being typed at the pane's prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompt {
    /// `/`: a text to find; every line holding it is highlighted.
    Search,
    /// `&`: only the lines holding the text are shown.
    Filter,
}

/// One workspace of a pane over several: what its lines are prefixed with, and whether its
/// stream has ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub key: WorkspaceKey,
    pub label: String,
    pub ended: bool,
}

#[derive(Debug, Clone)]
pub struct LogPane {
    /// The workspace (a pane over several: the first).
    pub key: WorkspaceKey,
    /// A pane over several workspaces (the marked rows): each one's prefix; empty for one.
    pub members: Vec<Member>,
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
    /// Lines between the bottom of the view and the newest line (0 while following); under a
    /// filter, lines that pass it.
    pub offset: usize,
    pub search: String,
    /// Only the lines holding it are shown (empty: every line).
    pub filter: String,
    /// How many lines of the ring pass the filter.
    pub filter_hits: usize,
    /// What the prompt is typing, if it is open.
    pub prompt: Option<Prompt>,
    /// The text typed at the prompt so far.
    pub typed: String,
    /// Show each log line's server timestamp.
    pub timestamps: bool,
    /// The line (by its index in the ring) the last search step stopped on.
    pub matched: Option<usize>,
    /// The rows of log the last frame had room for: a match is shown with the lines around it.
    pub view_height: std::cell::Cell<usize>,
    /// What the pane says of the last key (a search's result, a save).
    pub note: String,
}

impl LogPane {
    pub fn new(key: WorkspaceKey, stream: u64) -> LogPane {
        LogPane {
            key,
            members: Vec::new(),
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
            filter: String::new(),
            filter_hits: 0,
            prompt: None,
            typed: String::new(),
            timestamps: false,
            matched: None,
            view_height: std::cell::Cell::new(0),
            note: String::new(),
        }
    }

    /// A pane over several workspaces, each `(key, label)`: every line after its label.
    pub fn of_several(keys: Vec<(WorkspaceKey, String)>, stream: u64) -> Option<LogPane> {
        let first = keys.first()?.0.clone();
        let mut pane = LogPane::new(first, stream);
        pane.members = keys
            .into_iter()
            .map(|(key, label)| Member {
                key,
                label,
                ended: false,
            })
            .collect();
        pane.source = format!("{} workspaces", pane.members.len());
        Some(pane)
    }

    /// The label of workspace `from` of a pane over several.
    pub fn label(&self, from: usize) -> &str {
        self.members.get(from).map_or("", |m| m.label.as_str())
    }

    /// Workspace `from`'s stream ended: said in the pane; the pane has ended once all have.
    pub fn member_ended(&mut self, from: usize, text: &str, failed: bool) {
        let label = self.label(from).to_string();
        let said = if failed { "cannot read" } else { "ended" };
        self.push([Line::Note(format!("--- {label}: {said}: {text} ---"))]);
        if let Some(m) = self.members.get_mut(from) {
            m.ended = true;
        }
        if self.members.iter().all(|m| m.ended) {
            self.state = LogState::Ended(format!("every one of the {} logs ended", self.members.len()));
        }
    }

    /// The effect that opens this pane's stream.
    pub fn open(&self) -> Effect {
        if !self.members.is_empty() {
            return Effect::LogsOf {
                keys: self.members.iter().map(|m| m.key.clone()).collect(),
                previous: self.previous,
                stream: self.stream,
            };
        }
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
                Line::Of(i, t) => Line::Of(i, namzu_engine::present::layout::terminal_safe(t)),
            };
            self.bytes += line.text().len();
            let passes = self.passes(&line);
            self.filter_hits += usize::from(passes);
            self.lines.push_back(line);
            // a view scrolled up stays on the lines it shows (under a filter, those it shows)
            if !self.follow && passes {
                self.offset += 1;
            }
            // the bound holds after every line, not only after a batch
            while self.lines.len() > RING_LINES || (self.bytes > RING_BYTES && self.lines.len() > 1) {
                if let Some(gone) = self.lines.pop_front() {
                    self.bytes -= gone.text().len();
                    self.evicted += 1;
                    self.filter_hits -= usize::from(self.passes(&gone));
                    self.matched = self.matched.and_then(|m| m.checked_sub(1));
                }
            }
        }
        self.offset = self.offset.min(self.shown_count().saturating_sub(1));
    }

    /// Whether a line is shown under the filter (a note always is: it says what happened).
    pub fn passes(&self, line: &Line) -> bool {
        match line {
            Line::Note(_) => true,
            Line::Log(_) | Line::Of(..) => self.filter.is_empty() || holds(line.shown(self.timestamps), &self.filter),
        }
    }

    /// How many lines the view can show: every line, or those passing the filter.
    fn shown_count(&self) -> usize {
        if self.filter.is_empty() {
            self.lines.len()
        } else {
            self.filter_hits
        }
    }

    /// Apply a filter (empty: none): the view goes to the newest lines passing it, following.
    fn set_filter(&mut self, filter: String) {
        self.filter = filter;
        self.filter_hits = self.lines.iter().filter(|l| self.passes(l)).count();
        (self.offset, self.follow, self.matched) = (0, true, None);
        self.note = if self.filter.is_empty() {
            "every line".into()
        } else {
            format!(
                "{} of {} lines hold {:?}",
                self.filter_hits,
                self.lines.len(),
                self.filter
            )
        };
    }

    /// Start over for another stream (another container instance): the ring empties.
    fn restart(&mut self, stream: u64) -> Effect {
        self.stream = stream;
        self.lines.clear();
        (self.bytes, self.evicted, self.offset, self.matched, self.filter_hits) = (0, 0, 0, None, 0);
        self.follow = true;
        self.state = LogState::Opening;
        for m in &mut self.members {
            m.ended = false;
        }
        self.open()
    }

    /// The log as text, for saving.
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(self.bytes + self.lines.len());
        // as shown: the filter's lines, with their timestamps when they are shown
        for l in self.lines.iter().filter(|l| self.passes(l)) {
            if let Line::Of(from, _) = l {
                out.push_str(self.label(*from));
                out.push(' ');
            }
            out.push_str(l.shown(self.timestamps));
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
        if !self.members.is_empty() {
            return format!("namzu-{}-workspaces{previous}-{}.log", self.members.len(), safe(stamp));
        }
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

    /// The next match down (`forward`: newer, as `n` in less) or up (older, `N`) from the one
    /// last matched (else the view's bottom), wrapping; the view moves to it, with the lines
    /// around it in view (half a pane below it where the log has them), and stops following.
    fn step(&mut self, forward: bool) {
        if self.search.is_empty() {
            self.note = "no search: / to type one".into();
            return;
        }
        let n = self.lines.len();
        let hits: Vec<usize> = (0..n)
            .filter(|i| self.passes(&self.lines[*i]) && holds(self.lines[*i].shown(self.timestamps), &self.search))
            .collect();
        // no match yet: from just below the view's bottom line, so that line is found too
        let from = self.matched.unwrap_or_else(|| self.bottom_index() + 1);
        let Some((next, position)) = search::step(&hits, from, forward) else {
            self.matched = None;
            self.note = format!("no line holds {:?}", self.search);
            return;
        };
        self.matched = Some(next);
        self.follow = false;
        // shown lines below the match, and as many of them kept in view as half a pane holds
        let below = (next + 1..n).filter(|i| self.passes(&self.lines[*i])).count();
        let context = (self.view_height.get() / 2).min(below);
        self.offset = below - context;
        self.note = format!("match {position} of {}", hits.len());
    }

    /// The ring index of the line at the bottom of the view.
    fn bottom_index(&self) -> usize {
        let mut skipped = 0;
        for i in (0..self.lines.len()).rev() {
            if self.passes(&self.lines[i]) {
                if skipped == self.offset {
                    return i;
                }
                skipped += 1;
            }
        }
        self.lines.len().saturating_sub(1)
    }

    /// A key while the prompt is open.
    fn on_prompt_key(&mut self, prompt: Prompt, command: Option<Command>, key: KeyEvent) {
        match (command, key.code) {
            (Some(Command::ClearFilter), _) => {
                self.prompt = None;
                self.typed.clear();
                match prompt {
                    Prompt::Search => {
                        self.search.clear();
                        self.matched = None;
                    }
                    Prompt::Filter => self.set_filter(String::new()),
                }
            }
            (Some(Command::Keep), _) => {
                self.prompt = None;
                let typed = std::mem::take(&mut self.typed);
                match prompt {
                    Prompt::Search => {
                        self.search = typed;
                        self.matched = None;
                        // the newest match: the one nearest the bottom, going up
                        self.step(false);
                    }
                    Prompt::Filter => self.set_filter(typed),
                }
            }
            (_, KeyCode::Backspace) => {
                self.typed.pop();
            }
            (_, KeyCode::Char(c)) => self.typed.push(c),
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
    if let Some(prompt) = pane.prompt {
        pane.on_prompt_key(prompt, command, key);
        return Reply::Stay(Vec::new());
    }
    let Some(command) = command else {
        return Reply::Stay(Vec::new());
    };
    pane.note.clear();
    let last = pane.shown_count().saturating_sub(1);
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
            pane.prompt = Some(Prompt::Search);
            pane.typed.clear();
        }
        Command::FilterLines => {
            pane.prompt = Some(Prompt::Filter);
            pane.typed.clear();
        }
        Command::Timestamps => {
            pane.timestamps = !pane.timestamps;
            // a filter or search on what is shown is applied to it anew
            let filter = pane.filter.clone();
            if !filter.is_empty() {
                pane.set_filter(filter);
            }
            pane.note = if pane.timestamps {
                "timestamps on"
            } else {
                "timestamps off"
            }
            .into();
        }
        Command::NextMatch => pane.step(true),
        Command::PrevMatch => pane.step(false),
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

    fn typed(p: &mut LogPane, open: Command, text: &str) {
        on_key(p, Some(open), key(), 2, "t");
        for c in text.chars() {
            on_key(p, None, KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE), 2, "t");
        }
        on_key(p, Some(Command::Keep), key(), 2, "t");
    }

    #[test]
    fn search_goes_to_the_newest_match_then_n_down_and_shift_n_up_wrapping() {
        let mut p = pane();
        p.push(["boot", "ERROR one", "ok", "error two", "ok"].map(|s| Line::Log(s.into())));
        typed(&mut p, Command::Filter, "error");
        assert_eq!(
            (p.matched, p.note.as_str()),
            (Some(3), "match 2 of 2"),
            "Enter: the newest"
        );
        on_key(&mut p, Some(Command::PrevMatch), key(), 2, "t");
        assert_eq!(p.matched, Some(1), "N goes up, to older");
        on_key(&mut p, Some(Command::PrevMatch), key(), 2, "t");
        assert_eq!(p.matched, Some(3), "and wraps to the newest");
        on_key(&mut p, Some(Command::NextMatch), key(), 2, "t");
        assert_eq!(p.matched, Some(1), "n goes down, wrapping to the oldest");
        on_key(&mut p, Some(Command::NextMatch), key(), 2, "t");
        assert_eq!(p.matched, Some(3));
    }

    #[test]
    fn n_and_shift_n_step_while_lines_arrive() {
        let mut p = pane();
        p.push(
            [
                "ready",
                "opened",
                "SIGTERM, draining",
                "waiting",
                "holds",
                "still draining",
            ]
            .map(|s| Line::Log(s.into())),
        );
        p.view_height.set(18);
        typed(&mut p, Command::Filter, "draining");
        assert_eq!(p.note, "match 2 of 2");
        p.push((0..3).map(|i| Line::Log(format!("heartbeat {i}"))));
        on_key(&mut p, Some(Command::PrevMatch), key(), 2, "t");
        assert_eq!(p.note, "match 1 of 2");
        p.push((0..3).map(|i| Line::Log(format!("heartbeat {i}"))));
        on_key(&mut p, Some(Command::NextMatch), key(), 2, "t");
        assert_eq!(p.note, "match 2 of 2");
    }

    #[test]
    fn a_match_is_shown_with_the_lines_after_it() {
        let mut p = pane();
        p.push((0..100).map(|i| {
            Line::Log(if i == 40 {
                "panic: here".into()
            } else {
                format!("line {i}")
            })
        }));
        p.view_height.set(20);
        typed(&mut p, Command::Filter, "panic");
        assert_eq!(p.matched, Some(40));
        // 59 lines below the match; half a pane (10) of them stay in view under it
        assert_eq!(p.offset, 59 - 10);
    }

    #[test]
    fn a_filter_shows_only_its_lines_and_counts_them_as_they_come() {
        let mut p = pane();
        p.push(["a ok", "b WARN x", "c ok"].map(|s| Line::Log(s.into())));
        typed(&mut p, Command::FilterLines, "warn");
        assert_eq!((p.filter_hits, p.note.as_str()), (1, "1 of 3 lines hold \"warn\""));
        p.push([Line::Log("d warn y".into()), Line::Log("e ok".into())]);
        assert_eq!(p.filter_hits, 2);
        assert_eq!(p.text(), "b WARN x\nd warn y\n", "a save writes what is shown");
        typed(&mut p, Command::FilterLines, "");
        assert_eq!(p.text().lines().count(), 5, "an empty filter shows every line");
    }

    #[test]
    fn timestamps_are_kept_and_shown_on_t() {
        let mut p = pane();
        p.push([Line::Log("2026-11-29T12:00:00.123456789Z hello".into())]);
        assert_eq!(p.lines()[0].shown(p.timestamps), "hello");
        on_key(&mut p, Some(Command::Timestamps), key(), 2, "t");
        assert_eq!(p.lines()[0].shown(p.timestamps), "2026-11-29T12:00:00.123456789Z hello");
        assert_eq!(Line::Log("no stamp here".into()).shown(false), "no stamp here");
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
