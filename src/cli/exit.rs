//! Exit codes (documented in README and `--help`) and the one-line failure they travel with.

use crate::cluster::error::ClusterError;
use crate::domain::naming::InvalidWorkspaceId;

pub const OK: i32 = 0;
pub const ERROR: i32 = 1;
pub const USAGE: i32 = 2;
/// Refused by the holder-epoch fence, or changed concurrently: not applied.
pub const NOT_APPLIED: i32 = 3;
/// The workspace does not exist (suspend, resume).
pub const NOT_FOUND: i32 = 4;
/// The write landed but the transition was not confirmed before --timeout.
pub const WAIT_TIMED_OUT: i32 = 5;
/// `reconcile`: another Sandbox or volume claim stands under the retained workspace's name;
/// `--wait`: the Sandbox written was replaced while waiting.
pub const REPLACED: i32 = 6;
/// `logs`, `exec`: the workspace has no pod or container to read or run in (suspended, its pod
/// not created yet, the container never started, no previous instance).
pub const UNAVAILABLE: i32 = 7;

pub const HELP: &str = "Exit codes: 0 success, 1 error, 2 usage (bad flag, argument or workspace id), \
3 refused (by the holder-epoch fence, a foreign per-sandbox egress policy, or a refresh's checks) or \
changed concurrently (not applied), 4 workspace not found (reconcile: absent), 5 wait timed out (the write landed; the \
transition is unconfirmed), 6 replaced (reconcile: a different Sandbox or volume claim stands there; --wait: the Sandbox was replaced while waiting), 7 unavailable (logs, exec: no pod or \
container to read or run in: the workspace is suspended, its pod not created yet, the container never started).";

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

    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: USAGE,
            message: message.into(),
        }
    }

    /// An exit code whose answer was already printed on stdout: no error line.
    pub fn quiet(code: i32) -> Self {
        Failure {
            code,
            message: String::new(),
        }
    }
}

impl From<ClusterError> for Failure {
    fn from(e: ClusterError) -> Self {
        Failure::error(e.to_string())
    }
}

impl From<InvalidWorkspaceId> for Failure {
    fn from(e: InvalidWorkspaceId) -> Self {
        Failure::usage(e.to_string())
    }
}
