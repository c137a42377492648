//! The disks: a Sandbox's volume claims, created (with their volume, as a dynamic provisioner
//! makes one: `sim/volumes.rs`), bound, and adopted back when an orphaning delete left them.

use super::*;
use crate::volumes;

/// The label agent-sandbox puts on what a Sandbox owns: the FNV-1a hash of its name.
pub(super) const NAME_HASH_LABEL: &str = "agents.x-k8s.io/sandbox-name-hash";

impl Controller {
    pub(super) fn ensure_pvcs(&mut self, store: &mut Store, sbx: &Value, knobs: &Knobs, now: &str) {
        let ns = s(sbx, "/metadata/namespace");
        let name = s(sbx, "/metadata/name");
        let vcts = sbx
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let policy = knobs.reclaim_policy.as_deref().unwrap_or("Delete");
        for vct in vcts {
            let pvc_name = format!("{}-{name}", s(&vct, "/metadata/name"));
            let phase = if knobs.pvc_pending { "Pending" } else { "Bound" };
            match store.get(&PVCS, ns, &pvc_name).cloned() {
                None if knobs.disk_missing => {}
                None => {
                    let mut labels = vct.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
                    labels[NAME_HASH_LABEL] = json!(name_hash(name));
                    // a foreign disk: an earlier Sandbox of this name made it, and it was never
                    // collected (a real cluster's garbage collector lags, or an orphaning delete)
                    let owner = if knobs.foreign_disk {
                        let mut o = owner_ref(sbx);
                        o["uid"] = json!(earlier_uid(name));
                        o
                    } else {
                        owner_ref(sbx)
                    };
                    let pvc = json!({"metadata":{"name":pvc_name,"namespace":ns,"labels":labels,
                        "ownerReferences":[owner]},
                        "spec": vct.get("spec").cloned().unwrap_or(json!({})),
                        "status":{"phase":phase}});
                    match store.create(&PVCS, pvc, now) {
                        Ok(_) if knobs.pvc_pending => {
                            self.announce(store, sbx, "ProvisioningFailed", &format!("persistentvolumeclaim {pvc_name}: waiting for a volume to be created, either by external provisioner or manually created by system administrator"), "Warning", now);
                        }
                        Ok(created) => {
                            volumes::provision(store, created, policy, now);
                        }
                        Err(_) => {}
                    }
                }
                Some(pvc) => {
                    let mut pvc = adopt(store, sbx, pvc);
                    if s(&pvc, "/status/phase") != phase {
                        pvc["status"]["phase"] = json!(phase);
                        let pvc = store.update(&PVCS, pvc);
                        if phase == "Bound" {
                            volumes::provision(store, pvc, policy, now);
                        }
                    }
                }
            }
        }
    }
}

/// agent-sandbox's `reconcilePVCs`: a claim of the Sandbox's name that nothing controls and
/// that carries the Sandbox's name-hash label (one an orphaning delete left) is taken back,
/// the Sandbox its controller owner. One owned by anything else, or without the label, is left
/// as it is (a name clash the tool reports as a foreign disk).
fn adopt(store: &mut Store, sbx: &Value, pvc: Value) -> Value {
    let refs = pvc
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let owned = refs
        .iter()
        .any(|r| r["controller"] == json!(true) || r["kind"] == "Sandbox");
    let hash = name_hash(s(sbx, "/metadata/name"));
    let labelled = pvc
        .pointer("/metadata/labels")
        .and_then(|l| l.get(NAME_HASH_LABEL))
        .and_then(Value::as_str)
        == Some(hash.as_str());
    if owned || !labelled || pvc.pointer("/metadata/deletionTimestamp").is_some() {
        return pvc;
    }
    let mut pvc = pvc;
    let mut refs = refs;
    refs.push(owner_ref(sbx));
    pvc["metadata"]["ownerReferences"] = Value::Array(refs);
    store.update(&PVCS, pvc)
}
