//! The persistent-volume controller (kube-controller-manager's, with a dynamic provisioner):
//! a Bound claim has a PersistentVolume `pvc-<claim uid>` bound back to it by `claimRef`; a
//! deleted claim's volume is deleted (`persistentVolumeReclaimPolicy: Delete`) or Released
//! (`Retain`, its `claimRef` kept with the old uid); a claim that names a volume
//! (`spec.volumeName`) binds to it once the volume is Available or Released and its `claimRef`
//! is cleared or names the claim by namespace and name without a uid (a `claimRef.uid` of a
//! claim that is gone binds nothing, as a real cluster's).
//!
//! It works from the store's record of what changed in claims and volumes
//! ([`Store::take_volume_events`]), after each write and each tick: never a scan of every claim.

use super::resources::{PVCS, PVS};
use super::store::{EventType, Store, meta};
use serde_json::{Value, json};

/// The provisioner a dynamically provisioned volume names.
pub(crate) const PROVISIONER: &str = "csi.namzu-sim.local";

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Provision a volume for `pvc` (stored, with its uid) and bind the two: the volume
/// `pvc-<uid>` with `policy` as its reclaim policy, the claim's `spec.volumeName` and
/// `status.capacity`. Returns the claim as stored. A claim already bound is left as it is.
pub(crate) fn provision(store: &mut Store, pvc: Value, policy: &str, now: &str) -> Value {
    if !s(&pvc, "/spec/volumeName").is_empty() {
        return pvc;
    }
    let name = format!("pvc-{}", meta(&pvc, "uid"));
    let storage = pvc
        .pointer("/spec/resources/requests/storage")
        .cloned()
        .unwrap_or(json!("1Gi"));
    let access = pvc
        .pointer("/spec/accessModes")
        .cloned()
        .unwrap_or(json!(["ReadWriteOnce"]));
    let mode = Some(s(&pvc, "/spec/volumeMode"))
        .filter(|m| !m.is_empty())
        .unwrap_or("Filesystem");
    let class = Some(s(&pvc, "/spec/storageClassName"))
        .filter(|c| !c.is_empty())
        .unwrap_or("standard");
    if store.get(&PVS, "", &name).is_none() {
        let pv = json!({"metadata": {"name": name,
                "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER}},
            "spec": {"capacity": {"storage": storage}, "accessModes": access, "volumeMode": mode,
                "persistentVolumeReclaimPolicy": policy, "storageClassName": class,
                "csi": {"driver": PROVISIONER, "volumeHandle": format!("vol-{}", meta(&pvc, "uid"))},
                "claimRef": claim_ref(&pvc)},
            "status": {"phase": "Bound"}});
        // a creationTimestamp as the claim's: a scenario's disk of 40 days has a volume as old
        let created = Some(meta(&pvc, "creationTimestamp"))
            .filter(|c| !c.is_empty())
            .unwrap_or(now);
        let mut pv = pv;
        pv["metadata"]["creationTimestamp"] = json!(created);
        let _ = store.create(&PVS, pv, now);
    }
    bind_claim(store, pvc, &name)
}

/// A Bound claim a scenario gives in full: bound to the volume it names (`spec.volumeName`,
/// given in the scenario too), else to one provisioned for it.
pub(crate) fn settle_claim(store: &mut Store, pvc: Value, policy: &str, now: &str) {
    let named = s(&pvc, "/spec/volumeName").to_string();
    match store.get(&PVS, "", &named).cloned() {
        Some(pv) if !named.is_empty() => bind(store, pv, pvc),
        _ => {
            let mut pvc = pvc;
            if let Some(spec) = pvc.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("volumeName");
            }
            provision(store, pvc, policy, now);
        }
    }
}

/// A volume's `claimRef` to `pvc`.
fn claim_ref(pvc: &Value) -> Value {
    json!({"kind": "PersistentVolumeClaim", "namespace": meta(pvc, "namespace"), "name": meta(pvc, "name"),
        "uid": meta(pvc, "uid"), "apiVersion": "v1", "resourceVersion": meta(pvc, "resourceVersion")})
}

/// The claim's side of a binding: `spec.volumeName`, Bound, the volume's capacity.
fn bind_claim(store: &mut Store, mut pvc: Value, volume: &str) -> Value {
    let pv = store.get(&PVS, "", volume).cloned().unwrap_or(json!({}));
    pvc["spec"]["volumeName"] = json!(volume);
    pvc["status"]["phase"] = json!("Bound");
    if let Some(access) = pv.pointer("/spec/accessModes").or(pvc.pointer("/spec/accessModes")) {
        pvc["status"]["accessModes"] = access.clone();
    }
    let capacity = pv
        .pointer("/spec/capacity")
        .cloned()
        .or_else(|| {
            pvc.pointer("/spec/resources/requests/storage")
                .map(|q| json!({"storage": q}))
        })
        .unwrap_or(json!({}));
    pvc["status"]["capacity"] = capacity;
    store.update(&PVCS, pvc)
}

/// Bind `pv` to `pvc` on both sides.
fn bind(store: &mut Store, mut pv: Value, pvc: Value) {
    pv["spec"]["claimRef"] = claim_ref(&pvc);
    pv["status"]["phase"] = json!("Bound");
    let name = meta(&pv, "name").to_string();
    store.update(&PVS, pv);
    bind_claim(store, pvc, &name);
}

/// May `pvc` bind to `pv`? The volume is not bound to another claim, and its `claimRef` is
/// cleared or names this claim (by namespace and name; a uid only if it is this claim's).
fn bindable(pv: &Value, pvc: &Value) -> bool {
    if pv.pointer("/metadata/deletionTimestamp").is_some() || s(pv, "/status/phase") == "Bound" {
        return false;
    }
    match pv.pointer("/spec/claimRef").filter(|c| c.is_object()) {
        None => true,
        Some(c) => {
            s(c, "/namespace") == meta(pvc, "namespace")
                && s(c, "/name") == meta(pvc, "name")
                && (s(c, "/uid").is_empty() || s(c, "/uid") == meta(pvc, "uid"))
        }
    }
}

/// A claim not bound yet that names a volume: bound when the volume allows it, else Pending.
fn claim_changed(store: &mut Store, pvc: Value) {
    let volume = s(&pvc, "/spec/volumeName").to_string();
    if volume.is_empty() || s(&pvc, "/status/phase") == "Bound" || pvc.pointer("/metadata/deletionTimestamp").is_some()
    {
        return;
    }
    match store.get(&PVS, "", &volume).cloned() {
        Some(pv) if bindable(&pv, &pvc) => bind(store, pv, pvc),
        _ if s(&pvc, "/status/phase").is_empty() => {
            let mut pvc = pvc;
            pvc["status"]["phase"] = json!("Pending");
            store.update(&PVCS, pvc);
        }
        _ => {}
    }
}

/// A claim is gone: its volume is reclaimed as its policy says.
fn claim_deleted(store: &mut Store, pvc: &Value, now: &str) {
    let volume = s(pvc, "/spec/volumeName");
    let Some(pv) = store.get(&PVS, "", volume).cloned() else {
        return;
    };
    if s(&pv, "/spec/claimRef/uid") == meta(pvc, "uid") && !meta(pvc, "uid").is_empty() {
        reclaim(store, pv, now);
    }
}

/// The claim a volume was bound to is gone: Delete removes the volume, anything else
/// (Retain) leaves it Released with its `claimRef`.
fn reclaim(store: &mut Store, mut pv: Value, now: &str) {
    if s(&pv, "/spec/persistentVolumeReclaimPolicy") == "Delete" {
        let name = meta(&pv, "name").to_string();
        store.delete(&PVS, "", &name, now, &[]);
    } else if s(&pv, "/status/phase") != "Released" {
        pv["status"]["phase"] = json!("Released");
        store.update(&PVS, pv);
    }
}

/// A volume changed: one bound to a claim that is gone is reclaimed; one not bound binds to the
/// claim its `claimRef` names or that names it, else is Available once its `claimRef` has no uid.
fn volume_changed(store: &mut Store, pv: Value, now: &str) {
    if pv.pointer("/metadata/deletionTimestamp").is_some() {
        return;
    }
    let name = meta(&pv, "name").to_string();
    let claim = pv.pointer("/spec/claimRef").filter(|c| c.is_object()).cloned();
    let claimed = claim.as_ref().and_then(|c| {
        store
            .get(&PVCS, s(c, "/namespace"), s(c, "/name"))
            .cloned()
            .filter(|pvc| s(c, "/uid").is_empty() || s(c, "/uid") == meta(pvc, "uid"))
    });
    if s(&pv, "/status/phase") == "Bound" {
        match (&claim, &claimed) {
            (Some(c), None) if !s(c, "/uid").is_empty() => reclaim(store, pv, now),
            _ => {}
        }
        return;
    }
    let candidate = match &claim {
        Some(_) => claimed.filter(|pvc| {
            let named = s(pvc, "/spec/volumeName");
            named.is_empty() || named == name
        }),
        None => store
            .list(&PVCS, None)
            .find(|pvc| s(pvc, "/spec/volumeName") == name && s(pvc, "/status/phase") != "Bound")
            .cloned(),
    };
    if let Some(pvc) = candidate.filter(|pvc| bindable(&pv, pvc) && s(pvc, "/status/phase") != "Bound") {
        return bind(store, pv, pvc);
    }
    let unclaimed = claim.as_ref().is_none_or(|c| s(c, "/uid").is_empty());
    if unclaimed && s(&pv, "/status/phase") != "Available" {
        let mut pv = pv;
        pv["status"]["phase"] = json!("Available");
        store.update(&PVS, pv);
    }
}

/// The controller's pass over what changed in claims and volumes since the last one (its own
/// writes included, until nothing more changes).
pub(crate) fn sync(store: &mut Store, now: &str) {
    for _ in 0..4 {
        let events = store.take_volume_events();
        if events.is_empty() {
            return;
        }
        for ev in events {
            let (ns, name) = (meta(&ev.object, "namespace"), meta(&ev.object, "name"));
            let is_pv = ev.rkey == super::store::rkey(&PVS);
            match (is_pv, ev.kind) {
                (false, EventType::Deleted) => claim_deleted(store, &ev.object, now),
                (false, _) => {
                    if let Some(pvc) = store.get(&PVCS, ns, name).cloned() {
                        claim_changed(store, pvc);
                    }
                }
                (true, EventType::Deleted) => {}
                (true, _) => {
                    if let Some(pv) = store.get(&PVS, "", name).cloned() {
                        volume_changed(store, pv, now);
                    }
                }
            }
        }
    }
}
