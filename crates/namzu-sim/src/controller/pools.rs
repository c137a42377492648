//! The warm-pool controller (agent-sandbox v1.0.3's `sandboxwarmpool_controller.go`, as far as a
//! triage tool sees it): each pool is kept at `spec.replicas` unclaimed members, Sandboxes made
//! from its template, labelled with the pool's name hash (`warm-pool-sandbox`) and the hash of
//! the template they were made from (`sandbox-pod-template-hash`). After a template edit,
//! `updateStrategy: OnReplenish` (the default) keeps the members it has — they run the old
//! template until claimed or replaced — and `Recreate` deletes and replaces them. The status
//! counts members and Ready ones; there are no conditions: when members stay unschedulable for
//! [`NOT_PROGRESSING_AFTER_MINUTES`] the pool records `WarmPoolNotProgressing` (Warning), and
//! `WarmPoolProgressing` (Normal) once all are Ready again — one Event per transition.
//!
//! The hash here is the sim's own (FNV-1a-32 of the pod template with its keys sorted); the real
//! controller's differs, and the tool never recomputes either. A pool whose status the scenario
//! gives is left as given. Knobs set for a pool (`namespace/pool`) apply to its members.

use super::super::resources::{TEMPLATES, WARM_POOLS};
use super::*;

pub(super) const WARM_POOL_SANDBOX: &str = "agents.x-k8s.io/warm-pool-sandbox";
pub(super) const POOL_TEMPLATE_HASH: &str = "agents.x-k8s.io/sandbox-pod-template-hash";
/// How long members may stay unschedulable before the pool says it is not progressing.
pub(super) const NOT_PROGRESSING_AFTER_MINUTES: i64 = 5;

/// The sim's hash of a template's pod template.
pub(super) fn template_hash(template: &Value) -> String {
    let mut pod_template = template.pointer("/spec/podTemplate").cloned().unwrap_or(Value::Null);
    super::super::store::sort_keys(&mut pod_template);
    name_hash(&pod_template.to_string())
}

fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

fn unschedulable(pod: Option<&Value>) -> bool {
    pod.and_then(|p| p.pointer("/status/conditions"))
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "PodScheduled" && c["status"] == "False" && c["reason"] == "Unschedulable")
        })
}

fn ready(sbx: &Value) -> bool {
    sbx.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

impl Controller {
    /// One pass over every warm pool, before the Sandboxes' (members it makes get theirs).
    pub(super) fn reconcile_pools(&mut self, store: &mut Store, now: DateTime<Utc>) {
        let pools: Vec<Value> = store.list(&WARM_POOLS, None).cloned().collect();
        for pool in pools {
            let (ns, name) = (s(&pool, "/metadata/namespace"), s(&pool, "/metadata/name"));
            if pool.pointer("/metadata/deletionTimestamp").is_some() || self.frozen_pools.contains(&knob_key(ns, name))
            {
                continue;
            }
            self.reconcile_pool(store, &pool, now);
        }
    }

    /// One pool's pass now (a claim took a member): left alone when the scenario froze it.
    pub(super) fn reconcile_pool_now(&mut self, store: &mut Store, pool: &Value, now: DateTime<Utc>) {
        let key = knob_key(s(pool, "/metadata/namespace"), s(pool, "/metadata/name"));
        if !self.frozen_pools.contains(&key) {
            self.reconcile_pool(store, pool, now);
        }
    }

    fn reconcile_pool(&mut self, store: &mut Store, pool: &Value, now: DateTime<Utc>) {
        let (ns, name) = (
            s(pool, "/metadata/namespace").to_string(),
            s(pool, "/metadata/name").to_string(),
        );
        let now_s = k8s_time(now);
        let Some(template) = store
            .get(&TEMPLATES, &ns, s(pool, "/spec/sandboxTemplateRef/name"))
            .cloned()
        else {
            return;
        };
        let hash = template_hash(&template);
        let recreate = s(pool, "/spec/updateStrategy/type") == "Recreate";
        let pool_hash = name_hash(&name);
        let replicas = pool
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1)
            .max(0) as usize;
        let owner = json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
            "name": name, "uid": s(pool, "/metadata/uid"), "controller": true, "blockOwnerDeletion": true});
        let pool_knobs = self.knobs.get(&knob_key(&ns, &name)).cloned();
        let mut members: Vec<Value> = Vec::new();
        let listed: Vec<Value> = store
            .list(&SANDBOXES, Some(&ns))
            .filter(|m| label(m, WARM_POOL_SANDBOX) == Some(pool_hash.as_str()))
            .filter(|m| m.pointer("/metadata/deletionTimestamp").is_none())
            .cloned()
            .collect();
        for mut m in listed {
            let member = s(&m, "/metadata/name").to_string();
            // a member made from an older template: Recreate replaces it, OnReplenish keeps it
            if recreate && label(&m, POOL_TEMPLATE_HASH).is_some_and(|h| h != hash) {
                store.delete(&SANDBOXES, &ns, &member, &now_s, &CASCADE);
                continue;
            }
            let mut changed = false;
            if label(&m, POOL_TEMPLATE_HASH).is_none() {
                m["metadata"]["labels"][POOL_TEMPLATE_HASH] = json!(hash);
                changed = true;
            }
            if m.pointer("/metadata/ownerReferences").is_none() {
                m["metadata"]["ownerReferences"] = json!([owner]);
                changed = true;
            }
            if changed {
                m = store.update(&SANDBOXES, m);
            }
            if let Some(k) = &pool_knobs {
                self.knobs.entry(knob_key(&ns, &member)).or_insert_with(|| k.clone());
            }
            members.push(m);
        }
        let mut seq = 0u64;
        while members.len() < replicas {
            seq += 1;
            let member = format!(
                "{name}-{}",
                &name_hash(&format!("{name}/{hash}/{seq}/{}", members.len()))[..5]
            );
            if store.get(&SANDBOXES, &ns, &member).is_some() {
                continue;
            }
            let mut spec = json!({"podTemplate": template.pointer("/spec/podTemplate").cloned().unwrap_or(json!({}))});
            if let Some(v) = template.pointer("/spec/volumeClaimTemplates") {
                spec["volumeClaimTemplates"] = v.clone();
            }
            let obj = json!({"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
                "metadata": {"name": member, "namespace": ns,
                    "labels": {WARM_POOL_SANDBOX: pool_hash, POOL_TEMPLATE_HASH: hash},
                    "annotations": {"agents.x-k8s.io/sandbox-template-ref": s(&template, "/metadata/name")},
                    "ownerReferences": [owner]},
                "spec": spec});
            if let Some(k) = &pool_knobs {
                self.knobs.insert(knob_key(&ns, &member), k.clone());
            }
            match store.create(&SANDBOXES, obj, &now_s) {
                Ok(m) => members.push(m),
                Err(_) => return,
            }
        }
        let ready_count = members.iter().filter(|m| ready(m)).count();
        let mut next = pool.clone();
        next["status"] = json!({"replicas": members.len(), "readyReplicas": ready_count,
            "selector": format!("{WARM_POOL_SANDBOX}={pool_hash}"),
            "observedGeneration": pool.pointer("/metadata/generation").cloned().unwrap_or(json!(1))});
        if next["status"] != pool["status"] {
            store.update(&WARM_POOLS, next);
        }
        self.say_progress(store, pool, &members, (ready_count, replicas), now);
    }

    /// Progress, said as the pool's events: members unschedulable for long → not progressing;
    /// all Ready again → progressing (each said once per change).
    fn say_progress(
        &mut self,
        store: &mut Store,
        pool: &Value,
        members: &[Value],
        (ready_count, replicas): (usize, usize),
        now: DateTime<Utc>,
    ) {
        let (ns, name) = (s(pool, "/metadata/namespace"), s(pool, "/metadata/name"));
        let now_s = k8s_time(now);
        // progress: members unschedulable for long → not progressing; all Ready again → progressing
        let after = Duration::minutes(NOT_PROGRESSING_AFTER_MINUTES);
        let mut stuck = 0;
        for m in members {
            if !unschedulable(store.get(&PODS, ns, s(m, "/metadata/name"))) {
                continue;
            }
            match parse_time(s(m, "/metadata/creationTimestamp")).map(|t| t + after) {
                Some(due) if due <= now => stuck += 1,
                Some(due) => self.due(due),
                None => {}
            }
        }
        let uid = s(pool, "/metadata/uid").to_string();
        let last = self.pool_progress.get(&uid).cloned();
        let (reason, message, type_) = if stuck > 0 && last.as_deref() != Some("WarmPoolNotProgressing") {
            (
                "WarmPoolNotProgressing",
                format!(
                    "{stuck} of {} members unschedulable for more than {NOT_PROGRESSING_AFTER_MINUTES}m",
                    members.len()
                ),
                "Warning",
            )
        } else if stuck == 0 && last.as_deref() == Some("WarmPoolNotProgressing") && ready_count >= replicas {
            (
                "WarmPoolProgressing",
                format!("{ready_count}/{replicas} members ready"),
                "Normal",
            )
        } else {
            return;
        };
        self.pool_progress.insert(uid, reason.to_string());
        self.event_seq += 1;
        let event = format!("{name}.{:016x}", self.event_seq);
        let pool_now = store
            .get(&WARM_POOLS, ns, name)
            .cloned()
            .unwrap_or_else(|| pool.clone());
        let _ = store.create(
            &EVENTS,
            core_event(
                &event,
                &pool_now,
                reason,
                &message,
                type_,
                super::super::events::POOL_CONTROLLER,
                &now_s,
            ),
            &now_s,
        );
    }
}
