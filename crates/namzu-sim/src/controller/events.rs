//! The events: what the claim controller says, and how each component's events are recorded.

use super::*;

impl Controller {
    /// What the claim controller says about the claim that owns this Sandbox: provisioned (a
    /// cold start, the Sandbox named after the claim) or adopted (from its warm pool), and
    /// expired once its shutdown time has passed.
    pub(super) fn claim_events(&mut self, store: &mut Store, sbx: &Value, now: DateTime<Utc>) {
        let owner = sbx
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .and_then(|refs| refs.iter().find(|r| r["kind"] == "SandboxClaim"))
            .cloned();
        let Some(owner) = owner else {
            return;
        };
        let (ns, name) = (s(sbx, "/metadata/namespace"), s(sbx, "/metadata/name"));
        let Some(claim) = store.get(&CLAIMS, ns, s(&owner, "/name")).cloned() else {
            return;
        };
        let pool = s(&claim, "/spec/warmPoolRef/name");
        let adopted = !pool.is_empty() && name != s(&claim, "/metadata/name");
        // made for the claim when it was made; adopted by the sim's binding when the claim took
        // it (its first pass since); a scenario's adopted workspace, when it was made
        let bound = sbx.pointer("/metadata/labels/agents.x-k8s.io~1claim-uid").is_some();
        let at = if adopted && bound {
            k8s_time(now)
        } else {
            s(sbx, "/metadata/creationTimestamp").to_string()
        };
        let (reason, message) = if adopted {
            (
                "SandboxAdopted",
                format!("Adopted Sandbox {name} from warm pool {pool}"),
            )
        } else {
            ("SandboxProvisioned", format!("Provisioned Sandbox {name}"))
        };
        self.record(store, &claim, reason, &message, "Normal", CLAIM_CONTROLLER, &at);
        let expiry = s(&claim, "/spec/lifecycle/shutdownTime");
        if parse_time(expiry).is_some_and(|t| t <= now) {
            self.record(
                store,
                &claim,
                "ClaimExpired",
                &format!("Claim expired at {expiry}"),
                "Normal",
                CLAIM_CONTROLLER,
                &k8s_time(now),
            );
        }
    }
}

impl Controller {
    /// Record an Event on the Sandbox, from the sandbox controller, once per (reason, message).
    pub(super) fn announce(
        &mut self,
        store: &mut Store,
        sbx: &Value,
        reason: &str,
        message: &str,
        type_: &str,
        now: &str,
    ) {
        self.record(store, sbx, reason, message, type_, SANDBOX_CONTROLLER, now);
    }
}

impl Controller {
    /// Record an Event on any object, once per (object, reason, message).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record(
        &mut self,
        store: &mut Store,
        object: &Value,
        reason: &str,
        message: &str,
        type_: &str,
        by: Reporter,
        at: &str,
    ) {
        let uid = s(object, "/metadata/uid").to_string();
        if !self.announced.insert((uid, format!("{reason}:{message}"))) {
            return;
        }
        self.event_seq += 1;
        let name = format!("{}.{:016x}", s(object, "/metadata/name"), self.event_seq);
        let _ = store.create(&EVENTS, core_event(&name, object, reason, message, type_, by, at), at);
    }
}
