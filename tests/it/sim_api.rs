//! The simulated API server through the real kube client over HTTP: discovery, reads, writes,
//! preconditions, cascade, watch, auth, faults, and every controller transition.

use crate::support::*;
use chrono::Duration;
use futures::{StreamExt, TryStreamExt};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent, WatchParams};
use kube::core::DynamicObject;
use namzu_sim::auth::{Rule, User};
use namzu_sim::controller::Knobs;
use namzu_sim::faults::{Fault, FaultAction};
use namzu_sim::resources::{EVENTS, PODS, PVCS, SANDBOXES};
use serde_json::{Value, json};

fn json_patch(v: Value) -> Patch<()> {
    Patch::Json(serde_json::from_value(v).expect("patch"))
}

/// A JSON patch of namzu-ws-awake that must fail.
async fn patch_err(api: &kube::Api<DynamicObject>, ops: Value) -> kube::Error {
    api.patch("namzu-ws-awake", &PatchParams::default(), &json_patch(ops))
        .await
        .unwrap_err()
}

fn data(o: &DynamicObject, pointer: &str) -> Value {
    o.data.pointer(pointer).cloned().unwrap_or(Value::Null)
}

fn ready(o: &Value) -> (String, String) {
    let c = o["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or(json!({}));
    (
        c["status"].as_str().unwrap_or("").into(),
        c["reason"].as_str().unwrap_or("").into(),
    )
}

fn condition(o: &Value, t: &str) -> (String, String) {
    let c = o["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == t))
        .cloned()
        .unwrap_or(json!({}));
    (
        c["status"].as_str().unwrap_or("").into(),
        c["reason"].as_str().unwrap_or("").into(),
    )
}

/// The small scenario, a client without retries, and its Sandboxes in `agents`.
async fn small_sim() -> (TestSim, kube::Client, kube::Api<kube::api::DynamicObject>) {
    let t = start().await;
    let client = t.client().await;
    let api = sandboxes(&client, "agents");
    (t, client, api)
}

#[tokio::test]
async fn discovery_and_version() {
    let t = start().await;
    let client = t.client().await;
    let v = client.apiserver_version().await.unwrap();
    assert_eq!(v.major, "1");
    let groups = client.list_api_groups().await.unwrap();
    let names: Vec<_> = groups.groups.iter().map(|g| g.name.as_str()).collect();
    assert!(
        names.contains(&"agents.x-k8s.io") && names.contains(&"extensions.agents.x-k8s.io"),
        "{names:?}"
    );
    let res = client
        .list_api_group_resources("agents.x-k8s.io/v1beta1")
        .await
        .unwrap();
    assert!(res.resources.iter().any(|r| r.name == "sandboxes" && r.namespaced));
    let core = client.list_core_api_resources("v1").await.unwrap();
    for want in ["pods", "persistentvolumeclaims", "events", "namespaces"] {
        assert!(core.resources.iter().any(|r| r.name == want), "{want}");
    }
    let full = kube::discovery::Discovery::new(client).run().await.unwrap();
    assert!(full.has_group("extensions.agents.x-k8s.io"));
}

#[tokio::test]
async fn list_get_and_selectors() {
    let (_t, client, api) = small_sim().await;
    let list = api.list(&ListParams::default()).await.unwrap();
    let names: Vec<_> = list.items.iter().map(|o| o.metadata.name.clone().unwrap()).collect();
    assert_eq!(
        names,
        ["namzu-ws-asleep", "namzu-ws-awake", "namzu-ws-owned"],
        "etcd key order"
    );
    let rv: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
    assert!(rv > 1000);

    let one = api.get("namzu-ws-awake").await.unwrap();
    assert!(one.metadata.uid.is_some() && one.metadata.creation_timestamp.is_some());
    assert_eq!(one.metadata.annotations.unwrap()["sandbox.namzu.ai/holder-epoch"], "2");
    let missing = api.get("namzu-ws-nope").await.unwrap_err();
    assert_eq!(status_code(&missing), Some(404));
    assert!(
        missing
            .to_string()
            .contains("sandboxes.agents.x-k8s.io \"namzu-ws-nope\" not found"),
        "{missing}"
    );

    // pods by label: every workspace pod carries the template label and the name hash
    let pods = pods(&client, "agents");
    let running = pods
        .list(&ListParams::default().labels("sandbox.namzu.ai/template=coder"))
        .await
        .unwrap();
    assert_eq!(running.items.len(), 2, "awake and owned run; asleep has no pod");
    let none = pods
        .list(&ListParams::default().labels("sandbox.namzu.ai/template notin (coder)"))
        .await
        .unwrap();
    assert!(none.items.is_empty());
    let exists = pods
        .list(&ListParams::default().labels("agents.x-k8s.io/sandbox-name-hash,!nothing"))
        .await
        .unwrap();
    assert_eq!(exists.items.len(), 2);
    let by_name = pods
        .list(&ListParams::default().fields("metadata.name=namzu-ws-awake"))
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 1);

    // paging: limit and continue walk the whole collection
    let page1 = api.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(page1.items.len(), 2);
    let token = page1.metadata.continue_.clone().expect("continue token");
    let page2 = api
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(page2.items.len(), 1);
    assert!(page2.metadata.continue_.is_none_or(|c| c.is_empty()));

    // cluster-wide list
    let all: kube::Api<DynamicObject> = kube::Api::all_with(
        client.clone(),
        &ar("agents.x-k8s.io", "v1beta1", "Sandbox", "sandboxes"),
    );
    assert_eq!(all.list(&ListParams::default()).await.unwrap().items.len(), 3);
}

#[tokio::test]
async fn create_conflicts_and_namespaces() {
    let (_t, client, api) = small_sim().await;
    let obj: DynamicObject = serde_json::from_value(json!({"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox",
        "metadata":{"name":"namzu-ws-awake"},"spec":{"podTemplate":{"spec":{}}}}))
    .unwrap();
    let e = api.create(&PostParams::default(), &obj).await.unwrap_err();
    assert_eq!(status_code(&e), Some(409));
    assert!(e.to_string().contains("already exists"), "{e}");
    let other = sandboxes(&client, "no-such-ns");
    let e = other.create(&PostParams::default(), &obj).await.unwrap_err();
    assert_eq!(status_code(&e), Some(404));
}

#[tokio::test]
async fn json_patch_applies_all_or_nothing() {
    let (_t, _client, api) = small_sim().await;
    let before = api.get("namzu-ws-awake").await.unwrap();
    let ok = api
        .patch(
            "namzu-ws-awake",
            &PatchParams::default(),
            &json_patch(json!([
            {"op":"test","path":"/metadata/annotations/sandbox.namzu.ai~1holder-epoch","value":"2"},
            {"op":"add","path":"/metadata/annotations/sandbox.namzu.ai~1holder-epoch","value":"3"},
            {"op":"add","path":"/spec/operatingMode","value":"Suspended"}])),
        )
        .await
        .unwrap();
    assert_eq!(
        ok.metadata.annotations.as_ref().unwrap()["sandbox.namzu.ai/holder-epoch"],
        "3"
    );
    assert_ne!(ok.metadata.resource_version, before.metadata.resource_version);
    assert_eq!(ok.metadata.generation, Some(2), "a spec change bumps generation");

    // a failed test changes nothing and answers 422 Invalid with the real wording
    let rv = ok.metadata.resource_version.clone();
    let e = patch_err(
        &api,
        json!([
            {"op":"test","path":"/metadata/name","value":"namzu-ws-awake"},
            {"op":"add","path":"/metadata/labels","value":{"x":"y"}},
            {"op":"test","path":"/metadata/annotations/sandbox.namzu.ai~1holder-epoch","value":"2"}]),
    )
    .await;
    let kube::Error::Api(s) = &e else { panic!("{e}") };
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        s.message,
        "the server rejected our request due to an error in our request"
    );
    let after = api.get("namzu-ws-awake").await.unwrap();
    assert!(after.metadata.labels.is_none(), "nothing applied");
    // the controller has moved status since, but the object itself is as the patch left it
    assert_eq!(data(&after, "/spec/operatingMode"), "Suspended");
    assert!(after.metadata.resource_version >= rv);

    // a bad path is the same 422
    let e = patch_err(
        &api,
        json!([
        {"op":"test","path":"/metadata/resourceVersion","value":"1"},
        {"op":"remove","path":"/spec/nope"}]),
    )
    .await;
    assert_eq!(status_code(&e), Some(422));

    // schema: the mode enum and the immutable volumeClaimTemplates
    let e = patch_err(
        &api,
        json!([
        {"op":"test","path":"/metadata/name","value":"namzu-ws-awake"},
        {"op":"add","path":"/spec/operatingMode","value":"Paused"}]),
    )
    .await;
    assert_eq!(status_code(&e), Some(422));
    let e = patch_err(
        &api,
        json!([
        {"op":"test","path":"/metadata/name","value":"namzu-ws-awake"},
        {"op":"add","path":"/spec/volumeClaimTemplates","value":[]}]),
    )
    .await;
    assert!(e.to_string().contains("immutable"), "{e}");
}

#[tokio::test]
async fn merge_patch_and_status_is_kept() {
    let t = start_with(SMALL, |c| c.strict = false).await;
    let client = t.client().await;
    let api = sandboxes(&client, "agents");
    let out = api
        .patch(
            "namzu-ws-awake",
            &PatchParams::default(),
            &Patch::Merge(json!({
            "metadata":{"annotations":{"sandbox.namzu.ai/operating-mode-changed-at":"2026-11-29T10:00:00.000Z"}},
            "spec":{"operatingMode":"Suspended"},
            "status":{"conditions":[]}})),
        )
        .await
        .unwrap();
    let ann = out.metadata.annotations.clone().unwrap();
    assert_eq!(
        ann["sandbox.namzu.ai/holder-epoch"], "2",
        "merge keeps other annotations"
    );
    assert_eq!(
        ann["sandbox.namzu.ai/operating-mode-changed-at"],
        "2026-11-29T10:00:00.000Z"
    );
    assert!(
        !data(&out, "/status/conditions").as_array().unwrap().is_empty(),
        "status subresource: main-resource writes leave status alone"
    );
}

#[tokio::test]
async fn strict_mode_rejects_blind_writes() {
    let (t, _client, api) = small_sim().await;
    let e = api
        .patch(
            "namzu-ws-awake",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec":{"operatingMode":"Suspended"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&e), Some(400));
    let e = api
        .patch(
            "namzu-ws-awake",
            &PatchParams::default(),
            &json_patch(json!([{"op":"add","path":"/spec/operatingMode","value":"Suspended"}])),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&e), Some(400));
    let e = api
        .delete("namzu-ws-awake", &DeleteParams::default())
        .await
        .unwrap_err();
    assert_eq!(status_code(&e), Some(400));
    assert!(e.to_string().contains("preconditions"), "{e}");
    assert!(api.get("namzu-ws-awake").await.is_ok());
    let rec = t.sim.requests();
    let statuses: Vec<u16> = rec.iter().filter(|r| r.method != "GET").map(|r| r.status).collect();
    assert_eq!(statuses, [400, 400, 400]);
}

#[tokio::test]
async fn delete_preconditions_and_cascade() {
    let (_t, client, api) = small_sim().await;
    let obj = api.get("namzu-ws-awake").await.unwrap();
    let uid = obj.metadata.uid.clone().unwrap();
    assert!(pods(&client, "agents").get("namzu-ws-awake").await.is_ok());
    assert!(
        pvcs(&client, "agents")
            .get("workspace-disk-namzu-ws-awake")
            .await
            .is_ok()
    );

    let stale = DeleteParams {
        preconditions: Some(Preconditions {
            resource_version: Some("1".into()),
            uid: None,
        }),
        ..Default::default()
    };
    let e = api.delete("namzu-ws-awake", &stale).await.unwrap_err();
    let kube::Error::Api(s) = &e else { panic!("{e}") };
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert!(
        s.message.starts_with("Operation cannot be fulfilled on Sandbox.agents.x-k8s.io \"namzu-ws-awake\": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ("),
        "{}",
        s.message
    );
    let wrong_uid = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("other".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    assert_eq!(
        status_code(&api.delete("namzu-ws-awake", &wrong_uid).await.unwrap_err()),
        Some(409)
    );

    let fresh = api.get("namzu-ws-awake").await.unwrap();
    let good = DeleteParams {
        preconditions: Some(Preconditions {
            resource_version: fresh.metadata.resource_version.clone(),
            uid: Some(uid),
        }),
        ..Default::default()
    };
    api.delete("namzu-ws-awake", &good).await.unwrap();
    assert_eq!(status_code(&api.get("namzu-ws-awake").await.unwrap_err()), Some(404));
    assert_eq!(
        status_code(&pods(&client, "agents").get("namzu-ws-awake").await.unwrap_err()),
        Some(404),
        "pod cascades"
    );
    assert_eq!(
        status_code(
            &pvcs(&client, "agents")
                .get("workspace-disk-namzu-ws-awake")
                .await
                .unwrap_err()
        ),
        Some(404),
        "disk cascades"
    );
    assert_eq!(
        status_code(&api.delete("namzu-ws-awake", &good).await.unwrap_err()),
        Some(404)
    );

    // deleting the owning claim takes the Sandbox with it
    let claims = kube::Api::<DynamicObject>::namespaced_with(
        client.clone(),
        "agents",
        &ar("extensions.agents.x-k8s.io", "v1beta1", "SandboxClaim", "sandboxclaims"),
    );
    claims.delete("claimed", &DeleteParams::default()).await.unwrap();
    assert_eq!(status_code(&api.get("namzu-ws-owned").await.unwrap_err()), Some(404));
}

#[tokio::test]
async fn watch_streams_changes_and_410_when_too_old() {
    let (t, _client, api) = small_sim().await;
    let list = api.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    let obj = api.get("namzu-ws-asleep").await.unwrap();
    api.patch(
        "namzu-ws-asleep",
        &PatchParams::default(),
        &json_patch(json!([
        {"op":"test","path":"/metadata/resourceVersion","value":obj.metadata.resource_version.unwrap()},
        {"op":"add","path":"/metadata/annotations/example.com~1note","value":"hi"}])),
    )
    .await
    .unwrap();
    let ev = stream.try_next().await.unwrap().expect("an event");
    match ev {
        WatchEvent::Modified(o) => {
            assert_eq!(o.metadata.annotations.unwrap()["example.com/note"], "hi")
        }
        other => panic!("{other:?}"),
    }
    drop(stream);

    t.sim.compact();
    let mut old = api
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();
    match old.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => assert_eq!(e.code, 410),
        other => panic!("{other:?}"),
    }

    // the runtime watcher re-lists after a 410 and keeps going
    let mut w = kube::runtime::watcher(api.clone(), kube::runtime::watcher::Config::default()).boxed();
    let first = w.try_next().await.unwrap();
    assert!(matches!(first, Some(kube::runtime::watcher::Event::Init)));
}

#[tokio::test]
async fn bearer_tokens_and_rbac() {
    let users = vec![
        User::admin("admin", "admin-token"),
        User::with_rules(
            "viewer",
            "viewer-token",
            vec![Rule::new(
                &["get", "list", "watch"],
                &["agents.x-k8s.io"],
                &["sandboxes"],
                &["agents"],
            )],
        ),
    ];
    let t = start_with(SMALL, |c| c.users = users).await;
    let admin = t.client().await;
    assert!(sandboxes(&admin, "agents").list(&ListParams::default()).await.is_ok());

    let bad = t.dir.path().join("bad");
    t.sim.write_kubeconfig_for(&bad, Some("wrong"), "agents").unwrap();
    let e = sandboxes(&client_from(&bad, false).await, "agents")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(status_code(&e), Some(401));

    let viewer_path = t.dir.path().join("viewer");
    t.sim
        .write_kubeconfig_for(&viewer_path, Some("viewer-token"), "agents")
        .unwrap();
    let viewer = client_from(&viewer_path, false).await;
    assert!(sandboxes(&viewer, "agents").list(&ListParams::default()).await.is_ok());
    let e = pods(&viewer, "agents").list(&ListParams::default()).await.unwrap_err();
    let kube::Error::Api(s) = &e else { panic!("{e}") };
    assert_eq!(s.code, 403);
    assert_eq!(
        s.message,
        "pods is forbidden: User \"viewer\" cannot list resource \"pods\" in API group \"\" in the namespace \"agents\""
    );
    let e = sandboxes(&viewer, "agents")
        .delete("namzu-ws-awake", &DeleteParams::default())
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("cannot delete resource \"sandboxes\" in API group \"agents.x-k8s.io\""),
        "{e}"
    );
    let all: kube::Api<DynamicObject> = kube::Api::all_with(
        viewer.clone(),
        &ar("agents.x-k8s.io", "v1beta1", "Sandbox", "sandboxes"),
    );
    let e = all.list(&ListParams::default()).await.unwrap_err();
    assert!(e.to_string().contains("at the cluster scope"), "{e}");

    // SelfSubjectAccessReview answers from the same rules
    let review = |verb: &str, resource: &str| {
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview",
            "spec":{"resourceAttributes":{"namespace":"agents","verb":verb,"group":"agents.x-k8s.io","resource":resource}}})
    };
    let ssar = kube::Api::<DynamicObject>::all_with(
        viewer.clone(),
        &ar(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
        ),
    );
    for (verb, allowed) in [("list", true), ("patch", false), ("delete", false)] {
        let obj: DynamicObject = serde_json::from_value(review(verb, "sandboxes")).unwrap();
        let out = ssar.create(&PostParams::default(), &obj).await.unwrap();
        assert_eq!(data(&out, "/status/allowed"), json!(allowed), "{verb}");
    }
}

#[tokio::test]
async fn injected_faults() {
    let (t, client, api) = small_sim().await;
    t.sim.add_fault(
        Fault::status(
            Some("GET"),
            "/sandboxes/namzu-ws-awake",
            500,
            "etcdserver: request timed out",
        )
        .nth(1),
    );
    let e = api.get("namzu-ws-awake").await.unwrap_err();
    let kube::Error::Api(s) = &e else { panic!("{e}") };
    assert_eq!((s.code, s.message.as_str()), (500, "etcdserver: request timed out"));
    assert!(api.get("namzu-ws-awake").await.is_ok(), "nth(1) fires once");

    t.sim.add_fault(
        Fault::status(Some("GET"), "/sandboxes/namzu-ws-asleep", 429, "too many requests")
            .retry_after(1)
            .times(1),
    );
    assert_eq!(status_code(&api.get("namzu-ws-asleep").await.unwrap_err()), Some(429));
    let rec = t.sim.requests();
    assert_eq!(rec.last().unwrap().status, 429);

    t.sim.add_fault(
        Fault::status(
            Some("PATCH"),
            "*/sandboxes/*",
            403,
            "sandboxes.agents.x-k8s.io \"namzu-ws-awake\" is forbidden: User \"x\" cannot patch resource \"sandboxes\"",
        )
        .times(1),
    );
    let e = api
        .patch(
            "namzu-ws-awake",
            &PatchParams::default(),
            &json_patch(json!([{"op":"test","path":"/metadata/name","value":"namzu-ws-awake"}])),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&e), Some(403));

    t.sim
        .add_fault(Fault::new(Some("GET"), "/pods/namzu-ws-awake", FaultAction::Reset).times(1));
    let e = pods(&client, "agents").get("namzu-ws-awake").await.unwrap_err();
    assert_eq!(status_code(&e), None, "a reset is a transport error: {e}");

    t.sim
        .add_fault(Fault::new(Some("GET"), "/pods/namzu-ws-owned", FaultAction::Hang));
    let hung = tokio::time::timeout(
        std::time::Duration::from_millis(300),
        pods(&client, "agents").get("namzu-ws-owned"),
    )
    .await;
    assert!(hung.is_err(), "a hang never answers");
    assert!(
        pods(&client, "agents").get("namzu-ws-awake").await.is_ok(),
        "other requests still served"
    );
}

#[tokio::test]
async fn suspend_then_resume_moves_pods_like_the_controller() {
    let (t, _client, api) = small_sim().await;
    let pod0 = t.sim.get(&PODS, "agents", "namzu-ws-awake").unwrap();
    let uid0 = pod0["metadata"]["uid"].clone();
    let sbx = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    assert_eq!(ready(&sbx), ("True".into(), "DependenciesReady".into()));
    assert_eq!(condition(&sbx, "Suspended"), ("False".into(), "NotSuspended".into()));
    // agent-sandbox v1.0: the pod is named after the Sandbox, and no pod-name annotation is written
    assert_eq!(pod0["metadata"]["name"], "namzu-ws-awake");
    assert!(sbx["metadata"]["annotations"].get("agents.x-k8s.io/pod-name").is_none());
    assert!(
        sbx["status"]["selector"]
            .as_str()
            .unwrap()
            .starts_with("agents.x-k8s.io/sandbox-name-hash=")
    );

    api.patch(
        "namzu-ws-awake",
        &PatchParams::default(),
        &json_patch(json!([
        {"op":"test","path":"/metadata/annotations/sandbox.namzu.ai~1holder-epoch","value":"2"},
        {"op":"add","path":"/spec/operatingMode","value":"Suspended"}])),
    )
    .await
    .unwrap();
    let draining = t
        .sim
        .get(&PODS, "agents", "namzu-ws-awake")
        .expect("still there during the grace period");
    assert!(draining["metadata"]["deletionTimestamp"].is_string());
    let sbx = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    assert_eq!(ready(&sbx), ("False".into(), "SandboxSuspended".into()));
    assert_eq!(condition(&sbx, "Suspended"), ("False".into(), "PodTerminating".into()));

    t.sim.advance(Duration::seconds(3));
    assert!(
        t.sim.get(&PODS, "agents", "namzu-ws-awake").is_none(),
        "gone after the grace period"
    );
    let sbx = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    assert_eq!(condition(&sbx, "Suspended"), ("True".into(), "PodTerminated".into()));
    assert_eq!(sbx["status"]["conditions"][0]["message"], "Sandbox is suspended");
    assert!(sbx["status"].get("podIPs").is_none() && sbx["status"].get("nodeName").is_none());
    assert!(
        t.sim.get(&PVCS, "agents", "workspace-disk-namzu-ws-awake").is_some(),
        "the disk is kept"
    );

    let rv = sbx["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    api.patch(
        "namzu-ws-awake",
        &PatchParams::default(),
        &json_patch(json!([
        {"op":"test","path":"/metadata/resourceVersion","value":rv},
        {"op":"add","path":"/spec/operatingMode","value":"Running"}])),
    )
    .await
    .unwrap();
    let pod1 = t.sim.get(&PODS, "agents", "namzu-ws-awake").expect("a new pod");
    assert_ne!(pod1["metadata"]["uid"], uid0, "a new pod uid");
    let sbx = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    assert_eq!(ready(&sbx), ("False".into(), "DependenciesNotReady".into()));
    t.sim.advance(Duration::seconds(2));
    let sbx = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    assert_eq!(ready(&sbx), ("True".into(), "DependenciesReady".into()));
    assert_eq!(
        t.sim.get(&PODS, "agents", "namzu-ws-awake").unwrap()["status"]["phase"],
        "Running"
    );
}

#[tokio::test]
async fn knobs_reproduce_field_trouble() {
    let t = start().await;
    let ns = "agents";
    let name = "namzu-ws-asleep";
    let resume = |t: &TestSim| {
        t.sim
            .modify(&SANDBOXES, ns, name, |o| o["spec"]["operatingMode"] = json!("Running"));
    };
    let suspend = |t: &TestSim| {
        t.sim.modify(&SANDBOXES, ns, name, |o| {
            o["spec"]["operatingMode"] = json!("Suspended")
        });
        t.sim.advance(Duration::seconds(5));
    };
    let pod = |t: &TestSim| t.sim.get(&PODS, ns, name).unwrap();

    t.sim.set_knobs(
        ns,
        name,
        Knobs {
            unschedulable: Some("0/3 nodes are available: 3 Insufficient memory.".into()),
            ..Default::default()
        },
    );
    resume(&t);
    t.sim.advance(Duration::seconds(5));
    let p = pod(&t);
    assert_eq!(p["status"]["phase"], "Pending");
    assert_eq!(condition(&p, "PodScheduled"), ("False".into(), "Unschedulable".into()));
    let sbx = t.sim.get(&SANDBOXES, ns, name).unwrap();
    assert_eq!(
        condition(&sbx, "PodScheduled"),
        ("False".into(), "Unschedulable".into()),
        "mirrored onto the Sandbox"
    );
    let events = t.sim.list(&EVENTS, Some(ns));
    assert!(
        events
            .iter()
            .any(|e| e["reason"] == "FailedScheduling" && e["involvedObject"]["name"] == name)
    );
    suspend(&t);

    t.sim.set_knobs(
        ns,
        name,
        Knobs {
            image_pull: Some("ImagePullBackOff".into()),
            ..Default::default()
        },
    );
    resume(&t);
    assert_eq!(
        pod(&t)["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
        "ImagePullBackOff"
    );
    suspend(&t);

    t.sim.set_knobs(
        ns,
        name,
        Knobs {
            crash_loop: true,
            ..Default::default()
        },
    );
    resume(&t);
    t.sim.advance(Duration::seconds(5));
    assert_eq!(
        pod(&t)["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
        "CrashLoopBackOff"
    );
    assert_eq!(ready(&t.sim.get(&SANDBOXES, ns, name).unwrap()).0, "False");
    suspend(&t);

    t.sim.set_knobs(
        ns,
        name,
        Knobs {
            pvc_pending: true,
            ..Default::default()
        },
    );
    assert_eq!(
        t.sim.get(&PVCS, ns, "workspace-disk-namzu-ws-asleep").unwrap()["status"]["phase"],
        "Pending"
    );
    t.sim.set_knobs(ns, name, Knobs::default());
    assert_eq!(
        t.sim.get(&PVCS, ns, "workspace-disk-namzu-ws-asleep").unwrap()["status"]["phase"],
        "Bound"
    );

    t.sim.set_knobs(
        ns,
        name,
        Knobs {
            pod_failed: true,
            ..Default::default()
        },
    );
    resume(&t);
    t.sim.advance(Duration::seconds(5));
    assert_eq!(pod(&t)["status"]["phase"], "Failed");
    let failed_uid = pod(&t)["metadata"]["uid"].clone();
    assert_eq!(
        ready(&t.sim.get(&SANDBOXES, ns, name).unwrap()),
        ("False".into(), "PodFailed".into())
    );
    t.sim.advance(Duration::seconds(5));
    assert_eq!(pod(&t)["metadata"]["uid"], failed_uid, "a failed pod is not recreated");
    t.sim.modify(&SANDBOXES, ns, name, |o| {
        o["spec"]["operatingMode"] = json!("Suspended")
    });
    t.sim.set_knobs(ns, name, Knobs::default());
    t.sim.advance(Duration::seconds(5));
    assert!(t.sim.get(&PODS, ns, name).is_none());

    stuck_terminating(&t, ns, name);
    resume(&t);
    t.sim.advance(Duration::seconds(5));
    suspend(&t);
    t.sim.advance(Duration::minutes(10));
    assert!(
        pod(&t)["metadata"]["deletionTimestamp"].is_string(),
        "stuck terminating"
    );
    t.sim.set_knobs(ns, name, Knobs::default());
    t.sim.advance(Duration::seconds(1));
    assert!(t.sim.get(&PODS, ns, name).is_none());

    t.sim.set_knobs(
        ns,
        name,
        Knobs {
            reconciler_error: Some("failed to create service: quota exceeded".into()),
            ..Default::default()
        },
    );
    let sbx = t.sim.get(&SANDBOXES, ns, name).unwrap();
    assert_eq!(ready(&sbx), ("False".into(), "ReconcilerError".into()));
    assert_eq!(
        sbx["status"]["conditions"][0]["message"],
        "Error seen: failed to create service: quota exceeded"
    );

    t.sim.set_knobs(
        ns,
        name,
        Knobs {
            stale_status: true,
            ..Default::default()
        },
    );
    let sbx = t.sim.get(&SANDBOXES, ns, name).unwrap();
    let generation = sbx["metadata"]["generation"].as_i64().unwrap();
    assert!(
        sbx["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["observedGeneration"].as_i64().unwrap() < generation)
    );

    t.sim.set_knobs(
        ns,
        name,
        Knobs {
            foreign_pod: true,
            ..Default::default()
        },
    );
    let p = pod(&t);
    assert_ne!(p["metadata"]["ownerReferences"][0]["kind"], "Sandbox");
    let sbx = t.sim.get(&SANDBOXES, ns, name).unwrap();
    assert_eq!(condition(&sbx, "Suspended"), ("False".into(), "PodNotOwned".into()));
}

/// `cilium.io/v2` CiliumNetworkPolicies are served (through discovery) unless the sim poses as a
/// cluster without Cilium, and go by garbage collection with the Sandbox that owns them — a
/// policy an earlier Sandbox of the same name owned stays until someone deletes it.
#[tokio::test]
async fn cilium_policies_are_discovered_and_collected_with_their_owner() {
    use namzu_sim::resources::CILIUM_POLICIES;
    let scenario = r#"
namespaces: [ns]
workspaces:
  - {namespace: ns, id: a, perSandboxEgress: true, foreignPolicy: true, podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: ws}}, spec: {containers: [{name: c, image: i}]}}}
"#;
    let t = start_with(scenario, |_| {}).await;
    let client = t.client().await;
    let groups = client.list_api_groups().await.unwrap();
    assert!(groups.groups.iter().any(|g| g.name == "cilium.io"));
    let res = client.list_api_group_resources("cilium.io/v2").await.unwrap();
    assert!(
        res.resources
            .iter()
            .any(|r| r.name == "ciliumnetworkpolicies" && r.namespaced && r.kind == "CiliumNetworkPolicy")
    );
    let sbx = t.sim.get(&SANDBOXES, "ns", "namzu-ws-a").unwrap();
    let uid = sbx["metadata"]["uid"].as_str().unwrap().to_string();
    let policies = t.sim.list(&CILIUM_POLICIES, Some("ns"));
    assert_eq!(policies.len(), 2);
    let own = policies
        .iter()
        .find(|p| p["metadata"]["ownerReferences"][0]["uid"] == uid.as_str())
        .unwrap();
    assert_eq!(own["metadata"]["name"], format!("namzu-sbx-{uid}"));
    assert_eq!(
        own["spec"]["endpointSelector"]["matchLabels"]["sandbox.namzu.ai/per-sandbox-egress"],
        "namzu-ws-a"
    );
    // the label rides on the pod template and so on the pod
    let pod = t.sim.get(&PODS, "ns", "namzu-ws-a").unwrap();
    assert_eq!(
        pod["metadata"]["labels"]["sandbox.namzu.ai/per-sandbox-egress"],
        "namzu-ws-a"
    );
    let api = sandboxes(&client, "ns");
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            resource_version: sbx["metadata"]["resourceVersion"].as_str().map(str::to_string),
            uid: None,
        }),
        ..Default::default()
    };
    api.delete("namzu-ws-a", &dp).await.unwrap();
    let left = t.sim.list(&CILIUM_POLICIES, Some("ns"));
    assert_eq!(left.len(), 1, "the foreign one stays: {left:?}");
    assert_ne!(left[0]["metadata"]["ownerReferences"][0]["uid"], uid.as_str());

    let t = start_with(scenario, |c| c.cilium = false).await;
    let client = t.client().await;
    let groups = client.list_api_groups().await.unwrap();
    assert!(!groups.groups.iter().any(|g| g.name == "cilium.io"));
    let api: kube::Api<DynamicObject> = kube::Api::namespaced_with(
        client,
        "ns",
        &ar("cilium.io", "v2", "CiliumNetworkPolicy", "ciliumnetworkpolicies"),
    );
    let e = api.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(status_code(&e), Some(404));
}

/// The controller models what 28.0.0's readings are about: an older generation's Ready=True, a
/// pod deleted under a Ready=True, a foreign and a missing disk, agent-sandbox v1.0's reasons,
/// and no `agents.x-k8s.io/pod-name` annotation (a legacy one stays as it is).
#[tokio::test]
async fn the_controller_models_readiness_identity_and_v1_reasons() {
    let scenario = r#"
namespaces: [ns]
workspaces:
  - {namespace: ns, id: stale, podTemplate: &pt {metadata: {labels: {sandbox.namzu.ai/template: ws}}, spec: {containers: [{name: c, image: i}]}}, knobs: {staleStatus: true}}
  - {namespace: ns, id: lost, podTemplate: *pt, knobs: {podLost: true}}
  - {namespace: ns, id: stranger, podTemplate: *pt, knobs: {foreignDisk: true}}
  - {namespace: ns, id: diskless, podTemplate: *pt, knobs: {diskMissing: true}}
  - {namespace: ns, id: invalid, podTemplate: *pt, knobs: {readyReason: InvalidConfiguration, readyMessage: bad}}
  - {namespace: ns, id: draining, podTemplate: *pt, knobs: {readyReason: PodTerminating}}
  - {namespace: ns, id: odd, podTemplate: *pt, knobs: {readyReason: SomethingNew, readyMessage: why}}
  - {namespace: ns, id: legacy, podTemplate: *pt, annotations: {agents.x-k8s.io/pod-name: other-pod}}
"#;
    let t = start_with(scenario, |_| {}).await;
    let sbx = |id: &str| t.sim.get(&SANDBOXES, "ns", &format!("namzu-ws-{id}")).unwrap();
    let pod = |id: &str| t.sim.get(&PODS, "ns", &format!("namzu-ws-{id}"));
    let pvc = |id: &str| t.sim.get(&PVCS, "ns", &format!("workspace-disk-namzu-ws-{id}"));
    let s = sbx("stale");
    assert_eq!(ready(&s).0, "True");
    assert!(s["status"]["conditions"][0]["observedGeneration"].as_i64() < s["metadata"]["generation"].as_i64());
    assert_eq!(ready(&sbx("lost")), ("True".into(), "DependenciesReady".into()));
    assert!(pod("lost").is_none());
    let stranger = pvc("stranger").unwrap();
    assert_ne!(
        stranger["metadata"]["ownerReferences"][0]["uid"],
        sbx("stranger")["metadata"]["uid"]
    );
    assert_eq!(stranger["metadata"]["ownerReferences"][0]["name"], "namzu-ws-stranger");
    assert!(pvc("diskless").is_none());
    assert_eq!(pod("diskless").unwrap()["status"]["phase"], "Pending");
    assert_eq!(ready(&sbx("invalid")), ("False".into(), "InvalidConfiguration".into()));
    assert!(pod("invalid").is_none());
    assert_eq!(ready(&sbx("draining")), ("False".into(), "PodTerminating".into()));
    assert!(pod("draining").unwrap()["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(ready(&sbx("odd")), ("False".into(), "SomethingNew".into()));
    for id in ["stale", "stranger", "diskless"] {
        assert!(
            sbx(id)["metadata"]["annotations"]
                .get("agents.x-k8s.io/pod-name")
                .is_none(),
            "{id}"
        );
    }
    assert_eq!(
        sbx("legacy")["metadata"]["annotations"]["agents.x-k8s.io/pod-name"],
        "other-pod"
    );
}
