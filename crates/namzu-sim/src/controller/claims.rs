//! The claim controller's lifecycle enforcement (agent-sandbox v1.0.3): at a claim's
//! `spec.lifecycle.shutdownTime`, `shutdownPolicy: Delete | DeleteForeground` deletes the claim
//! (its Sandbox, pod and disks follow by garbage collection), and `Retain` — the default — keeps
//! it with Ready=False `ClaimExpired`. A shutdownTime moved forward before it falls due (a
//! keepalive) only moves the pass. `ttlSecondsAfterFinished` is stored and shown, not enforced
//! here (the sim's Sandboxes do not finish).

use super::*;

impl Controller {
    /// One pass over every claim's lifecycle.
    pub(super) fn reconcile_claims(&mut self, store: &mut Store, now: DateTime<Utc>) {
        let claims: Vec<Value> = store
            .list(&CLAIMS, None)
            .filter(|c| c.pointer("/spec/lifecycle/shutdownTime").is_some())
            .filter(|c| c.pointer("/metadata/deletionTimestamp").is_none())
            .cloned()
            .collect();
        let now_s = k8s_time(now);
        for claim in claims {
            let raw = s(&claim, "/spec/lifecycle/shutdownTime").to_string();
            let Some(at) = parse_time(&raw) else {
                continue;
            };
            if at > now {
                self.due(at);
                continue;
            }
            let (ns, name) = (s(&claim, "/metadata/namespace"), s(&claim, "/metadata/name"));
            match s(&claim, "/spec/lifecycle/shutdownPolicy") {
                "Delete" | "DeleteForeground" => {
                    store.delete(&CLAIMS, ns, name, &now_s, &CASCADE);
                }
                _ => {
                    let expired = claim
                        .pointer("/status/conditions")
                        .and_then(Value::as_array)
                        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["reason"] == "ClaimExpired"));
                    if expired {
                        continue;
                    }
                    let mut next = claim.clone();
                    let generation = claim
                        .pointer("/metadata/generation")
                        .and_then(Value::as_i64)
                        .unwrap_or(1);
                    let mut conditions: Vec<Value> = claim
                        .pointer("/status/conditions")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|c| c["type"] != "Ready")
                        .collect();
                    conditions.push(condition(
                        "Ready",
                        "False",
                        "ClaimExpired",
                        &format!("Claim expired at {raw}"),
                        generation,
                        &now_s,
                    ));
                    next["status"]["conditions"] = json!(conditions);
                    store.update(&CLAIMS, next);
                }
            }
        }
    }
}
