//! `pulse`, whichever front-end asks: read what a context's pulse is computed from — and only
//! that — and compute it (`domain::pulse`). Per context, in scope (one namespace or all):
//!
//! - one LIST each of SandboxClaims and SandboxWarmPools (paged like every LIST; a 404 means the
//!   extensions are not installed: no claims, said once as a note);
//! - one LIST of Sandboxes, pruned as parsed to metadata, mode, the pod template's labels and the
//!   conditions with their transition times (`projection::PULSE_SANDBOX`);
//! - the pods of the Sandboxes of claims made in the window, one LIST per namespace with such
//!   claims, selected by agent-sandbox's `sandbox-name-hash` label (never other apps' pods), pruned
//!   to what the start-up waterfall reads;
//! - the Events of those namespaces about Pods, Sandboxes and SandboxClaims (three LISTs by
//!   `involvedObject.kind`), and about the warm pools (their progress).
//!
//! A read that is forbidden is a warning and leaves its part unknown, never taken as zero.

use crate::cluster::connect::Connection;
use crate::cluster::error::ClusterError;
use crate::cluster::kinds::{PULSE_PODS, PULSE_SANDBOXES};
use crate::cluster::resources::{self, ApiKind, CLAIMS, EVENTS, WARM_POOLS};
use chrono::Duration;
use namzu_domain::annotations::SANDBOX_NAME_HASH;
use namzu_domain::object::namespace;
use namzu_domain::pulse::{self, Inputs, Pulse};
use serde_json::Value;
use std::collections::BTreeSet;

/// What a front-end asks for.
#[derive(Debug, Clone)]
pub struct Request {
    /// The namespace read; `None`: every namespace (`-A`).
    pub namespace: Option<String>,
    /// The window: starts requested in the last this long.
    pub since: Duration,
}

/// One context's pulse, with the warnings of its read.
#[derive(Debug, Clone)]
pub struct Read {
    pub pulse: Pulse,
    pub warnings: Vec<String>,
}

/// A LIST in scope; `None` (with a warning) when forbidden or not served.
async fn listed(
    conn: &Connection,
    kind: &ApiKind,
    ns: Option<&str>,
    selector: Option<&str>,
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<Value>>, ClusterError> {
    match resources::list(conn, kind, ns, selector).await {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) if e.is_forbidden() => {
            warnings.push(format!("warning: {e}; the pulse leaves its part unknown"));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Events of `ns` about objects of `kind`; `None` when they may not be read.
async fn events_of(
    conn: &Connection,
    ns: &str,
    kind: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<Value>>, ClusterError> {
    match resources::list_fields(conn, &EVENTS, ns, &format!("involvedObject.kind={kind}")).await {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_forbidden() || e.is_not_found() => {
            warnings.push(format!(
                "warning: {e}; causes told by Events (controller errors, pulls, scheduling) are unknown"
            ));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Read one context and compute its pulse.
pub async fn read(conn: &Connection, request: &Request) -> Result<Read, ClusterError> {
    let mut warnings = Vec::new();
    let ns = request.namespace.as_deref();
    let now = conn.clock.now();
    let (claims, pools) = {
        let (mut w1, mut w2) = (Vec::new(), Vec::new());
        let (c, p) = tokio::join!(
            listed(conn, &CLAIMS, ns, None, &mut w1),
            listed(conn, &WARM_POOLS, ns, None, &mut w2),
        );
        warnings.extend(w1.into_iter().chain(w2));
        (c?, p?)
    };
    if claims.is_none() && pools.is_none() {
        warnings.push("note: the agent-sandbox extensions (warm pools, claims) are not installed or readable".into());
    }
    let (claims, pools) = (claims.unwrap_or_default(), pools.unwrap_or_default());
    let sandboxes = listed(conn, &PULSE_SANDBOXES, ns, None, &mut warnings)
        .await?
        .unwrap_or_default();
    // the namespaces with claims in the window: their pods and Events are read
    let since = now - request.since;
    let busy: BTreeSet<String> = claims
        .iter()
        .filter(|c| pulse::requested(c).is_some_and(|t| t >= since))
        .map(|c| namespace(c).to_string())
        .chain(pools.iter().map(|p| namespace(p).to_string()))
        .collect();
    let (mut pods, mut events, mut events_read) = (Vec::new(), Vec::new(), true);
    for n in &busy {
        if let Some(p) = listed(conn, &PULSE_PODS, Some(n), Some(SANDBOX_NAME_HASH), &mut warnings).await? {
            pods.extend(p);
        }
        for kind in ["Pod", "Sandbox", "SandboxClaim", "SandboxWarmPool"] {
            match events_of(conn, n, kind, &mut warnings).await? {
                Some(e) => events.extend(e),
                None => events_read = false,
            }
        }
    }
    let pulse = pulse::pulse(&Inputs {
        claims: &claims,
        sandboxes: &sandboxes,
        pools: &pools,
        pods: &pods,
        events: events_read.then_some(events.as_slice()),
        now,
        since: request.since,
    });
    Ok(Read { pulse, warnings })
}
