//! The request record: what every request was and what it got, for tests to assert on.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: String,
    pub content_type: String,
    /// Parsed JSON body, or the raw text as a string; `None` when empty.
    pub body: Option<Value>,
    /// 0 when no answer was sent (hang, reset).
    pub status: u16,
    pub user: String,
    pub user_agent: String,
    /// Bytes of the answer's body (0 for a stream, a hang or a reset).
    pub bytes: u64,
}

impl Recorded {
    /// A query parameter's (percent-decoded) value.
    pub fn query_param(&self, key: &str) -> Option<String> {
        super::wire::query_pairs(&self.query)
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }
}
