//! `resume --refresh-template`, the library's refresh (docs/interop.md §14), through the real
//! binary against the strict sim: namzu-backend's template-refresh scenarios 3–14 as the tool
//! meets them, with every body compared byte for byte from the sim's request record and every
//! refusal shown to send no PATCH.

use crate::support::*;
use namzu_sim::faults::{Fault, FaultAction, Mutation};
use namzu_sim::record::Recorded;
use namzu_sim::resources::{PODS, SANDBOXES};
use serde_json::{Value, json};

/// The revision a workspace was created from, as its Sandbox stores it (the template label is the
/// template's own, so the overlay adds nothing).
const V1: &str = r#"{metadata: {labels: {app: agent, sandbox.namzu.ai/template: ws}}, spec: {terminationGracePeriodSeconds: 5, nodeSelector: {kubernetes.io/arch: amd64, pool: blue}, containers: [{name: main, image: "namzu/agent:1", volumeDevices: [{name: workspace-disk, devicePath: /dev/workspace}]}]}}"#;
/// What `kubectl namzu template-hash` prints for a SandboxTemplate `ws` whose pod template is V1.
const H1: &str = "sha256:7f3b5b2c5b7612709730dde3a89f382b803a3612244cc863752280125508e5e3";
/// The template as it is now: a new image and grace period, one nodeSelector key dropped.
const V2: &str = r#"{metadata: {labels: {app: agent, sandbox.namzu.ai/template: ws}}, spec: {terminationGracePeriodSeconds: 90, nodeSelector: {kubernetes.io/arch: amd64}, containers: [{name: main, image: "namzu/agent:2", volumeDevices: [{name: workspace-disk, devicePath: /dev/workspace}]}]}}"#;
/// `template-hash` of V2.
const H2: &str = "sha256:8d1b3cf9efa9404ff7f69f541303dd0b1e4589b8e26d9c15f8f77a0c030ff163";
/// V2 as JSON on the wire: keys sorted, as a real API server (and the sim) serves a custom
/// resource; the body copies the template as served.
const V2_JSON: &str = r#"{"metadata":{"labels":{"app":"agent","sandbox.namzu.ai/template":"ws"}},"spec":{"containers":[{"image":"namzu/agent:2","name":"main","volumeDevices":[{"devicePath":"/dev/workspace","name":"workspace-disk"}]}],"nodeSelector":{"kubernetes.io/arch":"amd64"},"terminationGracePeriodSeconds":90}}"#;
/// The Block disk every workspace here has.
const DISK: &str = "{metadata: {name: workspace-disk}, spec: {accessModes: [ReadWriteOnce], volumeMode: Block}}";
/// The sim's clock, as the changed-at stamp a write carries.
const AT: &str = "2026-11-29T12:00:00.000Z";
const E: &str = "/metadata/annotations/sandbox.namzu.ai~1holder-epoch";
const C: &str = "/metadata/annotations/sandbox.namzu.ai~1operating-mode-changed-at";
const H: &str = "/metadata/annotations/sandbox.namzu.ai~1pod-template-hash";

/// Namespace `ns`, SandboxTemplate `ws` (`pod_template`, `disks`), and `workspaces` (YAML flow
/// mappings, one per line).
fn scenario(pod_template: &str, disks: &str, workspaces: &[String]) -> String {
    let mut s = format!(
        "namespaces: [ns]\nobjects:\n  - apiVersion: extensions.agents.x-k8s.io/v1beta1\n    kind: SandboxTemplate\n    metadata: {{name: ws, namespace: ns}}\n    spec: {{podTemplate: {pod_template}, volumeClaimTemplates: [{disks}]}}\nworkspaces:\n"
    );
    for w in workspaces {
        s.push_str(&format!("  - {w}\n"));
    }
    s
}

/// Workspace `id` in `ns` from `pod_template`, with `rest` (mode, epoch, hash, …).
fn workspace(id: &str, pod_template: &str, rest: &str) -> String {
    format!("{{namespace: ns, id: {id}, podTemplate: {pod_template}, {rest}}}")
}

async fn sim(text: &str) -> TestSim {
    start_with(text, |c| {
        c.namespace = "ns".into();
        c.timing.grace = chrono::Duration::zero();
        c.timing.ready_delay = chrono::Duration::zero();
    })
    .await
}

/// One Suspended workspace `desk` created from V1 (hash H1, `rest` added), the template `ws` now
/// `pod_template` with `disks`.
async fn desk_under(pod_template: &str, disks: &str, rest: &str) -> TestSim {
    let desk = workspace("desk", V1, &format!("mode: Suspended, hash: \"{H1}\", {rest}"));
    sim(&scenario(pod_template, disks, &[desk])).await
}

/// [`desk_under`] the template at V2.
async fn drifted(rest: &str) -> TestSim {
    desk_under(V2, DISK, rest).await
}

fn patches(t: &TestSim) -> Vec<Recorded> {
    t.sim.requests().into_iter().filter(|r| r.method == "PATCH").collect()
}

/// The body exactly as it went on the wire (the record keeps the key order sent).
fn wire(r: &Recorded) -> String {
    serde_json::to_string(r.body.as_ref().expect("a body")).unwrap()
}

fn sandbox(t: &TestSim, id: &str) -> Value {
    t.sim
        .get(&SANDBOXES, "ns", &format!("namzu-ws-{id}"))
        .expect("the Sandbox")
}

fn mode(t: &TestSim, id: &str) -> String {
    sandbox(t, id)["spec"]["operatingMode"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn image(t: &TestSim, id: &str) -> String {
    sandbox(t, id)["spec"]["podTemplate"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// The DRIFT the inventory shows for `id` now (with `flags` as the hosts' overlays).
async fn drift_of(t: &TestSim, id: &str, flags: &[&str]) -> String {
    let mut args = vec!["list", "-o", "json"];
    args.extend_from_slice(flags);
    let o = namzu(t, &args).await;
    let rows = listed(&o);
    let row = rows.iter().find(|r| r["id"] == id).expect("listed");
    row["drift"]["state"].as_str().unwrap().to_string()
}

/// A refusal: exit 3, the words, no PATCH at all, the workspace left as it was.
fn assert_refused_before_any_patch(t: &TestSim, o: &std::process::Output, words: &[&str], id: &str, was: &str) {
    assert_eq!(o.status.code(), Some(3), "{}{}", out(o), err(o));
    for w in words {
        assert!(err(o).contains(w), "{w:?} not in: {}", err(o));
    }
    assert!(patches(t).is_empty(), "a refusal sends no PATCH");
    assert_eq!(mode(t, id), was);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tr3_a_refresh_is_one_json_patch_that_writes_the_template_as_it_is_now_and_wakes_it() {
    let t = drifted(r#"epoch: "2""#).await;
    let o = namzu(
        &t,
        &["resume", "desk", "--refresh-template", "--wait", "--timeout", "20s"],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains("desk: resumed, pod template refreshed from SandboxTemplate ws (sha256:7f3b5b2c5b76… → sha256:8d1b3cf9efa9…) (keeps holder epoch 2); confirmed"),
        "{}",
        out(&o)
    );
    let p = patches(&t);
    assert_eq!(p.len(), 1, "one PATCH");
    assert_eq!(p[0].content_type, "application/json-patch+json");
    assert_eq!(
        wire(&p[0]),
        format!(
            r#"[{{"op":"test","path":"{E}","value":"2"}},{{"op":"test","path":"/spec/operatingMode","value":"Suspended"}},{{"op":"add","path":"{E}","value":"2"}},{{"op":"add","path":"{C}","value":"{AT}"}},{{"op":"add","path":"{H}","value":"{H2}"}},{{"op":"add","path":"/spec/podTemplate","value":{V2_JSON}}},{{"op":"add","path":"/spec/operatingMode","value":"Running"}}]"#
        )
    );
    // the object now describes the pod the controller builds: new image and grace, new hash
    let s = sandbox(&t, "desk");
    assert_eq!(image(&t, "desk"), "namzu/agent:2");
    assert_eq!(s["spec"]["podTemplate"]["spec"]["terminationGracePeriodSeconds"], 90);
    assert_eq!(s["metadata"]["annotations"]["sandbox.namzu.ai/pod-template-hash"], H2);
    assert_eq!(mode(&t, "desk"), "Running");
    assert_eq!(drift_of(&t, "desk", &[]).await, "current");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tr4_a_key_the_template_dropped_is_removed_and_the_disks_are_never_patched() {
    let t = drifted(r#"epoch: "2""#).await;
    let disks_before = sandbox(&t, "desk")["spec"]["volumeClaimTemplates"].clone();
    let o = namzu(&t, &["resume", "desk", "--refresh-template"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let s = sandbox(&t, "desk");
    assert_eq!(
        s["spec"]["podTemplate"]["spec"]["nodeSelector"],
        json!({"kubernetes.io/arch": "amd64"}),
        "a whole-template add drops the key a merge patch would keep"
    );
    let ops = patches(&t)[0].body.clone().unwrap();
    assert!(
        ops.as_array()
            .unwrap()
            .iter()
            .all(|op| op["path"] != "/spec/volumeClaimTemplates")
    );
    assert_eq!(
        s["spec"]["volumeClaimTemplates"], disks_before,
        "the disks are byte-identical"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tr5_a_running_workspace_is_refused_before_anything_is_read_or_sent() {
    let t = sim(&scenario(
        V2,
        DISK,
        &[workspace("desk", V1, &format!("hash: \"{H1}\", epoch: \"2\""))],
    ))
    .await;
    let pod_before = t.sim.get(&PODS, "ns", "namzu-ws-desk").unwrap()["metadata"]["uid"].clone();
    let o = namzu(&t, &["resume", "desk", "--refresh-template"]).await;
    assert_refused_before_any_patch(
        &t,
        &o,
        &[
            "desk: refused: the workspace is Running: a refresh happens only on Suspended → Running",
            "Suspend it first",
        ],
        "desk",
        "Running",
    );
    assert!(
        !t.sim.requests().iter().any(|r| r.path.contains("/sandboxtemplates/")),
        "refused from the Sandbox alone"
    );
    assert_eq!(image(&t, "desk"), "namzu/agent:1");
    assert_eq!(
        t.sim.get(&PODS, "ns", "namzu-ws-desk").unwrap()["metadata"]["uid"],
        pod_before,
        "the pod is untouched"
    );
    // suspend first, then refresh: the way the refusal says
    assert!(namzu(&t, &["suspend", "desk", "--wait"]).await.status.success());
    assert!(
        namzu(&t, &["resume", "desk", "--refresh-template"])
            .await
            .status
            .success()
    );
    assert_eq!(image(&t, "desk"), "namzu/agent:2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tr6_a_workspace_from_before_the_hash_is_refused_and_a_plain_resume_stamps_nothing() {
    let t = sim(&scenario(
        V2,
        DISK,
        &[workspace(
            "desk",
            V1,
            r#"mode: Suspended, annotations: {example.com/owner: ops}"#,
        )],
    ))
    .await;
    assert_eq!(drift_of(&t, "desk", &[]).await, "unknown");
    let o = namzu(&t, &["resume", "desk", "--refresh-template"]).await;
    assert_refused_before_any_patch(
        &t,
        &o,
        &["no pod-template hash is stored", "a refresh never guesses them"],
        "desk",
        "Suspended",
    );
    // the resume the library does without the option: the mode alone, no hash stamped
    let o = namzu(&t, &["resume", "desk"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(!wire(&patches(&t)[0]).contains("pod-template-hash"));
    let s = sandbox(&t, "desk");
    assert!(
        s["metadata"]["annotations"]
            .get("sandbox.namzu.ai/pod-template-hash")
            .is_none()
    );
    assert_eq!(image(&t, "desk"), "namzu/agent:1", "the pod template is unchanged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tr7_a_runtime_class_flag_is_written_on_a_suspended_workspace_and_refused_on_a_running_one() {
    let runc = V1.replace("spec: {", "spec: {runtimeClassName: runc, ");
    let t = sim(&scenario(
        V2,
        DISK,
        &[
            workspace("awake", &runc, r#"hash: "sha256:stale""#),
            workspace("asleep", V1, &format!("mode: Suspended, hash: \"{H1}\"")),
        ],
    ))
    .await;
    let o = namzu(
        &t,
        &["resume", "awake", "--refresh-template", "--runtime-class", "kata-qemu"],
    )
    .await;
    assert_refused_before_any_patch(
        &t,
        &o,
        &[
            "the workspace is Running",
            "its runtimeClassName is runc, not kata-qemu",
        ],
        "awake",
        "Running",
    );
    let o = namzu(
        &t,
        &["resume", "asleep", "--refresh-template", "--runtime-class", "kata-qemu"],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    let s = sandbox(&t, "asleep");
    assert_eq!(s["spec"]["podTemplate"]["spec"]["runtimeClassName"], "kata-qemu");
    assert_eq!(
        s["metadata"]["annotations"]["sandbox.namzu.ai/pod-template-hash"],
        "sha256:1877a048a8d8c46346c6a6b19896a80b8ae9faa106cb1e870ed573aed09a4da0",
        "template-hash of V2 with --runtime-class kata-qemu"
    );
    assert_eq!(
        drift_of(&t, "asleep", &["--runtime-class", "kata-qemu"]).await,
        "current"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tr8_a_template_labelled_as_another_template_is_refused() {
    let other = V2.replace("sandbox.namzu.ai/template: ws", "sandbox.namzu.ai/template: other");
    let t = desk_under(&other, DISK, "").await;
    let o = namzu(&t, &["resume", "desk", "--refresh-template"]).await;
    assert_refused_before_any_patch(
        &t,
        &o,
        &[
            "sandbox.namzu.ai/template=other",
            "never moves a workspace to another template",
        ],
        "desk",
        "Suspended",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tr9_a_renamed_or_an_extra_disk_is_refused_and_a_workspace_with_both_disks_refreshes() {
    let cache = "{metadata: {name: cache}, spec: {accessModes: [ReadWriteOnce], volumeMode: Block}}";
    let both_devices =
        "volumeDevices: [{name: workspace-disk, devicePath: /dev/workspace}, {name: cache, devicePath: /dev/cache}]";
    let one_device = "volumeDevices: [{name: workspace-disk, devicePath: /dev/workspace}]";
    // renamed: the template is a good one today, but the Sandbox's disks are CEL-immutable
    let renamed = V2.replace("name: workspace-disk", "name: workspace-v2");
    let t = desk_under(&renamed, &DISK.replace("workspace-disk", "workspace-v2"), "").await;
    let o = namzu(&t, &["resume", "desk", "--refresh-template"]).await;
    assert_refused_before_any_patch(
        &t,
        &o,
        &["\"workspace-v2\"", "CEL-immutable", "stays Suspended"],
        "desk",
        "Suspended",
    );
    // an extra disk: the template still claims the old one, and the Sandbox cannot have the new
    let extra = V2.replace(one_device, both_devices);
    let t = sim(&scenario(
        &extra,
        &format!("{DISK}, {cache}"),
        &[
            workspace("desk", V1, &format!("mode: Suspended, hash: \"{H1}\"")),
            workspace(
                "both",
                &V1.replace(one_device, both_devices),
                "mode: Suspended, disks: [workspace-disk, cache], hash: \"sha256:beda8b969ff447a59cedafb9c0e036374e1005f7304b4e8d40e7e7e84a4aa1ea\"",
            ),
        ],
    ))
    .await;
    let o = namzu(&t, &["resume", "desk", "--refresh-template"]).await;
    assert_refused_before_any_patch(&t, &o, &["\"cache\"", "CEL-immutable"], "desk", "Suspended");
    assert_eq!(
        sandbox(&t, "desk")["spec"]["podTemplate"]["spec"]["containers"][0]["volumeDevices"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "the object still describes a pod the controller can build"
    );
    // a workspace created with both disks refreshes like any other
    let o = namzu(&t, &["resume", "both", "--refresh-template"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(image(&t, "both"), "namzu/agent:2");
    assert_eq!(drift_of(&t, "both", &[]).await, "current");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tr10_a_resume_that_raced_the_refresh_is_not_applied_not_retried_and_said_off_template() {
    let t = drifted(r#"epoch: "2""#).await;
    // another host resumes it between our read and our PATCH: the mode test fails
    t.sim.add_fault(before_patch("/sandboxes/", 1, resumed_by_another()));
    let o = namzu(
        &t,
        &["resume", "desk", "--refresh-template", "--runtime-class", "kata-qemu"],
    )
    .await;
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    for words in [
        "desk: not applied: another process resumed the workspace between the read and the PATCH",
        "so it was not retried",
        "It is Running off-template",
        "its runtimeClassName is (absent), not kata-qemu",
        "Suspend it, then refresh again",
    ] {
        assert!(err(&o).contains(words), "{words:?} not in {}", err(&o));
    }
    let p = patches(&t);
    assert_eq!(
        p.iter().map(|r| r.status).collect::<Vec<_>>(),
        [422],
        "exactly one attempt"
    );
    assert_eq!(image(&t, "desk"), "namzu/agent:1", "nothing rewritten");
    assert_eq!(mode(&t, "desk"), "Running");
    assert!(
        t.sim.get(&PODS, "ns", "namzu-ws-desk").is_some(),
        "the winner's pod runs"
    );
    assert_eq!(drift_of(&t, "desk", &[]).await, "drifted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tr11_no_annotations_map_is_one_whole_map_add_under_a_resource_version_test() {
    let flags = ["--runtime-class", "runc", "--egress-profile", "open"];
    // no map means no hash: with every overlay named there is nothing to infer
    let t = sim(&scenario(
        V2,
        DISK,
        &[workspace("desk", V1, "mode: Suspended, noAnnotations: true")],
    ))
    .await;
    let rv = sandbox(&t, "desk")["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut args = vec!["resume", "desk", "--refresh-template"];
    args.extend_from_slice(&flags);
    let o = namzu(&t, &args).await;
    assert!(o.status.success(), "{}", err(&o));
    let written = V2_JSON
        .replace(
            r#""sandbox.namzu.ai/template":"ws"}"#,
            r#""sandbox.namzu.ai/template":"ws","sandbox.namzu.ai/egress-profile":"open"}"#,
        )
        .replace(
            r#""terminationGracePeriodSeconds":90}}"#,
            r#""terminationGracePeriodSeconds":90,"runtimeClassName":"runc"}}"#,
        );
    assert_eq!(
        wire(&patches(&t)[0]),
        format!(
            r#"[{{"op":"test","path":"/spec/operatingMode","value":"Suspended"}},{{"op":"test","path":"/metadata/resourceVersion","value":"{rv}"}},{{"op":"add","path":"/metadata/annotations","value":{{"sandbox.namzu.ai/operating-mode-changed-at":"{AT}","sandbox.namzu.ai/pod-template-hash":"sha256:78224bbf46aa1092866966b63c920928c03fcd08761c7055840b46dc4fef42ca"}}}},{{"op":"add","path":"/spec/podTemplate","value":{written}}},{{"op":"add","path":"/spec/operatingMode","value":"Running"}}]"#
        )
    );
    // another writer stamps epoch 9 into the window: the whole-map add is refused, and the
    // re-read shows a holder above the one carried — nothing more is sent
    let t = sim(&scenario(
        V2,
        DISK,
        &[workspace("desk", V1, "mode: Suspended, noAnnotations: true")],
    ))
    .await;
    t.sim.add_fault(before_patch("/sandboxes/", 1, stamp_epoch("9")));
    let o = namzu(&t, &args).await;
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains("held at epoch 9"), "{}", err(&o));
    assert_eq!(patches(&t).len(), 1);
    let s = sandbox(&t, "desk");
    assert_eq!(
        s["metadata"]["annotations"],
        json!({"sandbox.namzu.ai/holder-epoch": "9"})
    );
    assert_eq!(mode(&t, "desk"), "Suspended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tr12_the_epoch_rides_in_the_same_body_and_a_higher_stored_epoch_refuses() {
    let t = drifted(r#"epoch: "4""#).await;
    let o = namzu(&t, &["resume", "desk", "--refresh-template", "--epoch", "4"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(
        wire(&patches(&t)[0]),
        format!(
            r#"[{{"op":"test","path":"{E}","value":"4"}},{{"op":"test","path":"/spec/operatingMode","value":"Suspended"}},{{"op":"add","path":"{E}","value":"4"}},{{"op":"add","path":"{C}","value":"{AT}"}},{{"op":"add","path":"{H}","value":"{H2}"}},{{"op":"add","path":"/spec/podTemplate","value":{V2_JSON}}},{{"op":"add","path":"/spec/operatingMode","value":"Running"}}]"#
        )
    );
    let t = drifted(r#"epoch: "7""#).await;
    let o = namzu(&t, &["resume", "desk", "--refresh-template", "--epoch", "4"]).await;
    assert_refused_before_any_patch(
        &t,
        &o,
        &["carried holder epoch 4, but the Sandbox is held at epoch 7"],
        "desk",
        "Suspended",
    );
    assert_eq!(image(&t, "desk"), "namzu/agent:1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tr13_a_workspace_deleted_between_the_refused_patch_and_the_reread_is_gone() {
    let t = drifted(r#"epoch: "2""#).await;
    t.sim
        .add_fault(Fault::status(Some("PATCH"), "/sandboxes/", 422, "the server rejected our request").nth(1));
    t.sim.add_fault(
        Fault::new(
            Some("GET"),
            "/sandboxes/namzu-ws-desk",
            FaultAction::Mutate(Mutation::Delete),
        )
        .nth(2),
    );
    let o = namzu(&t, &["resume", "desk", "--refresh-template"]).await;
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    assert!(err(&o).contains("desk: not found in namespace ns"), "{}", err(&o));
    assert_eq!(patches(&t).len(), 1);
    assert!(t.sim.get(&SANDBOXES, "ns", "namzu-ws-desk").is_none());
    assert!(t.sim.get(&PODS, "ns", "namzu-ws-desk").is_none(), "nothing came up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tr14_an_egress_profile_is_written_from_the_flag_and_never_guessed() {
    let labelled = V1.replace(
        "sandbox.namzu.ai/template: ws}",
        "sandbox.namzu.ai/template: ws, sandbox.namzu.ai/egress-profile: restricted}",
    );
    let t = sim(&scenario(
        V2,
        DISK,
        &[
            // created before the hosts had a profile
            workspace("plain", V1, &format!("mode: Suspended, hash: \"{H1}\"")),
            workspace("plain-awake", V1, &format!("hash: \"{H1}\"")),
            // created by hosts with profile `restricted` (template-hash --egress-profile restricted)
            workspace(
                "profiled",
                &labelled,
                "mode: Suspended, hash: \"sha256:0cfee54ff241697b2a9f87c1243acc34c9ac2a842f87e6d28d6922262804143c\"",
            ),
        ],
    ))
    .await;
    let with = ["--egress-profile", "restricted"];
    // a Running pre-profile workspace: refused, naming what it lacks
    let o = namzu(
        &t,
        &[
            "resume",
            "plain-awake",
            "--refresh-template",
            "--egress-profile",
            "restricted",
        ],
    )
    .await;
    assert_refused_before_any_patch(
        &t,
        &o,
        &["its egress profile is (absent), not sandbox.namzu.ai/egress-profile=restricted"],
        "plain-awake",
        "Running",
    );
    // the profile label the template does not carry: the hosts' overlay, or the old template's
    // own? Either reproduces the stored hash, and they write different pods: refused
    let o = namzu(&t, &["resume", "profiled", "--refresh-template"]).await;
    assert_refused_before_any_patch(
        &t,
        &o,
        &[
            "egress profile: the stored value may be the hosts' overlay or the template's own",
            "--egress-profile",
        ],
        "profiled",
        "Suspended",
    );
    for id in ["plain", "profiled"] {
        let o = namzu(
            &t,
            &["resume", id, "--refresh-template", "--egress-profile", "restricted"],
        )
        .await;
        assert!(o.status.success(), "{id}: {}", err(&o));
        assert_eq!(
            sandbox(&t, id)["spec"]["podTemplate"]["metadata"]["labels"],
            json!({"app": "agent", "sandbox.namzu.ai/template": "ws", "sandbox.namzu.ai/egress-profile": "restricted"}),
            "{id}: the template's labels, the template label and the profile"
        );
        assert_eq!(drift_of(&t, id, &with).await, "current", "{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_prints_the_body_the_field_diff_and_where_each_overlay_came_from() {
    let t = drifted(r#"epoch: "2""#).await;
    let o = namzu(&t, &["resume", "desk", "--refresh-template", "--dry-run"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    for line in [
        "desk: dry run (keeps holder epoch 2): would send PATCH /apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes/namzu-ws-desk?fieldManager=kubectl-namzu (application/json-patch+json)",
        "refresh from SandboxTemplate ws: pod-template hash sha256:7f3b5b2c5b76… → sha256:8d1b3cf9efa9…",
        "  template label ws (the Sandbox's own label)",
        "  runtimeClassName not configured (inferred: reproduces the stored hash from the stored pod template)",
        "  egress profile not configured (inferred: reproduces the stored hash from the stored pod template)",
        "field changes:",
        r#"  spec.containers[0].image: "namzu/agent:1" → "namzu/agent:2""#,
        r#"  spec.nodeSelector.pool: "blue" → (absent)"#,
        "  spec.terminationGracePeriodSeconds: 5 → 90",
        r#"    "path": "/spec/podTemplate","#,
    ] {
        assert!(text.contains(line), "{line:?} not in:\n{text}");
    }
    assert!(patches(&t).is_empty(), "a dry run sends nothing");
    // -o json carries the same: the overlays, their sources, the changes, the exact request
    let o = namzu(&t, &["resume", "desk", "--refresh-template", "--dry-run", "-o", "json"]).await;
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v[0]["result"], "dry-run");
    assert_eq!(v[0]["refresh"]["hash"], H2);
    assert_eq!(v[0]["refresh"]["storedHash"], H1);
    assert_eq!(
        v[0]["refresh"]["sources"][1],
        json!({"field": "runtimeClassName", "value": null, "source": "reproduced-from-stored"})
    );
    assert_eq!(v[0]["refresh"]["changes"].as_array().unwrap().len(), 3);
    assert_eq!(
        v[0]["request"]["body"][5]["value"]["spec"]["terminationGracePeriodSeconds"],
        90
    );
    assert!(patches(&t).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_refresh_over_a_drift_selection_says_which_were_refused() {
    let t = sim(&scenario(
        V2,
        DISK,
        &[
            workspace("one", V1, &format!("mode: Suspended, hash: \"{H1}\", epoch: \"1\"")),
            workspace("two", V1, &format!("mode: Suspended, hash: \"{H1}\"")),
            workspace("awake", V1, &format!("hash: \"{H1}\"")),
            workspace("fresh", V2, &format!("mode: Suspended, hash: \"{H2}\"")),
            workspace("raced", V1, &format!("mode: Suspended, hash: \"{H1}\"")),
        ],
    ))
    .await;
    // another host wakes `raced` just before our PATCH reaches it
    t.sim
        .add_fault(before_patch("/sandboxes/namzu-ws-raced", 1, resumed_by_another()));
    let o = namzu(&t, &["resume", "--drift", "drifted", "--refresh-template"]).await;
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(out(&o).contains("one: resumed, pod template refreshed"), "{}", out(&o));
    assert!(out(&o).contains("two: resumed, pod template refreshed"), "{}", out(&o));
    for words in [
        "awake: refused: the workspace is Running",
        "raced: not applied: another process resumed",
        "running off-template (another process resumed them before the refresh; suspend, then refresh again): ns/raced",
        "2 of 4 workspaces were not resumed",
    ] {
        assert!(err(&o).contains(words), "{words:?} not in {}", err(&o));
    }
    assert_eq!(
        patches(&t).len(),
        3,
        "the current one is not selected, the Running one not sent, the raced one sent once"
    );
    for id in ["one", "two"] {
        assert_eq!(image(&t, id), "namzu/agent:2");
    }
    assert_eq!(mode(&t, "fresh"), "Suspended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_has_a_workspace_that_refreshes_and_one_refused_for_a_renamed_disk() {
    let t = start_demo().await;
    let o = namzu(&t, &["resume", "ember", "--refresh-template", "--dry-run"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains(r#"  spec.containers[0].image: "ghcr.io/namzu/agent:1.3.0" → "ghcr.io/namzu/agent:1.4.2""#),
        "{}",
        out(&o)
    );
    let o = namzu(&t, &["-n", "agents", "resume", "ember", "--refresh-template"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let ember = t.sim.get(&SANDBOXES, "agents", "namzu-ws-ember").unwrap();
    assert_eq!(
        ember["spec"]["podTemplate"]["spec"]["containers"][0]["image"],
        "ghcr.io/namzu/agent:1.4.2"
    );
    let o = namzu(&t, &["-n", "agents", "resume", "flint", "--refresh-template"]).await;
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(
        err(&o).contains(r#"SandboxTemplate builder declares the disk "build-cache", which the Sandbox lacks"#)
            && err(&o).contains("CEL-immutable"),
        "{}",
        err(&o)
    );
    assert_eq!(patches(&t).len(), 1, "only ember's");
    let flint = t.sim.get(&SANDBOXES, "agents", "namzu-ws-flint").unwrap();
    assert_eq!(flint["spec"]["operatingMode"], "Suspended");
}

/// Issue 27: a refresh of a workspace with no stored epoch carries none: the tool says so and
/// audits `epochCarried: null`, not "keeps holder epoch 0".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfenced_refresh_says_and_audits_no_holder_epoch() {
    let t = start_with(&refresh_scenario(""), |c| c.namespace = "ns".into()).await;
    let o = run_audited(&t, &["resume", "desk", "--refresh-template"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let said = format!("{}{}", out(&o), err(&o));
    assert!(
        said.contains("no holder epoch (unfenced, as the library refreshes)"),
        "{said}"
    );
    assert!(!said.contains("holder epoch 0"), "{said}");
    let entries = audit_entries(&t);
    let applied: Vec<&Value> = entries.iter().filter(|e| e["outcome"] == "applied").collect();
    assert_eq!(applied.len(), 1, "{entries:?}");
    assert!(applied[0]["epochCarried"].is_null(), "{entries:?}");
    assert!(applied[0].get("epochCarried").is_some(), "{entries:?}");
}

#[tokio::test]
async fn a_refresh_without_a_stored_epoch_sends_the_librarys_unfenced_body() {
    let t = start_with(&refresh_scenario(""), |c| c.namespace = "ns".into()).await;
    let template = t.sim.get(&namzu_sim::resources::TEMPLATES, "ns", "ws").unwrap();
    let o = namzu(&t, &["resume", "desk", "--refresh-template"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let sent = patches(&t);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].body.clone().unwrap(),
        json!([
            {"op": "test", "path": "/spec/operatingMode", "value": "Suspended"},
            {"op": "add", "path": "/metadata/annotations/sandbox.namzu.ai~1operating-mode-changed-at", "value": AT},
            {"op": "add", "path": "/metadata/annotations/sandbox.namzu.ai~1pod-template-hash", "value": H2},
            {"op": "add", "path": "/spec/podTemplate", "value": template["spec"]["podTemplate"]},
            {"op": "add", "path": "/spec/operatingMode", "value": "Running"},
        ])
    );
    let after = t.sim.get(&SANDBOXES, "ns", "namzu-ws-desk").unwrap();
    assert!(
        after["metadata"]["annotations"]
            .get("sandbox.namzu.ai/holder-epoch")
            .is_none()
    );
    // a stored epoch is still carried and tested
    let t = start_with(&refresh_scenario(", epoch: \"3\""), |c| c.namespace = "ns".into()).await;
    let o = namzu(&t, &["resume", "desk", "--refresh-template"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let body = patches(&t)[0].body.clone().unwrap();
    assert_eq!(
        body[0],
        json!({"op": "test", "path": "/metadata/annotations/sandbox.namzu.ai~1holder-epoch", "value": "3"})
    );
    assert_eq!(
        body[2],
        json!({"op": "add", "path": "/metadata/annotations/sandbox.namzu.ai~1holder-epoch", "value": "3"})
    );
}

/// A suspended `desk` created from V1 (hash H1) in `ns`, its template now V2; `rest` adds to
/// its scenario entry.
pub(crate) fn refresh_scenario(rest: &str) -> String {
    format!(
        "namespaces: [ns]\nobjects:\n  - apiVersion: extensions.agents.x-k8s.io/v1beta1\n    kind: SandboxTemplate\n    metadata: {{name: ws, namespace: ns}}\n    spec: {{podTemplate: {V2}, volumeClaimTemplates: [{{metadata: {{name: workspace-disk}}, spec: {{accessModes: [ReadWriteOnce], volumeMode: Block}}}}]}}\nworkspaces:\n  - {{namespace: ns, id: desk, podTemplate: {V1}, mode: Suspended, hash: \"{H1}\"{rest}}}\n"
    )
}
