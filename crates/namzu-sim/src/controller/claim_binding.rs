//! The claim controller's binding (agent-sandbox v1.0.3's `sandboxclaim_controller.go`, as far as
//! a triage tool sees it): a claim without a Sandbox takes one from its warm pool
//! (`spec.warmPoolRef`) — the oldest Ready member, else the oldest member still starting — or,
//! when the pool has none, has one made cold from the pool's template, named after the claim.
//! The Sandbox is labelled `agents.x-k8s.io/launch-type` (`warm` | `cold`) and
//! `agents.x-k8s.io/claim-uid`; an adopted member loses the pool's `warm-pool-sandbox` label and
//! the pool makes another (replenish). The claim's `Ready` condition follows its Sandbox's.
//!
//! **A stale member** (its `sandbox-pod-template-hash` not the template's) is adopted under
//! `OnReplenish` as v1.0.3 does; the sim then rolls its pod template forward to the template's
//! (the pod is made again — what a platform that refuses stale code pays), so the start costs a
//! pod start-up. Under `Recreate` the pool has replaced stale members before any claim. A claim
//! on a pool whose status the scenario gives (a frozen pool) is left as given, unanswered.

use super::super::resources::{TEMPLATES, WARM_POOLS};
use super::pools::{POOL_TEMPLATE_HASH, WARM_POOL_SANDBOX, template_hash};
use super::*;

pub(crate) const LAUNCH_TYPE: &str = "agents.x-k8s.io/launch-type";
/// How long after a claim takes a member the pool controller makes another (its watch's lag):
/// claims arriving together within it find the pool empty.
pub(crate) const POOL_LAG_MS: i64 = 500;
const CLAIM_UID: &str = "agents.x-k8s.io/claim-uid";
/// The sim's record on a claim of why its start took what it took (`none`, `pool-empty`,
/// `replenish-hold`, `stale-member`, or the knob it was given), and when its Sandbox became Ready
/// to the millisecond: the ground truth a benchmark holds the tool's pulse against.
pub const TRUTH_CAUSE: &str = "sim.namzu.ai/truth-cause";
pub const TRUTH_READY_AT: &str = "sim.namzu.ai/truth-ready-at";

fn is_ready(o: &Value) -> bool {
    o.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

impl Controller {
    /// Every claim without a Sandbox gets one (the whole-cluster pass).
    pub(super) fn bind_claims(&mut self, store: &mut Store, now: DateTime<Utc>) {
        let bound: HashSet<String> = store
            .list(&SANDBOXES, None)
            .flat_map(|s| {
                s.pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|r| r["kind"] == "SandboxClaim")
                    .map(|r| s_of(r, "/uid"))
            })
            .collect();
        let unbound: Vec<Value> = store
            .list(&CLAIMS, None)
            .filter(|c| c.pointer("/metadata/deletionTimestamp").is_none())
            .filter(|c| !bound.contains(s(c, "/metadata/uid")))
            .cloned()
            .collect();
        for claim in unbound {
            self.bind_claim(store, &claim, now);
        }
    }

    /// One claim's Sandbox: adopted from its pool, else made cold; then the pool replenished and
    /// the Sandbox's and new members' passes run. Returns the Sandbox's name.
    pub fn bind_claim(&mut self, store: &mut Store, claim: &Value, now: DateTime<Utc>) -> Option<String> {
        let (ns, claim_name) = (
            s(claim, "/metadata/namespace").to_string(),
            s(claim, "/metadata/name").to_string(),
        );
        let expired = claim
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| cs.iter().any(|c| c["reason"] == "ClaimExpired"));
        if expired {
            return None;
        }
        let pool = store
            .get(&WARM_POOLS, &ns, s(claim, "/spec/warmPoolRef/name"))
            .cloned()?;
        // a pool whose status the scenario gave is left as given, and so are its claims
        if self.frozen_pools.contains(&knob_key(&ns, s(&pool, "/metadata/name"))) {
            return None;
        }
        let template = store
            .get(&TEMPLATES, &ns, s(&pool, "/spec/sandboxTemplateRef/name"))
            .cloned()?;
        let hash = template_hash(&template);
        let pool_hash = name_hash(s(&pool, "/metadata/name"));
        let mut members: Vec<Value> = store
            .list(&SANDBOXES, Some(&ns))
            .filter(|m| label_of(m, WARM_POOL_SANDBOX) == Some(pool_hash.as_str()))
            .filter(|m| m.pointer("/metadata/deletionTimestamp").is_none())
            .cloned()
            .collect();
        // the oldest Ready member first, else the oldest still starting
        members.sort_by_key(|m| {
            (
                !is_ready(m),
                s_of(m, "/metadata/creationTimestamp"),
                s_of(m, "/metadata/name"),
            )
        });
        let owner = json!([{"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
            "name": claim_name, "uid": s(claim, "/metadata/uid"), "controller": true, "blockOwnerDeletion": true}]);
        let truth;
        let name = match members.into_iter().next() {
            Some(mut m) => {
                let name = s(&m, "/metadata/name").to_string();
                if let Some(l) = m.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) {
                    l.remove(WARM_POOL_SANDBOX);
                    l.insert(LAUNCH_TYPE.into(), json!("warm"));
                    l.insert(CLAIM_UID.into(), json!(s(claim, "/metadata/uid")));
                }
                m["metadata"]["ownerReferences"] = owner;
                let stale = label_of(&m, POOL_TEMPLATE_HASH).is_some_and(|h| h != hash);
                truth = if stale {
                    "stale-member"
                } else if is_ready(&m) {
                    "none"
                } else {
                    "replenish-hold"
                };
                if stale {
                    // rolled forward to the template: its pod is made again
                    m["spec"]["podTemplate"] = template.pointer("/spec/podTemplate").cloned().unwrap_or(json!({}));
                    self.delete_pod(store, &ns, &name, &k8s_time(now));
                }
                store.update(&SANDBOXES, m);
                name
            }
            None => {
                truth = cold_truth(&self.knobs.get(&knob_key(&ns, &claim_name)).cloned().unwrap_or_default());
                let mut spec =
                    json!({"podTemplate": template.pointer("/spec/podTemplate").cloned().unwrap_or(json!({}))});
                if let Some(v) = template.pointer("/spec/volumeClaimTemplates") {
                    spec["volumeClaimTemplates"] = v.clone();
                }
                let obj = json!({"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
                    "metadata": {"name": claim_name, "namespace": ns,
                        "labels": {LAUNCH_TYPE: "cold", CLAIM_UID: s(claim, "/metadata/uid")},
                        "annotations": {"agents.x-k8s.io/sandbox-template-ref": s(&template, "/metadata/name")},
                        "ownerReferences": owner},
                    "spec": spec});
                store.create(&SANDBOXES, obj, &k8s_time(now)).ok()?;
                claim_name.clone()
            }
        };
        // the sim's own record of what it did (no real cluster has it; the tool never reads it)
        if let Some(mut c) = store.get(&CLAIMS, &ns, &claim_name).cloned() {
            c["metadata"]["annotations"][TRUTH_CAUSE] = json!(truth);
            store.update(&CLAIMS, c);
        }
        self.reconcile_key(store, &(ns.clone(), name.clone()), now, false);
        // the pool controller sees the member gone on its own watch, a moment later
        self.pool_due.insert((
            now + Duration::milliseconds(POOL_LAG_MS),
            ns,
            s_of(&pool, "/metadata/name"),
        ));
        Some(name)
    }

    /// The pool's pass now: members made to replace those taken, their first passes run.
    pub fn replenish(&mut self, store: &mut Store, ns: &str, pool: &str, now: DateTime<Utc>) {
        let Some(pool) = store.get(&WARM_POOLS, ns, pool).cloned() else {
            return;
        };
        let before: HashSet<String> = store
            .list(&SANDBOXES, Some(ns))
            .map(|m| s_of(m, "/metadata/name"))
            .collect();
        self.reconcile_pool_now(store, &pool, now);
        let made: Vec<String> = store
            .list(&SANDBOXES, Some(ns))
            .map(|m| s_of(m, "/metadata/name"))
            .filter(|n| !before.contains(n))
            .collect();
        for key in made {
            self.reconcile_key(store, &(ns.to_string(), key), now, false);
        }
    }

    /// The claim that owns `sbx` follows its Ready condition (transition times kept).
    pub(super) fn claim_ready(&mut self, store: &mut Store, sbx: &Value, claim: &Value, now: DateTime<Utc>) {
        let ready = is_ready(sbx);
        let was = is_ready(claim);
        if ready == was && claim.pointer("/status/conditions").is_some() {
            return;
        }
        let expired = claim
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| cs.iter().any(|c| c["reason"] == "ClaimExpired"));
        if expired {
            return;
        }
        let generation = claim
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let (status, reason, message) = if ready {
            ("True", "SandboxReady", "Sandbox is ready")
        } else {
            ("False", "SandboxNotReady", "Sandbox is not ready")
        };
        let mut next = claim.clone();
        let mut conditions: Vec<Value> = claim
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c["type"] != "Ready")
            .collect();
        conditions.push(condition("Ready", status, reason, message, generation, &k8s_time(now)));
        next["status"]["conditions"] = json!(conditions);
        if ready
            && next
                .pointer("/metadata/annotations")
                .is_some_and(|a| a.get(TRUTH_CAUSE).is_some())
        {
            next["metadata"]["annotations"][TRUTH_READY_AT] =
                json!(now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
        }
        next["status"]["sandbox"] = json!({"name": s(sbx, "/metadata/name")});
        store.update(&CLAIMS, next);
    }
}

/// What slowed a cold start, by the knob it was given (else the pool was empty).
fn cold_truth(k: &Knobs) -> &'static str {
    if k.error_for_ms.is_some() {
        "controller-error"
    } else if k.schedule_delay_ms.is_some() {
        "unschedulable"
    } else if k.pull_delay_ms.is_some() {
        "image-pull"
    } else if k.readiness_delay_ms.is_some() {
        "slow-readiness"
    } else {
        "pool-empty"
    }
}

fn label_of<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

fn s_of(v: &Value, pointer: &str) -> String {
    s(v, pointer).to_string()
}
