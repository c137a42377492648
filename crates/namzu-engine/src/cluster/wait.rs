//! Waiting for a mode change to be confirmed (docs/interop.md §8): a suspend until the pod is
//! gone (404/410 or Succeeded/Failed — a deletionTimestamp is not enough); a resume until
//! Ready=True for the current generation AND a live pod whose uid differs from the one before;
//! a delete until the Sandbox is gone. Every pass first checks that the Sandbox is still the one
//! the write pinned (its uid, and the uids of the SandboxClaims that owned it when first seen):
//! a replacement ends the wait, as the library's readiness poll re-runs its ownership check on
//! every pass (docs/interop.md §13.10).

use super::connect::Connection;
use super::detail;
use namzu_domain::diagnosis::Diagnosis;
use namzu_domain::drift::OverlayFlags;
use namzu_domain::fence::Verb;
use namzu_domain::naming::WorkspaceId;
use namzu_domain::object::{owner_refs, str_at, uid};
use namzu_domain::pod;
use namzu_domain::state::{State, ready_for_current_generation};
use namzu_domain::workspace::Observed;
use serde_json::Value;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq)]
pub enum Waited {
    Confirmed,
    /// The deadline passed: what it was still waiting for, and the workspace's diagnosis.
    TimedOut {
        waiting_for: String,
        state: Option<State>,
        diagnosis: Option<Diagnosis>,
    },
    /// Another Sandbox (or another claim) stands under the name now: `was` is the uid pinned,
    /// `now` the one read (`claim <uid>` for a claim).
    Replaced {
        was: String,
        now: String,
    },
    /// The Sandbox went away while the wait was for it to change mode.
    Deleted,
    Failed(String),
}

/// What a wait holds on to: the Sandbox's uid and the uids of the claims owning it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Pinned {
    pub uid: Option<String>,
    pub claims: Vec<String>,
}

impl Pinned {
    /// The identity of `sandbox` as read (the object a write answered, or a wait's first read).
    pub(crate) fn of(sandbox: &Value) -> Pinned {
        Pinned {
            uid: uid(sandbox).map(str::to_string),
            claims: claim_uids(sandbox),
        }
    }

    /// `Some` when `sandbox` is not the one pinned: the uid pinned and the one read.
    fn replaced_by(&self, sandbox: &Value) -> Option<(String, String)> {
        if let Some(was) = &self.uid
            && uid(sandbox) != Some(was.as_str())
        {
            return Some((was.clone(), uid(sandbox).unwrap_or("-").to_string()));
        }
        let now = claim_uids(sandbox);
        (now != self.claims).then(|| {
            let say = |v: &[String]| match v {
                [] => "no claim".to_string(),
                v => format!("claim {}", v.join(", ")),
            };
            (say(&self.claims), say(&now))
        })
    }
}

/// The uids of the SandboxClaims among an object's owners, sorted.
fn claim_uids(obj: &Value) -> Vec<String> {
    let mut v: Vec<String> = owner_refs(obj)
        .iter()
        .filter(|r| str_at(r, &["kind"]) == Some("SandboxClaim"))
        .map(|r| str_at(r, &["uid"]).unwrap_or("?").to_string())
        .collect();
    v.sort();
    v
}

/// One look: `Ok(None)` = confirmed, `Ok(Some(what))` = still waiting for `what`.
fn still_waiting(verb: Verb, sandbox: &Value, pods: &[Value], pod_before: Option<&str>) -> Option<String> {
    let name = str_at(sandbox, &["metadata", "name"]).unwrap_or("");
    let index = pod::Index::new(pods);
    let current = index.named(name);
    match verb {
        Verb::Suspend => match current {
            None => None,
            Some(p) if pod::is_stopped(p) => None,
            Some(p) if pod::is_terminating(p) => Some(format!("pod {name} to finish terminating")),
            Some(_) => Some(format!("pod {name} to be deleted")),
        },
        Verb::Resume => {
            let ready = ready_for_current_generation(sandbox);
            let new_pod = current.filter(|p| pod::is_live(p) && str_at(p, &["metadata", "uid"]) != pod_before);
            match (ready, new_pod) {
                (true, Some(_)) => None,
                (false, Some(_)) => Some("Ready=True for the current generation".into()),
                (_, None) => Some(format!(
                    "a live pod whose uid differs from {}",
                    pod_before.unwrap_or("the one before the resume")
                )),
            }
        }
        Verb::Delete => Some(format!("Sandbox {name} to be gone")),
    }
}

/// Poll until confirmed or `timeout`; `progress` is told what is awaited on every look.
/// `pinned`: the Sandbox the write answered with (its uid and claims are held on every pass);
/// `None` pins the first read's.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn wait(
    conn: &Connection,
    namespace: &str,
    id: &WorkspaceId,
    verb: Verb,
    pod_before: Option<&str>,
    pinned: Option<Pinned>,
    timeout: Duration,
    mut progress: impl FnMut(&str, Option<State>),
) -> Waited {
    let start = Instant::now();
    let mut pinned = pinned;
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tick.tick().await;
        let d = match detail::read_for_wait(conn, namespace, id).await {
            Ok(Some(d)) => d,
            Ok(None) if verb == Verb::Delete => return Waited::Confirmed,
            Ok(None) => return Waited::Deleted,
            Err(e) => return Waited::Failed(e.to_string()),
        };
        let pin = pinned.get_or_insert_with(|| Pinned::of(&d.sandbox));
        if let Some((was, now)) = pin.replaced_by(&d.sandbox) {
            return Waited::Replaced { was, now };
        }
        let pods = match &d.pods {
            Observed::Known(p) => p.clone(),
            Observed::Forbidden => return Waited::Failed("pods may not be read: cannot confirm the transition".into()),
        };
        let w = d.workspace(&OverlayFlags::default(), conn.clock.now());
        match still_waiting(verb, &d.sandbox, &pods, pod_before) {
            None => return Waited::Confirmed,
            Some(what) => {
                progress(&what, Some(w.state));
                if start.elapsed() >= timeout {
                    return Waited::TimedOut {
                        waiting_for: what,
                        state: Some(w.state),
                        diagnosis: w.diagnosis,
                    };
                }
            }
        }
    }
}
