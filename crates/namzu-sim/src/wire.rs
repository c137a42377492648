//! What the router and the watch stream share: the body type, one parsed request, and query
//! decoding (also used by the request record).

use super::auth::User;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use serde_json::Value;
use std::convert::Infallible;

pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

/// Split and percent-decode a query string.
pub(crate) fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match u8::from_str_radix(&s[i + 1..i + 3], 16) {
                Ok(b) => {
                    out.push(b);
                    i += 2;
                }
                Err(_) => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One parsed request.
pub(crate) struct Req {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub content_type: String,
    pub accept: String,
    pub body: Option<Value>,
    pub raw_body: Bytes,
    pub user: Option<User>,
    /// The client's User-Agent: a write's field manager when it names none (as the API server).
    pub user_agent: String,
}

impl Req {
    pub(crate) fn param(&self, key: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}
