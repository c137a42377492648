//! Fault injection by rule: method + path pattern, on the n-th match, the first n, or always.

use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub enum FaultAction {
    /// Answer with this status and a Status body (`Retry-After` when given).
    Status {
        code: u16,
        reason: String,
        message: String,
        retry_after: Option<u32>,
    },
    /// Wait, then serve normally.
    Delay(Duration),
    /// Never answer.
    Hang,
    /// Close the connection without an answer.
    Reset,
    /// Serve the request (a write lands), then close the connection before the answer: the
    /// client cannot know whether its write happened.
    Lost,
    /// Change the addressed object first (as another writer would), then serve the request.
    Mutate(Mutation),
    /// Answer with exactly these bytes as `application/json` (a hostile or broken server, a
    /// proxy answering for another object): what a client must survive.
    Raw { code: u16, body: String },
    /// Serve the request (its read or write done, the server's lock released; a LIST's page
    /// taken but not yet encoded), then hold the answer until the gate opens: a request held
    /// mid-flight, while others are served.
    Hold(Gate),
    /// Serve a LIST as if its first page were asked (the request's `continue` dropped), the
    /// answer's continue token replaced by the next of these in turn, cycling (A, B, A, …);
    /// none: a token never handed out before each time (`sim-page-<n>`). A list that never ends.
    /// (As it fires, the action names the one token of that answer.)
    ContinueTokens(Vec<String>),
    /// Answer 200 `text/plain` with `head`, then send `drip` every 20 ms (on the runtime's
    /// timer) and never end the body: a log, or any stream, that goes on forever.
    Endless { head: String, drip: String },
}

/// Where [`FaultAction::Hold`] holds answers: [`Gate::held`] waits until a request is held at
/// it, [`Gate::open`] lets every held one (and any later one) go on.
#[derive(Debug, Clone)]
pub struct Gate {
    arrived: Arc<tokio::sync::Semaphore>,
    open: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate::new()
    }
}

impl Gate {
    pub fn new() -> Gate {
        Gate {
            arrived: Arc::new(tokio::sync::Semaphore::new(0)),
            open: Arc::new(tokio::sync::watch::channel(false).0),
        }
    }

    /// Wait until one more request is held at the gate (each request is counted once).
    pub async fn held(&self) {
        if let Ok(permit) = self.arrived.acquire().await {
            permit.forget();
        }
    }

    pub fn open(&self) {
        self.open.send_replace(true);
    }

    pub(crate) async fn hold(&self) {
        let mut open = self.open.subscribe();
        self.arrived.add_permits(1);
        let _ = open.wait_for(|o| *o).await;
    }
}

/// One gate is equal to itself only.
impl PartialEq for Gate {
    fn eq(&self, other: &Gate) -> bool {
        Arc::ptr_eq(&self.open, &other.open)
    }
}

/// What another writer does to the addressed object just before a request is served.
#[derive(Debug, Clone, PartialEq)]
pub enum Mutation {
    /// A status write: resourceVersion moves, annotations do not.
    BumpResourceVersion,
    /// Set an annotation (e.g. a host stamping a higher holder epoch).
    SetAnnotation { key: String, value: String },
    /// Apply a JSON merge patch (RFC 7386), e.g. a host that took over and suspended.
    MergePatch(serde_json::Value),
    /// Delete the object.
    Delete,
    /// Delete it and create one of the same name and content: a new uid and resourceVersion.
    Replace,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub method: Option<String>,
    /// Matched against the path; `*` is a wildcard, otherwise the path must contain it.
    pub path: String,
    /// Fire only on the n-th matching request (1-based).
    pub nth: Option<u32>,
    /// Fire on the first n matching requests.
    pub times: Option<u32>,
    pub action: FaultAction,
    pub(crate) seen: u32,
}

impl Fault {
    /// A rule that fires on every match until narrowed with [`Fault::nth`] or [`Fault::times`].
    pub fn new(method: Option<&str>, path: &str, action: FaultAction) -> Fault {
        Fault {
            method: method.map(str::to_uppercase),
            path: path.to_string(),
            nth: None,
            times: None,
            action,
            seen: 0,
        }
    }

    pub fn status(method: Option<&str>, path: &str, code: u16, message: &str) -> Fault {
        let reason = match code {
            429 => "TooManyRequests",
            403 => "Forbidden",
            409 => "Conflict",
            422 => "Invalid",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "Unknown",
        };
        Fault::new(
            method,
            path,
            FaultAction::Status {
                code,
                reason: reason.into(),
                message: message.into(),
                retry_after: None,
            },
        )
    }

    pub fn nth(mut self, n: u32) -> Fault {
        self.nth = Some(n);
        self
    }

    pub fn times(mut self, n: u32) -> Fault {
        self.times = Some(n);
        self
    }

    pub fn retry_after(mut self, seconds: u32) -> Fault {
        if let FaultAction::Status { retry_after, .. } = &mut self.action {
            *retry_after = Some(seconds);
        }
        self
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        self.method.as_deref().is_none_or(|m| m == method) && glob(&self.path, path)
    }

    /// Count a request; the action if this rule fires on it.
    pub(crate) fn fire(&mut self, method: &str, path: &str) -> Option<FaultAction> {
        if !self.matches(method, path) {
            return None;
        }
        self.seen += 1;
        let fires = match (self.nth, self.times) {
            (Some(n), _) => self.seen == n,
            (None, Some(t)) => self.seen <= t,
            (None, None) => true,
        };
        fires.then(|| match &self.action {
            // this answer's token: the n-th in turn
            FaultAction::ContinueTokens(tokens) => {
                let n = self.seen as usize;
                FaultAction::ContinueTokens(vec![match tokens.len() {
                    0 => format!("sim-page-{n}"),
                    len => tokens[(n - 1) % len].clone(),
                }])
            }
            other => other.clone(),
        })
    }
}

/// `*` matches any run of characters; a pattern without `*` matches as a substring.
fn glob(pattern: &str, text: &str) -> bool {
    if !pattern.contains('*') {
        return text.contains(pattern);
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_and_times() {
        let mut f = Fault::status(Some("patch"), "/sandboxes/", 500, "etcdserver: request timed out").nth(2);
        assert!(f.fire("PATCH", "/apis/x/sandboxes/a").is_none());
        assert!(f.fire("PATCH", "/apis/x/sandboxes/a").is_some());
        assert!(f.fire("PATCH", "/apis/x/sandboxes/a").is_none());
        assert!(f.fire("GET", "/apis/x/sandboxes/a").is_none());
        let mut t = Fault::new(None, "/api/*/pods", FaultAction::Hang).times(1);
        assert!(t.fire("GET", "/api/v1/namespaces/a/pods").is_some());
        assert!(t.fire("GET", "/api/v1/namespaces/a/pods").is_none());
    }

    #[test]
    fn continue_tokens_cycle_or_are_new() {
        let token = |f: &mut Fault| match f.fire("GET", "/api/v1/namespaces/a/pods") {
            Some(FaultAction::ContinueTokens(t)) => t.concat(),
            other => panic!("{other:?}"),
        };
        let mut cycle = Fault::new(
            Some("get"),
            "/pods",
            FaultAction::ContinueTokens(vec!["A".into(), "B".into()]),
        );
        let got: Vec<String> = (0..4).map(|_| token(&mut cycle)).collect();
        assert_eq!(got, ["A", "B", "A", "B"]);
        let mut fresh = Fault::new(Some("get"), "/pods", FaultAction::ContinueTokens(vec![]));
        assert_ne!(token(&mut fresh), token(&mut fresh));
    }
}
