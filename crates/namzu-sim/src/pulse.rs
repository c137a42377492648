//! A scenario's pulse: claims arriving on a warm pool at a steady rate over the last stretch of
//! time, some of them slowed by an injected cause, played through the live controller model
//! (claim binding, pool replenish, the pods' start-ups) at the times they happened — so every
//! claim, Sandbox, pod and Event stands as a cluster's would after that hour.
//!
//! ```yaml
//! pulse:
//!   - namespace: team-a
//!     pool: coder-pool          # a SandboxWarmPool of the scenario (its template, its replicas)
//!     claims: 1000              # how many claims arrive …
//!     every: 3s                 # … one every this long, the last just before now
//!     readyDelay: 20s           # how long a pod takes to become Ready (members and cold ones)
//!     causes: {pool-empty: 12, stale-member: 12, image-pull: 12, unschedulable: 12, controller-error: 12}
//!     slowBy: 15s               # what an injected knob adds (spread ±50% claim by claim)
//!     jitter: 20                # a cold pod's start-up varies ±20% claim by claim (default 0)
//! ```
//!
//! How each cause is brought about: `pool-empty` — claims take every member at once just before
//! (they count among the claims), so the claim is made cold; `replenish-hold` — the same a second
//! earlier, so the claim adopts a member the pool is still making; `stale-member` — the member it
//! will adopt carries an older template hash; `image-pull`, `unschedulable`, `slow-readiness`,
//! `controller-error` — the pool is drained as for `pool-empty` and the cold Sandbox is given the
//! knob (`pullDelayMs`, `scheduleDelayMs`, `readinessDelayMs`, `errorForMs`). What actually
//! happened to each claim is the sim's record on it ([`crate::controller::TRUTH_CAUSE`]).

use super::clock::k8s_time;
use super::controller::{Controller, Knobs, knob_key, name_hash};
use super::resources::{CLAIMS, SANDBOXES, WARM_POOLS};
use super::scenario::parse_duration;
use super::store::Store;
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One pool's pulse.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PulseSpec {
    pub namespace: String,
    pub pool: String,
    pub claims: usize,
    pub every: String,
    #[serde(default)]
    pub ready_delay: Option<String>,
    /// Injected causes and how many claims get each.
    #[serde(default)]
    pub causes: BTreeMap<String, usize>,
    #[serde(default)]
    pub slow_by: Option<String>,
    /// A cold Sandbox's start-up varies by up to this many percent either way, claim by claim
    /// (default 0: every pod the same).
    #[serde(default)]
    pub jitter: u8,
}

/// The causes a pulse can inject.
pub const CAUSES: [&str; 7] = [
    "pool-empty",
    "replenish-hold",
    "stale-member",
    "image-pull",
    "unschedulable",
    "slow-readiness",
    "controller-error",
];

impl PulseSpec {
    /// The spec's mistakes, said as a scenario error.
    pub fn check(&self) -> Result<(), String> {
        parse_duration(&self.every).map_err(|e| format!("scenario: pulse.every {e}"))?;
        for d in [&self.ready_delay, &self.slow_by].into_iter().flatten() {
            parse_duration(d).map_err(|e| format!("scenario: pulse {e}"))?;
        }
        if let Some(c) = self.causes.keys().find(|c| !CAUSES.contains(&c.as_str())) {
            return Err(format!(
                "scenario: pulse cause {c:?} is not one of {}",
                CAUSES.join(", ")
            ));
        }
        if self.causes.values().sum::<usize>() > self.claims {
            return Err("scenario: pulse injects more causes than it has claims".into());
        }
        Ok(())
    }

    /// Which claim gets which cause: spread evenly, interleaved.
    fn plan(&self) -> Vec<Option<&str>> {
        let mut injected: Vec<&str> = Vec::new();
        let most = self.causes.values().copied().max().unwrap_or(0);
        for round in 0..most {
            for (c, n) in &self.causes {
                if round < *n {
                    injected.push(c);
                }
            }
        }
        let mut plan = vec![None; self.claims];
        let m = injected.len();
        for (j, c) in injected.into_iter().enumerate() {
            // past the first tenth, so the pool has settled
            let i = self.claims / 10 + (j * (self.claims - self.claims / 10)) / m.max(1);
            if let Some(slot) = plan.get_mut(i.min(self.claims.saturating_sub(1))) {
                *slot = Some(c);
            }
        }
        plan
    }
}

fn ms(d: Duration) -> Option<u64> {
    u64::try_from(d.num_milliseconds()).ok()
}

/// The pool's unclaimed members now, oldest Ready first (the order a claim takes them in).
fn members(store: &Store, ns: &str, pool: &str) -> Vec<Value> {
    let hash = name_hash(pool);
    let ready = |m: &Value| {
        m.pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
    };
    let mut out: Vec<Value> = store
        .list(&SANDBOXES, Some(ns))
        .filter(|m| {
            m.pointer("/metadata/labels/agents.x-k8s.io~1warm-pool-sandbox")
                .and_then(Value::as_str)
                == Some(&hash)
        })
        .filter(|m| m.pointer("/metadata/deletionTimestamp").is_none())
        .cloned()
        .collect();
    out.sort_by_key(|m| {
        (
            !ready(m),
            m.pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            m.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        )
    });
    out
}

/// Play one pulse through the model, the last claim arriving `every` before `now`.
pub fn play(
    controller: &mut Controller,
    store: &mut Store,
    spec: &PulseSpec,
    now: DateTime<Utc>,
) -> Result<(), String> {
    spec.check()?;
    if store.get(&WARM_POOLS, &spec.namespace, &spec.pool).is_none() {
        return Err(format!(
            "scenario: pulse pool {}/{} is not in the scenario",
            spec.namespace, spec.pool
        ));
    }
    let every = parse_duration(&spec.every)?;
    let ready_delay = spec.ready_delay.as_deref().map(parse_duration).transpose()?;
    let slow_by = spec
        .slow_by
        .as_deref()
        .map(parse_duration)
        .transpose()?
        .unwrap_or(Duration::seconds(15));
    let base = Knobs {
        ready_delay_ms: ready_delay.and_then(ms),
        ..Knobs::default()
    };
    controller
        .knobs
        .insert(knob_key(&spec.namespace, &spec.pool), base.clone());
    for m in members(store, &spec.namespace, &spec.pool) {
        let name = m["metadata"]["name"].as_str().unwrap_or("").to_string();
        controller.knobs.insert(knob_key(&spec.namespace, &name), base.clone());
    }
    let start = now - every * spec.claims as i32;
    // the pool as it was before the first claim: full and Ready
    controller.replenish(store, &spec.namespace, &spec.pool, start - Duration::minutes(10));
    advance(controller, store, start - Duration::minutes(5));
    let plan = spec.plan();
    let mut seq = 0usize;
    let mut i = 0usize;
    while i < spec.claims {
        let t = start + every * i as i32;
        let cause = plan[i];
        advance(controller, store, t - Duration::seconds(1));
        // a drain: claims take every member (a second earlier for a hold)
        if let Some(c) = cause.filter(|c| *c != "stale-member") {
            let at = if c == "replenish-hold" {
                t - Duration::seconds(1)
            } else {
                t
            };
            let n = members(store, &spec.namespace, &spec.pool).len();
            for _ in 0..n.min(spec.claims - i - 1) {
                arrive(controller, store, spec, &mut seq, at, None)?;
                i += 1;
            }
        }
        let spread = 0.5 + (seq % 11) as f64 / 10.0;
        let slow = ms(Duration::milliseconds(
            (slow_by.num_milliseconds() as f64 * spread) as i64,
        ));
        // this claim's own start-up, should it be made cold
        let base = match (ready_delay, spec.jitter) {
            (Some(d), j) if j > 0 => {
                let j = i64::from(j.min(90));
                let step = (seq as i64 * 37) % (2 * j + 1) - j;
                Knobs {
                    ready_delay_ms: ms(d + d * step as i32 / 100),
                    ..base.clone()
                }
            }
            _ => base.clone(),
        };
        let knobs = match cause {
            Some("image-pull") => Some(Knobs {
                pull_delay_ms: slow,
                ..base.clone()
            }),
            Some("unschedulable") => Some(Knobs {
                schedule_delay_ms: slow,
                ..base.clone()
            }),
            Some("slow-readiness") => Some(Knobs {
                readiness_delay_ms: slow,
                ..base.clone()
            }),
            Some("controller-error") => Some(Knobs {
                error_for_ms: slow,
                ..base.clone()
            }),
            _ => Some(base.clone()),
        };
        if cause == Some("stale-member") {
            advance(controller, store, t);
            // the member it will take was made from an older template
            if let Some(mut m) = members(store, &spec.namespace, &spec.pool).into_iter().next() {
                m["metadata"]["labels"]["agents.x-k8s.io/sandbox-pod-template-hash"] = json!("0ld7e3a1");
                store.update(&SANDBOXES, m);
            }
        }
        arrive(controller, store, spec, &mut seq, t, knobs)?;
        i += 1;
    }
    advance(controller, store, now);
    Ok(())
}

/// Run every pass that falls due up to `t`, each at its own time (as the live sim's clock would).
fn advance(controller: &mut Controller, store: &mut Store, t: DateTime<Utc>) {
    // a bound, should a pass keep scheduling itself at its own instant
    for _ in 0..100_000 {
        match controller.next_due() {
            Some(d) if d <= t => controller.reconcile_due(store, d),
            _ => break,
        }
    }
    controller.reconcile_due(store, t);
}

/// One claim arrives at `t` (its pass and what has fallen due before it run first).
fn arrive(
    controller: &mut Controller,
    store: &mut Store,
    spec: &PulseSpec,
    seq: &mut usize,
    t: DateTime<Utc>,
    knobs: Option<Knobs>,
) -> Result<(), String> {
    advance(controller, store, t);
    *seq += 1;
    let name = format!("{}-claim-{:05}", spec.pool, seq);
    controller
        .knobs
        .insert(knob_key(&spec.namespace, &name), knobs.unwrap_or_default());
    let claim = json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
        "metadata": {"name": name, "namespace": spec.namespace,
            "annotations": {"agents.x-k8s.io/client-first-requested-at": t.to_rfc3339_opts(SecondsFormat::Millis, true)}},
        "spec": {"warmPoolRef": {"name": spec.pool}}});
    let created = store
        .create(&CLAIMS, claim, &k8s_time(t))
        .map_err(|e| e.body["message"].to_string())?;
    if let Some(sandbox) = controller.bind_claim(store, &created, t) {
        // an adopted member gets the pulse's timings too, for a pod made again
        let key = knob_key(&spec.namespace, &sandbox);
        let own = controller.knobs.get(&knob_key(&spec.namespace, &name)).cloned();
        if let Some(k) = own {
            controller.knobs.entry(key).or_insert(k);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::{NAMESPACES, TEMPLATES};
    use chrono::TimeZone;

    #[test]
    fn a_pulse_plays_claims_through_the_model_and_records_what_happened() {
        let now = Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0).unwrap();
        let mut store = Store::new();
        let at = k8s_time(now - Duration::days(1));
        store
            .create(&NAMESPACES, json!({"metadata": {"name": "ns"}}), &at)
            .unwrap();
        store
            .create(
                &TEMPLATES,
                json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
                "metadata": {"name": "t", "namespace": "ns"},
                "spec": {"podTemplate": {"spec": {"containers": [{"name": "agent", "image": "agent:1"}]}}}}),
                &at,
            )
            .unwrap();
        store
            .create(
                &WARM_POOLS,
                json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
                "metadata": {"name": "p", "namespace": "ns"},
                "spec": {"replicas": 2, "sandboxTemplateRef": {"name": "t"}}}),
                &at,
            )
            .unwrap();
        let mut c = Controller::new(crate::controller::Timing::default());
        let spec: PulseSpec = serde_json::from_value(json!({"namespace": "ns", "pool": "p", "claims": 60, "every": "5s",
            "readyDelay": "4s", "slowBy": "20s",
            "causes": {"pool-empty": 2, "stale-member": 2, "image-pull": 2, "unschedulable": 2, "controller-error": 2, "slow-readiness": 2}}))
        .unwrap();
        play(&mut c, &mut store, &spec, now).unwrap();
        let claims: Vec<Value> = store.list(&CLAIMS, None).cloned().collect();
        assert_eq!(claims.len(), 60);
        let mut truth: BTreeMap<String, usize> = BTreeMap::new();
        for cl in &claims {
            let a = &cl["metadata"]["annotations"];
            *truth
                .entry(a[crate::controller::TRUTH_CAUSE].as_str().unwrap_or("?").to_string())
                .or_default() += 1;
            assert!(a[crate::controller::TRUTH_READY_AT].is_string(), "{cl}");
        }
        for cause in [
            "pool-empty",
            "stale-member",
            "image-pull",
            "unschedulable",
            "controller-error",
            "slow-readiness",
            "none",
        ] {
            assert!(truth.get(cause).is_some_and(|n| *n >= 2), "{cause}: {truth:?}");
        }
        let launch = |t: &str| {
            store
                .list(&SANDBOXES, Some("ns"))
                .filter(|s| s["metadata"]["labels"]["agents.x-k8s.io/launch-type"] == t)
                .count()
        };
        assert!(
            launch("cold") >= 10 && launch("warm") >= 30,
            "{} {}",
            launch("cold"),
            launch("warm")
        );
    }
}
