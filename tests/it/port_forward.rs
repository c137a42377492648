//! `port-forward`, the binary against the sim: a local port answered by the workspace's own pod
//! (the sim's pod listens on 8080 and answers each line with its name and uid), that follows the
//! workspace across a container restart, a replaced pod and a suspend/resume and says each new
//! target on stderr; a foreign pod, a read-only context, a bad port and a missing workspace are
//! refused in one line with their exit codes; Ctrl-C ends it with 0.

use super::support::*;
use namzu_sim::resources::{PODS, SANDBOXES};
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The demo with instant transitions: a pod goes or gets ready at the controller's next look.
async fn quick_demo() -> TestSim {
    start_with(namzu_sim::scenario::DEMO, |c| {
        c.namespace = "agents".into();
        c.timing.grace = chrono::Duration::zero();
        c.timing.ready_delay = chrono::Duration::zero();
    })
    .await
}

const DEADLINE: Duration = Duration::from_secs(20);

/// The binary forwarding: the local port it printed, its stderr lines as they come.
struct Forwarding {
    child: std::process::Child,
    port: u16,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Forwarding {
    fn start(t: &TestSim, args: &[&str]) -> Forwarding {
        let (now, audit) = (now_env(t), audit_env(t));
        let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"))
            .arg("--kubeconfig")
            .arg(t.sim.kubeconfig())
            .arg("port-forward")
            .args(args)
            .env_remove("KUBECONFIG")
            .env_remove("KUBECTL_NAMZU_CONFIG")
            .env(
                "XDG_CONFIG_HOME",
                std::env::temp_dir().join("kubectl-namzu-tests-without-config"),
            )
            .env(now.0, now.1)
            .env(audit.0, audit.1)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (lines, err) = (Arc::clone(&stderr), child.stderr.take().expect("stderr"));
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("stdout");
        // kubectl's words: `Forwarding from 127.0.0.1:PORT -> REMOTE`
        let port = first
            .strip_prefix("Forwarding from 127.0.0.1:")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the address listened on: {first:?} {:?}", stderr.lock().unwrap()));
        Forwarding { child, port, stderr }
    }

    fn said(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    /// Wait until stderr says `text` (at most [`DEADLINE`]).
    async fn wait_said(&self, text: &str) {
        let start = Instant::now();
        while !self.said().contains(text) {
            assert!(start.elapsed() < DEADLINE, "never said {text:?}: {}", self.said());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// One connection: a line sent, the line answered (empty when the connection closed first).
async fn ask(port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    s.write_all(b"who are you\n").await.expect("write");
    let mut line = String::new();
    let mut reader = BufReader::new(&mut s);
    let read = reader.read_line(&mut line);
    tokio::time::timeout(DEADLINE, read)
        .await
        .expect("an answer in time")
        .ok();
    line
}

/// Ask until a pod other than `not` answers (a new connection each time: the old pod's last
/// forwards may still be closing); the answering pod's uid.
async fn answered_by_another(port: u16, not: &str) -> String {
    let start = Instant::now();
    loop {
        let line = ask(port).await;
        if let Some(uid) = line.trim().strip_prefix("pod namzu-ws-alpha uid ")
            && uid != not
        {
            return uid.to_string();
        }
        assert!(start.elapsed() < DEADLINE, "only {not:?} answered: {line:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn pod_uid(t: &TestSim) -> String {
    let pod = t.sim.get(&PODS, "agents", "namzu-ws-alpha").expect("alpha's pod");
    pod["metadata"]["uid"].as_str().unwrap().to_string()
}

/// The forwards the sim opened (its 101 answers on `pods/portforward`).
fn forwards(t: &TestSim) -> usize {
    t.sim
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/portforward") && r.status == 101)
        .count()
}

fn set_mode(t: &TestSim, mode: &str) {
    t.sim.modify(&SANDBOXES, "agents", "namzu-ws-alpha", |o| {
        o["spec"]["operatingMode"] = serde_json::json!(mode)
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_forward_follows_its_workspace_across_restart_replacement_and_suspend() {
    let t = quick_demo().await;
    let f = Forwarding::start(&t, &["alpha", ":8080"]);
    let first = pod_uid(&t);
    assert_eq!(ask(f.port).await, format!("pod namzu-ws-alpha uid {first}\n"));
    f.wait_said(&format!(
        "forwarding 127.0.0.1:{} → pod namzu-ws-alpha (uid {first}) port 8080",
        f.port
    ))
    .await;

    // a connection open across a container restart is closed; the next one reaches the new instance
    let mut held = TcpStream::connect(("127.0.0.1", f.port)).await.unwrap();
    held.write_all(b"hello\n").await.unwrap();
    let mut reader = BufReader::new(&mut held);
    let mut line = String::new();
    reader.read_line(&mut line).await.unwrap();
    assert_eq!(line, format!("pod namzu-ws-alpha uid {first}\n"));
    t.sim.restart_container("agents", "namzu-ws-alpha", "agent");
    line.clear();
    let closed = tokio::time::timeout(DEADLINE, reader.read_line(&mut line)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?} {line:?}");
    assert_eq!(ask(f.port).await, format!("pod namzu-ws-alpha uid {first}\n"));
    f.wait_said("the container restarted (restart 1): forwarding").await;

    // the pod replaced: the next connection is answered by the new pod, and stderr says so
    t.sim.delete(&PODS, "agents", "namzu-ws-alpha");
    let second = answered_by_another(f.port, &first).await;
    f.wait_said(&format!(
        "pod namzu-ws-alpha (uid {first}) is gone: forwarding 127.0.0.1:{} → pod namzu-ws-alpha (uid {second}) port 8080",
        f.port
    ))
    .await;

    // suspended: a connection waits, said once; resumed: the same connection is answered
    set_mode(&t, "Suspended");
    let start = Instant::now();
    while t.sim.get(&PODS, "agents", "namzu-ws-alpha").is_some() {
        assert!(start.elapsed() < DEADLINE, "the suspended workspace's pod never went");
        // the controller looks at each request
        let _ = t.sim.list(&SANDBOXES, Some("agents"));
        let _ = ask_nothing(f.port).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let waiting = tokio::spawn(ask(f.port));
    f.wait_said("workspace alpha is Suspended: no pod; waiting for it to resume")
        .await;
    set_mode(&t, "Running");
    let answer = tokio::time::timeout(DEADLINE, waiting)
        .await
        .expect("answered")
        .unwrap();
    let third = pod_uid(&t);
    assert_ne!(third, second);
    assert_eq!(answer, format!("pod namzu-ws-alpha uid {third}\n"));
    f.wait_said(&format!("(uid {third}) port 8080")).await;

    let status = interrupt(f.child).await;
    assert_eq!(status.code(), Some(0), "Ctrl-C ends a forward with exit 0");
}

/// A connection opened and closed at once (the forward reads the workspace, so the controller looks).
async fn ask_nothing(port: u16) -> Option<()> {
    let s = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    drop(s);
    Some(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_nothing_listens_on_is_said_as_the_kubelet_says_it() {
    let t = quick_demo().await;
    let f = Forwarding::start(&t, &["alpha", ":9999"]);
    assert_eq!(ask(f.port).await, "", "the connection is closed");
    f.wait_said("port 9999: error forwarding port 9999 to pod namzu-ws-alpha")
        .await;
    assert!(f.said().contains("connect: connection refused"), "{}", f.said());
    let status = interrupt(f.child).await;
    assert_eq!(status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_cannot_be_forwarded_is_refused_in_one_line() {
    let t = quick_demo().await;
    let code = |o: &std::process::Output| o.status.code().unwrap_or(-1);
    // a pod under the workspace's name that its Sandbox does not own
    let o = run_audited(&t, &["port-forward", "november", "8080"]).await;
    assert_eq!(code(&o), 3, "{}", err(&o));
    assert!(
        err(&o).contains("is not this workspace's: it is owned by"),
        "{}",
        err(&o)
    );
    assert!(out(&o).is_empty(), "nothing listened: {}", out(&o));
    // read-only: a port into a pod is a write for the rules
    let o = run_audited(&t, &["--read-only", "port-forward", "alpha", "8080"]).await;
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(err(&o).contains("no port is forwarded"), "{}", err(&o));
    // bad input: one line, exit 2; no workspace: exit 4
    for bad in ["http", "0", "1:99999"] {
        let o = run_audited(&t, &["port-forward", "alpha", bad]).await;
        assert_eq!(code(&o), 2, "{bad}: {}", err(&o));
        assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
    }
    // a local port already taken: one line, exit 1
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let spec = format!("{}:8080", taken.local_addr().unwrap().port());
    let o = run_audited(&t, &["port-forward", "alpha", &spec]).await;
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(err(&o).starts_with("error: cannot listen on 127.0.0.1:"), "{}", err(&o));
    assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
    let o = run_audited(&t, &["port-forward", "alpha", "8080", "--address", "no-such-address"]).await;
    assert_eq!(code(&o), 2, "{}", err(&o));
    let o = run_audited(&t, &["port-forward", "zulu-none", "8080"]).await;
    assert_eq!(code(&o), 4, "{}", err(&o));
    assert!(!t.sim.requests().iter().any(|r| r.path.ends_with("/portforward")));
}

/// A pod under the workspace's name that the Sandbox does not own, appearing while the forward
/// runs: a new connection is closed, the refusal said; it never reaches that pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_pod_under_the_name_is_refused_while_forwarding() {
    let t = quick_demo().await;
    let f = Forwarding::start(&t, &["alpha", ":8080"]);
    let own = pod_uid(&t);
    assert_eq!(ask(f.port).await, format!("pod namzu-ws-alpha uid {own}\n"));
    // the pod under the name now owned by something else (a ReplicaSet took the name over)
    t.sim.modify(&PODS, "agents", "namzu-ws-alpha", |p| {
        p["metadata"]["ownerReferences"] = serde_json::json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "name": "impostor", "uid": "rs-1", "controller": true}]);
    });
    let before = forwards(&t);
    assert_eq!(ask(f.port).await, "", "the connection is closed");
    f.wait_said("pod namzu-ws-alpha is not this workspace's: it is owned by ReplicaSet")
        .await;
    assert!(f.said().contains("the connection is closed"), "{}", f.said());
    assert_eq!(forwards(&t), before, "no forward was opened to the impostor");
    let status = interrupt(f.child).await;
    assert_eq!(status.code(), Some(0));
}

/// `pods/portforward` is authorized as `pods/exec` is: a user without it is refused with the
/// API server's 403, one with `get` and `create` on it is forwarded (kube-rs's own client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sim_authorizes_pods_portforward_as_it_does_exec() {
    use k8s_openapi::api::core::v1::Pod;
    use namzu_sim::auth::{Rule, User};
    let reader = vec![Rule::new(
        &["get", "list", "watch"],
        &["*"],
        &["pods", "sandboxes"],
        &["agents"],
    )];
    let mut forwarder = reader.clone();
    forwarder.push(Rule::new(&["get", "create"], &[""], &["pods/portforward"], &["agents"]));
    let users = vec![
        User::admin("admin", "admin-token"),
        User::with_rules("reader", "reader-token", reader),
        User::with_rules("forwarder", "forwarder-token", forwarder),
    ];
    let t = start_with(namzu_sim::scenario::DEMO, |c| {
        c.users = users;
        c.namespace = "agents".into();
        c.timing.grace = chrono::Duration::zero();
        c.timing.ready_delay = chrono::Duration::zero();
    })
    .await;
    let client_of = async |token: &str| {
        let path = t.dir.path().join(token);
        t.sim.write_kubeconfig_for(&path, Some(token), "agents").unwrap();
        client_from(&path, false).await
    };
    let pods: kube::Api<Pod> = kube::Api::namespaced(client_of("reader-token").await, "agents");
    let refused = pods
        .portforward("namzu-ws-alpha", &[8080])
        .await
        .err()
        .expect("refused");
    assert_eq!(status_code(&refused), Some(403), "{refused}");
    assert!(refused.to_string().contains("pods/portforward"), "{refused}");

    let pods: kube::Api<Pod> = kube::Api::namespaced(client_of("forwarder-token").await, "agents");
    let mut pf = pods.portforward("namzu-ws-alpha", &[8080]).await.expect("forwarded");
    let mut stream = pf.take_stream(8080).unwrap();
    stream.write_all(b"hello\n").await.unwrap();
    let mut line = String::new();
    BufReader::new(&mut stream).read_line(&mut line).await.unwrap();
    assert_eq!(line, format!("pod namzu-ws-alpha uid {}\n", pod_uid(&t)));
    pf.abort();
    // a port nothing listens on: the kubelet's words on the error channel
    let mut pf = pods.portforward("namzu-ws-alpha", &[9999]).await.expect("upgraded");
    let error = pf.take_error(9999).unwrap();
    let said = tokio::time::timeout(DEADLINE, error).await.expect("said in time");
    assert!(
        said.as_deref()
            .is_some_and(|s| s.contains("connect: connection refused")),
        "{said:?}"
    );
}

/// kubectl ≥ 1.30 forwards over SPDY tunnelled in a WebSocket (`SPDY/3.1+portforward.k8s.io`),
/// then falls back to SPDY: the sim speaks neither, and says so in the Status kubectl prints
/// (its ports are named inside SPDY streams, so no "at least 1 port" misleads).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_port_forward_is_told_the_sim_speaks_no_spdy() {
    if tool_missing("kubectl", "kubectl_port_forward_is_told_the_sim_speaks_no_spdy") {
        return;
    }
    let t = quick_demo().await;
    let (kubeconfig, cache) = (t.sim.kubeconfig().to_path_buf(), t.dir.path().join("kube-cache"));
    let o = tokio::task::spawn_blocking(move || {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["port-forward", "pod/namzu-ws-alpha", ":8080"])
            .env("KUBECACHEDIR", cache)
            .stdin(Stdio::null())
            .output()
            .expect("kubectl runs")
    })
    .await
    .unwrap();
    assert!(!o.status.success());
    assert!(err(&o).contains("not SPDY, tunnelled or not"), "{}", err(&o));
    let tried: Vec<(String, u16)> = t
        .sim
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/pods/namzu-ws-alpha/portforward"))
        .map(|r| (r.method.clone(), r.status))
        .collect();
    assert!(tried.iter().all(|(_, s)| *s == 400), "{tried:?}");
}
