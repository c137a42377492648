//! The documented, stable JSON shape of a workspace (`list -o json|yaml`, README "JSON schema").

use namzu_domain::egress::PolicyRead;
use namzu_domain::next_step::next_step;
use namzu_domain::workspace::{Observed, Workspace};
use serde_json::{Value, json};

pub(crate) fn workspace(w: &Workspace) -> Value {
    let epoch = match (&w.epoch.annotation, w.epoch.epoch) {
        (raw, Some(e)) => json!({"value": e, "readable": true, "raw": raw}),
        (raw, None) => json!({"value": null, "readable": false, "raw": raw}),
    };
    let pod = match &w.pod {
        Observed::Forbidden => json!("forbidden"),
        Observed::Known(None) => Value::Null,
        Observed::Known(Some(p)) => json!({"name": p.name, "uid": p.uid, "phase": p.phase}),
    };
    let pvcs = match &w.pvcs {
        Observed::Forbidden => json!("forbidden"),
        Observed::Known(list) => json!(
            list.iter()
                .map(|p| json!({"name": p.name, "uid": p.uid, "phase": p.phase,
                    "owners": p.owners.iter().map(|o| json!({"kind": o.kind, "name": o.name, "uid": o.uid})).collect::<Vec<_>>(),
                    "foreign": p.foreign}))
                .collect::<Vec<_>>()
        ),
    };
    // read from the pod's status.containerStatuses (and sidecars' initContainerStatuses), as
    // `kubectl get pods` counts them: null when there is no pod or pods may not be read
    let (restarts, last_termination) = match &w.pod {
        Observed::Known(Some(p)) => (
            json!(p.restarts),
            p.last_termination.as_ref().map_or(Value::Null, |t| {
                json!({"container": t.container, "exitCode": t.exit_code, "reason": t.reason, "finishedAt": t.finished_at})
            }),
        ),
        _ => (Value::Null, Value::Null),
    };
    let missing = match &w.missing_claims {
        Observed::Forbidden => Value::Null,
        Observed::Known(list) => json!(list),
    };
    let policies = match &w.egress.policies {
        PolicyRead::Forbidden => json!("forbidden"),
        PolicyRead::NotServed => json!("not-served"),
        PolicyRead::Known(list) => json!(
            list.iter()
                .map(|p| json!({"name": p.name, "owned": p.owned, "owners": p.owners}))
                .collect::<Vec<_>>()
        ),
    };
    let mut object = json!({
        "id": w.id,
        "namespace": w.namespace,
        "sandboxName": w.sandbox_name,
        "uid": w.uid,
        "mode": w.mode.as_str(),
        "state": w.state.as_str(),
        "diagnosis": w.diagnosis.as_ref().map(|d| json!({"kind": d.kind.as_str(), "reason": d.reason, "message": d.message})),
        "nextStep": next_step(w).map(|n| json!({"text": n.text, "command": n.command})),
        "createdAt": w.created_at,
        "deletionTimestamp": w.deletion,
        "finalizers": w.finalizers,
        "shutdownTime": w.shutdown_time,
        "shutdownPolicy": w.shutdown_policy,
        "operatingModeChangedAt": w.changed_at,
        "holderEpoch": epoch,
        "template": w.template,
        // agent-sandbox v1.0.3's own words on how it started and whether a pool holds it
        "launchType": w.labels.get(namzu_domain::annotations::LAUNCH_TYPE),
        "warmPoolMember": w.labels.contains_key(namzu_domain::annotations::WARM_POOL_SANDBOX),
        "drift": {
            "state": w.drift.state.as_str(),
            "stored": w.drift.stored,
            "current": w.drift.current,
            "overlays": w.drift.overlays,
        },
        "pod": pod,
        "restarts": restarts,
        "lastTermination": last_termination,
        "pvcs": pvcs,
        "ready": w.ready,
        "identity": {
            "sandboxUid": w.identity.sandbox_uid,
            "volumeClaimUids": namzu_domain::workspace::str_map_json(&w.identity.volume_claim_uids),
            "podUid": w.identity.pod_uid,
        },
        "missingVolumeClaims": missing,
        "egress": {
            "profile": w.egress.profile,
            "perSandbox": w.egress.per_sandbox.is_some(),
            "perSandboxLabelValue": w.egress.per_sandbox,
            "policies": policies,
        },
        "namzuAnnotations": namzu_domain::workspace::str_map_json(&w.namzu_annotations),
        "resources": w.resources.to_json(),
    });
    // across contexts each object says which cluster it is in, first; with one, nothing changes
    match &w.context {
        Some(context) => {
            let mut with = serde_json::Map::with_capacity(24);
            with.insert("context".into(), json!(context));
            if let Value::Object(fields) = object.take() {
                with.extend(fields);
            }
            Value::Object(with)
        }
        None => object,
    }
}
