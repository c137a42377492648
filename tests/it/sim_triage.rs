//! The sim serves what triage needs, as kube-apiserver + kubelet do: pod logs (current,
//! previous, tail, timestamps, follow that ends on a restart), `pods/exec` over WebSocket with
//! a small shell, kubelet/scheduler/controller Events in core/v1 and events.k8s.io/v1, pod
//! status with its start-up waterfall, and RBAC on `pods/log` / `pods/exec`. Judged by the real
//! kube client and by real kubectl (required under `CI=true`).

use crate::support::*;
use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};
use namzu_sim::auth::{Rule, User};
use namzu_sim::resources::{CLAIMS, EVENTS, PODS, SANDBOXES};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const TRIAGE: &str = r#"
namespaces: [agents]
objects:
  - apiVersion: extensions.agents.x-k8s.io/v1beta1
    kind: SandboxClaim
    metadata: {name: claimed, namespace: agents}
    spec: {warmPoolRef: {name: pool}}
workspaces:
  - namespace: agents
    id: awake
    podTemplate: &pt
      metadata: {labels: {app: agent}}
      spec: {containers: [{name: agent, image: "ghcr.io/x/agent:1.2", env: [{name: MODEL, value: small}]}]}
    logs: {agent: ["one", "two", "three"]}
  - namespace: agents
    id: duo
    podTemplate:
      spec: {containers: [{name: a, image: "ghcr.io/x/a:1"}, {name: b, image: "ghcr.io/x/b:1"}]}
  - namespace: agents
    id: pulling
    podTemplate: *pt
    knobs: {imagePull: ImagePullBackOff}
  - namespace: agents
    id: crashing
    podTemplate: *pt
    knobs: {crashLoop: true}
    previousLogs: {agent: ["starting", "fatal: no key"]}
  - namespace: agents
    id: owned
    podTemplate: *pt
    ownerClaim: claimed
  - namespace: agents
    id: asleep
    podTemplate: *pt
    mode: Suspended
"#;

async fn triage() -> TestSim {
    start_with(TRIAGE, |c| c.namespace = "agents".into()).await
}

fn pod_api(client: &kube::Client) -> Api<Pod> {
    Api::namespaced(client.clone(), "agents")
}

/// The API error's code and message.
fn api_err(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("not an API error: {other}"),
    }
}

/// kubectl is on PATH; `false` (a note) when it is not, and a failure under `CI=true`.
fn have_kubectl() -> bool {
    let found = Command::new("kubectl").args(["version", "--client"]).output().is_ok();
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "kubectl is not on PATH, and CI=true requires the kubectl fidelity tests to run"
        );
        eprintln!("SKIPPED: kubectl is not on PATH");
    }
    found
}

/// Run kubectl with this kubeconfig, `stdin` fed to it.
async fn kubectl_with(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    kubectl_once(kubeconfig, args, stdin).await
}

/// A `kubectl exec` that must answer as `expected` says, tried at most three times: kubectl's
/// WebSocket exec drops a frame that arrives before it has made that frame's stream (client-go's
/// "Unknown stream id 1, discarding message"), so it can end with the exit status but without
/// the output the sim sent before it. The sim starts a command after a runtime's moment
/// (`EXEC_START` in the sim's exec.rs), which makes that rare; a loaded machine can still lose
/// the race. A sim that answers wrongly answers wrongly three times, and the last answer fails.
async fn exec_until(
    kubeconfig: &Path,
    args: &[&str],
    stdin: Option<&str>,
    expected: impl Fn(&Output) -> bool,
) -> Output {
    let mut tries = Vec::new();
    for _ in 0..3 {
        let o = kubectl_once(kubeconfig, args, stdin).await;
        if expected(&o) {
            return o;
        }
        tries.push(text(&o));
    }
    panic!("kubectl {args:?}: three answers, none as expected: {tries:#?}");
}

async fn kubectl_once(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut full = vec![
        "--kubeconfig".to_string(),
        kubeconfig.display().to_string(),
        "--cache-dir".to_string(),
        kubeconfig.with_extension("cache").display().to_string(),
    ];
    full.extend(args.iter().map(|s| s.to_string()));
    let stdin = stdin.map(str::to_string);
    tokio::task::spawn_blocking(move || {
        let mut child = Command::new("kubectl")
            .args(&full)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        if let Some(text) = stdin {
            let mut pipe = child.stdin.take().expect("stdin");
            pipe.write_all(text.as_bytes()).expect("write stdin");
        }
        child.wait_with_output().expect("kubectl ends")
    })
    .await
    .expect("join")
}

async fn kubectl(t: &TestSim, args: &[&str]) -> Output {
    kubectl_with(t.sim.kubeconfig(), args, None).await
}

fn text(o: &Output) -> (String, String) {
    (out(o), err(o))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_and_their_errors_through_the_kube_client() {
    let t = triage().await;
    let client = t.client().await;
    let api = pod_api(&client);

    let all = api.logs("namzu-ws-awake", &LogParams::default()).await.unwrap();
    assert_eq!(all, "one\ntwo\nthree\n");
    let tail = LogParams {
        tail_lines: Some(2),
        timestamps: true,
        ..LogParams::default()
    };
    let two = api.logs("namzu-ws-awake", &tail).await.unwrap();
    // stamped a second apart, the last at the scenario's now
    assert_eq!(two, "2026-11-29T11:59:59Z two\n2026-11-29T12:00:00Z three\n");
    let since = LogParams {
        since_seconds: Some(1),
        ..LogParams::default()
    };
    assert_eq!(api.logs("namzu-ws-awake", &since).await.unwrap(), "two\nthree\n");
    let limited = LogParams {
        limit_bytes: Some(6),
        ..LogParams::default()
    };
    assert_eq!(api.logs("namzu-ws-awake", &limited).await.unwrap(), "one\ntw");

    // a running pod with no scenario log has the agent's start-up lines
    let startup = api
        .logs(
            "namzu-ws-duo",
            &LogParams {
                container: Some("b".into()),
                ..LogParams::default()
            },
        )
        .await
        .unwrap();
    assert!(
        startup.contains("agent starting") && startup.ends_with("msg=\"ready\"\n"),
        "{startup}"
    );

    let cases: [(&str, LogParams, u16, &str); 5] = [
        ("nobody", LogParams::default(), 404, "pods \"nobody\" not found"),
        (
            "namzu-ws-duo",
            LogParams::default(),
            400,
            "a container name must be specified for pod namzu-ws-duo, choose one of: [a b]",
        ),
        (
            "namzu-ws-awake",
            LogParams {
                container: Some("sidecar".into()),
                ..LogParams::default()
            },
            400,
            "container sidecar is not valid for pod namzu-ws-awake",
        ),
        (
            "namzu-ws-pulling",
            LogParams::default(),
            400,
            "container \"agent\" in pod \"namzu-ws-pulling\" is waiting to start: trying and failing to pull image",
        ),
        (
            "namzu-ws-awake",
            LogParams {
                previous: true,
                ..LogParams::default()
            },
            400,
            "previous terminated container \"agent\" in pod \"namzu-ws-awake\" not found",
        ),
    ];
    for (pod, lp, code, message) in cases {
        let e = api.logs(pod, &lp).await.unwrap_err();
        assert_eq!(api_err(e), (code, message.to_string()), "{pod}");
    }
    let both = http::Request::get(
        "/api/v1/namespaces/agents/pods/namzu-ws-awake/log?sinceSeconds=5&sinceTime=2026-11-29T11:00:00Z",
    )
    .body(Vec::new())
    .unwrap();
    assert_eq!(
        api_err(client.request_text(both).await.unwrap_err()),
        (
            422,
            "PodLogOptions \"namzu-ws-awake\" is invalid: sinceSeconds: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified".into()
        )
    );
    let since_time = LogParams {
        since_time: Some("2026-11-29T11:59:59Z".parse().unwrap()),
        ..LogParams::default()
    };
    assert_eq!(api.logs("namzu-ws-awake", &since_time).await.unwrap(), "two\nthree\n");

    // a crash loop: the last run's log, which ended in the fatal error, current and --previous
    let previous = LogParams {
        previous: true,
        ..LogParams::default()
    };
    assert_eq!(
        api.logs("namzu-ws-crashing", &previous).await.unwrap(),
        "starting\nfatal: no key\n"
    );
    assert_eq!(
        api.logs("namzu-ws-crashing", &LogParams::default()).await.unwrap(),
        "starting\nfatal: no key\n"
    );
    let crashing = t.sim.get(&PODS, "agents", "namzu-ws-crashing").unwrap();
    let cs = &crashing["status"]["containerStatuses"][0];
    assert_eq!(cs["restartCount"], 7);
    assert_eq!(cs["lastState"]["terminated"]["exitCode"], 1);
    assert_eq!(cs["lastState"]["terminated"]["reason"], "Error");

    // a pod being created: the container is waiting, ContainerCreating
    t.sim.modify(&SANDBOXES, "agents", "namzu-ws-asleep", |o| {
        o["spec"]["operatingMode"] = json!("Running")
    });
    let e = api.logs("namzu-ws-asleep", &LogParams::default()).await.unwrap_err();
    assert_eq!(
        api_err(e),
        (
            400,
            "container \"agent\" in pod \"namzu-ws-asleep\" is waiting to start: ContainerCreating".into()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_streams_appended_lines_and_ends_on_a_restart() {
    let t = triage().await;
    let client = t.client().await;
    let api = pod_api(&client);
    let follow = LogParams {
        follow: true,
        ..LogParams::default()
    };
    let mut lines = api.log_stream("namzu-ws-awake", &follow).await.unwrap().lines();
    for want in ["one", "two", "three"] {
        assert_eq!(lines.try_next().await.unwrap().as_deref(), Some(want));
    }
    t.sim.append_log("agents", "namzu-ws-awake", "agent", "four");
    assert_eq!(lines.try_next().await.unwrap().as_deref(), Some("four"));
    t.sim.restart_container("agents", "namzu-ws-awake", "agent");
    assert_eq!(
        lines.try_next().await.unwrap(),
        None,
        "the stream ends with the instance"
    );

    // the restart as the pod status shows it, and the log rotated
    let pod = t.sim.get(&PODS, "agents", "namzu-ws-awake").unwrap();
    let cs = &pod["status"]["containerStatuses"][0];
    assert_eq!(cs["restartCount"], 1);
    assert_eq!(cs["lastState"]["terminated"]["exitCode"], 1);
    assert_eq!(cs["lastState"]["terminated"]["reason"], "Error");
    assert_eq!(cs["lastState"]["terminated"]["finishedAt"], "2026-11-29T12:00:00Z");
    assert!(cs["state"]["running"]["startedAt"].is_string());
    let previous = LogParams {
        previous: true,
        ..LogParams::default()
    };
    assert_eq!(
        api.logs("namzu-ws-awake", &previous).await.unwrap(),
        "one\ntwo\nthree\nfour\n"
    );
    assert_eq!(api.logs("namzu-ws-awake", &LogParams::default()).await.unwrap(), "");
    // the model keeps the restart on its next passes
    t.sim.advance(chrono::Duration::seconds(30));
    let pod = t.sim.get(&PODS, "agents", "namzu-ws-awake").unwrap();
    assert_eq!(pod["status"]["containerStatuses"][0]["restartCount"], 1);

    // a followed generated log gets a line every couple of seconds of sim time
    let mut chatty = api.log_stream("namzu-ws-owned", &follow).await.unwrap().lines();
    let mut seen = 0;
    while let Some(line) = chatty.try_next().await.unwrap() {
        seen += 1;
        if line.contains("ready") {
            break;
        }
    }
    assert_eq!(seen, 5, "the start-up lines first");
    t.sim.advance(chrono::Duration::seconds(3));
    let beat = chatty.try_next().await.unwrap().unwrap();
    assert!(beat.starts_with("level="), "{beat}");
    // the pod goes (suspend): the stream ends
    t.sim.modify(&SANDBOXES, "agents", "namzu-ws-owned", |o| {
        o["spec"]["operatingMode"] = json!("Suspended")
    });
    t.sim.advance(chrono::Duration::seconds(30));
    let mut rest = 0;
    while chatty.try_next().await.unwrap().is_some() {
        rest += 1;
    }
    assert!(rest <= 1, "{rest}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reads_logs_like_from_a_real_cluster() {
    if !have_kubectl() {
        return;
    }
    let t = triage().await;
    let (o, e) = text(&kubectl(&t, &["logs", "namzu-ws-awake"]).await);
    assert_eq!((o.as_str(), e.as_str()), ("one\ntwo\nthree\n", ""));
    let (o, _) = text(&kubectl(&t, &["logs", "namzu-ws-awake", "--tail=2", "--timestamps"]).await);
    assert_eq!(o, "2026-11-29T11:59:59Z two\n2026-11-29T12:00:00Z three\n");
    let (o, _) = text(&kubectl(&t, &["logs", "namzu-ws-crashing", "--previous"]).await);
    assert_eq!(o, "starting\nfatal: no key\n");
    let out = kubectl(&t, &["logs", "namzu-ws-awake", "--previous"]).await;
    assert!(!out.status.success());
    assert_eq!(
        err(&out).trim(),
        "Error from server (BadRequest): previous terminated container \"agent\" in pod \"namzu-ws-awake\" not found"
    );
    let out = kubectl(&t, &["logs", "namzu-ws-pulling"]).await;
    assert!(
        err(&out).contains("is waiting to start: trying and failing to pull image"),
        "{}",
        err(&out)
    );

    // the events as kubectl prints them, and a crash loop as `describe` shows it
    let (o, _) = text(
        &kubectl(
            &t,
            &[
                "get",
                "events",
                "--field-selector",
                "involvedObject.name=namzu-ws-pulling",
            ],
        )
        .await,
    );
    assert!(o.starts_with("LAST SEEN"), "{o}");
    assert!(
        o.contains("Warning   Failed") && o.contains("pod/namzu-ws-pulling") && o.contains("Error: ImagePullBackOff"),
        "{o}"
    );
    let (o, _) = text(
        &kubectl(
            &t,
            &[
                "get",
                "events.v1.events.k8s.io",
                "--field-selector",
                "regarding.name=namzu-ws-crashing",
            ],
        )
        .await,
    );
    assert!(
        o.contains("BackOff") && o.contains("Back-off restarting failed container agent"),
        "{o}"
    );
    let (o, _) = text(&kubectl(&t, &["describe", "pod", "namzu-ws-crashing"]).await);
    for want in [
        "Reason:       CrashLoopBackOff",
        "Last State:     Terminated",
        "Exit Code:    1",
        "Restart Count:  7",
        "Back-off restarting failed container",
    ] {
        assert!(o.contains(want), "{want} in {o}");
    }

    // -f: what exists, each appended line, and the end when the container restarts
    let args: Vec<String> = vec![
        "--kubeconfig".into(),
        t.sim.kubeconfig().display().to_string(),
        "logs".into(),
        "-f".into(),
        "namzu-ws-awake".into(),
    ];
    let mut child = Command::new("kubectl")
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let reader = forward_lines(&mut child, move |line| tx.send(line).is_ok());
    for want in ["one", "two", "three"] {
        assert_eq!(rx.recv().await.as_deref(), Some(want));
    }
    t.sim.append_log("agents", "namzu-ws-awake", "agent", "four");
    assert_eq!(rx.recv().await.as_deref(), Some("four"));
    t.sim.restart_container("agents", "namzu-ws-awake", "agent");
    assert_eq!(rx.recv().await, None, "kubectl logs -f ends");
    let status = tokio::task::spawn_blocking(move || child.wait().expect("kubectl ends"))
        .await
        .unwrap();
    assert!(status.success());
    reader.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_exec_runs_the_built_in_shell() {
    if !have_kubectl() {
        return;
    }
    let t = triage().await;
    let kc = t.sim.kubeconfig();
    let exec = |rest: &[&str]| {
        let mut args = vec!["exec", "namzu-ws-awake", "-c", "agent", "--"];
        args.extend_from_slice(rest);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>, stdin: Option<&'static str>, expected: fn(&Output) -> bool| async move {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        exec_until(kc, &refs, stdin, expected).await
    };
    run(exec(&["echo", "hi"]), None, |o| {
        text(o) == ("hi\n".into(), String::new()) && o.status.success()
    })
    .await;
    run(exec(&["sh", "-c", "exit 3"]), None, |o| o.status.code() == Some(3)).await;
    run(exec(&["exit", "4"]), None, |o| o.status.code() == Some(4)).await;
    run(exec(&["frobnicate"]), None, |o| {
        o.status.code() == Some(127) && err(o).contains("sh: frobnicate: not found")
    })
    .await;
    run(exec(&["cat", "/etc/hostname", "/workspace/README.md"]), None, |o| {
        out(o).starts_with("namzu-ws-awake\n# namzu-ws-awake")
    })
    .await;
    run(exec(&["env"]), None, |o| {
        out(o).contains("MODEL=small\n") && out(o).contains("HOSTNAME=namzu-ws-awake\n")
    })
    .await;

    // an interactive shell on stdin
    let args: Vec<String> = ["exec", "-i", "namzu-ws-awake", "--", "sh"].map(String::from).to_vec();
    run(args, Some("hostname\necho done\nexit\necho never\n"), |o| {
        text(o) == ("namzu-ws-awake\ndone\n".into(), String::new()) && o.status.success()
    })
    .await;
    // no stdin: the shell ends at once
    run(exec(&["sh"]), None, |o| {
        (o.status.code(), out(o)) == (Some(0), String::new())
    })
    .await;
    // stdin ends without exit: the shell ends with it
    let args: Vec<String> = ["exec", "-i", "namzu-ws-awake", "--", "/bin/sh"]
        .map(String::from)
        .to_vec();
    run(args, Some("ls /workspace\nexit 5"), |o| {
        out(o) == "README.md\n" && o.status.code() == Some(5)
    })
    .await;

    // a container that is not running, a pod that is not there
    let o = kubectl(&t, &["exec", "namzu-ws-crashing", "--", "echo", "hi"]).await;
    assert!(!o.status.success());
    assert!(
        err(&o).contains("unable to upgrade connection: container not found (\"agent\")"),
        "{}",
        err(&o)
    );
    let o = kubectl(&t, &["exec", "namzu-ws-asleep", "--", "echo", "hi"]).await;
    assert!(
        err(&o).contains("pods \"namzu-ws-asleep\" not found"),
        "a suspended workspace has no pod: {}",
        err(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_log_and_pods_exec_need_their_own_rbac() {
    let reader = vec![Rule::new(
        &["get", "list", "watch"],
        &[""],
        &["pods", "events"],
        &["agents"],
    )];
    let mut logger = reader.clone();
    logger.push(Rule::new(&["get"], &[""], &["pods/log"], &["agents"]));
    logger.push(Rule::new(&["get", "create"], &[""], &["pods/exec"], &["agents"]));
    let mut anonymous = User::with_rules("viewer", "viewer-token", reader);
    anonymous.anonymous = true;
    let users = vec![
        User::admin("admin", "admin-token"),
        anonymous,
        User::with_rules("debugger", "debugger-token", logger),
    ];
    let t = start_with(TRIAGE, |c| {
        c.users = users;
        c.namespace = "agents".into();
    })
    .await;
    let as_user = |token: &str| {
        let path = t.dir.path().join(token);
        t.sim.write_kubeconfig_for(&path, Some(token), "agents").unwrap();
        path
    };
    let viewer = client_from(&as_user("viewer-token"), false).await;
    let e = pod_api(&viewer)
        .logs("namzu-ws-awake", &LogParams::default())
        .await
        .unwrap_err();
    assert_eq!(
        api_err(e),
        (
            403,
            "pods \"namzu-ws-awake\" is forbidden: User \"viewer\" cannot get resource \"pods/log\" in API group \"\" in the namespace \"agents\"".into()
        )
    );
    let debugger = client_from(&as_user("debugger-token"), false).await;
    assert_eq!(
        pod_api(&debugger)
            .logs("namzu-ws-awake", &LogParams::default())
            .await
            .unwrap(),
        "one\ntwo\nthree\n"
    );
    // `kubectl auth can-i` asks with the subresource apart
    let review = |user: &kube::Client, sub: &str, verb: &str| {
        let user = user.clone();
        let body = json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview",
            "spec":{"resourceAttributes":{"namespace":"agents","verb":verb,"resource":"pods","subresource":sub}}});
        async move {
            let req = http::Request::post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&body).unwrap())
                .unwrap();
            let answer: Value = user.request(req).await.unwrap();
            answer["status"]["allowed"].as_bool().unwrap()
        }
    };
    assert!(!review(&viewer, "exec", "create").await);
    assert!(review(&debugger, "exec", "create").await);
    assert!(review(&debugger, "log", "get").await);

    if !have_kubectl() {
        return;
    }
    // kubectl over plain http sends no token: it is the anonymous viewer
    let viewer_path = as_user("viewer-token");
    let o = kubectl_with(&viewer_path, &["logs", "namzu-ws-awake"], None).await;
    assert!(
        err(&o).contains("cannot get resource \"pods/log\" in API group \"\""),
        "{}",
        err(&o)
    );
    let o = kubectl_with(&viewer_path, &["exec", "namzu-ws-awake", "--", "echo", "hi"], None).await;
    assert!(!o.status.success());
    // the WebSocket (GET) refused for want of `get`, kubectl falls back to SPDY (a POST), which
    // needs `create`, as on a real server
    assert!(
        err(&o).contains("cannot create resource \"pods/exec\" in API group \"\""),
        "{}",
        err(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_tell_the_story_in_both_event_apis() {
    let t = triage().await;
    let client = t.client().await;
    let core: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), "agents", &ar("", "v1", "Event", "events"));
    let by = |selector: &str| {
        let core = core.clone();
        let lp = ListParams::default().fields(selector);
        async move {
            core.list(&lp)
                .await
                .unwrap()
                .items
                .into_iter()
                .map(|e| serde_json::to_value(e).unwrap())
                .collect::<Vec<Value>>()
        }
    };
    let reasons = |events: &[Value]| {
        events
            .iter()
            .map(|e| e["reason"].as_str().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    let pod = t.sim.get(&PODS, "agents", "namzu-ws-awake").unwrap();
    let pod_events = by(&format!(
        "involvedObject.uid={},involvedObject.kind=Pod",
        pod["metadata"]["uid"].as_str().unwrap()
    ))
    .await;
    assert_eq!(
        reasons(&pod_events),
        ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
    );
    let pulled = pod_events.iter().find(|e| e["reason"] == "Pulled").unwrap();
    assert_eq!(
        pulled["message"],
        "Successfully pulled image \"ghcr.io/x/agent:1.2\" in 900ms (900ms including waiting). Image size: 216015419 bytes."
    );
    assert_eq!(pulled["source"], json!({"component": "kubelet", "host": "sim-node-1"}));
    assert_eq!(pulled["reportingComponent"], "kubelet");
    assert_eq!(pulled["count"], 1);
    for k in ["apiVersion", "kind", "name", "namespace", "uid"] {
        assert!(pulled["involvedObject"][k].is_string(), "{k}");
    }
    let sandbox_events = by("involvedObject.name=namzu-ws-awake,involvedObject.kind=Sandbox").await;
    assert_eq!(reasons(&sandbox_events), ["SandboxPodCreated", "SandboxReady"]);
    assert!(!reasons(&by("").await).contains(&"CreatedPod".to_string()));

    let pulling = by("involvedObject.name=namzu-ws-pulling,involvedObject.kind=Pod").await;
    assert!(
        pulling
            .iter()
            .any(|e| e["reason"] == "Failed" && e["type"] == "Warning" && e["message"] == "Error: ImagePullBackOff"),
        "{pulling:?}"
    );
    let crashing = by("involvedObject.name=namzu-ws-crashing,involvedObject.kind=Pod").await;
    assert!(
        crashing
            .iter()
            .any(|e| e["reason"] == "BackOff" && e["type"] == "Warning")
    );
    let claim = t.sim.get(&CLAIMS, "agents", "claimed").unwrap();
    let claim_events = by(&format!(
        "involvedObject.uid={}",
        claim["metadata"]["uid"].as_str().unwrap()
    ))
    .await;
    assert_eq!(reasons(&claim_events), ["SandboxAdopted"]);

    // the same events through events.k8s.io/v1, converted as the API server converts them
    let groups = client.list_api_groups().await.unwrap();
    assert!(groups.groups.iter().any(|g| g.name == "events.k8s.io"));
    let v1: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), "agents", &ar("events.k8s.io", "v1", "Event", "events"));
    let lp = ListParams::default().fields(&format!("regarding.uid={}", pod["metadata"]["uid"].as_str().unwrap()));
    let items: Vec<Value> = v1
        .list(&lp)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(items.len(), 5);
    let pulled = items.iter().find(|e| e["reason"] == "Pulled").unwrap();
    assert_eq!(pulled["regarding"]["name"], "namzu-ws-awake");
    assert!(
        pulled["note"]
            .as_str()
            .unwrap()
            .starts_with("Successfully pulled image")
    );
    assert_eq!(pulled["reportingController"], "kubelet");
    assert_eq!(pulled["deprecatedCount"], 1);
    assert!(pulled["eventTime"].is_string());
    let one = v1.get(pulled["metadata"]["name"].as_str().unwrap()).await.unwrap();
    assert_eq!(serde_json::to_value(one).unwrap()["note"], pulled["note"]);

    // a watch of events.k8s.io from the list's resourceVersion sees the next event, converted
    let lp = ListParams::default().fields("regarding.name=namzu-ws-awake");
    let rv = v1.list(&lp).await.unwrap().metadata.resource_version.unwrap();
    let wp = kube::api::WatchParams::default().fields("regarding.name=namzu-ws-awake");
    let mut watch = v1.watch(&wp, &rv).await.unwrap().boxed();
    t.sim.restart_container("agents", "namzu-ws-awake", "agent");
    match watch.try_next().await.unwrap() {
        Some(kube::api::WatchEvent::Added(e)) => {
            let e = serde_json::to_value(e).unwrap();
            assert_eq!(
                e["note"],
                "Container image \"ghcr.io/x/agent:1.2\" already present on machine"
            );
            assert_eq!(e["regarding"]["kind"], "Pod");
        }
        other => panic!("{other:?}"),
    }

    // a quota on pods: the controller says it could not create the pod
    let quota = "failed to create pod namzu-ws-duo: pods \"namzu-ws-duo\" is forbidden: exceeded quota: agents, requested: pods=1, used: pods=20, limited: pods=20";
    t.sim.set_knobs(
        "agents",
        "namzu-ws-duo",
        namzu_sim::controller::Knobs {
            reconciler_error: Some(quota.into()),
            ..Default::default()
        },
    );
    let duo = by("involvedObject.name=namzu-ws-duo,involvedObject.kind=Sandbox").await;
    let failed = duo.iter().find(|e| e["reason"] == "SandboxPodCreateFailed").unwrap();
    assert_eq!(failed["type"], "Warning");
    assert!(failed["message"].as_str().unwrap().ends_with("limited: pods=20"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_status_carries_the_start_up_waterfall() {
    let t = triage().await;
    let ns = "agents";
    // a pod made while the test watches: each milestone at its time
    t.sim.modify(&SANDBOXES, ns, "namzu-ws-asleep", |o| {
        o["spec"]["operatingMode"] = json!("Running")
    });
    let created = t.sim.now();
    t.sim.advance(chrono::Duration::seconds(5));
    let pod = t.sim.get(&PODS, ns, "namzu-ws-asleep").unwrap();
    let at = |p: &str| {
        chrono::DateTime::parse_from_rfc3339(pod.pointer(p).and_then(Value::as_str).unwrap_or_else(|| panic!("{p}")))
            .unwrap()
            .with_timezone(&chrono::Utc)
    };
    let condition = |t: &str| {
        let c = pod["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == t)
            .unwrap_or_else(|| panic!("{t}"));
        assert_eq!(c["status"], "True", "{t}");
        chrono::DateTime::parse_from_rfc3339(c["lastTransitionTime"].as_str().unwrap())
            .unwrap()
            .with_timezone(&chrono::Utc)
    };
    assert_eq!(at("/metadata/creationTimestamp"), created);
    assert_eq!(at("/status/startTime"), created);
    assert_eq!(condition("PodScheduled"), created);
    assert_eq!(condition("Initialized"), created);
    let started = at("/status/containerStatuses/0/state/running/startedAt");
    let ready = condition("Ready");
    assert!(
        created <= started && started <= ready && ready > created,
        "{started} {ready}"
    );
    assert_eq!(condition("ContainersReady"), ready);
    assert!(
        pod["status"]["containerStatuses"][0]["containerID"]
            .as_str()
            .unwrap()
            .starts_with("containerd://")
    );
    let events = t.sim.list(&EVENTS, Some(ns));
    let pulled = events
        .iter()
        .find(|e| e["reason"] == "Pulled" && e["involvedObject"]["name"] == "namzu-ws-asleep")
        .unwrap();
    assert_eq!(
        pulled["firstTimestamp"].as_str(),
        Some(started.format("%Y-%m-%dT%H:%M:%SZ").to_string().as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_workspaces_tell_their_story() {
    let t = start_demo().await;
    let client = t.client().await;
    let api = pod_api(&client);
    let previous = LogParams {
        previous: true,
        ..LogParams::default()
    };
    let hotel = api.logs("namzu-ws-hotel", &previous).await.unwrap();
    assert!(
        hotel.trim_end().lines().last().unwrap().contains("level=fatal"),
        "{hotel}"
    );
    let pod = t.sim.get(&PODS, "agents", "namzu-ws-hotel").unwrap();
    assert!(pod["status"]["containerStatuses"][0]["restartCount"].as_u64().unwrap() > 0);

    let e = api.logs("namzu-ws-golf", &LogParams::default()).await.unwrap_err();
    assert!(api_err(e).1.contains("trying and failing to pull image"));
    let golf = t
        .sim
        .list(&EVENTS, Some("agents"))
        .into_iter()
        .filter(|e| e["involvedObject"]["name"] == "namzu-ws-golf")
        .map(|e| e["message"].as_str().unwrap_or("").to_string())
        .collect::<Vec<_>>();
    assert!(golf.iter().any(|m| m.starts_with("Failed to pull image")), "{golf:?}");

    let juliet = api.logs("namzu-ws-juliet", &LogParams::default()).await.unwrap();
    assert!(juliet.contains("received SIGTERM"), "{juliet}");
    let foxtrot = api.logs("namzu-ws-foxtrot", &LogParams::default()).await.unwrap();
    assert_eq!(foxtrot, "", "an unscheduled pod has no logs yet");
    let alpha = api.logs("namzu-ws-alpha", &LogParams::default()).await.unwrap();
    assert!(alpha.contains("agent starting"), "{alpha}");
}

/// A v4-only client with a terminal: the v4 subprotocol is chosen, the shell prompts, a line
/// ends with CR, and the error channel closes the session with the exit code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_speaks_v4_with_a_terminal() {
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let t = triage().await;
    let addr = t.sim.url().trim_start_matches("http://").to_string();
    let url = format!(
        "ws://{addr}/api/v1/namespaces/agents/pods/namzu-ws-awake/exec?command=sh&container=agent&stdin=true&stdout=true&tty=true"
    );
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("sec-websocket-protocol", "v4.channel.k8s.io".parse().unwrap());
    let stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let (mut ws, response) = tokio_tungstenite::client_async(request, stream).await.unwrap();
    assert_eq!(response.headers()["sec-websocket-protocol"], "v4.channel.k8s.io");
    let Some(Ok(Message::Binary(prompt))) = ws.next().await else {
        panic!("no prompt")
    };
    assert_eq!(&prompt[..], b"\x01$ ");
    let send = |text: &str| Message::Binary([&[0u8][..], text.as_bytes()].concat().into());
    futures::SinkExt::send(&mut ws, send("hostname\r")).await.unwrap();
    // the terminal echoes what is typed, then the command's output and the next prompt
    let mut seen = String::new();
    while !seen.ends_with("$ ") {
        let Some(Ok(Message::Binary(b))) = ws.next().await else {
            panic!("closed early")
        };
        assert_eq!(b[0], 1);
        seen.push_str(&String::from_utf8_lossy(&b[1..]));
    }
    assert_eq!(seen, "hostname\r\nnamzu-ws-awake\r\n$ ");
    futures::SinkExt::send(&mut ws, send("exit 2\r")).await.unwrap();
    let Some(Ok(Message::Binary(b))) = ws.next().await else {
        panic!("no echo")
    };
    assert_eq!(&b[..], b"\x01exit 2\r\n");
    let Some(Ok(Message::Binary(b))) = ws.next().await else {
        panic!("no status")
    };
    assert_eq!(b[0], 3);
    let status: Value = serde_json::from_slice(&b[1..]).unwrap();
    assert_eq!(status["reason"], "NonZeroExitCode");
    assert_eq!(
        status["details"]["causes"][0],
        json!({"reason": "ExitCode", "message": "2"})
    );
    assert!(matches!(ws.next().await, Some(Ok(Message::Close(_)))));
}
