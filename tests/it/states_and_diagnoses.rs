//! Every state and every diagnosis kind, derived from objects shaped as the controller writes them.

use chrono::{DateTime, TimeZone, Utc};
use namzu_domain::diagnosis::DiagnosisKind;
use namzu_domain::drift::{OverlayFlags, TemplateRead};
use namzu_domain::egress::PolicyRead;
use namzu_domain::pod::Index;
use namzu_domain::state::State;
use namzu_domain::workspace::{Inputs, Observed, Workspace, derive};
use serde_json::{Value, json};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).unwrap()
}

fn cond(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type":type_,"status":status,"reason":reason,"message":message,"observedGeneration":1})
}

fn sandbox(mode: &str, conditions: Vec<Value>) -> Value {
    json!({
        "metadata":{"name":"namzu-ws-a","namespace":"agents","uid":"sbx-uid","generation":1,
            "creationTimestamp":"2026-11-01T00:00:00Z","resourceVersion":"10"},
        "spec":{"operatingMode":mode,
            "podTemplate":{"metadata":{"labels":{"sandbox.namzu.ai/template":"ws"}},"spec":{"containers":[{"name":"agent","image":"a:1"}]}},
            "volumeClaimTemplates":[{"metadata":{"name":"workspace-disk"}}]},
        "status":{"conditions":conditions}
    })
}

fn pod(extra_status: Value) -> Value {
    let mut p = json!({"metadata":{"name":"namzu-ws-a","uid":"pod-uid",
        "ownerReferences":[{"uid":"sbx-uid","kind":"Sandbox","name":"namzu-ws-a"}]},
        "spec":{"nodeName":"node-1","containers":[{"name":"agent","image":"a:1"}]},
        "status":{"phase":"Running"}});
    if let (Some(dst), Some(src)) = (p["status"].as_object_mut(), extra_status.as_object()) {
        dst.extend(src.clone());
    }
    p
}

fn pvc(phase: &str) -> Value {
    json!({"metadata":{"name":"workspace-disk-namzu-ws-a","uid":"pvc-uid",
        "ownerReferences":[{"uid":"sbx-uid"}]},"status":{"phase":phase}})
}

fn view(sbx: &Value, pods: &[Value], pvcs: &[Value]) -> Workspace {
    derive(&Inputs {
        sandbox: sbx,
        pods: Observed::Known(&Index::new(pods)),
        pvcs: Observed::Known(&Index::new(pvcs)),
        policies: PolicyRead::NotServed,
        template: TemplateRead::NotFound,
        flags: &OverlayFlags::default(),
        now: now(),
    })
}

/// The Sandbox as derived by a user who may read neither pods nor claims.
fn without_pod_access(sbx: &Value) -> Workspace {
    derive(&Inputs {
        sandbox: sbx,
        pods: Observed::Forbidden,
        pvcs: Observed::Forbidden,
        policies: PolicyRead::NotServed,
        template: TemplateRead::NotFound,
        flags: &OverlayFlags::default(),
        now: now(),
    })
}

fn ready(status: &str, reason: &str) -> Value {
    cond("Ready", status, reason, "msg")
}

#[test]
fn every_state() {
    let bound = [pvc("Bound")];
    let running = sandbox("Running", vec![ready("True", "DependenciesReady")]);
    assert_eq!(view(&running, &[pod(json!({}))], &bound).state, State::Running);
    assert_eq!(view(&running, &[pod(json!({}))], &bound).diagnosis, None);

    let starting = sandbox("Running", vec![ready("False", "DependenciesNotReady")]);
    assert_eq!(view(&starting, &[], &bound).state, State::Starting);
    // an absent mode reads as Running, like the library
    let mut no_mode = starting.clone();
    no_mode["spec"].as_object_mut().unwrap().remove("operatingMode");
    assert_eq!(view(&no_mode, &[], &bound).state, State::Starting);

    let suspended = sandbox("Suspended", vec![ready("False", "SandboxSuspended")]);
    assert_eq!(view(&suspended, &[], &bound).state, State::Suspended);
    let draining = pod(json!({}));
    assert_eq!(view(&suspended, &[draining], &bound).state, State::Suspending);

    let failed = sandbox("Running", vec![ready("False", "PodFailed")]);
    assert_eq!(
        view(&failed, &[pod(json!({"phase":"Failed"}))], &bound).state,
        State::Failed
    );

    let expired = sandbox("Running", vec![ready("False", "SandboxExpired")]);
    assert_eq!(view(&expired, &[], &bound).state, State::Expired);

    let mut deleting = running.clone();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-11-29T09:59:00Z");
    assert_eq!(view(&deleting, &[], &bound).state, State::Deleting);

    let error = sandbox("Running", vec![ready("False", "ReconcilerError")]);
    assert_eq!(view(&error, &[], &bound).state, State::Error);
}

#[test]
fn suspended_state_without_pod_access_uses_the_condition() {
    let s = sandbox(
        "Suspended",
        vec![
            ready("False", "SandboxSuspended"),
            cond("Suspended", "True", "PodTerminated", ""),
        ],
    );
    let w = derive(&Inputs {
        sandbox: &s,
        pods: Observed::Forbidden,
        pvcs: Observed::Forbidden,
        policies: PolicyRead::Forbidden,
        template: TemplateRead::Unreadable,
        flags: &OverlayFlags::default(),
        now: now(),
    });
    assert_eq!(w.state, State::Suspended);
    assert_eq!(w.pod, Observed::Forbidden);
    assert_eq!(w.pvcs, Observed::Forbidden);
}

fn kind(w: &Workspace) -> Option<DiagnosisKind> {
    w.diagnosis.as_ref().map(|d| d.kind)
}

#[test]
fn every_diagnosis_kind() {
    let bound = [pvc("Bound")];
    let starting = sandbox("Running", vec![ready("False", "DependenciesNotReady")]);

    let unsched = pod(
        json!({"phase":"Pending","conditions":[cond("PodScheduled","False","Unschedulable","0/3 nodes are available: 3 Insufficient memory.")]}),
    );
    let w = view(&starting, &[unsched], &bound);
    assert_eq!(kind(&w), Some(DiagnosisKind::Unschedulable));
    assert!(w.diagnosis.unwrap().message.contains("Insufficient memory"));

    for reason in [
        "ErrImagePull",
        "ImagePullBackOff",
        "ImageInspectError",
        "RegistryUnavailable",
        "InvalidImageName",
    ] {
        let p = pod(
            json!({"phase":"Pending","containerStatuses":[{"name":"agent","state":{"waiting":{"reason":reason,"message":"pull failed"}}}]}),
        );
        let w = view(&starting, &[p], &bound);
        assert_eq!(kind(&w), Some(DiagnosisKind::ImagePull), "{reason}");
        assert_eq!(w.diagnosis.unwrap().reason, reason);
    }
    let init = pod(
        json!({"phase":"Pending","initContainerStatuses":[{"name":"init","state":{"waiting":{"reason":"ImagePullBackOff"}}}]}),
    );
    assert_eq!(kind(&view(&starting, &[init], &bound)), Some(DiagnosisKind::ImagePull));

    let crash = pod(
        json!({"containerStatuses":[{"name":"agent","state":{"waiting":{"reason":"CrashLoopBackOff","message":"back-off 5m0s"}}}]}),
    );
    assert_eq!(kind(&view(&starting, &[crash], &bound)), Some(DiagnosisKind::CrashLoop));

    assert_eq!(
        kind(&view(&starting, &[], &[pvc("Pending")])),
        Some(DiagnosisKind::DiskPending)
    );
    let missing = view(&starting, &[], &[]);
    assert_eq!(kind(&missing), Some(DiagnosisKind::DiskMissing));
    assert!(missing.diagnosis.unwrap().message.contains("workspace-disk-namzu-ws-a"));

    let suspended = sandbox("Suspended", vec![ready("False", "SandboxSuspended")]);
    let not_owned = sandbox(
        "Suspended",
        vec![
            ready("False", "SandboxSuspended"),
            cond("Suspended", "False", "PodNotOwned", "pod exists but not owned"),
        ],
    );
    assert_eq!(
        kind(&view(&not_owned, &[pod(json!({}))], &bound)),
        Some(DiagnosisKind::ForeignPod)
    );
    let mut stranger = pod(json!({}));
    stranger["metadata"]["ownerReferences"] = json!([{"uid":"someone-else"}]);
    assert_eq!(
        kind(&view(&suspended, &[stranger], &bound)),
        Some(DiagnosisKind::ForeignPod)
    );

    let mut stuck = pod(json!({}));
    stuck["metadata"]["deletionTimestamp"] = json!("2026-11-29T09:00:00Z");
    assert_eq!(
        kind(&view(&suspended, &[stuck.clone()], &bound)),
        Some(DiagnosisKind::StuckTerminating)
    );
    let mut draining = stuck.clone();
    draining["metadata"]["deletionTimestamp"] = json!("2026-11-29T10:00:30Z");
    assert_eq!(
        kind(&view(&suspended, &[draining], &bound)),
        Some(DiagnosisKind::SuspendUnconfirmed)
    );
    assert_eq!(
        kind(&view(&suspended, &[pod(json!({}))], &bound)),
        Some(DiagnosisKind::SuspendUnconfirmed)
    );
    assert_eq!(kind(&view(&suspended, &[], &bound)), None);

    let failed = sandbox("Running", vec![ready("False", "PodFailed")]);
    assert_eq!(
        kind(&view(&failed, &[pod(json!({"phase":"Failed"}))], &bound)),
        Some(DiagnosisKind::PodTerminated)
    );
    let succeeded_pod = pod(json!({"phase":"Succeeded"}));
    assert_eq!(
        kind(&view(&starting, &[succeeded_pod], &bound)),
        Some(DiagnosisKind::PodTerminated)
    );

    let error = sandbox(
        "Running",
        vec![cond("Ready", "False", "ReconcilerError", "Error seen: boom")],
    );
    let w = view(&error, &[], &bound);
    assert_eq!(kind(&w), Some(DiagnosisKind::ControllerError));
    assert_eq!(w.diagnosis.unwrap().message, "Error seen: boom");
    let multi = sandbox("Running", vec![cond("Ready", "False", "MultiplePods", "2 pods")]);
    assert_eq!(kind(&view(&multi, &[], &bound)), Some(DiagnosisKind::ControllerError));

    let mut stale = sandbox("Running", vec![ready("True", "DependenciesReady")]);
    stale["metadata"]["generation"] = json!(3);
    assert_eq!(
        kind(&view(&stale, &[pod(json!({}))], &bound)),
        Some(DiagnosisKind::StaleStatus)
    );
}

#[test]
fn most_specific_diagnosis_wins() {
    // unschedulable AND a pending disk: the scheduler's reason is the more specific one
    let starting = sandbox("Running", vec![ready("False", "DependenciesNotReady")]);
    let unsched =
        pod(json!({"phase":"Pending","conditions":[cond("PodScheduled","False","Unschedulable","no nodes")]}));
    assert_eq!(
        kind(&view(&starting, &[unsched], &[pvc("Pending")])),
        Some(DiagnosisKind::Unschedulable)
    );
}

#[test]
fn identity_fields_are_never_defaulted() {
    let s = sandbox("Running", vec![ready("True", "DependenciesReady")]);
    let w = view(&s, &[pod(json!({}))], &[pvc("Bound")]);
    assert_eq!(w.id, "a");
    assert_eq!(w.changed_at, None, "changed-at is never defaulted to createdAt");
    assert_eq!(w.epoch.epoch, Some(0));
    assert_eq!(w.template.as_deref(), Some("ws"));
    let p = w.pod.known().unwrap().as_ref().unwrap();
    assert_eq!((p.uid.as_deref(), p.node.as_deref()), (Some("pod-uid"), Some("node-1")));
    let pvcs = w.pvcs.known().unwrap();
    assert_eq!(pvcs[0].uid.as_deref(), Some("pvc-uid"));
}

/// The projection the inventory keeps of each listed object derives exactly the workspace the
/// whole object derives: every workspace of the demo, with the sim's full objects (managedFields
/// and all) against the pruned ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projected_object_derives_the_same_workspace() {
    use namzu_domain::naming::{is_workspace, template_label};
    use namzu_domain::projection::{self, POD, POLICY, PVC, SANDBOX};
    use namzu_engine::cluster::inventory::{Inventory, NamespaceData, TemplateFetch};
    use namzu_sim::resources::{CILIUM_POLICIES, PODS, PVCS, SANDBOXES, TEMPLATES};
    let t = crate::support::start_demo().await;
    let inventory = |keep: bool| {
        let mut namespaces = Vec::new();
        for ns in ["agents", "research", "staging"] {
            let pruned = |mut items: Vec<Value>, k| {
                if keep {
                    items.iter_mut().for_each(|v| projection::project(v, k));
                }
                items
            };
            let sandboxes: Vec<Value> = pruned(t.sim.list(&SANDBOXES, Some(ns)), SANDBOX)
                .into_iter()
                .filter(is_workspace)
                .collect();
            let templates = sandboxes
                .iter()
                .filter_map(template_label)
                .map(|n| {
                    let fetch = t
                        .sim
                        .get(&TEMPLATES, ns, n)
                        .map_or(TemplateFetch::NotFound, TemplateFetch::Found);
                    (n.to_string(), fetch)
                })
                .collect();
            namespaces.push(NamespaceData {
                namespace: ns.into(),
                pods: Observed::Known(pruned(t.sim.list(&PODS, Some(ns)), POD)),
                pvcs: Observed::Known(pruned(t.sim.list(&PVCS, Some(ns)), PVC)),
                policies: PolicyRead::Known(pruned(t.sim.list(&CILIUM_POLICIES, Some(ns)), POLICY)),
                sandboxes,
                templates,
            });
        }
        Inventory {
            namespaces,
            warnings: Vec::new(),
        }
    };
    let (whole, projected) = (inventory(false), inventory(true));
    let flags = OverlayFlags::default();
    let full = whole.workspaces(&flags, t.sim.now());
    assert!(full.len() >= 20, "the demo's workspaces");
    assert_eq!(projected.workspaces(&flags, t.sim.now()), full);
    // and it is smaller: the fields nothing reads are gone
    let size = |inv: &Inventory| {
        serde_json::to_string(
            &inv.namespaces
                .iter()
                .map(|n| n.pods.known().cloned())
                .collect::<Vec<_>>(),
        )
        .unwrap()
        .len()
    };
    assert!(
        size(&projected) * 2 < size(&whole),
        "{} vs {}",
        size(&projected),
        size(&whole)
    );
}

// ---- @namzu/sandbox 28.0.0 and agent-sandbox v1.0 (docs/interop.md §13) ----

fn view_with_policies(sbx: &Value, pods: &[Value], pvcs: &[Value], policies: &[Value]) -> Workspace {
    use namzu_domain::egress::PolicyIndex;
    let flags = OverlayFlags::default();
    let index = PolicyIndex::new(policies, flags.per_sandbox_key());
    derive(&Inputs {
        sandbox: sbx,
        pods: Observed::Known(&Index::new(pods)),
        pvcs: Observed::Known(&Index::new(pvcs)),
        policies: PolicyRead::Known(&index),
        template: TemplateRead::NotFound,
        flags: &flags,
        now: now(),
    })
}

#[test]
fn running_means_ready_for_the_current_generation_with_a_live_pod() {
    let running = sandbox("Running", vec![ready("True", "DependenciesReady")]);
    let w = view(&running, &[pod(json!({}))], &[pvc("Bound")]);
    assert_eq!((w.state, w.ready), (State::Running, Some(true)));
    assert_eq!(w.identity.pod_uid.as_deref(), Some("pod-uid"));
    // no observedGeneration, or no generation: no generation check, as the library reads it
    let mut unversioned = running.clone();
    unversioned["status"]["conditions"][0]
        .as_object_mut()
        .unwrap()
        .remove("observedGeneration");
    unversioned["metadata"]["generation"] = json!(9);
    assert_eq!(
        view(&unversioned, &[pod(json!({}))], &[pvc("Bound")]).state,
        State::Running
    );
    // pods that may not be read: Ready for the current generation is all that can be told
    let w = without_pod_access(&running);
    assert_eq!((w.state, w.ready), (State::Running, None));
}

#[test]
fn ready_true_from_an_older_generation_is_starting_with_stale_status() {
    let mut stale = sandbox("Running", vec![ready("True", "DependenciesReady")]);
    stale["metadata"]["generation"] = json!(2);
    let w = view(&stale, &[pod(json!({}))], &[pvc("Bound")]);
    assert_eq!((w.state, w.ready), (State::Starting, Some(false)));
    assert_eq!(kind(&w), Some(DiagnosisKind::StaleStatus));
}

#[test]
fn ready_true_without_a_live_pod_is_starting_with_no_live_pod() {
    let running = sandbox("Running", vec![ready("True", "DependenciesReady")]);
    let mut terminating = pod(json!({}));
    terminating["metadata"]["deletionTimestamp"] = json!("2026-11-29T10:05:00Z");
    let mut no_uid = pod(json!({}));
    no_uid["metadata"].as_object_mut().unwrap().remove("uid");
    for (pods, says) in [
        (vec![], "no pod namzu-ws-a exists"),
        (vec![terminating], "is terminating"),
        (vec![no_uid], "has no uid"),
    ] {
        let w = view(&running, &pods, &[pvc("Bound")]);
        assert_eq!((w.state, w.ready), (State::Starting, Some(false)), "{says}");
        let d = w.diagnosis.unwrap();
        assert_eq!(d.kind, DiagnosisKind::NoLivePod);
        assert!(d.message.contains(says), "{}", d.message);
        assert_eq!(w.identity.pod_uid, None);
    }
    // a live pod under another name (found by the selector) is not the one the library reads
    let mut other = pod(json!({}));
    other["metadata"]["name"] = json!("namzu-ws-a-legacy");
    other["metadata"]["labels"] = json!({"h": "1"});
    let mut selected = running.clone();
    selected["status"]["selector"] = json!("h=1");
    assert_eq!(view(&selected, &[other], &[pvc("Bound")]).state, State::Starting);
}

#[test]
fn a_claim_owned_by_another_sandbox_is_a_foreign_disk_naming_the_owner() {
    let running = sandbox("Running", vec![ready("True", "DependenciesReady")]);
    let mut stranger = pvc("Bound");
    stranger["metadata"]["ownerReferences"] = json!([{"kind": "Sandbox", "name": "namzu-ws-a", "uid": "old-uid"}]);
    let w = view(&running, &[pod(json!({}))], &[stranger]);
    let d = w.diagnosis.clone().unwrap();
    assert_eq!(d.kind, DiagnosisKind::ForeignDisk);
    assert!(d.message.contains("Sandbox namzu-ws-a (uid old-uid)"), "{}", d.message);
    // the stranger's claim exists: its uid is recorded, and it is not missing
    assert_eq!(w.identity.volume_claim_uids.get("workspace-disk").unwrap(), "pvc-uid");
    assert_eq!(w.missing_claims, Observed::Known(vec![]));
    let pvcs = w.pvcs.known().unwrap();
    assert!(pvcs[0].foreign && pvcs[0].owners[0].uid == "old-uid");
    // no owner list at all says nothing: not foreign
    let mut unowned = pvc("Bound");
    unowned["metadata"].as_object_mut().unwrap().remove("ownerReferences");
    assert_eq!(kind(&view(&running, &[pod(json!({}))], &[unowned])), None);
}

#[test]
fn a_missing_claim_is_disk_missing_and_an_unbound_one_disk_pending() {
    let starting = sandbox("Running", vec![ready("False", "DependenciesNotReady")]);
    let w = view(&starting, &[], &[]);
    assert_eq!(kind(&w), Some(DiagnosisKind::DiskMissing));
    assert_eq!(w.missing_claims, Observed::Known(vec!["workspace-disk".to_string()]));
    assert!(w.identity.volume_claim_uids.is_empty());
    let w = view(&starting, &[], &[pvc("Pending")]);
    assert_eq!(kind(&w), Some(DiagnosisKind::DiskPending));
    assert_eq!(w.missing_claims, Observed::Known(vec![]));
}

#[test]
fn invalid_configuration_is_error_with_the_controllers_message() {
    let s = sandbox(
        "Running",
        vec![cond(
            "Ready",
            "False",
            "InvalidConfiguration",
            "RuntimeClass \"x\" not found",
        )],
    );
    let w = view(&s, &[], &[pvc("Bound")]);
    assert_eq!(w.state, State::Error);
    let d = w.diagnosis.unwrap();
    assert_eq!(
        (d.kind, d.reason.as_str()),
        (DiagnosisKind::ControllerError, "InvalidConfiguration")
    );
    assert_eq!(d.message, "RuntimeClass \"x\" not found");
}

#[test]
fn pod_terminating_reads_as_suspending() {
    let mut terminating = pod(json!({}));
    terminating["metadata"]["deletionTimestamp"] = json!("2026-11-29T11:00:00Z");
    for mode in ["Running", "Suspended"] {
        let s = sandbox(
            mode,
            vec![cond("Ready", "False", "PodTerminating", "Pod is terminating")],
        );
        assert_eq!(
            view(&s, &[terminating.clone()], &[pvc("Bound")]).state,
            State::Suspending,
            "{mode}"
        );
        // pods unreadable: the reason alone says it
        let w = without_pod_access(&s);
        assert_eq!(w.state, State::Suspending, "{mode}");
    }
}

#[test]
fn an_unknown_ready_false_reason_is_shown_verbatim() {
    let s = sandbox(
        "Running",
        vec![cond("Ready", "False", "QuotaWait", "waiting for quota")],
    );
    let w = view(&s, &[], &[pvc("Bound")]);
    assert_eq!(w.state, State::Starting);
    let d = w.diagnosis.clone().unwrap();
    assert_eq!(
        (d.kind, d.reason.as_str(), d.message.as_str()),
        (DiagnosisKind::ControllerReason, "QuotaWait", "waiting for quota")
    );
    use namzu_domain::columns::{Column, cell};
    assert_eq!(cell(&w, Column::Diagnosis, now()), "controller-reason:QuotaWait");
    // the reasons the tool knows are not
    for known in ["DependenciesNotReady", "SandboxSuspended"] {
        let s = sandbox("Running", vec![cond("Ready", "False", known, "")]);
        assert_ne!(
            kind(&view(&s, &[], &[pvc("Bound")])),
            Some(DiagnosisKind::ControllerReason),
            "{known}"
        );
    }
}

#[test]
fn every_library_annotation_is_carried_as_stored() {
    let mut s = sandbox("Suspended", vec![ready("False", "SandboxSuspended")]);
    s["metadata"]["annotations"] = json!({"sandbox.namzu.ai/holder-epoch": "3",
        "sandbox.namzu.ai/allocation-host": "host-7", "sandbox.namzu.ai/x": "", "example.com/owner": "ops"});
    let w = view(&s, &[], &[pvc("Bound")]);
    assert_eq!(
        w.namzu_annotations.into_iter().collect::<Vec<_>>(),
        [
            ("sandbox.namzu.ai/allocation-host".to_string(), "host-7".to_string()),
            ("sandbox.namzu.ai/holder-epoch".to_string(), "3".to_string()),
            ("sandbox.namzu.ai/x".to_string(), String::new()),
        ]
    );
}

#[test]
fn a_legacy_pod_name_annotation_naming_another_pod_is_flagged_not_followed() {
    let mut s = sandbox("Running", vec![ready("True", "DependenciesReady")]);
    s["metadata"]["annotations"] = json!({"agents.x-k8s.io/pod-name": "someone-elses-pod"});
    let mut decoy = pod(json!({}));
    decoy["metadata"]["name"] = json!("someone-elses-pod");
    decoy["metadata"]["uid"] = json!("decoy-uid");
    let w = view(&s, &[decoy.clone(), pod(json!({}))], &[pvc("Bound")]);
    assert_eq!(w.legacy_pod_name.as_deref(), Some("someone-elses-pod"));
    let p = w.pod.known().unwrap().clone().unwrap();
    assert_eq!(p.name, "namzu-ws-a", "the pod named after the Sandbox");
    assert_eq!(w.state, State::Running);
    // the decoy alone does not make it ready
    assert_eq!(view(&s, &[decoy], &[pvc("Bound")]).state, State::Starting);
    // an annotation naming the Sandbox's own pod is not flagged
    s["metadata"]["annotations"] = json!({"agents.x-k8s.io/pod-name": "namzu-ws-a"});
    assert_eq!(view(&s, &[pod(json!({}))], &[pvc("Bound")]).legacy_pod_name, None);
}

#[test]
fn a_per_sandbox_policy_not_owned_by_the_current_uid_is_a_foreign_egress_policy() {
    let key = "sandbox.namzu.ai/per-sandbox-egress";
    let mut s = sandbox("Suspended", vec![ready("False", "SandboxSuspended")]);
    s["spec"]["podTemplate"]["metadata"]["labels"][key] = json!("namzu-ws-a");
    let policy = |uid: &str| {
        json!({"metadata": {"name": format!("namzu-sbx-{uid}"), "namespace": "agents",
            "ownerReferences": [{"kind": "Sandbox", "name": "namzu-ws-a", "uid": uid}]},
            "spec": {"endpointSelector": {"matchLabels": {key: "namzu-ws-a"}}}})
    };
    let own = view_with_policies(&s, &[], &[pvc("Bound")], &[policy("sbx-uid")]);
    assert_eq!((own.diagnosis.clone(), own.egress.policy_cell()), (None, "own"));
    assert_eq!(own.egress.per_sandbox.as_deref(), Some("namzu-ws-a"));
    let w = view_with_policies(&s, &[], &[pvc("Bound")], &[policy("sbx-uid"), policy("old-uid")]);
    let d = w.diagnosis.clone().unwrap();
    assert_eq!(d.kind, DiagnosisKind::ForeignEgressPolicy);
    assert!(d.message.contains("namzu-sbx-old-uid"), "{}", d.message);
    assert!(
        d.message
            .contains("kubectl delete ciliumnetworkpolicy namzu-sbx-old-uid -n agents"),
        "{}",
        d.message
    );
    assert_eq!(w.egress.policy_cell(), "foreign");
    // the same uid under another name or kind is not an owner
    let mut renamed = policy("sbx-uid");
    renamed["metadata"]["ownerReferences"][0]["name"] = json!("namzu-ws-b");
    assert_eq!(
        kind(&view_with_policies(&s, &[], &[pvc("Bound")], &[renamed])),
        Some(DiagnosisKind::ForeignEgressPolicy)
    );
}

#[test]
fn drift_says_whether_the_per_sandbox_label_was_hashed() {
    use namzu_domain::canonical::pod_template_hash;
    use namzu_domain::drift::{DriftState, drift};
    let key = "sandbox.namzu.ai/per-sandbox-egress";
    let template = json!({"metadata": {"name": "ws"}, "spec": {"podTemplate": {"metadata": {"labels": {"app": "a"}},
        "spec": {"containers": [{"name": "agent", "image": "a:1"}]}}}});
    let without = json!({"metadata": {"labels": {"app": "a", "sandbox.namzu.ai/template": "ws"}},
        "spec": {"containers": [{"name": "agent", "image": "a:1"}]}});
    let mut with = without.clone();
    with["metadata"]["labels"][key] = json!("namzu-ws-a");
    for (hashed, hash) in [(false, pod_template_hash(&without)), (true, pod_template_hash(&with))] {
        let s = json!({"metadata": {"name": "namzu-ws-a", "annotations": {"sandbox.namzu.ai/pod-template-hash": hash}},
            "spec": {"podTemplate": with}});
        let d = drift(&s, TemplateRead::Found(&template), &OverlayFlags::default());
        assert_eq!(d.state, DriftState::Current, "hashed {hashed}");
        let label = d.overlays.unwrap().per_sandbox_label.unwrap();
        assert_eq!(
            (label.key.as_str(), label.value.as_str(), label.hashed),
            (key, "namzu-ws-a", hashed)
        );
    }
    // a workspace without per-sandbox egress says nothing about it
    let s = json!({"metadata": {"name": "namzu-ws-a", "annotations": {"sandbox.namzu.ai/pod-template-hash": pod_template_hash(&without)}},
        "spec": {"podTemplate": without}});
    let d = drift(&s, TemplateRead::Found(&template), &OverlayFlags::default());
    assert_eq!(
        (d.state, d.overlays.unwrap().per_sandbox_label),
        (DriftState::Current, None)
    );
}

#[test]
fn a_held_deletion_an_expiry_and_a_pod_past_its_grace_each_at_their_threshold() {
    let bound = [pvc("Bound")];
    let running = sandbox("Running", vec![ready("True", "DependenciesReady")]);
    // deleting 9 minutes: the controller may still be at work; 11: stuck, with its finalizers
    let mut deleting = running.clone();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-11-29T09:51:00Z");
    deleting["metadata"]["finalizers"] = json!(["a.example/x", "b.example/y"]);
    assert_eq!(kind(&view(&deleting, &[pod(json!({}))], &bound)), None);
    deleting["metadata"]["deletionTimestamp"] = json!("2026-11-29T09:49:00Z");
    let w = view(&deleting, &[pod(json!({}))], &bound);
    let d = w.diagnosis.unwrap();
    assert_eq!(
        (d.kind, d.reason.as_str()),
        (DiagnosisKind::StuckDeleting, "DeletionHeld")
    );
    assert!(
        d.message
            .ends_with("for 11m (deletionTimestamp 2026-11-29T09:49:00Z), held by finalizers a.example/x, b.example/y"),
        "{}",
        d.message
    );
    assert_eq!(w.finalizers, ["a.example/x", "b.example/y"]);
    // no finalizer holds it: the API server removes it, nothing to diagnose
    deleting["metadata"]["finalizers"] = json!([]);
    assert_eq!(kind(&view(&deleting, &[pod(json!({}))], &bound)), None);

    // past shutdownTime with no policy: agent-sandbox's default, Retain
    let mut expired = sandbox("Running", vec![ready("False", "SandboxExpired")]);
    expired["spec"]["shutdownTime"] = json!("2026-11-29T09:00:00Z");
    let d = view(&expired, &[], &bound).diagnosis.unwrap();
    assert_eq!(
        (d.kind, d.reason.as_str()),
        (DiagnosisKind::Expired, "RetainedByPolicy")
    );
    assert!(
        d.message.contains("(shutdownPolicy Retain, agent-sandbox's default)"),
        "{}",
        d.message
    );
    expired["spec"]["shutdownPolicy"] = json!("Delete");
    let not_reaped = view(&expired, &[], &bound);
    assert_eq!(not_reaped.diagnosis.as_ref().unwrap().reason, "NotReaped");
    // worst first (the TUI's sort by diagnosis): held in deletion and not reaped rank with a
    // stuck pod; retained by policy, kept on purpose, after every other finding
    use namzu_domain::select::severity;
    let mut stuck_pod = pod(json!({}));
    stuck_pod["metadata"]["deletionTimestamp"] = json!("2026-11-29T09:00:00Z");
    let suspended = sandbox("Suspended", vec![ready("False", "SandboxSuspended")]);
    let stuck_pod = view(&suspended, &[stuck_pod], &bound);
    let unconfirmed = view(&suspended, &[pod(json!({}))], &bound);
    let retained = view(&sandbox("Running", vec![ready("False", "SandboxExpired")]), &[], &bound);
    let mut stale = sandbox("Running", vec![ready("True", "DependenciesReady")]);
    stale["metadata"]["generation"] = json!(2);
    let stale = view(&stale, &[pod(json!({}))], &bound);
    assert_eq!(kind(&stale), Some(DiagnosisKind::StaleStatus));
    let order = [
        &stuck_pod,
        &w_held(&deleting_held()),
        &not_reaped,
        &unconfirmed,
        &stale,
        &retained,
    ]
    .map(severity);
    assert!(order.windows(2).all(|p| p[0] < p[1]), "{order:?}");
    // the controller has not written its condition yet: the time alone says it
    let mut due = running.clone();
    due["spec"]["shutdownTime"] = json!("2026-11-29T09:59:59Z");
    assert_eq!(
        kind(&view(&due, &[pod(json!({}))], &bound)),
        Some(DiagnosisKind::Expired)
    );
    due["spec"]["shutdownTime"] = json!("2026-11-29T10:00:01Z");
    assert_eq!(kind(&view(&due, &[pod(json!({}))], &bound)), None);

    // a pod 59s past its grace period is still being confirmed; 61s past it is stuck
    let suspended = sandbox("Suspended", vec![ready("False", "SandboxSuspended")]);
    let mut draining = pod(json!({}));
    draining["metadata"]["deletionTimestamp"] = json!("2026-11-29T09:59:01Z");
    draining["metadata"]["deletionGracePeriodSeconds"] = json!(30);
    assert_eq!(
        kind(&view(&suspended, &[draining.clone()], &bound)),
        Some(DiagnosisKind::SuspendUnconfirmed)
    );
    draining["metadata"]["deletionTimestamp"] = json!("2026-11-29T09:58:59Z");
    let d = view(&suspended, &[draining], &bound).diagnosis.unwrap();
    assert_eq!(d.kind, DiagnosisKind::StuckTerminating);
    assert!(
        d.message
            .contains("still terminating past its grace period of 30s (deletionTimestamp 2026-11-29T09:58:59Z)"),
        "{}",
        d.message
    );
}

fn deleting_held() -> Value {
    let mut s = sandbox("Running", vec![ready("True", "DependenciesReady")]);
    s["metadata"]["deletionTimestamp"] = json!("2026-11-29T09:00:00Z");
    s["metadata"]["finalizers"] = json!(["a.example/x"]);
    s
}

fn w_held(sbx: &Value) -> Workspace {
    let w = view(sbx, &[pod(json!({}))], &[pvc("Bound")]);
    assert_eq!(kind(&w), Some(DiagnosisKind::StuckDeleting));
    w
}
