//! Blame for every start above its group's p95: one cause, with the evidence it was told from.
//!
//! The rule, in order (the first that holds is the cause):
//! 1. **controller-error** — a `ReconcilerError` or `SandboxPodCreateFailed` Event about the
//!    Sandbox or the claim between the request and Ready.
//! 2. **a pod leg out of line** — the start-up waterfall's legs (`timeline::waterfall`, the same
//!    legs `history` shows) of the Sandbox's pod, each counted only for the time after the
//!    request; a leg is out of line when it took at least 1.25 times the group's median of that
//!    leg among the group's other starts (over legs wholly after their request; 0 when no other
//!    start had it) and
//!    [`MIN_EXCESS_MS`] more. The one furthest out names the cause: `scheduled` →
//!    **unschedulable**, `image pulled` → **image-pull**, `started` / `ready` → **slow-readiness**.
//! 3. **the claim's own path** — `launch-type: cold` → **pool-empty** (the pool had no member to
//!    adopt); `warm` and the adopted member carries another template hash than the pool's newest
//!    member, its pod made again after the request → **stale-member**; `warm` and the member
//!    became Ready only after the request → **replenish-hold** (the claim waited on a member the
//!    pool was still making).
//! 4. else **unknown**, naming the slowest leg.

use super::super::annotations::POOL_TEMPLATE_HASH;
use super::super::object::{name, str_at};
use super::super::timeline::{self, Regarding, waterfall};
use super::{Lookup, Start, about, created, key, label};
use chrono::{DateTime, SubsecRound, Utc};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;

/// How much longer than the group's median a leg must take (beyond twice it) to be out of line.
pub(crate) const MIN_EXCESS_MS: i64 = 3_000;

/// Why a start was slow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    PoolEmpty,
    StaleMember,
    ReplenishHold,
    Unschedulable,
    ImagePull,
    SlowReadiness,
    ControllerError,
    Unknown,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::PoolEmpty => "pool-empty",
            Cause::StaleMember => "stale-member",
            Cause::ReplenishHold => "replenish-hold",
            Cause::Unschedulable => "unschedulable",
            Cause::ImagePull => "image-pull",
            Cause::SlowReadiness => "slow-readiness",
            Cause::ControllerError => "controller-error",
            Cause::Unknown => "unknown",
        }
    }

    /// Every cause, in the order they are told.
    pub const ALL: [Cause; 8] = [
        Cause::ControllerError,
        Cause::Unschedulable,
        Cause::ImagePull,
        Cause::SlowReadiness,
        Cause::PoolEmpty,
        Cause::StaleMember,
        Cause::ReplenishHold,
        Cause::Unknown,
    ];
}

/// One slow start and its cause.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Blame {
    pub claim: Option<String>,
    pub sandbox: Option<String>,
    pub latency_ms: i64,
    pub cause: Cause,
    /// What the cause was told from, in words, each naming its object and field or Event.
    pub evidence: Vec<String>,
}

/// A leg of the pod's start-up counted from the request: its step, the time after the request,
/// and whether the whole leg was after it (a leg under way at the request is counted in part).
type Legs = Vec<(String, i64, bool)>;

/// The Events of each object, by (kind, name): borrowed, never copied (a busy namespace holds
/// thousands, and the live pulse computes every second).
pub(crate) struct Index<'a> {
    /// kind → name → Events
    by: HashMap<&'a str, HashMap<&'a str, Vec<&'a Value>>>,
}

impl<'a> Index<'a> {
    pub(super) fn new(events: &'a [Value]) -> Index<'a> {
        let mut by: HashMap<&str, HashMap<&str, Vec<&Value>>> = HashMap::new();
        for e in events {
            let Some(r) = e.get("involvedObject").or_else(|| e.get("regarding")) else {
                continue;
            };
            if let (Some(k), Some(n)) = (str_at(r, &["kind"]), str_at(r, &["name"])) {
                by.entry(k).or_default().entry(n).or_default().push(e);
            }
        }
        Index { by }
    }

    pub(super) fn of(&self, kind: &str, n: &str) -> &[&'a Value] {
        self.by
            .get(kind)
            .and_then(|named| named.get(n))
            .map_or(&[], Vec::as_slice)
    }
}

fn secs(ms: i64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

fn t(at: DateTime<Utc>, from: DateTime<Utc>) -> String {
    let ms = (at - from).num_milliseconds();
    if ms < 0 && at == from.trunc_subsecs(0) {
        return "in the request's second (an Event keeps whole seconds)".into();
    }
    if ms >= 0 {
        format!("{} after the request", secs(ms))
    } else {
        format!("{} before the request", secs(-ms))
    }
}

/// The objects of one start.
struct Seen<'a> {
    sandbox: Option<&'a Value>,
    pod: Option<&'a Value>,
    claim: Option<&'a Value>,
}

fn seen<'a>(s: &Start, lookup: &Lookup<'a>) -> Seen<'a> {
    let find =
        |map: &HashMap<String, &'a Value>, n: Option<&str>| n.and_then(|n| map.get(&key(&s.namespace, n)).copied());
    Seen {
        sandbox: find(&lookup.sandboxes, s.sandbox.as_deref()),
        pod: find(&lookup.pods, s.sandbox.as_deref()),
        claim: find(&lookup.claims, s.claim.as_deref()),
    }
}

/// The pod's legs after the request (the time before the pod was made is `pod created`).
fn legs(s: &Start, seen: &Seen<'_>, index: &Index<'_>) -> Legs {
    let (Some(sbx), Some(pod)) = (seen.sandbox, seen.pod) else {
        return Vec::new();
    };
    let events: Vec<Value> = index.of("Pod", name(pod)).iter().map(|e| (*e).clone()).collect();
    let w = waterfall(
        &timeline::Inputs {
            sandbox: sbx,
            pod: Some(pod),
            claim: None,
            pvcs: &[],
            events: &events,
            audit: &[],
        },
        s.ready.unwrap_or(s.requested),
    );
    let mut out = Vec::new();
    let Some(w) = w else { return out };
    let mut last = s.requested;
    if let Some(c) = created(pod).filter(|c| *c > s.requested) {
        out.push(("pod created".to_string(), (c - s.requested).num_milliseconds(), true));
        last = c;
    }
    let mut prev = created(pod).unwrap_or(last);
    for leg in &w.legs {
        if leg.to == "pod created" {
            continue;
        }
        // whole-second stamps: a leg begun in the request's second began with it
        let whole = prev > s.requested - chrono::Duration::milliseconds(1000);
        if leg.at > last {
            out.push((leg.to.clone(), (leg.at - last).num_milliseconds(), whole));
            last = leg.at;
        } else if whole {
            // a step that took no time (a pod scheduled at once) is a leg of 0: the median of
            // a leg is over every start whose pod started after its request
            out.push((leg.to.clone(), 0, true));
        }
        prev = prev.max(leg.at);
    }
    out
}

fn median(mut v: Vec<i64>) -> Option<i64> {
    v.sort_unstable();
    super::nearest_rank(&v, 50)
}

/// The starts of one group above `p95`, each blamed.
pub(super) fn slow(starts: &[&Start], p95: Option<i64>, lookup: &Lookup<'_>) -> Vec<Blame> {
    let Some(p95) = p95 else { return Vec::new() };
    let index = &lookup.events;
    let all_legs: Vec<Legs> = starts.iter().map(|s| legs(s, &seen(s, lookup), index)).collect();
    // each slow start is held against the others' legs (its own would be its own median)
    let medians_without = |k: usize| -> HashMap<String, i64> {
        let mut medians = HashMap::new();
        for step in ["pod created", "scheduled", "image pulled", "started", "ready"] {
            let of: Vec<i64> = all_legs
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != k)
                .flat_map(|(_, l)| {
                    l.iter()
                        .filter(|(s, _, whole)| s == step && *whole)
                        .map(|(_, ms, _)| *ms)
                })
                .collect();
            if let Some(m) = median(of) {
                medians.insert(step.to_string(), m);
            }
        }
        medians
    };
    starts
        .iter()
        .zip(&all_legs)
        .enumerate()
        .filter(|(_, (s, _))| s.latency_ms.is_some_and(|l| l > p95))
        .map(|(k, (s, legs))| blame_one(s, legs, &medians_without(k), lookup))
        .collect()
}

fn blame_one(s: &Start, legs: &Legs, medians: &HashMap<String, i64>, lookup: &Lookup<'_>) -> Blame {
    let seen = seen(s, lookup);
    let index = &lookup.events;
    let latency_ms = s.latency_ms.unwrap_or(0);
    let blame = |cause, evidence| Blame {
        claim: s.claim.clone(),
        sandbox: s.sandbox.clone(),
        latency_ms,
        cause,
        evidence,
    };
    let leg_words: Vec<String> = legs
        .iter()
        .filter(|(_, ms, _)| *ms > 0)
        .map(|(to, ms, _)| format!("{to} +{}", secs(*ms)))
        .collect();
    let legs_line = if leg_words.is_empty() {
        "no pod start-up after the request".to_string()
    } else {
        format!("pod legs after the request: {}", leg_words.join(", "))
    };
    if let Some(e) = controller_error(s, &seen, index) {
        return blame(Cause::ControllerError, vec![e, legs_line]);
    }
    let out_of_line = legs
        .iter()
        .filter(|(to, _, _)| to != "pod created")
        .filter_map(|(to, ms, whole)| {
            // a whole leg no other start had (a pod scheduled at once, say) is out of line from
            // zero; a leg under way at the request is judged against a median only
            let m = match medians.get(to) {
                Some(m) => *m,
                None if *whole => 0,
                None => return None,
            };
            (4 * *ms >= 5 * m && *ms - m >= MIN_EXCESS_MS).then_some((to, *ms, m))
        })
        .max_by_key(|(_, ms, m)| ms - m);
    if let Some((to, ms, m)) = out_of_line {
        let cause = match to.as_str() {
            "scheduled" => Cause::Unschedulable,
            "image pulled" => Cause::ImagePull,
            _ => Cause::SlowReadiness,
        };
        let mut evidence = vec![format!(
            "the pod's `{to}` leg took {} against the group's median {} (start-up waterfall)",
            secs(ms),
            secs(m)
        )];
        evidence.extend(leg_event(cause, &seen, index));
        evidence.push(legs_line);
        return blame(cause, evidence);
    }
    let (cause, mut evidence) = claim_path(s, &seen, lookup);
    evidence.push(legs_line);
    blame(cause, evidence)
}

/// A controller error between the request and Ready, from the Events of the Sandbox and claim.
fn controller_error(s: &Start, seen: &Seen<'_>, index: &Index<'_>) -> Option<String> {
    let end = s.ready?;
    let objects = [("Sandbox", seen.sandbox), ("SandboxClaim", seen.claim)];
    objects.iter().find_map(|(kind, obj)| {
        let obj = (*obj)?;
        index
            .of(kind, name(obj))
            .iter()
            .filter(|e| about(e, kind, obj))
            .filter(|e| {
                matches!(
                    e.get("reason").and_then(Value::as_str),
                    Some("ReconcilerError" | "SandboxPodCreateFailed")
                )
            })
            .find_map(|e| {
                let at = super::super::timeline::event_time(e)?;
                // an Event's time keeps whole seconds (`metav1.Time`), a request's stamp
                // milliseconds: one stamped in the request's own second may be after it
                (at >= s.requested.trunc_subsecs(0) && at <= end).then(|| {
                    format!(
                        "Event {} on {kind} {} {}: {}",
                        str_at(e, &["reason"]).unwrap_or(""),
                        name(obj),
                        t(at, s.requested),
                        str_at(e, &["message"]).unwrap_or("")
                    )
                })
            })
    })
}

/// The kubelet's or scheduler's word for a leg's trouble, when an Event says it.
fn leg_event(cause: Cause, seen: &Seen<'_>, index: &Index<'_>) -> Option<String> {
    let pod = seen.pod?;
    let reasons: &[&str] = match cause {
        Cause::Unschedulable => &["FailedScheduling"],
        Cause::ImagePull => &["Pulled", "Failed", "BackOff"],
        _ => &["Unhealthy"],
    };
    let regarding = Regarding::of("Pod", pod);
    index
        .of("Pod", name(pod))
        .iter()
        .filter(|e| regarding_is(&regarding, e))
        .find(|e| reasons.contains(&str_at(e, &["reason"]).unwrap_or("")))
        .map(|e| {
            format!(
                "Event {} on Pod {}: {}",
                str_at(e, &["reason"]).unwrap_or(""),
                name(pod),
                str_at(e, &["message"]).unwrap_or("")
            )
        })
}

fn regarding_is(r: &Regarding, e: &Value) -> bool {
    r.is_of(e)
}

/// The claim's own path: cold, a stale member, a member not ready yet.
fn claim_path(s: &Start, seen: &Seen<'_>, lookup: &Lookup<'_>) -> (Cause, Vec<String>) {
    let Some(sbx) = seen.sandbox else {
        return (Cause::Unknown, vec!["no Sandbox of the claim found".into()]);
    };
    match s.launch_type.as_deref() {
        Some("cold") => {
            let evidence = if s.pool == "-" {
                format!(
                    "Sandbox {} carries launch-type cold: the claim names no warm pool",
                    name(sbx)
                )
            } else {
                format!(
                    "Sandbox {} carries launch-type cold: warm pool {} had no member to adopt when the claim came",
                    name(sbx),
                    s.pool
                )
            };
            return (Cause::PoolEmpty, vec![evidence]);
        }
        Some("warm") => {}
        other => {
            return (
                Cause::Unknown,
                vec![format!(
                    "Sandbox {} carries launch-type {}: how it was served is unknown",
                    name(sbx),
                    other.unwrap_or("(none)")
                )],
            );
        }
    }
    let reference = lookup.references.get(&key(&s.namespace, &s.pool)).cloned().flatten();
    // made at or after the request (a creation stamp of whole seconds: in its second too)
    let pod_after = seen
        .pod
        .and_then(created)
        .filter(|c| *c > s.requested - chrono::Duration::milliseconds(1000));
    if let (Some((newest, hash)), Some(own), Some(pod_at)) = (&reference, label(sbx, POOL_TEMPLATE_HASH), pod_after)
        && own != hash
    {
        return (
            Cause::StaleMember,
            vec![format!(
                "adopted member {} was made from template hash {own}, the pool's newest member {newest} from {hash}; its pod was made again {}",
                name(sbx),
                t(pod_at, s.requested)
            )],
        );
    }
    let ready = super::true_since(sbx, "Ready");
    if let Some(r) = ready.filter(|r| *r > s.requested) {
        let made = created(sbx).map_or("at an unknown time".to_string(), |c| t(c, s.requested));
        return (
            Cause::ReplenishHold,
            vec![format!(
                "adopted member {} was made {made} by the pool's replenish and became Ready {}: the claim waited for the pool",
                name(sbx),
                t(r, s.requested)
            )],
        );
    }
    (
        Cause::Unknown,
        vec![format!(
            "adopted member {}: no leg out of line, no stale hash, Ready before the request",
            name(sbx)
        )],
    )
}
