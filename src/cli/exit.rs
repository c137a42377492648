//! Exit codes (documented in README and `--help`) and the one-line failure they travel with.

pub const OK: i32 = 0;
pub const ERROR: i32 = 1;
pub const USAGE: i32 = 2;

pub const HELP: &str = "Exit codes: 0 success, 1 error, 2 usage.";

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
}
