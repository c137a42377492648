//! Every state and every diagnosis kind, derived from objects shaped as the controller writes them.

use chrono::{DateTime, TimeZone, Utc};
use kubectl_namzu::domain::diagnosis::Kind;
use kubectl_namzu::domain::drift::{OverlayFlags, TemplateRead};
use kubectl_namzu::domain::egress::PolicyRead;
use kubectl_namzu::domain::pod::Index;
use kubectl_namzu::domain::state::State;
use kubectl_namzu::domain::workspace::{Inputs, Observed, Workspace, derive};
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

fn kind(w: &Workspace) -> Option<Kind> {
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
    assert_eq!(kind(&w), Some(Kind::Unschedulable));
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
        assert_eq!(kind(&w), Some(Kind::ImagePull), "{reason}");
        assert_eq!(w.diagnosis.unwrap().reason, reason);
    }
    let init = pod(
        json!({"phase":"Pending","initContainerStatuses":[{"name":"init","state":{"waiting":{"reason":"ImagePullBackOff"}}}]}),
    );
    assert_eq!(kind(&view(&starting, &[init], &bound)), Some(Kind::ImagePull));

    let crash = pod(
        json!({"containerStatuses":[{"name":"agent","state":{"waiting":{"reason":"CrashLoopBackOff","message":"back-off 5m0s"}}}]}),
    );
    assert_eq!(kind(&view(&starting, &[crash], &bound)), Some(Kind::CrashLoop));

    assert_eq!(kind(&view(&starting, &[], &[pvc("Pending")])), Some(Kind::DiskPending));
    let missing = view(&starting, &[], &[]);
    assert_eq!(kind(&missing), Some(Kind::DiskMissing));
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
        Some(Kind::ForeignPod)
    );
    let mut stranger = pod(json!({}));
    stranger["metadata"]["ownerReferences"] = json!([{"uid":"someone-else"}]);
    assert_eq!(kind(&view(&suspended, &[stranger], &bound)), Some(Kind::ForeignPod));

    let mut stuck = pod(json!({}));
    stuck["metadata"]["deletionTimestamp"] = json!("2026-11-29T09:00:00Z");
    assert_eq!(
        kind(&view(&suspended, &[stuck.clone()], &bound)),
        Some(Kind::StuckTerminating)
    );
    let mut draining = stuck.clone();
    draining["metadata"]["deletionTimestamp"] = json!("2026-11-29T10:00:30Z");
    assert_eq!(
        kind(&view(&suspended, &[draining], &bound)),
        Some(Kind::SuspendUnconfirmed)
    );
    assert_eq!(
        kind(&view(&suspended, &[pod(json!({}))], &bound)),
        Some(Kind::SuspendUnconfirmed)
    );
    assert_eq!(kind(&view(&suspended, &[], &bound)), None);

    let failed = sandbox("Running", vec![ready("False", "PodFailed")]);
    assert_eq!(
        kind(&view(&failed, &[pod(json!({"phase":"Failed"}))], &bound)),
        Some(Kind::PodTerminated)
    );
    let succeeded_pod = pod(json!({"phase":"Succeeded"}));
    assert_eq!(
        kind(&view(&starting, &[succeeded_pod], &bound)),
        Some(Kind::PodTerminated)
    );

    let error = sandbox(
        "Running",
        vec![cond("Ready", "False", "ReconcilerError", "Error seen: boom")],
    );
    let w = view(&error, &[], &bound);
    assert_eq!(kind(&w), Some(Kind::ControllerError));
    assert_eq!(w.diagnosis.unwrap().message, "Error seen: boom");
    let multi = sandbox("Running", vec![cond("Ready", "False", "MultiplePods", "2 pods")]);
    assert_eq!(kind(&view(&multi, &[], &bound)), Some(Kind::ControllerError));

    let mut stale = sandbox("Running", vec![ready("True", "DependenciesReady")]);
    stale["metadata"]["generation"] = json!(3);
    assert_eq!(kind(&view(&stale, &[pod(json!({}))], &bound)), Some(Kind::StaleStatus));
}

#[test]
fn most_specific_diagnosis_wins() {
    // unschedulable AND a pending disk: the scheduler's reason is the more specific one
    let starting = sandbox("Running", vec![ready("False", "DependenciesNotReady")]);
    let unsched =
        pod(json!({"phase":"Pending","conditions":[cond("PodScheduled","False","Unschedulable","no nodes")]}));
    assert_eq!(
        kind(&view(&starting, &[unsched], &[pvc("Pending")])),
        Some(Kind::Unschedulable)
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
    use kubectl_namzu::cluster::inventory::{Inventory, NamespaceData, TemplateFetch};
    use kubectl_namzu::domain::naming::{is_workspace, template_label};
    use kubectl_namzu::domain::projection::{self, POD, POLICY, PVC, SANDBOX};
    use kubectl_namzu::sim::resources::{CILIUM_POLICIES, PODS, PVCS, SANDBOXES, TEMPLATES};
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
