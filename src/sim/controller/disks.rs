//! The disks: a Sandbox's volume claims, created and bound.

use super::*;

impl Controller {
    pub(super) fn ensure_pvcs(&mut self, store: &mut Store, sbx: &Value, knobs: &Knobs, now: &str) {
        let ns = s(sbx, "/metadata/namespace");
        let name = s(sbx, "/metadata/name");
        let vcts = sbx
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for vct in vcts {
            let pvc_name = format!("{}-{name}", s(&vct, "/metadata/name"));
            let phase = if knobs.pvc_pending { "Pending" } else { "Bound" };
            match store.get(&PVCS, ns, &pvc_name).cloned() {
                None if knobs.disk_missing => {}
                None => {
                    let mut labels = vct.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
                    labels["agents.x-k8s.io/sandbox-name-hash"] = json!(name_hash(name));
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
                    if store.create(&PVCS, pvc, now).is_ok() && knobs.pvc_pending {
                        self.announce(store, sbx, "ProvisioningFailed", &format!("persistentvolumeclaim {pvc_name}: waiting for a volume to be created, either by external provisioner or manually created by system administrator"), "Warning", now);
                    }
                }
                Some(mut pvc) if s(&pvc, "/status/phase") != phase => {
                    pvc["status"]["phase"] = json!(phase);
                    store.update(&PVCS, pvc);
                }
                Some(_) => {}
            }
        }
    }
}
