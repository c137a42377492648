//! The fleet's pulse (pure): how fast workspaces start, how often the warm pool served them, and
//! why each slow start was slow — computed from the objects the tool already reads (claims,
//! Sandboxes, warm pools, pods, Events), never from metrics agent-sandbox does not publish.
//!
//! **A start** is a SandboxClaim whose request falls in the window (`--since`): it begins at the
//! claim's `agents.x-k8s.io/client-first-requested-at` annotation (the client's own stamp), else
//! the claim's creation; it ends at the claimed Sandbox's `Ready=True` transition. A Sandbox that
//! was already Ready before the request (a Ready warm member adopted) ends at the claim's own
//! `Ready=True` transition, else at the claim's `SandboxAdopted` Event; without either, its
//! latency is unknown. **A resume** is a workspace whose mode-changed-at stamp (Running, later
//! than its creation) falls in the window; it ends at its Sandbox's `Ready=True` transition.
//!
//! **Groups.** Figures are per namespace and warm pool (`spec.warmPoolRef.name`; agent-sandbox
//! v1.0.3 requires it), the template being the pool's `sandboxTemplateRef`; resumes are grouped
//! by the pod template's `sandbox.namzu.ai/template` label, pool `-`. The engine adds the context.
//!
//! **Percentiles** are nearest-rank: the p-th of n sorted latencies is the ⌈p·n/100⌉-th (no
//! interpolation: every figure is a latency that was measured). A start still under way is not
//! in them (it is counted as pending). **Above p95** is strictly greater than the group's p95;
//! each such start is blamed ([`blame`]).

use super::annotations::{CHANGED_AT, LAUNCH_TYPE, TEMPLATE_LABEL};
use super::object::{annotation, condition, name, namespace, non_empty, owner_refs, str_at, uid};
use super::pools;
use super::timefmt;
use super::timeline::FIRST_REQUESTED_AT;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

mod blame;
pub use blame::{Blame, Cause};

/// Everything a pulse is computed from, as the API served it (one context).
pub struct Inputs<'a> {
    pub claims: &'a [Value],
    /// The Sandboxes in scope: claimed ones, pool members, workspaces.
    pub sandboxes: &'a [Value],
    pub pools: &'a [Value],
    /// Pods of the claimed Sandboxes (by name): the start-up waterfall's legs.
    pub pods: &'a [Value],
    /// Events of the claims, Sandboxes and pods (either API); `None`: not readable, so causes
    /// told by Events only are unknown.
    pub events: Option<&'a [Value]>,
    pub now: DateTime<Utc>,
    /// The window: starts requested in the last `since`.
    pub since: Duration,
}

/// What a latency was read from: its start and its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum From {
    #[serde(rename = "client-first-requested-at")]
    FirstRequested,
    #[serde(rename = "claim created")]
    ClaimCreated,
    #[serde(rename = "mode-changed-at")]
    ModeChanged,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Until {
    #[serde(rename = "Sandbox Ready")]
    SandboxReady,
    #[serde(rename = "claim Ready")]
    ClaimReady,
    #[serde(rename = "SandboxAdopted Event")]
    Adopted,
}

/// One start (a claim) or one resume.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Start {
    pub namespace: String,
    /// The claim (a start), or `None` for a resume.
    pub claim: Option<String>,
    /// The Sandbox that served it (`None`: none found).
    pub sandbox: Option<String>,
    pub pool: String,
    pub template: String,
    /// `warm` | `cold` from `agents.x-k8s.io/launch-type`; `None`: the label is absent.
    pub launch_type: Option<String>,
    #[serde(serialize_with = "iso")]
    pub requested: DateTime<Utc>,
    pub from: From,
    /// When it became Ready, and what that was read from (`None`: not yet, or unknown).
    #[serde(serialize_with = "iso_opt")]
    pub ready: Option<DateTime<Utc>>,
    pub until: Option<Until>,
    /// Milliseconds from `requested` to `ready`.
    pub latency_ms: Option<i64>,
    /// Not Ready yet: under way for this long.
    pub pending_ms: Option<i64>,
    /// Why the latency is unknown, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
}

fn iso<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&timefmt::js_iso(*t))
}

fn iso_opt<S: serde::Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&timefmt::js_iso(*t)),
        None => s.serialize_none(),
    }
}

/// Nearest-rank percentiles of the measured latencies.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Latency {
    /// How many latencies were measured.
    pub count: usize,
    pub p50_ms: Option<i64>,
    pub p95_ms: Option<i64>,
    pub p99_ms: Option<i64>,
    /// Started and not Ready yet.
    pub pending: usize,
    /// Ended, but when cannot be told.
    pub unknown: usize,
}

/// The p-th percentile (0 < p ≤ 100) of `sorted` by nearest rank: the ⌈p·n/100⌉-th value.
pub fn nearest_rank(sorted: &[i64], p: u32) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let rank = (p as usize * n).div_ceil(100).clamp(1, n);
    sorted.get(rank - 1).copied()
}

impl Latency {
    fn of(starts: &[&Start]) -> Latency {
        let mut ms: Vec<i64> = starts.iter().filter_map(|s| s.latency_ms).collect();
        ms.sort_unstable();
        Latency {
            count: ms.len(),
            p50_ms: nearest_rank(&ms, 50),
            p95_ms: nearest_rank(&ms, 95),
            p99_ms: nearest_rank(&ms, 99),
            pending: starts.iter().filter(|s| s.pending_ms.is_some()).count(),
            unknown: starts.iter().filter(|s| s.unknown.is_some()).count(),
        }
    }
}

/// A warm pool's depth against demand.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Depth {
    /// Unclaimed members, and those Ready (the Sandbox's Ready condition).
    pub members: usize,
    pub ready_members: usize,
    /// `spec.replicas`.
    pub desired: Option<i64>,
    /// Ready members ÷ the claim rate: when the pool would be empty if nothing were refilled
    /// (`None`: no claims in the window, never at this rate).
    pub seconds_to_empty: Option<i64>,
    /// Members the pool made in the window, per minute: its current members and the Sandboxes
    /// adopted from it (launch-type warm), by their creation.
    pub refill_per_minute: f64,
    /// Members running a stale template (`domain::pools`), and how that was told.
    pub stale_members: Vec<String>,
    pub stale_evidence: String,
    pub update_strategy: String,
}

/// One group's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    pub namespace: String,
    pub template: String,
    pub pool: String,
    /// Claims requested in the window, and per minute over it.
    pub claims: usize,
    pub claims_per_minute: f64,
    pub warm: usize,
    pub cold: usize,
    /// Starts whose Sandbox has no launch-type label (or none was found).
    pub launch_unknown: usize,
    /// warm ÷ (warm + cold) × 100; `None` without either.
    pub warm_hit_percent: Option<f64>,
    pub claim_to_ready: Latency,
    pub resume_to_ready: Latency,
    /// `None` for resumes and for a pool that is not there.
    pub depth: Option<Depth>,
    /// Every start above p95, with its cause.
    pub slow: Vec<Blame>,
}

/// The pulse of one context.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pulse {
    pub window_seconds: i64,
    pub groups: Vec<Group>,
    /// Every start and resume measured, by group order then request time.
    pub starts: Vec<Start>,
    /// Whether Events were read (causes told by Events are unknown otherwise).
    pub events_read: bool,
}

fn time(v: Option<&str>) -> Option<DateTime<Utc>> {
    timefmt::parse(v?)
}

/// When `obj`'s `type_` condition last became True.
pub(crate) fn true_since(obj: &Value, type_: &str) -> Option<DateTime<Utc>> {
    condition(obj, type_)
        .filter(|c| c.get("status").and_then(Value::as_str) == Some("True"))
        .and_then(|c| time(c.get("lastTransitionTime").and_then(Value::as_str)))
}

pub(crate) fn created(obj: &Value) -> Option<DateTime<Utc>> {
    time(str_at(obj, &["metadata", "creationTimestamp"]))
}

pub(crate) fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get("labels")?.get(key)?.as_str()
}

/// The objects of one context by namespace and name, read once: what each start needs is looked
/// up, never searched for.
pub(super) struct Lookup<'a> {
    /// Claimed Sandboxes by `ns/claim-uid`, and by `ns/claim-name` (for a reference without uid).
    by_claim_uid: HashMap<String, &'a Value>,
    by_claim_name: HashMap<String, &'a Value>,
    pub(super) sandboxes: HashMap<String, &'a Value>,
    pub(super) pods: HashMap<String, &'a Value>,
    pub(super) claims: HashMap<String, &'a Value>,
    /// Each pool's newest member's name and hash (`ns/pool`): what a stale member is told against.
    pub(super) references: HashMap<String, Option<(String, String)>>,
    /// The Events, by the object they are about.
    pub(super) events: blame::Index<'a>,
}

pub(super) fn key(ns: &str, name: &str) -> String {
    format!("{ns}/{name}")
}

impl<'a> Lookup<'a> {
    fn new(inputs: &Inputs<'a>) -> Lookup<'a> {
        let by_name = |list: &'a [Value]| -> HashMap<String, &'a Value> {
            list.iter().map(|o| (key(namespace(o), name(o)), o)).collect()
        };
        let (mut by_claim_uid, mut by_claim_name) = (HashMap::new(), HashMap::new());
        for s in inputs.sandboxes {
            for o in owner_refs(s)
                .iter()
                .filter(|o| str_at(o, &["kind"]) == Some("SandboxClaim"))
            {
                if let Some(u) = non_empty(o, &["uid"]) {
                    by_claim_uid.entry(key(namespace(s), u)).or_insert(s);
                }
                if let Some(n) = str_at(o, &["name"]) {
                    by_claim_name.entry(key(namespace(s), n)).or_insert(s);
                }
            }
        }
        let references = inputs
            .pools
            .iter()
            .map(|p| {
                let members: Vec<Value> = inputs
                    .sandboxes
                    .iter()
                    .filter(|s| namespace(s) == namespace(p) && pools::is_member(p, s))
                    .cloned()
                    .collect();
                (
                    key(namespace(p), name(p)),
                    pools::health(p, &members, None, inputs.now).reference,
                )
            })
            .collect();
        Lookup {
            by_claim_uid,
            by_claim_name,
            sandboxes: by_name(inputs.sandboxes),
            pods: by_name(inputs.pods),
            claims: by_name(inputs.claims),
            references,
            events: blame::Index::new(inputs.events.unwrap_or(&[])),
        }
    }

    /// The Sandbox a claim owns (by the claim's uid in its owner references, else its name).
    fn claimed(&self, claim: &Value) -> Option<&'a Value> {
        match uid(claim) {
            Some(u) => self.by_claim_uid.get(&key(namespace(claim), u)).copied(),
            None => self.by_claim_name.get(&key(namespace(claim), name(claim))).copied(),
        }
    }
}

/// The time an Event about `object` with `reason` was first seen.
pub(crate) fn event_of(events: &[&Value], kind: &str, object: &Value, reason: &str) -> Option<DateTime<Utc>> {
    events
        .iter()
        .filter(|e| e.get("reason").and_then(Value::as_str) == Some(reason))
        .filter(|e| about(e, kind, object))
        .filter_map(|e| {
            ["firstTimestamp", "eventTime", "lastTimestamp"]
                .iter()
                .find_map(|k| time(e.get(*k).and_then(Value::as_str)))
        })
        .min()
}

/// Whether event `e` (either API) is about `object` of `kind` (by uid when both say one).
pub(crate) fn about(e: &Value, kind: &str, object: &Value) -> bool {
    let Some(r) = e.get("involvedObject").or_else(|| e.get("regarding")) else {
        return false;
    };
    str_at(r, &["kind"]) == Some(kind)
        && str_at(r, &["name"]) == Some(name(object))
        && match (non_empty(r, &["uid"]), uid(object)) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
}

/// When a claim's start began: its `client-first-requested-at`, else its creation.
pub fn requested(claim: &Value) -> Option<DateTime<Utc>> {
    time(annotation(claim, FIRST_REQUESTED_AT)).or_else(|| created(claim))
}

/// One claim as a start.
fn start_of(
    claim: &Value,
    inputs: &Inputs<'_>,
    lookup: &Lookup<'_>,
    pools_by_name: &BTreeMap<(&str, &str), &Value>,
) -> Start {
    let ns = namespace(claim);
    let pool = str_at(claim, &["spec", "warmPoolRef", "name"]).unwrap_or("-");
    let template = pools_by_name
        .get(&(ns, pool))
        .and_then(|p| str_at(p, &["spec", "sandboxTemplateRef", "name"]))
        .or_else(|| str_at(claim, &["spec", "sandboxTemplateRef", "name"]))
        .unwrap_or("unknown");
    let (requested, from) = match time(annotation(claim, FIRST_REQUESTED_AT)) {
        Some(t) => (t, From::FirstRequested),
        None => (created(claim).unwrap_or(inputs.now), From::ClaimCreated),
    };
    let sandbox = lookup.claimed(claim);
    let mut start = Start {
        namespace: ns.to_string(),
        claim: Some(name(claim).to_string()),
        sandbox: sandbox.map(|s| name(s).to_string()),
        pool: pool.to_string(),
        template: template.to_string(),
        launch_type: sandbox.and_then(|s| label(s, LAUNCH_TYPE)).map(str::to_string),
        requested,
        from,
        ready: None,
        until: None,
        latency_ms: None,
        pending_ms: None,
        unknown: None,
    };
    let Some(sbx) = sandbox else {
        start.pending_ms = Some((inputs.now - requested).num_milliseconds().max(0));
        return start;
    };
    let ends = [
        (true_since(sbx, "Ready"), Until::SandboxReady),
        (true_since(claim, "Ready"), Until::ClaimReady),
        (
            inputs.events.and_then(|_| {
                event_of(
                    lookup.events.of("SandboxClaim", name(claim)),
                    "SandboxClaim",
                    claim,
                    "SandboxAdopted",
                )
            }),
            Until::Adopted,
        ),
    ];
    let ready_now = true_since(sbx, "Ready").is_some();
    // conditions and Events carry whole seconds, the request may carry milliseconds: an end in
    // the request's own second is at it
    let floor = requested - Duration::milliseconds(999);
    match ends.iter().find(|(t, _)| t.is_some_and(|t| t >= floor)) {
        Some((Some(t), until)) => {
            start.ready = Some(*t);
            start.until = Some(*until);
            start.latency_ms = Some((*t - requested).num_milliseconds().max(0));
        }
        _ if ready_now => {
            start.unknown = Some(
                "the Sandbox was Ready before the request, and neither the claim's Ready condition nor a SandboxAdopted Event says when it was handed over".into(),
            );
        }
        _ => start.pending_ms = Some((inputs.now - requested).num_milliseconds().max(0)),
    }
    start
}

/// A workspace resumed in the window, as a start.
fn resume_of(sbx: &Value, inputs: &Inputs<'_>) -> Option<Start> {
    if str_at(sbx, &["spec", "operatingMode"]) == Some("Suspended") {
        return None;
    }
    let stamp = time(annotation(sbx, CHANGED_AT))?;
    // a stamp at creation is the create's, not a resume's
    if created(sbx).is_some_and(|c| stamp <= c + Duration::seconds(5)) || stamp < inputs.now - inputs.since {
        return None;
    }
    let ready = true_since(sbx, "Ready").filter(|t| *t >= stamp - Duration::milliseconds(999));
    let template = non_empty(sbx, &["spec", "podTemplate", "metadata", "labels", TEMPLATE_LABEL]).unwrap_or("unknown");
    Some(Start {
        namespace: namespace(sbx).to_string(),
        claim: None,
        sandbox: Some(name(sbx).to_string()),
        pool: "-".into(),
        template: template.to_string(),
        launch_type: label(sbx, LAUNCH_TYPE).map(str::to_string),
        requested: stamp,
        from: From::ModeChanged,
        ready,
        until: ready.map(|_| Until::SandboxReady),
        latency_ms: ready.map(|t| (t - stamp).num_milliseconds().max(0)),
        pending_ms: ready.is_none().then(|| (inputs.now - stamp).num_milliseconds().max(0)),
        unknown: None,
    })
}

/// The pulse of one context's objects.
pub fn pulse(inputs: &Inputs<'_>) -> Pulse {
    let since = inputs.now - inputs.since;
    let lookup = Lookup::new(inputs);
    let pools_by_name: BTreeMap<(&str, &str), &Value> =
        inputs.pools.iter().map(|p| ((namespace(p), name(p)), p)).collect();
    let mut starts: Vec<Start> = inputs
        .claims
        .iter()
        .map(|c| start_of(c, inputs, &lookup, &pools_by_name))
        .filter(|s| s.requested >= since)
        .collect();
    let resumes: Vec<Start> = inputs
        .sandboxes
        .iter()
        .filter(|s| claimed_by_none(s))
        .filter_map(|s| resume_of(s, inputs))
        .collect();
    let minutes = (inputs.since.num_seconds() as f64 / 60.0).max(1.0 / 60.0);
    let mut keys: Vec<(String, String, String)> = starts
        .iter()
        .map(|s| (s.namespace.clone(), s.template.clone(), s.pool.clone()))
        .chain(
            resumes
                .iter()
                .map(|s| (s.namespace.clone(), s.template.clone(), s.pool.clone())),
        )
        .chain(
            inputs
                .pools
                .iter()
                .map(|p| (namespace(p).to_string(), pool_template(p), name(p).to_string())),
        )
        .collect();
    keys.sort();
    keys.dedup();
    let mut groups = Vec::new();
    for (ns, template, pool) in keys {
        let of = |s: &&Start| s.namespace == ns && s.template == template && s.pool == pool;
        let claims: Vec<&Start> = starts.iter().filter(of).collect();
        let resumed: Vec<&Start> = resumes.iter().filter(of).collect();
        let claim_to_ready = Latency::of(&claims);
        let count = |t: &str| claims.iter().filter(|s| s.launch_type.as_deref() == Some(t)).count();
        let (warm, cold) = (count("warm"), count("cold"));
        let per_minute = claims.len() as f64 / minutes;
        let pool_obj = pools_by_name.get(&(ns.as_str(), pool.as_str())).copied();
        let depth = pool_obj.map(|p| depth(p, inputs, &lookup, per_minute, since, minutes));
        let slow = blame::slow(&claims, claim_to_ready.p95_ms, &lookup);
        groups.push(Group {
            claims: claims.len(),
            claims_per_minute: round2(per_minute),
            warm,
            cold,
            launch_unknown: claims.len() - warm - cold,
            warm_hit_percent: (warm + cold > 0).then(|| round2(100.0 * warm as f64 / (warm + cold) as f64)),
            claim_to_ready,
            resume_to_ready: Latency::of(&resumed),
            depth,
            slow,
            namespace: ns,
            template,
            pool,
        });
    }
    starts.extend(resumes);
    starts.sort_by(|a, b| {
        (&a.namespace, &a.template, &a.pool, a.requested).cmp(&(&b.namespace, &b.template, &b.pool, b.requested))
    });
    Pulse {
        window_seconds: inputs.since.num_seconds(),
        groups,
        starts,
        events_read: inputs.events.is_some(),
    }
}

fn claimed_by_none(s: &Value) -> bool {
    !owner_refs(s)
        .iter()
        .any(|o| matches!(str_at(o, &["kind"]), Some("SandboxClaim" | "SandboxWarmPool")))
}

fn pool_template(p: &Value) -> String {
    str_at(p, &["spec", "sandboxTemplateRef", "name"])
        .unwrap_or("unknown")
        .to_string()
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A pool's depth against the claim rate, its refill and its stale members.
fn depth(
    pool: &Value,
    inputs: &Inputs<'_>,
    lookup: &Lookup<'_>,
    per_minute: f64,
    since: DateTime<Utc>,
    minutes: f64,
) -> Depth {
    let in_ns: Vec<Value> = inputs
        .sandboxes
        .iter()
        .filter(|s| namespace(s) == namespace(pool) && pools::is_member(pool, s))
        .cloned()
        .collect();
    let health = pools::health(pool, &in_ns, inputs.events, inputs.now);
    let members: Vec<&Value> = in_ns
        .iter()
        .filter(|s| pools::is_member(pool, s) && s.pointer("/metadata/deletionTimestamp").is_none())
        .collect();
    let ready_members = members.iter().filter(|m| true_since(m, "Ready").is_some()).count();
    // what the pool made in the window: its members now, and those claims took (warm ones
    // whose claim names this pool)
    let adopted = inputs
        .claims
        .iter()
        .filter(|c| namespace(c) == namespace(pool))
        .filter(|c| str_at(c, &["spec", "warmPoolRef", "name"]) == Some(name(pool)))
        .filter_map(|c| lookup.claimed(c))
        .filter(|s| label(s, LAUNCH_TYPE) == Some("warm"));
    let made = members
        .iter()
        .copied()
        .chain(adopted)
        .filter(|s| created(s).is_some_and(|t| t >= since))
        .count();
    Depth {
        members: members.len(),
        ready_members,
        desired: pool.pointer("/spec/replicas").and_then(Value::as_i64),
        seconds_to_empty: (per_minute > 0.0).then(|| (ready_members as f64 * 60.0 / per_minute).round() as i64),
        refill_per_minute: round2(made as f64 / minutes),
        stale_members: health.stale.clone(),
        stale_evidence: health.stale_evidence.clone(),
        update_strategy: health.strategy_shown(),
    }
}

#[cfg(test)]
mod tests;
