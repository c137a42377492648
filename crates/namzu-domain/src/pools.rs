//! Warm pools as agent-sandbox v1.0.3 runs them (pure): the update strategy, the members running
//! a stale template, and the pool's progress Events — pools have no conditions, so the Events
//! `WarmPoolNotProgressing` (Warning) / `WarmPoolProgressing` (Normal), written once per
//! transition, are all a pool says of its health.
//!
//! **Stale members.** The controller stamps each member with the hash of the pod template it was
//! made from ([`POOL_TEMPLATE_HASH`]). How it computes that hash is the controller's own and is
//! not recomputed here: the reference is the hash of the pool's **newest** member (made last, so
//! from the template as it was then), and a member carrying another hash runs an older template.
//! A template edited after the newest member was made is not seen by this rule; the verdict
//! names the member it compared against.

use super::age::human_duration;
use super::annotations::{POOL_TEMPLATE_HASH, WARM_POOL_SANDBOX};
use super::naming::name_hash;
use super::object::{name, owner_refs, uid};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// The Event reasons a pool's health shows as.
pub(crate) const NOT_PROGRESSING: &str = "WarmPoolNotProgressing";
pub(crate) const PROGRESSING: &str = "WarmPoolProgressing";

/// One pool's update strategy, members and progress, with what each was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolHealth {
    /// `spec.updateStrategy.type`; `OnReplenish` when absent (the CRD's default).
    pub strategy: String,
    pub strategy_defaulted: bool,
    /// Unclaimed members (label `agents.x-k8s.io/warm-pool-sandbox` = the pool's name hash, or
    /// the pool as controller owner).
    pub members: usize,
    /// Members whose template hash differs from the reference's, by name.
    pub stale: Vec<String>,
    /// The newest member's name and hash: what stale members were compared against.
    pub reference: Option<(String, String)>,
    /// In words: how staleness was told (or why it cannot be).
    pub stale_evidence: String,
    /// The newest progress Event held (`None`: none held, or events not read).
    pub progress: Option<Progress>,
    /// Whether the namespace's events were read at all.
    pub events_read: bool,
}

/// A `WarmPoolNotProgressing` / `WarmPoolProgressing` Event.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub reason: String,
    pub type_: String,
    pub message: String,
    pub at: Option<DateTime<Utc>>,
}

impl Progress {
    pub fn not_progressing(&self) -> bool {
        self.reason == NOT_PROGRESSING
    }

    /// `WarmPoolNotProgressing (Warning) 12m ago: <message>`.
    pub(crate) fn describe(&self, now: DateTime<Utc>) -> String {
        let when = self.at.map_or("at an unknown time".to_string(), |t| {
            format!("{} ago", human_duration((now - t).num_seconds().max(0)))
        });
        let message = if self.message.is_empty() {
            String::new()
        } else {
            format!(": {}", self.message)
        };
        format!("{} ({}) {when}{message}", self.reason, self.type_)
    }
}

impl PoolHealth {
    /// The strategy as shown: `OnReplenish (default)` when the pool does not say.
    pub(crate) fn strategy_shown(&self) -> String {
        if self.strategy_defaulted {
            format!("{} (default)", self.strategy)
        } else {
            self.strategy.clone()
        }
    }

    /// The progress cell: the newest progress Event, else what is known of there being none.
    pub(crate) fn progress_shown(&self, now: DateTime<Utc>) -> String {
        match (&self.progress, self.events_read) {
            (Some(p), _) => p.describe(now),
            (None, true) => "no progress Event held (Events expire, an hour by default)".into(),
            (None, false) => "unknown (events not readable)".into(),
        }
    }
}

fn time_of(v: Option<&Value>) -> Option<DateTime<Utc>> {
    v.and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

fn created(obj: &Value) -> Option<DateTime<Utc>> {
    time_of(obj.pointer("/metadata/creationTimestamp"))
}

fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

/// Whether `sandbox` is an unclaimed member of `pool`: it carries the pool's name hash in
/// [`WARM_POOL_SANDBOX`], or the pool is its controller owner.
pub(crate) fn is_member(pool: &Value, sandbox: &Value) -> bool {
    let pool_name = name(pool);
    label(sandbox, WARM_POOL_SANDBOX) == Some(name_hash(pool_name).as_str())
        || owner_refs(sandbox).iter().any(|o| {
            o.get("kind").and_then(Value::as_str) == Some("SandboxWarmPool")
                && o.get("name").and_then(Value::as_str) == Some(pool_name)
                && o.get("controller").and_then(Value::as_bool).unwrap_or(true)
        })
}

/// When an Event last happened: `lastTimestamp`, else `eventTime`, `firstTimestamp`, creation.
fn event_time(e: &Value) -> Option<DateTime<Utc>> {
    [
        "/lastTimestamp",
        "/eventTime",
        "/firstTimestamp",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .find_map(|p| time_of(e.pointer(p)))
}

/// The newest progress Event about `pool` among `events` (core/v1 Events; one of an earlier
/// pool of the same name, by uid, is not this pool's).
pub(crate) fn progress(pool: &Value, events: &[Value]) -> Option<Progress> {
    let pool_uid = uid(pool);
    events
        .iter()
        .filter(|e| {
            let about = e.get("involvedObject").unwrap_or(&Value::Null);
            about.get("kind").and_then(Value::as_str) == Some("SandboxWarmPool")
                && about.get("name").and_then(Value::as_str) == Some(name(pool))
                && match (about.get("uid").and_then(Value::as_str), pool_uid) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                }
        })
        .filter(|e| {
            matches!(
                e.get("reason").and_then(Value::as_str),
                Some(NOT_PROGRESSING | PROGRESSING)
            )
        })
        .max_by_key(|e| event_time(e))
        .map(|e| Progress {
            reason: e.get("reason").and_then(Value::as_str).unwrap_or_default().to_string(),
            type_: e.get("type").and_then(Value::as_str).unwrap_or("Normal").to_string(),
            message: e.get("message").and_then(Value::as_str).unwrap_or_default().to_string(),
            at: event_time(e),
        })
}

/// One pool's health from its Sandboxes (`sandboxes`: the namespace's, members are picked out)
/// and the namespace's events (`None`: not read).
pub fn health(pool: &Value, sandboxes: &[Value], events: Option<&[Value]>, now: DateTime<Utc>) -> PoolHealth {
    let strategy = pool.pointer("/spec/updateStrategy/type").and_then(Value::as_str);
    let mut members: Vec<&Value> = sandboxes
        .iter()
        .filter(|s| is_member(pool, s) && s.pointer("/metadata/deletionTimestamp").is_none())
        .collect();
    members.sort_by(|a, b| (created(a), name(a)).cmp(&(created(b), name(b))));
    let hashed: Vec<(&str, &str)> = members
        .iter()
        .filter_map(|m| Some((name(m), label(m, POOL_TEMPLATE_HASH)?)))
        .collect();
    let reference = members
        .iter()
        .rev()
        .find_map(|m| Some((name(m).to_string(), label(m, POOL_TEMPLATE_HASH)?.to_string())));
    let unlabelled = members.len() - hashed.len();
    // the newest members, made in the same second, disagree: which is current cannot be told
    let newest_at = reference
        .as_ref()
        .and_then(|(n, _)| members.iter().find(|m| name(m) == n.as_str()))
        .and_then(|m| created(m));
    let tied = members
        .iter()
        .filter(|m| created(m) == newest_at)
        .filter_map(|m| label(m, POOL_TEMPLATE_HASH))
        .any(|h| reference.as_ref().is_some_and(|(_, r)| r != h));
    let (stale, stale_evidence) = match &reference {
        Some(_) if tied => (
            Vec::new(),
            "unknown: the newest members, made in the same second, carry different hashes".to_string(),
        ),
        None if members.is_empty() => (Vec::new(), "no members to compare".to_string()),
        None => (Vec::new(), format!("unknown: no member carries {POOL_TEMPLATE_HASH}")),
        Some((newest, hash)) => {
            let stale: Vec<String> = hashed
                .iter()
                .filter(|(_, h)| h != hash)
                .map(|(n, _)| n.to_string())
                .collect();
            let age = members
                .iter()
                .find(|m| name(m) == newest)
                .and_then(|m| created(m))
                .map_or(String::new(), |t| {
                    format!(", made {} ago", human_duration((now - t).num_seconds().max(0)))
                });
            let mut evidence = if stale.is_empty() {
                format!(
                    "every member carries {hash}, as the newest ({newest}{age}) does; a template edit no member was made since would not show"
                )
            } else {
                format!(
                    "{POOL_TEMPLATE_HASH} against the newest member's ({newest}{age}: {hash}); the controller's hash is not recomputed"
                )
            };
            if unlabelled > 0 {
                evidence.push_str(&format!("; {unlabelled} member(s) carry no hash: unknown"));
            }
            (stale, evidence)
        }
    };
    PoolHealth {
        strategy: strategy.unwrap_or("OnReplenish").to_string(),
        strategy_defaulted: strategy.is_none(),
        members: members.len(),
        stale,
        reference,
        stale_evidence,
        progress: events.and_then(|e| progress(pool, e)),
        events_read: events.is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0).unwrap()
    }

    fn member(n: &str, hash: &str, created: &str) -> Value {
        json!({"metadata": {"name": n, "creationTimestamp": created,
            "labels": {WARM_POOL_SANDBOX: name_hash("p"), POOL_TEMPLATE_HASH: hash}}})
    }

    #[test]
    fn stale_members_are_told_against_the_newest_and_events_pick_the_newest() {
        let pool = json!({"metadata": {"name": "p", "uid": "u"}, "spec": {"replicas": 3}});
        let sbx = [
            member("p-a", "old", "2026-11-20T12:00:00Z"),
            member("p-b", "old", "2026-11-21T12:00:00Z"),
            member("p-c", "new", "2026-12-01T11:00:00Z"),
            json!({"metadata": {"name": "other", "labels": {POOL_TEMPLATE_HASH: "x"}}}),
        ];
        let ev = |reason: &str, at: &str| {
            json!({"involvedObject": {"kind": "SandboxWarmPool", "name": "p", "uid": "u"},
                "reason": reason, "type": "Normal", "message": "m", "lastTimestamp": at})
        };
        let events = [
            ev(NOT_PROGRESSING, "2026-12-01T11:00:00Z"),
            ev(PROGRESSING, "2026-12-01T11:30:00Z"),
        ];
        let h = health(&pool, &sbx, Some(&events), now());
        assert_eq!((h.strategy_shown().as_str(), h.members), ("OnReplenish (default)", 3));
        assert_eq!(h.stale, ["p-a", "p-b"]);
        assert!(
            h.stale_evidence.contains("p-c, made 60m ago: new"),
            "{}",
            h.stale_evidence
        );
        let p = h.progress.unwrap();
        assert_eq!(
            (p.reason.as_str(), p.describe(now()).as_str()),
            (PROGRESSING, "WarmPoolProgressing (Normal) 30m ago: m")
        );
        let none = health(&pool, &[], None, now());
        assert_eq!(none.progress_shown(now()), "unknown (events not readable)");
    }
}
