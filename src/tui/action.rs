//! Everything that can happen to the UI, and everything the UI asks the I/O task to do.

use crate::cluster::inventory::Scope;
use crate::cluster::wait::Waited;
use crate::cluster::write::{Outcome, Plan};
use crate::domain::fence::Verb;
use crate::domain::workspace::Workspace;
use chrono::{DateTime, Utc};
use ratatui::crossterm::event::KeyEvent;
use serde_json::Value;

/// A workspace by namespace and id.
pub type RowKey = (String, String);

/// One refresh's result.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub rows: Vec<Workspace>,
    pub warnings: Vec<String>,
    /// Namespaces seen (for switching).
    pub namespaces: Vec<String>,
}

/// The only way state changes: `update(app, action)`.
#[derive(Debug)]
pub enum Action {
    /// A key press (releases and repeats never arrive here).
    Key(KeyEvent),
    /// Time passed: ages tick, freshness updates.
    Tick(DateTime<Utc>),
    /// The refresh interval is up: re-list (unless a refresh is still under way).
    Refresh,
    Loaded {
        scope: Scope,
        result: Result<Loaded, String>,
    },
    /// The live inventory of `scope` reported; `generation` says which Follow (an older one's
    /// late reports are dropped).
    Live {
        scope: Scope,
        generation: u64,
        event: crate::cluster::live::LiveEvent,
    },
    /// SelfSubjectAccessReview answers, and the namespaces the user may list (for switching).
    Access {
        scope: Scope,
        patch: Option<bool>,
        delete: Option<bool>,
        namespaces: Vec<String>,
    },
    Detail {
        key: RowKey,
        result: Result<String, String>,
    },
    /// A dry run of a pending action: what would be sent, or why nothing would.
    Preview {
        key: RowKey,
        take_over: bool,
        outcome: Outcome,
    },
    Done {
        key: RowKey,
        verb: Verb,
        outcome: Outcome,
    },
    WaitProgress {
        key: RowKey,
        message: String,
    },
    Waited {
        key: RowKey,
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
}

/// Work for the I/O task; results come back as actions.
#[derive(Debug, Clone)]
pub enum Effect {
    /// List the scope once.
    Refresh(Scope),
    /// Keep the scope's rows current with watches, until a Follow of a later generation
    /// replaces it.
    Follow {
        scope: Scope,
        generation: u64,
    },
    CheckAccess(Scope),
    Detail(RowKey),
    /// The whole Sandbox as YAML (answered as `Action::Detail`).
    Yaml(RowKey),
    Preview {
        plan: Plan,
        take_over: bool,
    },
    Write {
        plan: Plan,
        wait: bool,
    },
}
