//! The sim's disks as a real cluster keeps them: PersistentVolumes provisioned and bound with
//! their claims, reclaimed (Delete) or Released (Retain) when a claim goes, a Released one bound
//! again once its claimRef is cleared, orphaning deletes (`--cascade=orphan`), agent-sandbox
//! adopting a detached disk back, and per-sandbox policies a SandboxClaim owns.

use crate::support::*;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, PropagationPolicy};
use namzu_sim::auth::{Rule, User};
use namzu_sim::controller::name_hash;
use namzu_sim::resources::{CILIUM_POLICIES, CLAIMS, PVCS, PVS, SANDBOXES};
use serde_json::{Value, json};
use std::process::Output;

const DISKS: &str = r#"
namespaces: [agents]
objects:
  - apiVersion: extensions.agents.x-k8s.io/v1beta1
    kind: SandboxClaim
    metadata: {name: pooled, namespace: agents}
    spec: {warmPoolRef: {name: pool}}
workspaces:
  - namespace: agents
    id: x
    podTemplate: &pt
      metadata: {labels: {app: agent}}
      spec: {containers: [{name: agent, image: "ghcr.io/x/agent:1.2"}]}
  - namespace: agents
    id: kept
    podTemplate: *pt
    knobs: {reclaimPolicy: Retain}
  - namespace: agents
    id: pooled
    podTemplate: *pt
    ownerClaim: pooled
    claimPolicy: true
"#;

async fn start_disks() -> TestSim {
    // kubectl's deletes carry no preconditions: the sim is not strict here
    start_with(DISKS, |c| c.strict = false).await
}

fn pvs(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &ar("", "v1", "PersistentVolume", "persistentvolumes"))
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Run kubectl against the sim; `None` (and a note) when kubectl is not installed.
async fn kubectl(t: &TestSim, args: &[&str]) -> Option<Output> {
    crate::support::kubectl_on(t, "the kubectl disk tests", args).await
}

fn ok(o: &Output) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "kubectl failed: {stderr}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn pvc_of(t: &TestSim, id: &str) -> Value {
    t.sim
        .get(&PVCS, "agents", &format!("workspace-disk-namzu-ws-{id}"))
        .expect("the workspace's disk")
}

fn pv_of(t: &TestSim, pvc: &Value) -> Option<Value> {
    t.sim.get(&PVS, "", s(pvc, "/spec/volumeName"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_disk_is_bound_to_a_provisioned_volume() {
    let t = start_disks().await;
    let client = t.client().await;
    let pvc = serde_json::to_value(pvcs(&client, "agents").get("workspace-disk-namzu-ws-x").await.unwrap()).unwrap();
    let uid = s(&pvc, "/metadata/uid");
    let volume = format!("pvc-{uid}");
    assert_eq!(s(&pvc, "/spec/volumeName"), volume);
    assert_eq!(s(&pvc, "/status/phase"), "Bound");
    assert_eq!(s(&pvc, "/status/capacity/storage"), "10Gi");

    let pv = serde_json::to_value(pvs(&client).get(&volume).await.unwrap()).unwrap();
    assert!(pv["metadata"].get("namespace").is_none(), "cluster-scoped: {pv}");
    assert_eq!(s(&pv, "/spec/persistentVolumeReclaimPolicy"), "Delete");
    assert_eq!(s(&pv, "/status/phase"), "Bound");
    assert_eq!(s(&pv, "/spec/capacity/storage"), "10Gi");
    let claim = &pv["spec"]["claimRef"];
    assert_eq!(
        (
            s(claim, "/kind"),
            s(claim, "/namespace"),
            s(claim, "/name"),
            s(claim, "/uid")
        ),
        ("PersistentVolumeClaim", "agents", "workspace-disk-namzu-ws-x", uid)
    );
    assert_eq!(s(claim, "/apiVersion"), "v1");
    assert!(!s(claim, "/resourceVersion").is_empty(), "{claim}");
    // the Retain knob gives the volume its policy
    let kept = pv_of(&t, &pvc_of(&t, "kept")).expect("kept's volume");
    assert_eq!(s(&kept, "/spec/persistentVolumeReclaimPolicy"), "Retain");

    // discovery and kubectl: `pv`, cluster-scoped, printed as a real server prints it
    let Some(out) = kubectl(&t, &["get", "pv"]).await else {
        return;
    };
    let table = ok(&out);
    let header = table.lines().next().unwrap_or("");
    for col in ["NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM"] {
        assert!(header.contains(col), "{table}");
    }
    let row = table
        .lines()
        .find(|l| l.starts_with(&volume))
        .expect("the volume's row");
    for cell in ["10Gi", "RWO", "Delete", "Bound", "agents/workspace-disk-namzu-ws-x"] {
        assert!(row.contains(cell), "{row}");
    }
    let out = kubectl(&t, &["api-resources", "--namespaced=false"]).await.unwrap();
    let listed = ok(&out);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("persistentvolumes") && l.contains(" pv ") && l.contains("PersistentVolume")),
        "{listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_claim_deletes_its_volume_or_releases_a_retained_one() {
    let t = start_disks().await;
    let client = t.client().await;
    let (x, kept) = (pvc_of(&t, "x"), pvc_of(&t, "kept"));
    let (x_pv, kept_pv) = (s(&x, "/spec/volumeName"), s(&kept, "/spec/volumeName"));

    // the Sandbox goes, its disk by garbage collection, and the disk's volume by its policy
    for id in ["x", "kept"] {
        sandboxes(&client, "agents")
            .delete(&format!("namzu-ws-{id}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    assert!(t.sim.get(&PVCS, "agents", "workspace-disk-namzu-ws-x").is_none());
    let err = pvs(&client).get(x_pv).await.unwrap_err();
    assert_eq!(status_code(&err), Some(404), "the Delete volume is gone");
    let released = serde_json::to_value(pvs(&client).get(kept_pv).await.unwrap()).unwrap();
    assert_eq!(s(&released, "/status/phase"), "Released");
    assert_eq!(
        s(&released, "/spec/claimRef/uid"),
        s(&kept, "/metadata/uid"),
        "the claimRef is kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_collection_later_reclaims_later() {
    let t = start_disks().await;
    t.sim.set_gc_delay(Some(chrono::Duration::seconds(2)));
    let client = t.client().await;
    let volume = s(&pvc_of(&t, "x"), "/spec/volumeName").to_string();
    sandboxes(&client, "agents")
        .delete("namzu-ws-x", &DeleteParams::default())
        .await
        .unwrap();
    assert!(t.sim.get(&PVS, "", &volume).is_some(), "the disk is not collected yet");
    t.sim.advance(chrono::Duration::seconds(3));
    // the next request sees the collector's work done
    let err = pvs(&client).get(&volume).await.unwrap_err();
    assert_eq!(status_code(&err), Some(404));
    assert!(t.sim.get(&PVCS, "agents", "workspace-disk-namzu-ws-x").is_none());
}

fn claim_for(name: &str, volume: &str) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "agents"},
        "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Block", "volumeName": volume,
            "resources": {"requests": {"storage": "10Gi"}}}}))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_volume_binds_again_once_its_claim_ref_is_cleared() {
    let t = start_disks().await;
    let client = t.client().await;
    let old = pvc_of(&t, "kept");
    let volume = s(&old, "/spec/volumeName").to_string();
    pvcs(&client, "agents")
        .delete("workspace-disk-namzu-ws-kept", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(s(&t.sim.get(&PVS, "", &volume).unwrap(), "/status/phase"), "Released");

    // a claim naming the volume does not bind while the claimRef has the old claim's uid
    let created = pvcs(&client, "agents")
        .create(&PostParams::default(), &claim_for("restored", &volume))
        .await
        .unwrap();
    let created = serde_json::to_value(created).unwrap();
    assert_eq!(
        s(&created, "/status/phase"),
        "Pending",
        "as a real server answers: {created}"
    );
    let restored = t.sim.get(&PVCS, "agents", "restored").unwrap();
    assert_eq!(s(&restored, "/status/phase"), "Pending", "{restored}");
    let pv = t.sim.get(&PVS, "", &volume).unwrap();
    assert_eq!(s(&pv, "/status/phase"), "Released");
    assert_eq!(s(&pv, "/spec/claimRef/uid"), s(&old, "/metadata/uid"));

    // the claimRef cleared (a merge patch): the volume binds to the claim that names it
    pvs(&client)
        .patch(
            &volume,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"claimRef": null}})),
        )
        .await
        .unwrap();
    let pv = t.sim.get(&PVS, "", &volume).unwrap();
    let now = t.sim.get(&PVCS, "agents", "restored").unwrap();
    assert_eq!(s(&pv, "/status/phase"), "Bound");
    assert_eq!(s(&pv, "/spec/claimRef/uid"), s(&now, "/metadata/uid"));
    assert_eq!(s(&pv, "/spec/claimRef/name"), "restored");
    assert_eq!(s(&now, "/status/phase"), "Bound");
    assert_eq!(s(&now, "/spec/volumeName"), volume);
    assert_eq!(s(&now, "/status/capacity/storage"), "10Gi");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_clears_the_claim_ref_uid_and_the_same_claim_name_binds_again() {
    let t = start_disks().await;
    let old = pvc_of(&t, "kept");
    let volume = s(&old, "/spec/volumeName").to_string();
    let Some(out) = kubectl(
        &t,
        // the Sandbox goes (else its controller would make the disk again), its disk with it
        &[
            "delete",
            "sandboxes.agents.x-k8s.io",
            "-n",
            "agents",
            "namzu-ws-kept",
            "--wait=false",
        ],
    )
    .await
    else {
        return;
    };
    ok(&out);
    let out = kubectl(&t, &["get", "pv", &volume, "-o", "jsonpath={.status.phase}"])
        .await
        .unwrap();
    assert_eq!(ok(&out), "Released");

    // the usual restore: the claimRef's uid and resourceVersion removed, the claim made again
    let patch = format!(
        r#"[{{"op":"test","path":"/spec/claimRef/uid","value":"{}"}},{{"op":"remove","path":"/spec/claimRef/uid"}},{{"op":"remove","path":"/spec/claimRef/resourceVersion"}}]"#,
        s(&old, "/metadata/uid")
    );
    let out = kubectl(&t, &["patch", "pv", &volume, "--type", "json", "-p", &patch])
        .await
        .unwrap();
    ok(&out);
    let pv = t.sim.get(&PVS, "", &volume).unwrap();
    assert_eq!(
        s(&pv, "/status/phase"),
        "Available",
        "pre-bound to the claim's name: {pv}"
    );
    let file = t.dir.path().join("claim.json");
    std::fs::write(
        &file,
        serde_json::to_string(&claim_for("workspace-disk-namzu-ws-kept", &volume)).unwrap(),
    )
    .unwrap();
    let out = kubectl(&t, &["create", "-f", &file.display().to_string()])
        .await
        .unwrap();
    ok(&out);
    let out = kubectl(
        &t,
        &[
            "get",
            "pvc",
            "-n",
            "agents",
            "workspace-disk-namzu-ws-kept",
            "-o",
            "json",
        ],
    )
    .await
    .unwrap();
    let pvc: Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(s(&pvc, "/status/phase"), "Bound");
    assert_eq!(s(&pvc, "/spec/volumeName"), volume);
    let pv = t.sim.get(&PVS, "", &volume).unwrap();
    assert_eq!(s(&pv, "/status/phase"), "Bound");
    assert_eq!(s(&pv, "/spec/claimRef/uid"), s(&pvc, "/metadata/uid"));
    assert_ne!(s(&pvc, "/metadata/uid"), s(&old, "/metadata/uid"));
}

/// The Sandbox as a client would create it again: its spec, nothing the server set.
fn recreated(sbx: &Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": sbx["apiVersion"], "kind": "Sandbox",
        "metadata": {"name": sbx["metadata"]["name"], "namespace": sbx["metadata"]["namespace"]},
        "spec": sbx["spec"]}))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphaning_delete_leaves_the_disk_and_a_new_sandbox_adopts_it() {
    let t = start_disks().await;
    let client = t.client().await;
    let before = t.sim.get(&SANDBOXES, "agents", "namzu-ws-x").unwrap();
    let disk = pvc_of(&t, "x");
    let Some(out) = kubectl(
        &t,
        &[
            "delete",
            "sandboxes.agents.x-k8s.io",
            "-n",
            "agents",
            "namzu-ws-x",
            "--cascade=orphan",
            "--wait=false",
        ],
    )
    .await
    else {
        return;
    };
    ok(&out);
    assert!(t.sim.get(&SANDBOXES, "agents", "namzu-ws-x").is_none());
    let left = pvc_of(&t, "x");
    assert_eq!(left["metadata"]["uid"], disk["metadata"]["uid"], "the same disk");
    assert!(left["metadata"].get("ownerReferences").is_none(), "unowned: {left}");
    assert_eq!(
        s(&left, "/metadata/labels/agents.x-k8s.io~1sandbox-name-hash"),
        name_hash("namzu-ws-x")
    );
    let pv = pv_of(&t, &left).expect("the volume stays");
    assert_eq!(s(&pv, "/status/phase"), "Bound");

    // the Sandbox made again: agent-sandbox takes the disk back instead of making one
    let created = sandboxes(&client, "agents")
        .create(&PostParams::default(), &recreated(&before))
        .await
        .unwrap();
    let new_uid = created.metadata.uid.clone().unwrap();
    assert_ne!(new_uid, s(&before, "/metadata/uid"));
    let adopted = pvc_of(&t, "x");
    assert_eq!(adopted["metadata"]["uid"], disk["metadata"]["uid"], "no new disk");
    assert_eq!(
        adopted["metadata"]["ownerReferences"],
        json!([{"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "name": "namzu-ws-x",
            "uid": new_uid, "controller": true, "blockOwnerDeletion": true}])
    );
    assert_eq!(s(&adopted, "/spec/volumeName"), s(&disk, "/spec/volumeName"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphaning_by_query_or_body_keeps_every_dependent() {
    let t = start_disks().await;
    let client = t.client().await;
    // DeleteOptions in the body (kube's DeleteParams)
    sandboxes(&client, "agents")
        .delete(
            "namzu-ws-kept",
            &DeleteParams {
                propagation_policy: Some(PropagationPolicy::Orphan),
                ..DeleteParams::default()
            },
        )
        .await
        .unwrap();
    let disk = pvc_of(&t, "kept");
    assert!(disk["metadata"].get("ownerReferences").is_none(), "{disk}");
    let pod = t.sim.get(&namzu_sim::resources::PODS, "agents", "namzu-ws-kept");
    assert!(pod.is_some_and(|p| p["metadata"].get("ownerReferences").is_none()));

    // `?propagationPolicy=Orphan` in the query
    let url = "/apis/agents.x-k8s.io/v1beta1/namespaces/agents/sandboxes/namzu-ws-x?propagationPolicy=Orphan";
    let req = http::Request::delete(url).body(Vec::new()).unwrap();
    client.request_text(req).await.unwrap();
    assert!(t.sim.get(&SANDBOXES, "agents", "namzu-ws-x").is_none());
    assert!(pvc_of(&t, "x")["metadata"].get("ownerReferences").is_none());

    // a Background delete (the default) still collects
    sandboxes(&client, "agents")
        .delete("namzu-ws-pooled", &DeleteParams::default())
        .await
        .unwrap();
    assert!(t.sim.get(&PVCS, "agents", "workspace-disk-namzu-ws-pooled").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_without_the_label_or_with_another_owner_is_not_adopted() {
    let t = start_disks().await;
    let client = t.client().await;
    let template = t.sim.get(&SANDBOXES, "agents", "namzu-ws-x").unwrap();
    let pvc = |name: &str, labels: Value, owners: Value| -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "agents", "labels": labels, "ownerReferences": owners},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}))
        .unwrap()
    };
    // y: unowned but not labelled as y's; z: labelled as z's but another controller owns it
    let foreign = json!([{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db",
        "uid": "11111111-2222-4333-8444-555555555555", "controller": true, "blockOwnerDeletion": true}]);
    for (name, labels, owners) in [
        ("workspace-disk-namzu-ws-y", json!({"app": "other"}), json!([])),
        (
            "workspace-disk-namzu-ws-z",
            json!({"agents.x-k8s.io/sandbox-name-hash": name_hash("namzu-ws-z")}),
            foreign.clone(),
        ),
    ] {
        pvcs(&client, "agents")
            .create(&PostParams::default(), &pvc(name, labels, owners))
            .await
            .unwrap();
    }
    for id in ["y", "z"] {
        let mut sbx = template.clone();
        sbx["metadata"]["name"] = json!(format!("namzu-ws-{id}"));
        sandboxes(&client, "agents")
            .create(&PostParams::default(), &recreated(&sbx))
            .await
            .unwrap();
    }
    let y = pvc_of(&t, "y");
    assert!(
        y["metadata"]
            .get("ownerReferences")
            .is_none_or(|r| r.as_array().is_some_and(Vec::is_empty)),
        "{y}"
    );
    assert_eq!(pvc_of(&t, "z")["metadata"]["ownerReferences"], foreign);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_the_claim_owns_goes_with_the_claim() {
    let t = start_disks().await;
    let client = t.client().await;
    let claim = t.sim.get(&CLAIMS, "agents", "pooled").unwrap();
    let claim_uid = s(&claim, "/metadata/uid").to_string();
    let name = format!("namzu-sbx-{claim_uid}");
    let policy = t
        .sim
        .get(&CILIUM_POLICIES, "agents", &name)
        .expect("the claim's policy");
    assert_eq!(
        policy["metadata"]["ownerReferences"],
        json!([{"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
            "name": "pooled", "uid": claim_uid}])
    );
    assert_eq!(
        s(
            &policy,
            "/spec/endpointSelector/matchLabels/sandbox.namzu.ai~1per-sandbox-egress"
        ),
        "namzu-ws-pooled"
    );
    let claims: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "agents",
        &ar("extensions.agents.x-k8s.io", "v1beta1", "SandboxClaim", "sandboxclaims"),
    );
    claims.delete("pooled", &DeleteParams::default()).await.unwrap();
    assert!(t.sim.get(&CILIUM_POLICIES, "agents", &name).is_none());
    assert!(t.sim.get(&SANDBOXES, "agents", "namzu-ws-pooled").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volumes_are_cluster_scoped_for_rbac() {
    let read = |namespaces: &[&str]| vec![Rule::new(&["get", "list"], &[""], &["persistentvolumes"], namespaces)];
    let t = start_with(DISKS, |c| {
        c.users = vec![
            User::admin("admin", "admin-token"),
            User::with_rules("ns-reader", "ns-reader-token", read(&["agents"])),
            User::with_rules("cluster-reader", "cluster-reader-token", read(&[])),
        ];
    })
    .await;
    for name in ["ns-reader", "cluster-reader"] {
        let path = t.dir.path().join(format!("{name}.kubeconfig"));
        t.sim
            .write_kubeconfig_for(&path, Some(&format!("{name}-token")), "agents")
            .unwrap();
        let client = client_from(&path, false).await;
        let listed = pvs(&client).list(&Default::default()).await;
        let got = pvs(&client).get("pvc-none").await;
        if name == "ns-reader" {
            // a Role in a namespace grants nothing cluster-scoped
            assert_eq!(status_code(&listed.unwrap_err()), Some(403));
            assert_eq!(status_code(&got.unwrap_err()), Some(403));
        } else {
            assert_eq!(listed.unwrap().items.len(), 3);
            assert_eq!(status_code(&got.unwrap_err()), Some(404));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_has_a_detached_disk_a_retained_expiry_and_a_true_orphan() {
    let t = start_demo().await;
    let keep = t
        .sim
        .get(&PVCS, "agents", "workspace-disk-namzu-ws-keep")
        .expect("the detached disk");
    assert!(keep["metadata"].get("ownerReferences").is_none());
    assert_eq!(
        s(&keep, "/metadata/labels/agents.x-k8s.io~1sandbox-name-hash"),
        name_hash("namzu-ws-keep")
    );
    assert!(t.sim.get(&SANDBOXES, "agents", "namzu-ws-keep").is_none());
    let pv = pv_of(&t, &keep).expect("its volume");
    assert_eq!(s(&pv, "/spec/persistentVolumeReclaimPolicy"), "Delete");
    assert_eq!(s(&pv, "/status/phase"), "Bound");
    assert_eq!(s(&pv, "/spec/claimRef/uid"), s(&keep, "/metadata/uid"));

    let ghost = t
        .sim
        .get(&PVCS, "agents", "workspace-disk-namzu-ws-ghost")
        .expect("the true orphan");
    assert_eq!(
        s(&ghost, "/metadata/ownerReferences/0/uid"),
        "0e0e0e0e-0000-4000-8000-0000c30aeb01"
    );
    assert_eq!(s(&pv_of(&t, &ghost).expect("its volume"), "/status/phase"), "Bound");

    let retained = t.sim.get(&SANDBOXES, "agents", "namzu-ws-retained").unwrap();
    assert!(retained["spec"].get("shutdownPolicy").is_none(), "{retained}");
    assert!(!s(&retained, "/spec/shutdownTime").is_empty());
    let ready = retained["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap();
    assert_eq!(
        (s(&ready, "/status"), s(&ready, "/reason")),
        ("False", "SandboxExpired")
    );
    // the demo operator may read volumes (cluster-scoped)
    let client = t.client().await;
    assert!(!pvs(&client).list(&Default::default()).await.unwrap().items.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphaning_delete_under_a_lagging_collector_collects_nothing_later() {
    let t = start_disks().await;
    t.sim.set_gc_delay(Some(chrono::Duration::seconds(2)));
    let client = t.client().await;
    sandboxes(&client, "agents")
        .delete(
            "namzu-ws-x",
            &DeleteParams {
                propagation_policy: Some(PropagationPolicy::Orphan),
                ..DeleteParams::default()
            },
        )
        .await
        .unwrap();
    t.sim.advance(chrono::Duration::seconds(3));
    let _ = pvs(&client).list(&Default::default()).await.unwrap();
    let disk = pvc_of(&t, "x");
    assert!(disk["metadata"].get("ownerReferences").is_none(), "{disk}");
    assert_eq!(s(&pv_of(&t, &disk).expect("its volume"), "/status/phase"), "Bound");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenario_claims_get_their_volumes_as_written() {
    let scenario = r#"
namespaces: [data]
objects:
  - apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: kept, namespace: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}}
    status: {phase: Bound}
  - apiVersion: v1
    kind: PersistentVolume
    metadata: {name: handmade}
    spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], persistentVolumeReclaimPolicy: Retain}
  - apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: named, namespace: data}
    spec: {accessModes: [ReadWriteOnce], volumeName: handmade, resources: {requests: {storage: 1Gi}}}
    status: {phase: Bound}
  - apiVersion: v1
    kind: PersistentVolume
    metadata: {name: spare}
    spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], persistentVolumeReclaimPolicy: Delete}
knobs:
  data/kept: {reclaimPolicy: Retain}
"#;
    let t = start_with(scenario, |_| {}).await;
    let kept = t.sim.get(&PVCS, "data", "kept").unwrap();
    let pv = pv_of(&t, &kept).expect("provisioned");
    assert_eq!(s(&pv, "/spec/persistentVolumeReclaimPolicy"), "Retain");
    assert_eq!(s(&kept, "/status/capacity/storage"), "5Gi");
    let named = t.sim.get(&PVCS, "data", "named").unwrap();
    assert_eq!(s(&named, "/spec/volumeName"), "handmade");
    let handmade = t.sim.get(&PVS, "", "handmade").unwrap();
    assert_eq!(s(&handmade, "/status/phase"), "Bound");
    assert_eq!(s(&handmade, "/spec/claimRef/uid"), s(&named, "/metadata/uid"));
    let spare = t.sim.get(&PVS, "", "spare").unwrap();
    assert_eq!(s(&spare, "/status/phase"), "Available", "{spare}");
}
