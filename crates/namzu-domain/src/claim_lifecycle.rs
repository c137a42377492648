//! A SandboxClaim's lifecycle (agent-sandbox v1.0.3, pure; time is passed in):
//! `spec.lifecycle.shutdownPolicy` (`Delete` | `DeleteForeground` | `Retain`, the CRD's default),
//! `ttlSecondsAfterFinished`, `shutdownTime` — enforced by the claim controller, never copied to
//! the Sandbox — and what was read of how it moves. Some platforms move `shutdownTime` forward
//! every few seconds as a keepalive: that is not churn, and is said once, from what one read
//! shows — the claim's `metadata.generation` (every spec write counts, not only shutdownTime's)
//! and the managedFields entry that owns `shutdownTime` (its manager and latest write). How many
//! of the writes moved shutdownTime cannot be told from one read, and is not claimed.

use super::age::human_duration;
use super::object::{condition, condition_parts, name, namespace};
use super::timefmt;
use super::writers::{Writer, of_field};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

/// How recent the last write to shutdownTime must be, and how many spec writes the claim must
/// have seen, for its moves to be called a keepalive.
pub(crate) const KEEPALIVE_WITHIN_SECONDS: i64 = 600;
pub const KEEPALIVE_MIN_WRITES: i64 = 3;

#[derive(Debug, Clone, PartialEq)]
pub struct Lifecycle {
    pub claim: String,
    pub namespace: String,
    pub shutdown_policy: String,
    pub policy_defaulted: bool,
    pub ttl_seconds_after_finished: Option<i64>,
    /// `spec.lifecycle.shutdownTime` as written, and parsed.
    pub shutdown_raw: Option<String>,
    pub shutdown_time: Option<DateTime<Utc>>,
    /// The claim's generation: spec writes since it was made, plus one.
    pub generation: Option<i64>,
    pub created: Option<DateTime<Utc>>,
    /// Who last wrote shutdownTime (managedFields), when they say.
    pub writer: Option<Writer>,
    /// The claim's Ready=False `ClaimExpired`, with its message.
    pub expired: Option<String>,
}

fn parse(v: Option<&Value>) -> Option<DateTime<Utc>> {
    v.and_then(Value::as_str).and_then(timefmt::parse)
}

/// The lifecycle of `claim`.
pub fn read(claim: &Value) -> Lifecycle {
    let policy = claim.pointer("/spec/lifecycle/shutdownPolicy").and_then(Value::as_str);
    let raw = claim.pointer("/spec/lifecycle/shutdownTime").and_then(Value::as_str);
    let expired = condition(claim, "Ready").and_then(|c| {
        let (status, reason, message) = condition_parts(c);
        (status == "False" && reason == "ClaimExpired").then(|| message.to_string())
    });
    Lifecycle {
        claim: name(claim).to_string(),
        namespace: namespace(claim).to_string(),
        shutdown_policy: policy.unwrap_or("Retain").to_string(),
        policy_defaulted: policy.is_none(),
        ttl_seconds_after_finished: claim
            .pointer("/spec/lifecycle/ttlSecondsAfterFinished")
            .and_then(Value::as_i64),
        shutdown_raw: raw.map(str::to_string),
        shutdown_time: raw.and_then(timefmt::parse),
        generation: claim.pointer("/metadata/generation").and_then(Value::as_i64),
        created: parse(claim.pointer("/metadata/creationTimestamp")),
        writer: of_field(claim, &["spec", "lifecycle", "shutdownTime"]),
        expired,
    }
}

impl Lifecycle {
    /// `Retain (the default)`.
    pub fn policy_shown(&self) -> String {
        if self.policy_defaulted {
            format!("{} (the default)", self.shutdown_policy)
        } else {
            self.shutdown_policy.clone()
        }
    }

    /// Spec writes since the claim was made (generation − 1).
    pub(crate) fn spec_writes(&self) -> Option<i64> {
        self.generation.map(|g| (g - 1).max(0))
    }

    /// A shutdownTime moved forward again and again: still ahead, its last write recent, and
    /// the claim's spec written several times.
    pub(crate) fn keepalive(&self, now: DateTime<Utc>) -> bool {
        let ahead = self.shutdown_time.is_some_and(|t| t > now);
        let recent = self
            .writer
            .as_ref()
            .and_then(|w| w.time)
            .is_some_and(|t| (now - t).num_seconds() <= KEEPALIVE_WITHIN_SECONDS);
        ahead && recent && self.spec_writes().is_some_and(|n| n >= KEEPALIVE_MIN_WRITES)
    }

    /// How shutdownTime moves, from what was read.
    pub fn moves(&self, now: DateTime<Utc>) -> String {
        let writer = match &self.writer {
            Some(w) => match w.time {
                Some(t) => format!(
                    "last written by {} {} ago",
                    w.manager,
                    human_duration((now - t).num_seconds().max(0))
                ),
                None => format!("last written by {}", w.manager),
            },
            None => "its writer not named by managedFields".into(),
        };
        let writes = match (self.spec_writes(), self.created) {
            (Some(0), Some(c)) => format!(
                "the claim's spec was not written since it was made {} ago (generation 1)",
                human_duration((now - c).num_seconds().max(0))
            ),
            (Some(n), Some(c)) => format!(
                "the claim's spec was written {n} time(s) in its {} (generation {})",
                human_duration((now - c).num_seconds().max(0)),
                n + 1
            ),
            (Some(n), None) => format!("the claim's spec was written {n} time(s) (generation {})", n + 1),
            _ => "spec writes unknown (no generation)".into(),
        };
        if self.keepalive(now) {
            format!(
                "keepalive: moved forward again and again — {writes}, shutdownTime {writer}; each move is not a change of note"
            )
        } else {
            format!("{writes}; shutdownTime {writer}")
        }
    }

    /// The shutdown line: when, and under which policy.
    pub fn shutdown_shown(&self, now: DateTime<Utc>) -> String {
        match (&self.shutdown_raw, self.shutdown_time) {
            (None, _) => "none".into(),
            (Some(raw), Some(t)) if t > now => format!("{raw} (in {})", human_duration((t - now).num_seconds())),
            (Some(raw), Some(t)) => format!("{raw} ({} ago)", human_duration((now - t).num_seconds())),
            (Some(raw), None) => format!("!{raw} (unreadable)"),
        }
    }

    /// A claim expired under Retain: the diagnosis and its next step.
    pub fn diagnosis(&self) -> Option<(String, String)> {
        let message = self.expired.as_ref()?;
        let what = format!(
            "claim-expired (ClaimExpired): {message}; shutdownPolicy {} keeps the claim and its Sandbox's disks",
            self.policy_shown()
        );
        let next = format!(
            "keep it, or move spec.lifecycle.shutdownTime forward to use it again; kubectl delete sandboxclaims.extensions.agents.x-k8s.io {} -n {} deletes it with its Sandbox and disks",
            super::shell::word(&self.claim),
            super::shell::word(&self.namespace)
        );
        Some((what, next))
    }

    pub fn json(&self, now: DateTime<Utc>) -> Value {
        json!({
            "claim": self.claim,
            "shutdownPolicy": self.shutdown_policy,
            "shutdownPolicyDefaulted": self.policy_defaulted,
            "ttlSecondsAfterFinished": self.ttl_seconds_after_finished,
            "shutdownTime": self.shutdown_raw,
            "specWrites": self.spec_writes(),
            "shutdownTimeWriter": self.writer,
            "keepalive": self.keepalive(now),
            "moves": self.moves(now),
            "expired": self.expired.is_some(),
            "diagnosis": self.diagnosis().map(|(d, n)| json!({"diagnosis": d, "nextStep": n})),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_keepalive_is_said_once_and_an_expired_retained_claim_gets_a_next_step() {
        let now = Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0).unwrap();
        let claim = json!({"metadata": {"name": "c", "namespace": "ns", "generation": 241,
            "creationTimestamp": "2026-12-01T11:00:00Z",
            "managedFields": [{"manager": "keeper", "operation": "Update", "time": "2026-12-01T11:59:50Z",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:lifecycle": {"f:shutdownTime": {}}}}}]},
            "spec": {"lifecycle": {"shutdownTime": "2026-12-01T12:00:50Z"}}});
        let l = read(&claim);
        assert_eq!(l.policy_shown(), "Retain (the default)");
        assert!(l.keepalive(now));
        assert!(
            l.moves(now).contains("written 240 time(s) in its 60m (generation 241)"),
            "{}",
            l.moves(now)
        );
        assert!(l.moves(now).contains("by keeper 10s ago"), "{}", l.moves(now));
        assert!(l.diagnosis().is_none());
        let expired = json!({"metadata": {"name": "c", "namespace": "ns"},
            "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "ClaimExpired", "message": "Claim expired"}]}});
        let (d, next) = read(&expired).diagnosis().unwrap();
        assert!(d.starts_with("claim-expired (ClaimExpired): Claim expired"), "{d}");
        assert!(
            next.contains("kubectl delete sandboxclaims.extensions.agents.x-k8s.io c -n ns"),
            "{next}"
        );
    }
}
