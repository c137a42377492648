//! `restore`: a leaked disk or policy that `leaks --delete` deleted, re-created from its newest
//! tombstone (`cluster/tombstone.rs`) through the same gate as every write (rules, read-only,
//! audit readiness), each request audited before it leaves. A disk whose volume was kept
//! (`Retain`) is re-bound to it: the volume's claimRef is released (a JSON Patch conditional on
//! it still naming the deleted claim's uid), then the claim is created naming the volume. A name
//! something else now holds is refused, naming what holds it.

use super::*;

/// The audit log's verb for a restore's requests.
pub const RESTORE_VERB: &str = "restore";

#[derive(Debug, Clone, PartialEq)]
pub enum RestoreOutcome {
    /// Re-created; `volume`: the disk's data volume it was bound to again.
    Restored {
        uid: Option<String>,
        volume: Option<String>,
    },
    /// Re-created without its data (its volume was not kept): said so.
    RestoredEmpty {
        why: String,
    },
    Refused {
        message: String,
    },
    ReadOnly,
    Failed(ClusterError),
}

/// What a tombstone names: the kind to re-create (a disk or a policy only).
fn target_of(stone: &Value) -> Option<LeakTarget> {
    match stone.get("kind").and_then(Value::as_str)? {
        "PersistentVolumeClaim" => Some(LeakTarget::Disk),
        "CiliumNetworkPolicy" => Some(LeakTarget::Policy),
        _ => None,
    }
}

/// The object to create from the one kept: its name, namespace, labels, annotations and spec
/// (no uid, version, owners — they are gone — or status). `keep_volume`: a disk keeps naming
/// its volume; else it is a new, empty disk.
fn recreated(object: &Value, keep_volume: bool) -> Value {
    let mut out = json!({
        "apiVersion": object.get("apiVersion").cloned().unwrap_or(Value::Null),
        "kind": object.get("kind").cloned().unwrap_or(Value::Null),
        "metadata": {},
    });
    for key in ["name", "namespace", "labels", "annotations"] {
        if let Some(v) = object.pointer(&format!("/metadata/{key}")) {
            out["metadata"][key] = v.clone();
        }
    }
    // what this tool and the volume controllers wrote of the old object is not the new one's: a
    // quarantine would take it again, `bind-completed` without its volume leaves a claim Lost
    if let Some(annotations) = out["metadata"]["annotations"].as_object_mut() {
        annotations.retain(|k, _| {
            !(k.starts_with("kubectl-namzu.io/")
                || k.starts_with("pv.kubernetes.io/")
                || k.starts_with("volume.kubernetes.io/")
                || k.starts_with("volume.beta.kubernetes.io/"))
        });
    }
    if let Some(spec) = object.get("spec") {
        out["spec"] = spec.clone();
        if !keep_volume && let Some(spec) = out["spec"].as_object_mut() {
            spec.remove("volumeName");
        }
    }
    out
}

/// Re-create the object `stone` kept (in its namespace, over `conn`, which must be its context).
pub async fn restore(conn: &Connection, policy: &WritePolicy, stone: &Value) -> RestoreOutcome {
    let field = |k: &str| stone.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let (namespace, name, old_uid) = (field("namespace"), field("name"), field("uid"));
    let Some(target) = target_of(stone) else {
        return RestoreOutcome::Refused {
            message: format!("a tombstone of kind {:?} is not one restore re-creates", field("kind")),
        };
    };
    if let Err(stop) = gate(conn, policy, &namespace, false).await {
        return match stop {
            Gate::Refused(message) => RestoreOutcome::Refused { message },
            Gate::ReadOnly => RestoreOutcome::ReadOnly,
            Gate::Failed(e) => RestoreOutcome::Failed(e),
        };
    }
    let kind = match target {
        LeakTarget::Disk => &crate::cluster::kinds::PVCS,
        LeakTarget::Policy => &crate::cluster::kinds::CILIUM_POLICIES,
    };
    if !namzu_domain::naming::is_path_safe_name(&name) {
        return RestoreOutcome::Refused {
            message: format!("the tombstone names {name:?}, which is not a name"),
        };
    }
    if let Err(stop) = absent(conn, kind, &namespace, &name).await {
        return stop;
    }
    let id = write_id(conn);
    let entry = |what: &str, request: &Request, status: Option<u16>, outcome: &str| {
        json!({
            "write": id, "context": conn.context, "server": conn.server, "namespace": namespace,
            "workspace": what, "verb": RESTORE_VERB, "kind": request_kind(request),
            "request": request.to_json(), "status": status, "outcome": outcome,
        })
    };
    let retained = stone.pointer("/volume/retained").and_then(Value::as_bool) == Some(true);
    let volume = stone
        .pointer("/volume/name")
        .and_then(Value::as_str)
        .map(str::to_string);
    let (keep_volume, lost) = match (target, volume.as_deref()) {
        (LeakTarget::Disk, Some(pv)) if retained => rebind_volume(conn, policy, stone, pv, &old_uid, &entry).await,
        _ => (false, lost_why(stone)),
    };
    let request = create_request(stone, kind, &name, &namespace, keep_volume);
    let (url, body) = (request.path.clone(), request.body.clone());
    if let Err(why) = policy.audit.intend(
        entry(&name, &request, None, crate::cluster::audit::INTENT),
        conn.clock.now(),
    ) {
        return RestoreOutcome::Failed(ClusterError::Other(format!("{why}; nothing sent")));
    }
    let op = ApiCall::new("create", kind, Some(&namespace), &name);
    let post = http::Request::post(&url)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap_or_default());
    let answer = match post {
        Ok(post) => conn.bounded(&op, conn.client.request::<Value>(post)).await,
        Err(e) => Err(ClusterError::Other(format!("{op}: {e}"))),
    };
    match answer {
        Ok(created) => {
            policy
                .audit
                .record(entry(&name, &request, Some(201), "applied"), conn.clock.now());
            if target == LeakTarget::Disk && !keep_volume {
                return RestoreOutcome::RestoredEmpty { why: lost };
            }
            // the volume's reclaim policy as it was before the delete kept it (`Retain`)
            if let (Some(pv), Some(before)) = (
                volume.as_deref(),
                stone.pointer("/volume/reclaimPolicyBefore").and_then(Value::as_str),
            ) && before != "Retain"
            {
                put_back_reclaim(conn, policy, pv, &name, before, &entry).await;
            }
            RestoreOutcome::Restored {
                uid: uid(&created).map(str::to_string),
                volume: volume.filter(|_| keep_volume),
            }
        }
        Err(e) => {
            let status = status_of(&e);
            policy
                .audit
                .record(entry(&name, &request, status, "failed"), conn.clock.now());
            match status {
                Some(409) => RestoreOutcome::Refused {
                    message: format!(
                        "{} {name} was created by someone else meanwhile: not restored",
                        kind.kind
                    ),
                },
                _ => RestoreOutcome::Failed(e),
            }
        }
    }
}

/// The POST that re-creates the kept object, under the name and namespace checked (whatever
/// the kept copy says).
fn create_request(
    stone: &Value,
    kind: &crate::cluster::kinds::ApiKind,
    name: &str,
    namespace: &str,
    keep_volume: bool,
) -> Request {
    let object = stone.get("object").cloned().unwrap_or(Value::Null);
    let mut body = recreated(&object, keep_volume);
    // the object re-created is the one named and checked above, whatever the kept copy says
    body["metadata"]["name"] = json!(name);
    body["metadata"]["namespace"] = json!(namespace);
    body["apiVersion"] = json!(kind.api_resource().api_version);
    body["kind"] = json!(kind.kind);
    let url = <DynamicObject as kube::Resource>::url_path(&kind.api_resource(), Some(namespace));
    Request {
        method: "POST",
        path: url,
        content_type: "application/json",
        body,
    }
}

/// An audit entry of a restore: of what, the request, its status, the outcome.
type Entry<'a> = dyn Fn(&str, &Request, Option<u16>, &str) -> Value + Sync + 'a;

/// Nothing stands under the name now: a restore never writes over an object.
async fn absent(
    conn: &Connection,
    kind: &crate::cluster::kinds::ApiKind,
    namespace: &str,
    name: &str,
) -> Result<(), RestoreOutcome> {
    match resources::get(conn, kind, namespace, name).await {
        Ok(Some(now)) => Err(RestoreOutcome::Refused {
            message: format!(
                "{} {name} exists now (uid {}): not restored over it; nothing sent",
                kind.kind,
                uid(&now).unwrap_or("-")
            ),
        }),
        Ok(None) => Ok(()),
        Err(e) => Err(RestoreOutcome::Failed(e)),
    }
}

/// Why a restored disk comes back empty when its volume is not re-bound, as the tombstone says.
fn lost_why(stone: &Value) -> String {
    stone
        .pointer("/volume/why")
        .and_then(Value::as_str)
        .map_or("its volume was not kept".to_string(), str::to_string)
}

/// A disk's kept volume released for the re-created claim to bind: whether it will be, and else
/// why the disk comes back empty.
async fn rebind_volume(
    conn: &Connection,
    policy: &WritePolicy,
    stone: &Value,
    pv: &str,
    old_uid: &str,
    entry: &Entry<'_>,
) -> (bool, String) {
    match release_volume(
        conn,
        pv,
        old_uid,
        &|r, s, o| {
            policy.audit.record(entry(pv, r, s, o), conn.clock.now());
        },
        &|r| {
            policy
                .audit
                .intend(entry(pv, r, None, crate::cluster::audit::INTENT), conn.clock.now())
        },
    )
    .await
    {
        Ok(()) => (true, lost_why(stone)),
        Err(why) => (false, why),
    }
}

/// The volume's reclaim policy put back as it was before the delete kept it, by a patch
/// conditional on it still being `Retain` and this claim's, audited.
async fn put_back_reclaim(
    conn: &Connection,
    policy: &WritePolicy,
    pv: &str,
    name: &str,
    before: &str,
    entry: &Entry<'_>,
) {
    let body = json!([
        {"op": "test", "path": "/spec/persistentVolumeReclaimPolicy", "value": "Retain"},
        {"op": "test", "path": "/spec/claimRef/name", "value": name},
        {"op": "replace", "path": "/spec/persistentVolumeReclaimPolicy", "value": before},
    ]);
    let url = format!("/api/v1/persistentvolumes/{pv}");
    let request = Request {
        method: "PATCH",
        path: url.clone(),
        content_type: "application/json-patch+json",
        body: body.clone(),
    };
    if policy
        .audit
        .intend(
            entry(pv, &request, None, crate::cluster::audit::INTENT),
            conn.clock.now(),
        )
        .is_ok()
    {
        let op = ApiCall::new("patch", &crate::cluster::kinds::PERSISTENT_VOLUMES, None, pv);
        let patch = http::Request::patch(&url)
            .header("content-type", "application/json-patch+json")
            .body(serde_json::to_vec(&body).unwrap_or_default());
        let answer = match patch {
            Ok(p) => conn.bounded(&op, conn.client.request::<Value>(p)).await,
            Err(e) => Err(ClusterError::Other(e.to_string())),
        };
        let (status, outcome) = match &answer {
            Ok(_) => (Some(200), "applied"),
            Err(e) => (status_of(e), "failed"),
        };
        policy
            .audit
            .record(entry(pv, &request, status, outcome), conn.clock.now());
    }
}

fn request_kind(request: &Request) -> &'static str {
    if request.path.contains("/persistentvolumes/") {
        "PersistentVolume"
    } else if request.path.contains("persistentvolumeclaims") {
        "PersistentVolumeClaim"
    } else {
        "CiliumNetworkPolicy"
    }
}

/// A retained volume released for its claim to come back: its claimRef's uid (and version)
/// removed by a JSON Patch conditional on the uid being the deleted claim's, so the claim
/// re-created under the same name binds to it. Why it could not be.
async fn release_volume(
    conn: &Connection,
    pv: &str,
    old_uid: &str,
    record: &(dyn Fn(&Request, Option<u16>, &str) + Sync),
    intend: &(dyn Fn(&Request) -> Result<(), String> + Sync),
) -> Result<(), String> {
    if !namzu_domain::naming::is_path_safe_name(pv) {
        return Err(format!("volume name {pv:?} is not a name"));
    }
    let url = format!("/api/v1/persistentvolumes/{pv}");
    let op = ApiCall::new("get", &crate::cluster::kinds::PERSISTENT_VOLUMES, None, pv);
    let get = http::Request::get(&url).body(Vec::new()).map_err(|e| e.to_string())?;
    let volume: Value = conn
        .bounded(&op, conn.client.request::<Value>(get))
        .await
        .map_err(|e| format!("its volume {pv} cannot be read ({e}): re-created empty"))?;
    let claim_uid = volume.pointer("/spec/claimRef/uid").and_then(Value::as_str);
    if claim_uid.is_some_and(|u| u != old_uid) {
        return Err(format!(
            "its volume {pv} is bound to another claim now: re-created empty"
        ));
    }
    if claim_uid.is_none() {
        return Ok(());
    }
    let mut ops = vec![
        json!({"op": "test", "path": "/spec/claimRef/uid", "value": old_uid}),
        json!({"op": "remove", "path": "/spec/claimRef/uid"}),
    ];
    if volume.pointer("/spec/claimRef/resourceVersion").is_some() {
        ops.push(json!({"op": "remove", "path": "/spec/claimRef/resourceVersion"}));
    }
    let body = Value::Array(ops);
    let request = Request {
        method: "PATCH",
        path: url.clone(),
        content_type: "application/json-patch+json",
        body: body.clone(),
    };
    intend(&request)?;
    let op = ApiCall::new("patch", &crate::cluster::kinds::PERSISTENT_VOLUMES, None, pv);
    let patch = http::Request::patch(&url)
        .header("content-type", "application/json-patch+json")
        .body(serde_json::to_vec(&body).unwrap_or_default())
        .map_err(|e| e.to_string())?;
    match conn.bounded(&op, conn.client.request::<Value>(patch)).await {
        Ok(_) => {
            record(&request, Some(200), "applied");
            Ok(())
        }
        Err(e) => {
            record(&request, status_of(&e), "failed");
            Err(format!("its volume {pv} could not be released ({e}): re-created empty"))
        }
    }
}
