//! Exit codes (documented in README and `--help`) and the one-line failure they travel with.

use namzu_domain::naming::InvalidWorkspaceId;
use namzu_engine::cluster::error::ClusterError;
use namzu_engine::ops::fleet::{ContextError, FleetError};

pub(crate) const OK: i32 = 0;
pub const ERROR: i32 = 1;
pub const USAGE: i32 = 2;
/// Refused by the holder-epoch fence, or changed concurrently: not applied.
pub(crate) const NOT_APPLIED: i32 = 3;
/// No workspace by that name, for every verb that names one: no Sandbox there, or the Sandbox
/// there is not a workspace (reconcile: absent).
pub(crate) const NOT_FOUND: i32 = 4;
/// The write landed but the transition was not confirmed before --timeout.
pub(crate) const WAIT_TIMED_OUT: i32 = 5;
/// `reconcile`: another Sandbox or volume claim stands under the retained workspace's name;
/// `--wait`: the Sandbox written was replaced while waiting.
pub(crate) const REPLACED: i32 = 6;
/// `logs`, `exec`: the workspace has no pod or container to read or run in (suspended, its pod
/// not created yet, the container never started, no previous instance).
pub(crate) const UNAVAILABLE: i32 = 7;
/// `--at`: the recording does not hold that instant (nothing recorded then, or nothing at all).
pub(crate) const NOT_RECORDED: i32 = 8;

pub(crate) const HELP: &str = "Exit codes: 0 success, 1 error (the cluster unreachable or refusing, no kubeconfig, …), \
2 usage (bad flag, argument or workspace id), \
3 refused (by the holder-epoch fence, a foreign per-sandbox egress policy, a refresh's checks, or a write to a \
Sandbox that is not a workspace) or changed concurrently (not applied), 4 workspace not found, by every verb that \
names one (reconcile: absent), 5 wait timed out (the write landed; the \
transition is unconfirmed), 6 replaced (reconcile: a different Sandbox or volume claim stands there; --wait: the Sandbox was replaced while waiting), 7 unavailable (logs, exec: no pod or \
container to read or run in: the workspace is suspended, its pod not created yet, the container never started), \
8 not recorded (--at: the recording does not hold that instant).";

/// No workspace `id` in the connection's namespace: absent, or a Sandbox that is not a
/// workspace (said exactly so). Exit 4 either way.
pub(crate) async fn absent(
    conn: &namzu_engine::cluster::connect::Connection,
    id: &namzu_domain::naming::WorkspaceId,
) -> Failure {
    use namzu_engine::cluster::resources::{self, SANDBOXES};
    let ns = &conn.namespace;
    let message = match resources::get(conn, &SANDBOXES, ns, &id.sandbox_name()).await {
        Ok(Some(sandbox)) if !namzu_domain::naming::is_workspace(&sandbox) => not_a_workspace(&id.sandbox_name(), ns),
        _ => format!("workspace {id} not found in namespace {ns}"),
    };
    Failure {
        code: NOT_FOUND,
        message,
    }
}

/// What is said of a Sandbox under the prefix without the library's template label.
pub(crate) fn not_a_workspace(sandbox_name: &str, namespace: &str) -> String {
    format!(
        "Sandbox {sandbox_name} in namespace {namespace} exists but is not a workspace (no {} label on its pod template)",
        namzu_domain::annotations::TEMPLATE_LABEL
    )
}

/// A failure: one line for stderr and its exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    pub fn error(message: impl Into<String>) -> Self {
        Failure {
            code: ERROR,
            message: message.into(),
        }
    }

    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: USAGE,
            message: message.into(),
        }
    }

    /// An exit code whose answer was already printed on stdout: no error line.
    pub(crate) fn quiet(code: i32) -> Self {
        Failure {
            code,
            message: String::new(),
        }
    }
}

impl From<ClusterError> for Failure {
    fn from(e: ClusterError) -> Self {
        match e {
            ClusterError::NotRecorded(message) => Failure {
                code: NOT_RECORDED,
                message,
            },
            e => Failure::error(e.to_string()),
        }
    }
}

/// A fleet's error as the command's: a usage error exits 2, a context left out 1 with no line of
/// its own (its warning said why), anything else 1 with its line.
impl From<FleetError> for Failure {
    fn from(e: FleetError) -> Self {
        match e {
            FleetError::LeftOut => Failure::quiet(ERROR),
            e if e.is_usage() => Failure::usage(e.to_string()),
            e => Failure::error(e.to_string()),
        }
    }
}

impl ContextError for Failure {
    fn why(&self) -> String {
        self.message.clone()
    }
}

impl From<InvalidWorkspaceId> for Failure {
    fn from(e: InvalidWorkspaceId) -> Self {
        Failure::usage(e.to_string())
    }
}
