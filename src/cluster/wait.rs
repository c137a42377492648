//! Waiting for a mode change to be confirmed (docs/interop.md §8): a suspend until the pod is
//! gone (404/410 or Succeeded/Failed — a deletionTimestamp is not enough); a resume until
//! Ready=True for the current generation AND a live pod whose uid differs from the one before.

use super::connect::Connection;
use super::detail;
use crate::domain::diagnosis::Diagnosis;
use crate::domain::drift::OverlayFlags;
use crate::domain::fence::Verb;
use crate::domain::naming::WorkspaceId;
use crate::domain::object::str_at;
use crate::domain::pod;
use crate::domain::state::{State, ready_for_current_generation};
use crate::domain::workspace::Observed;
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
    Failed(String),
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
        Verb::Delete => None,
    }
}

/// Poll until confirmed or `timeout`; `progress` is told what is awaited on every look.
pub async fn wait(
    conn: &Connection,
    namespace: &str,
    id: &WorkspaceId,
    verb: Verb,
    pod_before: Option<&str>,
    timeout: Duration,
    mut progress: impl FnMut(&str, Option<State>),
) -> Waited {
    let start = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tick.tick().await;
        let d = match detail::read_for_wait(conn, namespace, id).await {
            Ok(Some(d)) => d,
            Ok(None) => return Waited::Failed(format!("workspace {id} was deleted while waiting")),
            Err(e) => return Waited::Failed(e.to_string()),
        };
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
