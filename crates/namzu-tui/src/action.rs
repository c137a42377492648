//! Everything that can happen to the UI, and everything the UI asks the I/O task to do.

use chrono::{DateTime, Utc};
use namzu_domain::fence::Verb;
use namzu_domain::naming::WorkspaceKey;
use namzu_engine::cluster::inventory::Scope;
use namzu_engine::cluster::wait::Waited;
use namzu_engine::cluster::write::{Outcome, Plan};
use ratatui::crossterm::event::KeyEvent;
use serde_json::Value;

/// The port the TUI's `f` forwards: where the workspace's server listens (the sim's listener).
pub(crate) const FORWARD_PORT: u16 = 8080;

/// The only way state changes: `update(app, action)`.
#[derive(Debug)]
pub enum Action {
    /// A key press (releases and repeats never arrive here).
    Key(KeyEvent),
    /// Time passed: ages tick, freshness updates.
    Tick(DateTime<Utc>),
    /// A context's live inventory of `scope` reported; `generation` says which of its Follows
    /// (an older one's late reports are dropped).
    Live {
        context: String,
        scope: Scope,
        generation: u64,
        event: namzu_engine::cluster::live::LiveEvent,
    },
    /// A context's SelfSubjectAccessReview answers, and the namespaces the user may list there
    /// (for switching).
    Access {
        context: String,
        scope: Scope,
        patch: Option<bool>,
        delete: Option<bool>,
        namespaces: Vec<String>,
    },
    Detail {
        key: WorkspaceKey,
        result: Result<String, String>,
    },
    /// A dry run of a pending action: what would be sent, or why nothing would.
    Preview {
        key: WorkspaceKey,
        take_over: bool,
        outcome: Outcome,
    },
    Done {
        key: WorkspaceKey,
        verb: Verb,
        outcome: Outcome,
    },
    WaitProgress {
        key: WorkspaceKey,
        message: String,
    },
    /// A write of a batch that a stop (the UI quitting, a signal, the audit log failing) kept
    /// from starting: nothing sent. Why, as the stop line says it.
    NotStarted {
        key: WorkspaceKey,
        why: &'static str,
    },
    Waited {
        key: WorkspaceKey,
        verb: Verb,
        waited: Waited,
    },
    /// This session's audit entries, after a write.
    Sent(Vec<Value>),
    /// The audit log could not record a write that was sent.
    AuditFailed(String),
    /// An I/O task died (a bug): the UI ends and says why, rather than wait for an answer forever.
    Crashed(String),
    /// SIGTERM, SIGHUP or SIGINT: quit as `q` does, restoring the terminal.
    Terminated,
    /// The log pane's stream `stream` opened: the pod and container it reads. `from` is which
    /// of the pane's workspaces it is (0 for a pane of one).
    LogOpened {
        stream: u64,
        from: usize,
        source: String,
    },
    /// Lines of stream `stream` from workspace `from`, all that had arrived.
    LogLines {
        stream: u64,
        from: usize,
        lines: Vec<String>,
    },
    /// A restart, a reconnect: said in the pane between the lines.
    LogNote {
        stream: u64,
        from: usize,
        text: String,
    },
    /// Stream `stream` of workspace `from` ended (`failed`: it could not be read at all), and why.
    LogEnded {
        stream: u64,
        from: usize,
        text: String,
        failed: bool,
    },
    /// A history (answered into the history popup).
    History {
        key: WorkspaceKey,
        result: Result<namzu_engine::present::history::History, String>,
    },
    /// A shell may start: the kubectl command line for the row's own pod and what it runs in;
    /// or why not.
    ShellReady {
        key: WorkspaceKey,
        result: Result<ShellTarget, String>,
    },
    /// A file was written (the log pane's save), or why not: for the status line.
    Saved(Result<String, String>),
    /// The shell ended: what the status line says of it; or kubectl refused it, in its words
    /// (kept on screen until dismissed).
    ShellEnded(Result<String, String>),
    /// A forward's news (where it listens, each new target, a wait): for the status line.
    Forwarding(String),
    /// Another context was opened (`:ctx NAME` in a single-context session), or why not.
    ContextOpened {
        context: String,
        result: Result<crate::context_options::ContextOptions, String>,
    },
    /// A context's leaks in `scope` (for the leaks view), and what it could not read.
    Leaks {
        context: String,
        scope: Scope,
        result: Result<(Vec<namzu_domain::leaks::Leak>, Vec<String>), String>,
    },
    /// A context's recording at an instant (for `:at`), or why it has none.
    Replayed {
        context: String,
        scope: Scope,
        instant: chrono::DateTime<chrono::Utc>,
        result: Result<namzu_engine::ops::replay::RowsAt, String>,
    },
    /// What `Effect::Copy` came to, in words.
    Copied(String),
    /// The leaks view's deletes done: what they came to, in words.
    LeaksDeleted {
        context: String,
        scope: Scope,
        result: Result<String, String>,
    },
}

/// Where a shell runs: kubectl's arguments, and the pod and container they name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellTarget {
    pub argv: Vec<String>,
    pub pod: String,
    pub container: String,
}

/// Work for the I/O task, each in one context; results come back as actions.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Keep the context's rows of the scope current with watches, until a Follow of a later
    /// generation in that context replaces it.
    Follow {
        context: String,
        scope: Scope,
        generation: u64,
    },
    CheckAccess {
        context: String,
        scope: Scope,
    },
    Detail(WorkspaceKey),
    /// The whole Sandbox as YAML (answered as `Action::Detail`).
    Yaml(WorkspaceKey),
    /// A dry run of `plan` in the row's context.
    Preview {
        key: WorkspaceKey,
        plan: Plan,
        take_over: bool,
    },
    /// The confirmed writes of one context, each bound to what the popup showed, sent through
    /// the one batch every front-end's writes go through (`ops::write::confirmed` and `run`).
    Writes {
        context: String,
        writes: Vec<(WorkspaceKey, Plan)>,
        /// The popup's take-over toggle: the mode found already there means it was not performed.
        take_over: bool,
        wait: bool,
    },
    /// Stream the log of the row's own pod into the log pane (replacing any stream before it).
    Logs {
        key: WorkspaceKey,
        container: Option<String>,
        previous: bool,
        stream: u64,
    },
    /// Stream the logs of several workspaces (the marked rows, each in its own context) into one
    /// log pane, each line after its workspace, as `kubectl namzu logs -f` does with several.
    LogsOf {
        keys: Vec<WorkspaceKey>,
        previous: bool,
        stream: u64,
    },
    /// Stop the log pane's stream `stream` (and any older one, whichever runs first).
    StopLogs {
        key: WorkspaceKey,
        stream: u64,
    },
    /// The row's history.
    History(WorkspaceKey),
    /// Find the row's own pod and container for a shell (answered as `Action::ShellReady`).
    Shell(WorkspaceKey),
    /// Forward a free local port to the row's own pod's [`FORWARD_PORT`] until the UI quits
    /// (news answered as `Action::Forwarding`).
    Forward(WorkspaceKey),
    /// Open context `context` of the kubeconfig in place of `replacing` (whose watches stop);
    /// answered as `Action::ContextOpened`.
    OpenContext {
        context: String,
        replacing: String,
    },
    /// What `kubectl namzu leaks` lists in `context` for `scope` (answered as `Action::Leaks`).
    Leaks {
        context: String,
        scope: Scope,
    },
    /// Delete these leaks of `context` in `scope` through `leaks --delete`'s use case
    /// (`ops::leaks`), `typed` the count the user typed (answered as `Action::LeaksDeleted`).
    DeleteLeaks {
        context: String,
        scope: Scope,
        names: Vec<String>,
        include_detached: bool,
        typed: String,
    },
    /// The pulse view's ask of `context`'s live follow: compute the pulse on its watches
    /// (`ask`), or no longer (`None`); answered as `LiveEvent::Pulse`. `seq` orders the asks
    /// (effects run in any order: an older one never overrides a newer).
    PulseWatch {
        context: String,
        seq: u64,
        ask: Option<namzu_engine::cluster::live::PulseAsk>,
    },
    /// The rows of `context` in `scope` as the flight recorder held them at `instant`
    /// (`ops::replay::rows_at`, what `list --at` reads; answered as `Action::Replayed`).
    ReplayAt {
        context: String,
        scope: Scope,
        instant: chrono::DateTime<chrono::Utc>,
        /// Also every instant the recording changed at (a read of the whole store): once per
        /// replay, not at each step.
        changes: bool,
    },
    /// The row's detail as the recording held it at `instant` (`inspect --at`'s read; answered
    /// as `Action::Detail`).
    DetailAt {
        key: WorkspaceKey,
        instant: chrono::DateTime<chrono::Utc>,
    },
    /// Put `text` on the terminal's clipboard (OSC 52), answered as `Action::Copied`.
    Copy(String),
    /// Write `text` to a new file `name` in the temporary directory.
    Save {
        key: WorkspaceKey,
        name: String,
        text: String,
    },
}

impl Effect {
    /// The context it acts in.
    pub fn context(&self) -> &str {
        match self {
            Effect::Follow { context, .. }
            | Effect::CheckAccess { context, .. }
            | Effect::OpenContext { context, .. } => context,
            Effect::Leaks { context, .. }
            | Effect::DeleteLeaks { context, .. }
            | Effect::PulseWatch { context, .. }
            | Effect::ReplayAt { context, .. } => context,
            // the terminal's, no context's; several contexts' (the Io finds each)
            Effect::Copy(_) | Effect::LogsOf { .. } => "",
            Effect::Detail(key)
            | Effect::Yaml(key)
            | Effect::Preview { key, .. }
            | Effect::Logs { key, .. }
            | Effect::StopLogs { key, .. }
            | Effect::History(key)
            | Effect::Shell(key)
            | Effect::Forward(key)
            | Effect::DetailAt { key, .. }
            | Effect::Save { key, .. } => key.context_name(),
            Effect::Writes { context, .. } => context,
        }
    }
}
