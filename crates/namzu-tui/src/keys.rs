//! The terminal UI's one key table. Each context (the list, the filter being typed, a
//! confirmation, a scrolling popup, the help popup) lists its bindings once: the UI dispatches
//! through [`command_for`], the footer shows [`footer`], the help popup shows [`help`], and a
//! test checks the README's key table against [`readme_rows`].

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

mod remap;
pub use remap::KeyMap;

/// What a key asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Filter,
    ClearFilter,
    NextSort,
    ReverseSort,
    AllNamespaces,
    /// Every namespace, whatever is shown now (`0`, k9s's reflex).
    EveryNamespace,
    NextNamespace,
    Refresh,
    Detail,
    Yaml,
    Mark,
    Suspend,
    Resume,
    /// Resume with the pod template refreshed from the SandboxTemplate.
    RefreshTemplate,
    Delete,
    Sent,
    /// Open the context picker (several contexts).
    Contexts,
    Help,
    Quit,
    /// Close the popup on top (Esc), or, in a confirmation, cancel.
    Close,
    /// In a confirmation: move the focus between Cancel and the action.
    SwitchFocus,
    /// In a confirmation: press the focused button; in the picker: pick the one selected.
    Choose,
    TakeOver,
    /// In a confirmation: show or hide the epoch and the exact request.
    ShowRequest,
    /// While typing (a filter, a delete's id): keep what was typed.
    Keep,
    /// The log pane of the row's own pod.
    Logs,
    /// A shell in the row's own pod (the UI steps aside while it runs).
    Shell,
    /// Forward a free local port to the row's own pod (port-forward), in the background.
    Forward,
    /// The row's history: one timeline and the start-up waterfall.
    History,
    /// While replaying (`:at`): the previous recorded change.
    StepBack,
    /// While replaying (`:at`): the next recorded change.
    StepForward,
    /// In the log pane: keep the newest line in view, or stop.
    Follow,
    /// In the log pane: wrap long lines, or cut them.
    Wrap,
    /// In the log pane: the next match down (newer), as `n` in less and vim.
    NextMatch,
    /// In the log pane: the previous match up (older), as `N` in less and vim.
    PrevMatch,
    /// In the log pane: show only the lines holding a text (`&`, as less), or every line again.
    FilterLines,
    /// In the log pane: the server's timestamp before each line, or not.
    Timestamps,
    /// In the log pane: the previous instance of the container, or the current one.
    Previous,
    /// In the log pane: save what it holds to a file.
    Save,
    /// Show only the problem rows (a diagnosis, an unreadable epoch, drift), or every row.
    Problems,
    /// Open the command line (`:`).
    OpenCommandLine,
    /// Copy the row's next-step command (else its id) to the clipboard (OSC 52).
    Copy,
    /// Show the CPU, MEM and DISK columns (what each workspace holds), or hide them.
    Resources,
    /// On the command line: complete the word being typed.
    Complete,
}

/// A key as the table names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    Code(KeyCode),
    Char(char),
    Ctrl(char),
}

impl Key {
    fn matches(self, event: KeyEvent) -> bool {
        let ctrl = event.modifiers.contains(KeyModifiers::CONTROL);
        match self {
            Key::Code(code) => !ctrl && event.code == code,
            Key::Char(c) => !ctrl && event.code == KeyCode::Char(c),
            Key::Ctrl(c) => ctrl && event.code == KeyCode::Char(c),
        }
    }
}

/// One line of the table: its keys and what each does, how the help and README name them, and
/// the footer's short hint (empty: not in the footer).
pub(crate) struct Binding {
    pub keys: &'static [(Key, Command)],
    /// The keys as a person reads them: `↑/k ↓/j`, `S R D`.
    pub label: &'static str,
    /// What they do, for the help popup and the README.
    pub does: &'static str,
    /// The footer's words, most important bindings first in the table's `footer_order`.
    pub hint: &'static str,
    /// Lower shows first and is dropped last when the footer is narrow.
    pub footer_order: u8,
}

/// Where the keys are pressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Context {
    List,
    /// Typing a filter.
    Filtering,
    Confirm,
    /// A typed confirmation (a delete, or any write in a `confirm: typed` context), where
    /// letters are the id being typed.
    ConfirmTyped,
    /// Detail, what-was-sent, the history: they scroll.
    Scrolling,
    /// The YAML view: it scrolls and searches (`/`, `n`, `N`) as the log pane does.
    Yaml,
    HelpPopup,
    /// The context picker.
    Picker,
    /// The log pane.
    Logs,
    /// Typing a search in the log pane.
    LogSearch,
    /// Typing on the command line (`:`).
    Command,
    /// The leaks view (`:leaks`): a cursor over the leaks, marks, a delete.
    Leaks,
    /// The pulse view (`:pulse`): a cursor over the counts, Enter opens one.
    Pulse,
}

use Command::*;
use Key::{Char, Code, Ctrl};

const LIST: &[Binding] = &[
    Binding {
        keys: &[
            (Code(KeyCode::Up), Up),
            (Char('k'), Up),
            (Code(KeyCode::Down), Down),
            (Char('j'), Down),
            (Code(KeyCode::PageUp), PageUp),
            (Code(KeyCode::PageDown), PageDown),
            (Code(KeyCode::Home), Top),
            (Char('g'), Top),
            (Code(KeyCode::End), Bottom),
            (Char('G'), Bottom),
        ],
        label: "↑/k ↓/j PgUp PgDn Home/g End/G",
        does: "move",
        hint: "↑↓ move",
        footer_order: 9,
    },
    Binding {
        keys: &[(Char('/'), Filter), (Code(KeyCode::Esc), ClearFilter)],
        label: "/",
        does: "live filter: a word matches any column (labels too); state:Error drift:drifted diag:crash mode: tmpl: ctx:prod-* ns: mean what the CLI's selectors mean; ! negates; terms all hold (Esc clears)",
        hint: "/ filter",
        footer_order: 2,
    },
    Binding {
        keys: &[(Char('p'), Problems)],
        label: "p",
        does: "problems only (a diagnosis, an unreadable epoch, or drift), or every row; the header counts them",
        hint: "p problems",
        footer_order: 4,
    },
    Binding {
        keys: &[(Char('u'), Resources)],
        label: "u",
        does: "show or hide the CPU, MEM and DISK columns (requests and disks each workspace holds, as list -o wide)",
        hint: "u usage",
        footer_order: 18,
    },
    Binding {
        keys: &[(Char('o'), NextSort), (Char('O'), ReverseSort)],
        label: "o / O",
        does: "sort: pick any column (diagnosis: worst first) / reverse; the header marks the column ▲▼",
        hint: "o sort",
        footer_order: 3,
    },
    Binding {
        keys: &[(Char(':'), OpenCommandLine)],
        label: ":",
        does: "command line, Tab completes: ns NAME (all), ctx NAME (all), sort COLUMN, filter TEXT, problems, logs, shell, history, detail, yaml, sent, leaks, pulse [WINDOW], at TIME, help, q",
        hint: ": command",
        footer_order: 5,
    },
    Binding {
        keys: &[
            (Char('a'), AllNamespaces),
            (Char('0'), EveryNamespace),
            (Char('n'), NextNamespace),
        ],
        label: "a / 0 / n",
        does: "all namespaces on/off / all namespaces (as k9s's 0) / next namespace (:ns NAME picks one by a fuzzy name)",
        hint: "a all ns · n next ns",
        footer_order: 13,
    },
    Binding {
        keys: &[(Code(KeyCode::F(5)), Refresh), (Ctrl('r'), Refresh)],
        label: "F5, Ctrl-R",
        does: "read again now (the watches start over from a list)",
        hint: "",
        footer_order: 99,
    },
    Binding {
        keys: &[(Code(KeyCode::Enter), Detail), (Char('d'), Detail)],
        label: "Enter, d",
        does: "detail (k9s's describe): conditions, pod, disks, epoch, drift with the field diff, diagnosis, events",
        hint: "Enter detail",
        footer_order: 6,
    },
    Binding {
        keys: &[(Char('Y'), Copy)],
        label: "Y",
        does: "copy the row's next-step command (with its --context), else its id, to the clipboard (OSC 52)",
        hint: "",
        footer_order: 99,
    },
    Binding {
        keys: &[(Char('y'), Yaml), (Char('e'), Yaml)],
        label: "y, e",
        does: "the Sandbox as YAML (managedFields hidden; / n N search it as in the log pane); e shows it too: nothing is edited in place here, writes go through S R F D",
        hint: "y yaml",
        footer_order: 10,
    },
    Binding {
        keys: &[(Char('l'), Logs)],
        label: "l",
        does: "logs of the row's own pod: streaming; f follow, w wrap, / search, n/N matches, p previous container, Ctrl-S save; on marked rows, every marked workspace's log in one pane, each line after its workspace (coloured), each followed as logs -f",
        hint: "l logs",
        footer_order: 11,
    },
    Binding {
        keys: &[(Char('s'), Shell)],
        label: "s",
        does: "a shell in the row's own pod (kubectl exec -it … -- sh) under a banner naming the pod, container, context and its badge; exit comes back to the same row; a refusal (ours or kubectl's, in its words) stays on screen until Esc",
        hint: "s shell",
        footer_order: 14,
    },
    Binding {
        keys: &[(Char('f'), Forward)],
        label: "f",
        does: "forward a free local port to port 8080 of the row's own pod, following it across restarts and suspend/resume (as port-forward); the status line says where it listens; stopped when the TUI quits",
        hint: "",
        footer_order: 99,
    },
    Binding {
        keys: &[(Char('h'), History)],
        label: "h",
        does: "history: events, mode changes, pod transitions and this machine's writes in one timeline, and where start-up time went",
        hint: "h history",
        footer_order: 15,
    },
    Binding {
        keys: &[(Char(' '), Mark)],
        label: "space",
        does: "mark rows: actions apply to every marked row",
        hint: "space mark",
        footer_order: 8,
    },
    Binding {
        keys: &[
            (Char('S'), Suspend),
            (Char('R'), Resume),
            (Char('D'), Delete),
            (Ctrl('d'), Delete),
        ],
        label: "S R D, Ctrl-D",
        does: "suspend, resume, delete (shifted, so hard to hit by accident; Ctrl-D deletes as in k9s)",
        hint: "S suspend · R resume · D delete",
        footer_order: 9,
    },
    Binding {
        keys: &[(Char('F'), RefreshTemplate)],
        label: "F",
        does: "resume onto the SandboxTemplate as it is now (drifted Suspended rows): the pod template refreshed",
        hint: "F refresh",
        footer_order: 17,
    },
    Binding {
        keys: &[(Char('c'), Contexts)],
        label: "c",
        does: "contexts (type to narrow): across several, show one's rows or all; in one, switch to another of the kubeconfig's",
        hint: "c contexts",
        footer_order: 7,
    },
    Binding {
        keys: &[(Char('['), StepBack), (Char(']'), StepForward)],
        label: "[ / ]",
        does: "while replaying (:at -2h, :at 2026-12-01T10:00:00Z; :at now ends it): the previous / next recorded change; the header says REPLAY, the instant and how complete the recording is there, and writes are off",
        hint: "[ ] step",
        footer_order: 7,
    },
    Binding {
        keys: &[(Char('w'), Sent)],
        label: "w",
        does: "what this session sent: every write with its body and outcome",
        hint: "w sent",
        footer_order: 16,
    },
    Binding {
        keys: &[(Char('?'), Help)],
        label: "?",
        does: "help: the keys, then what every column and every diagnosis word means",
        hint: "? help",
        footer_order: 0,
    },
    Binding {
        keys: &[(Char('q'), Quit), (Ctrl('c'), Quit)],
        label: "q, Ctrl-C",
        does: "quit (Esc closes the top popup first)",
        hint: "q quit",
        footer_order: 1,
    },
];

const FILTERING: &[Binding] = &[
    Binding {
        keys: &[(Code(KeyCode::Enter), Keep)],
        label: "Enter",
        does: "keep the filter",
        hint: "type to filter · Enter keep",
        footer_order: 0,
    },
    Binding {
        keys: &[(Code(KeyCode::Esc), ClearFilter)],
        label: "Esc",
        does: "clear the filter",
        hint: "Esc clear",
        footer_order: 1,
    },
    QUIT_ANYWHERE,
];

/// Ctrl-C quits from the filter, the log search and the command line too (no hint: the footer has room for the line's own keys).
const QUIT_ANYWHERE: Binding = Binding {
    keys: &[(Ctrl('c'), Quit)],
    label: "Ctrl-C",
    does: "quit",
    hint: "",
    footer_order: 99,
};

const SWITCH: Binding = Binding {
    keys: &[
        (Code(KeyCode::Tab), SwitchFocus),
        (Code(KeyCode::BackTab), SwitchFocus),
        (Code(KeyCode::Left), SwitchFocus),
        (Code(KeyCode::Right), SwitchFocus),
    ],
    label: "Tab ← →",
    does: "switch between Cancel and the action (focus starts on Cancel)",
    hint: "Tab switch",
    footer_order: 1,
};

const CHOOSE: Binding = Binding {
    keys: &[(Code(KeyCode::Enter), Choose)],
    label: "Enter",
    does: "press the focused button",
    hint: "Enter choose",
    footer_order: 2,
};

const CANCEL: Binding = Binding {
    keys: &[(Code(KeyCode::Esc), Close), (Ctrl('c'), Quit)],
    label: "Esc",
    does: "cancel",
    hint: "Esc cancel",
    footer_order: 0,
};

const CONFIRM: &[Binding] = &[
    SWITCH,
    CHOOSE,
    Binding {
        keys: &[(Char('t'), TakeOver)],
        label: "t",
        does: "in a confirmation: take over (stored epoch + 1)",
        hint: "t take over",
        footer_order: 3,
    },
    Binding {
        keys: &[(Char('v'), ShowRequest), (Ctrl('v'), ShowRequest)],
        label: "v",
        does: "in a confirmation: show or hide the epoch and the exact request",
        hint: "v request",
        footer_order: 4,
    },
    CANCEL,
];

const CONFIRM_TYPED: &[Binding] = &[
    Binding {
        keys: &[],
        label: "letters",
        does: "type what the dialog asks for: the workspace id, or the verb and count for several (suspend 3)",
        hint: "type what it asks",
        footer_order: 0,
    },
    SWITCH,
    CHOOSE,
    Binding {
        keys: &[(Ctrl('t'), TakeOver)],
        label: "Ctrl-T",
        does: "take over while typing the id",
        hint: "Ctrl-T take over",
        footer_order: 3,
    },
    Binding {
        keys: &[(Ctrl('v'), ShowRequest)],
        label: "Ctrl-V",
        does: "show or hide the epoch and the exact request while typing the id",
        hint: "Ctrl-V request",
        footer_order: 4,
    },
    CANCEL,
];

const SCROLL: Binding = Binding {
    keys: &[
        (Code(KeyCode::Up), Up),
        (Char('k'), Up),
        (Code(KeyCode::Down), Down),
        (Char('j'), Down),
        (Code(KeyCode::PageUp), PageUp),
        (Code(KeyCode::PageDown), PageDown),
        (Code(KeyCode::Home), Top),
        (Char('g'), Top),
        (Code(KeyCode::End), Bottom),
        (Char('G'), Bottom),
    ],
    label: "↑/k ↓/j PgUp PgDn Home/g End/G",
    does: "scroll",
    hint: "↑↓ PgUp PgDn scroll",
    footer_order: 1,
};

const SCROLLING: &[Binding] = &[
    SCROLL,
    Binding {
        keys: &[(Code(KeyCode::Esc), Close), (Char('q'), Close), (Ctrl('c'), Quit)],
        label: "Esc, q",
        does: "close",
        hint: "Esc close",
        footer_order: 0,
    },
];

/// The leaks view: the cursor moves over the leaks, space marks, D deletes the marked (or the
/// one under the cursor) through `leaks --delete`'s own use case, after a typed count.
const LEAKS_VIEW: &[Binding] = &[
    Binding {
        keys: SCROLL.keys,
        label: "↑/k ↓/j PgUp PgDn Home/g End/G",
        does: "move over the leaks",
        hint: "↑↓ move",
        footer_order: 1,
    },
    Binding {
        keys: &[(Char(' '), Mark)],
        label: "Space",
        does: "mark the leak (or unmark it)",
        hint: "Space mark",
        footer_order: 2,
    },
    Binding {
        keys: &[(Char('D'), Delete)],
        label: "D",
        does: "delete the marked leaks, else the one under the cursor (re-checked, typed count, tombstone for restore)",
        hint: "D delete",
        footer_order: 3,
    },
    Binding {
        keys: &[(Code(KeyCode::Esc), Close), (Char('q'), Close), (Ctrl('c'), Quit)],
        label: "Esc, q",
        does: "close",
        hint: "Esc close",
        footer_order: 0,
    },
];

/// The pulse view: the cursor moves over the counts (or what an opened one is made of), Enter
/// opens a count (or shows a workspace's row), r reads again now, Esc steps back.
const PULSE_VIEW: &[Binding] = &[
    Binding {
        keys: SCROLL.keys,
        label: "↑/k ↓/j PgUp PgDn Home/g End/G",
        does: "move over the counts (or over what the opened count is made of)",
        hint: "↑↓ move",
        footer_order: 1,
    },
    Binding {
        keys: &[(Code(KeyCode::Enter), Choose)],
        label: "Enter",
        does: "list what the count is made of (each start, its latency, a slow one's cause and evidence); on a workspace's start, show its row",
        hint: "Enter open",
        footer_order: 2,
    },
    Binding {
        keys: &[(Char('r'), Refresh)],
        label: "r",
        does: "compute the pulse again now (while open it is live: computed on the watches' changes, at most once a second)",
        hint: "r read again",
        footer_order: 3,
    },
    Binding {
        keys: &[(Code(KeyCode::Esc), Close), (Char('q'), Close), (Ctrl('c'), Quit)],
        label: "Esc, q",
        does: "back to the counts, or close",
        hint: "Esc back",
        footer_order: 0,
    },
];

/// The help and the context picker close with Esc, q, or the key that opened either.
const CLOSE_POPUP: Binding = Binding {
    keys: &[
        (Code(KeyCode::Esc), Close),
        (Char('q'), Close),
        (Char('?'), Close),
        (Char('c'), Close),
        (Ctrl('c'), Quit),
    ],
    label: "Esc, q, ?, c",
    does: "close",
    hint: "Esc close",
    footer_order: 0,
};

const HELP_POPUP: &[Binding] = &[SCROLL, CLOSE_POPUP];

/// The YAML view: the log pane's search (typed at the same prompt, its matches shown alike).
const YAML_VIEW: &[Binding] = &[
    SCROLL,
    Binding {
        keys: &[(Char('/'), Filter), (Char('n'), NextMatch), (Char('N'), PrevMatch)],
        label: "/ n N",
        does: "search: every line holding the text highlighted, Enter goes to the first from the top of the view; n the next match down, N up, wrapping",
        hint: "/ search · n/N next",
        footer_order: 2,
    },
    Binding {
        keys: &[(Code(KeyCode::Esc), Close), (Char('q'), Close), (Ctrl('c'), Quit)],
        label: "Esc, q",
        does: "close",
        hint: "Esc close",
        footer_order: 0,
    },
];

const LOG_PANE: &[Binding] = &[
    Binding {
        keys: &[
            (Code(KeyCode::Up), Up),
            (Char('k'), Up),
            (Code(KeyCode::Down), Down),
            (Char('j'), Down),
            (Code(KeyCode::PageUp), PageUp),
            (Code(KeyCode::PageDown), PageDown),
            (Code(KeyCode::Home), Top),
            (Char('g'), Top),
            (Code(KeyCode::End), Bottom),
            (Char('G'), Bottom),
        ],
        label: "↑/k ↓/j PgUp PgDn Home/g End/G",
        does: "scroll (up stops following; the bottom follows again)",
        hint: "↑↓ scroll",
        footer_order: 2,
    },
    Binding {
        keys: &[(Char('f'), Follow)],
        label: "f",
        does: "follow the newest line on/off",
        hint: "f follow",
        footer_order: 3,
    },
    Binding {
        keys: &[(Char('w'), Wrap)],
        label: "w",
        does: "wrap long lines on/off",
        hint: "w wrap",
        footer_order: 5,
    },
    Binding {
        keys: &[(Char('/'), Filter), (Char('n'), NextMatch), (Char('N'), PrevMatch)],
        label: "/ n N",
        does: "search: every match highlighted, Enter goes to the newest; n the next match down (newer), N up (older), each shown with the lines around it",
        hint: "/ search · n/N next",
        footer_order: 1,
    },
    Binding {
        keys: &[(Char('&'), FilterLines)],
        label: "&",
        does: "show only the lines holding a text (as less's &; Enter on an empty text shows every line again)",
        hint: "& filter",
        footer_order: 7,
    },
    Binding {
        keys: &[(Char('t'), Timestamps)],
        label: "t",
        does: "the server's timestamp before each line, on/off",
        hint: "t time",
        footer_order: 8,
    },
    Binding {
        keys: &[(Char('p'), Previous)],
        label: "p",
        does: "the previous instance of the container (before its last restart), or back",
        hint: "p previous",
        footer_order: 4,
    },
    Binding {
        keys: &[(Ctrl('s'), Save)],
        label: "Ctrl-S",
        does: "save what the pane holds to a file in the temporary directory",
        hint: "Ctrl-S save",
        footer_order: 6,
    },
    Binding {
        keys: &[
            (Code(KeyCode::Esc), Close),
            (Char('q'), Close),
            (Char('l'), Close),
            (Ctrl('c'), Quit),
        ],
        label: "Esc, q, l",
        does: "close",
        hint: "Esc close",
        footer_order: 0,
    },
];

const LOG_SEARCH: &[Binding] = &[
    Binding {
        keys: &[(Code(KeyCode::Enter), Keep)],
        label: "Enter",
        does: "search: the newest line holding the text (a filter: show only the lines holding it)",
        hint: "type · Enter apply",
        footer_order: 0,
    },
    Binding {
        keys: &[(Code(KeyCode::Esc), ClearFilter)],
        label: "Esc",
        does: "clear the search (or the filter)",
        hint: "Esc clear",
        footer_order: 1,
    },
    QUIT_ANYWHERE,
];

const COMMAND_LINE: &[Binding] = &[
    Binding {
        keys: &[(Code(KeyCode::Enter), Keep)],
        label: "Enter",
        does: "run the command",
        hint: "type a command · Enter run",
        footer_order: 0,
    },
    Binding {
        keys: &[(Code(KeyCode::Tab), Complete)],
        label: "Tab",
        does: "complete the word",
        hint: "Tab complete",
        footer_order: 1,
    },
    Binding {
        keys: &[(Code(KeyCode::Esc), ClearFilter)],
        label: "Esc",
        does: "cancel",
        hint: "Esc cancel",
        footer_order: 2,
    },
    QUIT_ANYWHERE,
];

/// The picker's rows move as a popup scrolls (PgUp/PgDn: to the first and last).
/// A picker's moves: arrows and pages only, as letters type its filter.
const PICK_MOVE: Binding = Binding {
    keys: &[
        (Code(KeyCode::Up), Up),
        (Code(KeyCode::Down), Down),
        (Code(KeyCode::PageUp), PageUp),
        (Code(KeyCode::PageDown), PageDown),
        (Code(KeyCode::Home), Top),
        (Code(KeyCode::End), Bottom),
    ],
    label: "↑ ↓ PgUp PgDn Home End · letters",
    does: "move; in the context picker letters narrow the list (a fuzzy match)",
    hint: "↑↓ move",
    footer_order: 1,
};

const PICK_CLOSE: Binding = Binding {
    keys: &[(Code(KeyCode::Esc), Close), (Ctrl('c'), Quit)],
    label: "Esc",
    does: "close",
    hint: "Esc close",
    footer_order: 0,
};

const PICKER: &[Binding] = &[PICK_MOVE, CHOOSE, PICK_CLOSE];

pub(crate) fn bindings(context: Context) -> &'static [Binding] {
    match context {
        Context::List => LIST,
        Context::Filtering => FILTERING,
        Context::Confirm => CONFIRM,
        Context::ConfirmTyped => CONFIRM_TYPED,
        Context::Scrolling => SCROLLING,
        Context::Yaml => YAML_VIEW,
        Context::HelpPopup => HELP_POPUP,
        Context::Picker => PICKER,
        Context::Logs => LOG_PANE,
        Context::LogSearch => LOG_SEARCH,
        Context::Command => COMMAND_LINE,
        Context::Leaks => LEAKS_VIEW,
        Context::Pulse => PULSE_VIEW,
    }
}

/// A binding that means something only across several contexts: one context's footer and help
/// leave it out.
fn fleet_only(b: &Binding) -> bool {
    b.keys.iter().any(|(_, command)| *command == Contexts)
}

/// The command a key press asks for in `context`, if any.
pub(crate) fn command_for(context: Context, event: KeyEvent) -> Option<Command> {
    bindings(context)
        .iter()
        .flat_map(|b| b.keys.iter())
        .find(|(key, _)| key.matches(event))
        .map(|(_, command)| *command)
}

/// The footer's hints for `context`, most important first, as many whole hints as fit `width`;
/// the picker's only across several contexts (`fleet`).
#[cfg(test)]
pub(crate) fn footer(context: Context, width: usize, fleet: bool) -> String {
    footer_of(bindings(context), width, fleet, |b| b.hint.to_string())
}

/// The footer of `table`, each binding's hint as `hint` words it (the config file may move keys).
fn footer_of(table: &[Binding], width: usize, fleet: bool, hint: impl Fn(&Binding) -> String) -> String {
    let mut hints: Vec<(usize, &Binding, String)> = table
        .iter()
        .enumerate()
        .filter(|(_, b)| !b.hint.is_empty() && (fleet || !fleet_only(b)))
        .map(|(i, b)| (i, b, hint(b)))
        .filter(|(_, _, h)| !h.is_empty())
        .collect();
    hints.sort_by_key(|(_, b, _)| b.footer_order);
    let mut shown: Vec<(usize, String)> = Vec::new();
    let mut used = 0;
    for (i, _, h) in hints {
        let cost = h.chars().count() + if shown.is_empty() { 0 } else { 3 };
        if used + cost <= width {
            used += cost;
            shown.push((i, h));
        }
    }
    // shown in the table's order, so the footer reads the same at every width
    shown.sort_by_key(|(i, _)| *i);
    shown.into_iter().map(|(_, h)| h).collect::<Vec<_>>().join(" · ")
}

/// The help popup fitted to `max` columns: the list's keys (the picker's where there is a context
/// to pick, `picker`; the fleet's paragraph across several contexts, `fleet`), then the
/// confirmation's; a description that wraps continues under itself, not under the keys.
pub(crate) fn help(keys: &KeyMap, max: usize, fleet: bool, picker: bool) -> String {
    let shown: Vec<(String, &Binding)> = LIST
        .iter()
        .filter(|b| fleet || picker || !fleet_only(b))
        .map(|b| (keys.label(b), b))
        .chain(
            CONFIRM
                .iter()
                .filter(|b| b.label == "t")
                .map(|b| (b.label.to_string(), b)),
        )
        .collect();
    let label_width = shown.iter().map(|(l, _)| l.chars().count()).max().unwrap_or(0) + 2;
    let mut lines: Vec<String> = Vec::new();
    // the keys the config file moved first: they are what this user's fingers need
    let moved = keys.said();
    if !moved.is_empty() {
        lines.push("Keys moved by the config file (the action and its confirmation are the same):".into());
        lines.extend(moved.iter().map(|m| format!("  {m}")));
        lines.push(String::new());
    }
    for (label, b) in &shown {
        let described = namzu_engine::present::layout::wrap(b.does, max.saturating_sub(label_width));
        for (i, part) in described.iter().enumerate() {
            let label = if i == 0 { label.as_str() } else { "" };
            lines.push(format!("{label:<label_width$}{}", part.trim_start()));
        }
    }
    lines.push(String::new());
    lines.extend(namzu_engine::present::layout::wrap(
        "Every action opens a confirmation with a fresh read, the epoch it carries and the exact request; \
focus starts on Cancel. Writes are fenced by the holder epoch, exactly as @namzu/sandbox does.",
        max,
    ));
    if fleet {
        lines.push(String::new());
        lines.extend(namzu_engine::present::layout::wrap(FLEET_HELP, max));
    }
    lines.join("\n")
}

/// What the help adds across several contexts.
pub(crate) const FLEET_HELP: &str = "Several contexts: each row acts in its own context, under that context's rules \
(read-only, typed confirmation, maxBulk). The filter matches the context's name too; every sort \
breaks ties by context, namespace and id, so each context's rows stay together.";

/// The README's key table rows: `| label | does |`, the list's keys and the take-over.
pub fn readme_rows() -> Vec<String> {
    LIST.iter()
        .chain(CONFIRM.iter().filter(|b| b.label == "t"))
        .map(|b| format!("| {} | {} |", b.label, b.does))
        .chain(std::iter::once("| *log pane* | |".to_string()))
        .chain(LOG_PANE.iter().map(|b| format!("| {} | {} |", b.label, b.does)))
        .chain(std::iter::once("| *YAML view* (`y`) | |".to_string()))
        .chain(YAML_VIEW.iter().map(|b| format!("| {} | {} |", b.label, b.does)))
        .chain(std::iter::once("| *leaks view* (`:leaks`) | |".to_string()))
        .chain(LEAKS_VIEW.iter().map(|b| format!("| {} | {} |", b.label, b.does)))
        .chain(std::iter::once("| *pulse view* (`:pulse`) | |".to_string()))
        .chain(PULSE_VIEW.iter().map(|b| format!("| {} | {} |", b.label, b.does)))
        .collect()
}

#[cfg(test)]
mod tests;
