//! `--wait` holds ownership on every pass, through the real binary on the sim: a resume or suspend
//! wait ends when the Sandbox is replaced (naming both uids) or deleted, and a 410 on a GET reads
//! as gone.

use crate::support::*;
use kube::api::{DeleteParams, DynamicObject, PostParams, Preconditions};
use namzu_sim::faults::Fault;
use namzu_sim::resources::SANDBOXES;
use serde_json::{Value, json};
use std::time::Duration;

/// The real binary started with `args` on the sim's clock (not waited for).
fn spawn(t: &TestSim, args: &[&str]) -> std::process::Child {
    t.bin()
        .arg("--kubeconfig")
        .arg(t.sim.kubeconfig())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn kubectl-namzu")
}

/// Until the sim has answered a PATCH of `sandbox` with 200 (the write landed; the binary waits).
async fn until_patched(t: &TestSim, sandbox: &str) {
    until("the write landed", Duration::from_secs(30), || {
        t.sim
            .requests()
            .iter()
            .any(|r| r.method == "PATCH" && r.path.ends_with(sandbox) && r.status == 200)
    })
    .await;
}

fn signal(child: &std::process::Child, sig: &str) {
    std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill runs");
}

/// Another party deletes the Sandbox and creates a copy under the same name (a new uid, epoch
/// 42, Running): a DELETE and a POST back to back on one kube client, while the waiting binary
/// is stopped, so no poll of its lands between them.
async fn replace(t: &TestSim, child: &std::process::Child, ns: &str, name: &str) -> (String, String) {
    let api = sandboxes(&t.client().await, ns);
    let old = api.get(name).await.expect("the Sandbox is there");
    let was = old.metadata.uid.clone().expect("uid");
    signal(child, "-STOP");
    api.delete(name, &precondition(&was)).await.expect("DELETE");
    let mut copy: Value = serde_json::to_value(&old).unwrap();
    let meta = copy["metadata"].as_object_mut().unwrap();
    for k in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "managedFields",
    ] {
        meta.remove(k);
    }
    copy["metadata"]["annotations"]["sandbox.namzu.ai/holder-epoch"] = json!("42");
    copy["spec"]["operatingMode"] = json!("Running");
    copy.as_object_mut().unwrap().remove("status");
    let copy: DynamicObject = serde_json::from_value(copy).unwrap();
    let made = api.create(&PostParams::default(), &copy).await.expect("POST");
    signal(child, "-CONT");
    (was, made.metadata.uid.expect("uid"))
}

/// A DELETE of exactly the object of `uid` (the strict sim wants a precondition).
fn precondition(uid: &str) -> DeleteParams {
    DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    }
}

async fn finish(child: std::process::Child) -> std::process::Output {
    tokio::task::spawn_blocking(move || child.wait_with_output().expect("wait"))
        .await
        .expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_wait_ends_when_the_sandbox_is_replaced_naming_both_uids() {
    // the manual clock never moves: the resumed pod is never Ready, the wait stays open
    let t = start().await;
    let child = spawn(&t, &["-n", "agents", "resume", "asleep", "--wait", "--timeout", "60s"]);
    until_patched(&t, "namzu-ws-asleep").await;
    let (was, now) = replace(&t, &child, "agents", "namzu-ws-asleep").await;
    let o = finish(child).await;
    let text = format!("{}{}", out(&o), err(&o));
    assert_eq!(o.status.code(), Some(6), "{text}");
    assert!(text.contains("replaced while waiting"), "{text}");
    assert!(text.contains(&was) && text.contains(&now), "{text}");
    assert!(!text.contains("; confirmed"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspend_wait_ends_when_the_sandbox_is_replaced_and_one_deleted_says_so() {
    // a stuck pod keeps the suspend's wait open
    let t = start().await;
    stuck_terminating(&t, "agents", "namzu-ws-awake");
    let child = spawn(
        &t,
        &[
            "-n",
            "agents",
            "suspend",
            "awake",
            "--wait",
            "--timeout",
            "60s",
            "-o",
            "json",
        ],
    );
    until_patched(&t, "namzu-ws-awake").await;
    let (was, now) = replace(&t, &child, "agents", "namzu-ws-awake").await;
    let o = finish(child).await;
    assert_eq!(o.status.code(), Some(6), "{}{}", out(&o), err(&o));
    let text = out(&o);
    assert!(text.contains("\"replaced\""), "{text}");
    assert!(text.contains(&was) && text.contains(&now), "{text}");

    // a deletion while waiting: "deleted while waiting", not confirmed
    let t = start().await;
    let child = spawn(&t, &["-n", "agents", "resume", "asleep", "--wait", "--timeout", "60s"]);
    until_patched(&t, "namzu-ws-asleep").await;
    let uid = t.sim.get(&SANDBOXES, "agents", "namzu-ws-asleep").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    sandboxes(&t.client().await, "agents")
        .delete("namzu-ws-asleep", &precondition(&uid))
        .await
        .expect("DELETE");
    let o = finish(child).await;
    let text = format!("{}{}", out(&o), err(&o));
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("deleted while waiting"), "{text}");
}

#[tokio::test]
async fn a_410_on_a_get_reads_as_gone() {
    let t = start().await;
    t.sim
        .add_fault(Fault::status(Some("GET"), "/sandboxes/namzu-ws-awake", 410, "gone"));
    // as a workspace that is not there
    let o = namzu(&t, &["-n", "agents", "inspect", "awake"]).await;
    let missing = namzu(&t, &["-n", "agents", "inspect", "nosuch"]).await;
    assert_eq!(o.status.code(), missing.status.code(), "{}", err(&o));
    assert!(err(&o).contains("workspace awake not found"), "{}", err(&o));
    let o = namzu(&t, &["-n", "agents", "suspend", "awake"]).await;
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    let uid = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let o = namzu(&t, &["-n", "agents", "reconcile", "awake", "--uid", &uid]).await;
    assert_eq!(o.status.code(), Some(4), "{}{}", out(&o), err(&o));
    // a 410 while waiting: the Sandbox went away
    let t = start().await;
    let child = spawn(&t, &["-n", "agents", "resume", "asleep", "--wait", "--timeout", "60s"]);
    until_patched(&t, "namzu-ws-asleep").await;
    t.sim
        .add_fault(Fault::status(Some("GET"), "/sandboxes/namzu-ws-asleep", 410, "gone"));
    let o = finish(child).await;
    let text = format!("{}{}", out(&o), err(&o));
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("deleted while waiting"), "{text}");
}
