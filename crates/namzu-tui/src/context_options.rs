//! What the UI is told about a context: `app` starts from it, `io` answers an opened one in an
//! action, so it sits below both.

use namzu_domain::safety::ContextRules;

/// A context the UI is given: where it is, its safety rules, and why it could not be opened.
#[derive(Debug, Clone, Default)]
pub struct ContextOptions {
    pub name: String,
    pub server: String,
    /// Its own namespace (`-n`, else the context's): where it is read until one is chosen.
    pub namespace: String,
    pub rules: ContextRules,
    pub open_error: Option<String>,
}
