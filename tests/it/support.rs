//! The one test-helper module: the simulated cluster started in-process and reached through a
//! real kube::Client, the real binary run against it (with the sim's clock), the shipped vectors.

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use namzu_clock::NOW_ENV;
use namzu_domain::safety::ContextRules;
use namzu_engine::cluster::audit::AuditLog;
use namzu_engine::cluster::connect::{ConnectOptions, Connection};
use namzu_engine::cluster::live::LiveOptions;
use namzu_engine::cluster::write::WritePolicy;
use namzu_sim::faults::{Fault, FaultAction, Mutation};
use namzu_sim::scenario::Scenario;
use namzu_sim::{Sim, SimConfig, TEST_START};
use namzu_tui::app::ContextOptions;
use namzu_tui::io::{Cluster, Io};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) struct TestSim {
    pub sim: Sim,
    pub dir: tempfile::TempDir,
}

/// A small scenario: one template, a Running and a Suspended workspace, a claim-owned one.
pub(crate) const SMALL: &str = r#"
namespaces: [agents]
objects:
  - apiVersion: extensions.agents.x-k8s.io/v1beta1
    kind: SandboxTemplate
    metadata: {name: coder, namespace: agents}
    spec:
      podTemplate:
        metadata: {labels: {app: agent}}
        spec: {containers: [{name: agent, image: "ghcr.io/x/agent:1.2"}]}
  - apiVersion: extensions.agents.x-k8s.io/v1beta1
    kind: SandboxClaim
    metadata: {name: claimed, namespace: agents}
    spec: {warmPoolRef: {name: pool}}
workspaces:
  - namespace: agents
    id: awake
    podTemplate: &pt
      metadata: {labels: {app: agent, sandbox.namzu.ai/template: coder}}
      spec: {containers: [{name: agent, image: "ghcr.io/x/agent:1.2"}]}
    epoch: "2"
    created: "{{now-3d}}"
  - namespace: agents
    id: asleep
    podTemplate: *pt
    mode: Suspended
    changedAt: "2026-09-10T12:00:00.000Z"
    annotations: {example.com/owner: ops}
  - namespace: agents
    id: owned
    podTemplate: *pt
    ownerClaim: claimed
"#;

pub(crate) async fn start_with(scenario: &str, tweak: impl FnOnce(&mut SimConfig)) -> TestSim {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = SimConfig::for_tests(&dir.path().join("kubeconfig"));
    tweak(&mut config);
    let scenario = Scenario::parse(scenario, config.manual_clock.expect("tests use a manual clock")).expect("scenario");
    let sim = Sim::start(config, &scenario).await.expect("sim starts");
    TestSim { sim, dir }
}

pub(crate) async fn start() -> TestSim {
    start_with(SMALL, |_| {}).await
}

pub(crate) async fn client_from(path: &Path, retry: bool) -> Client {
    let kc = Kubeconfig::read_from(path).expect("kubeconfig");
    let mut config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    config.default_retry = retry;
    Client::try_from(config).expect("client")
}

impl TestSim {
    /// A client without kube's automatic retries, so injected statuses are seen as sent.
    pub(crate) async fn client(&self) -> Client {
        client_from(self.sim.kubeconfig(), false).await
    }
}

pub(crate) fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

pub(crate) fn sandboxes(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        ns,
        &ar("agents.x-k8s.io", "v1beta1", "Sandbox", "sandboxes"),
    )
}

pub(crate) fn pods(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &ar("", "v1", "Pod", "pods"))
}

pub(crate) fn pvcs(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        ns,
        &ar("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    )
}

/// The kube error's HTTP status, if it is an API error.
pub(crate) fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Run the real binary against the sim's kubeconfig (plus `args`), off the runtime's threads.
pub(crate) async fn namzu(t: &TestSim, args: &[&str]) -> std::process::Output {
    let mut full = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
    full.extend(args.iter().map(|s| s.to_string()));
    namzu_env(full, vec![now_env(t), audit_env(t)]).await
}

/// The binary's clock pinned to the sim's: both read the same instant, whatever the day.
pub(crate) fn now_env(t: &TestSim) -> (String, String) {
    (NOW_ENV.into(), t.sim.now().to_rfc3339())
}

/// Run the real binary with exactly these arguments and extra environment; its clock reads
/// [`TEST_START`] (where every test sim's clock starts) unless `env` says otherwise.
pub(crate) async fn namzu_env(args: Vec<String>, env: Vec<(String, String)>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"))
            .args(&args)
            .env_remove("KUBECONFIG")
            // the machine's own safety rules must not reach a test
            .env_remove("KUBECTL_NAMZU_CONFIG")
            .env(
                "XDG_CONFIG_HOME",
                std::env::temp_dir().join("kubectl-namzu-tests-without-config"),
            )
            .env("NO_COLOR", "1")
            .env(NOW_ENV, TEST_START)
            .envs(env)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run kubectl-namzu")
    })
    .await
    .expect("join")
}

pub(crate) fn out(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn err(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The demo scenario on a manual clock.
pub(crate) async fn start_demo() -> TestSim {
    start_with(namzu_sim::scenario::DEMO, |c| c.namespace = "agents".into()).await
}

/// Run with the audit log in the sim's temp dir, on the sim's clock.
pub(crate) async fn run_audited(t: &TestSim, args: &[&str]) -> std::process::Output {
    let mut full = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
    full.extend(args.iter().map(|s| s.to_string()));
    namzu_env(full, vec![audit_env(t), now_env(t)]).await
}

/// The ids (without `namzu-ws-`) of the Sandboxes in `ns` whose spec says Running, as stored.
pub(crate) fn running_ids(t: &TestSim, ns: &str) -> Vec<String> {
    t.sim
        .list(&namzu_sim::resources::SANDBOXES, Some(ns))
        .iter()
        .filter(|s| s["spec"]["operatingMode"] == "Running")
        .filter_map(|s| s["metadata"]["name"].as_str())
        .map(|name| name.trim_start_matches("namzu-ws-").to_string())
        .collect()
}

/// `KUBECTL_NAMZU_AUDIT_LOG` in the sim's temp dir.
pub(crate) fn audit_env(t: &TestSim) -> (String, String) {
    (
        "KUBECTL_NAMZU_AUDIT_LOG".into(),
        t.dir.path().join("audit.jsonl").display().to_string(),
    )
}

/// The vectors computed with @namzu/sandbox's own code, copied into `tests/vectors/`.
pub(crate) fn vector_cases(file: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("vector file in the checkout");
    let doc: Value = serde_json::from_str(&text).expect("vector file is JSON");
    let cases = doc["cases"].as_array().expect("cases").clone();
    assert!(!cases.is_empty(), "{file} has no cases");
    cases
}

/// Run the real binary with `args` and optional stdin.
pub(crate) fn run_bin(args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kubectl-namzu");
    let mut pipe = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        pipe.write_all(text.as_bytes()).expect("write stdin");
    }
    drop(pipe);
    child.wait_with_output().expect("wait")
}

/// Another writer acts on the `nth` PATCH whose path contains `path`, just before it is served.
pub(crate) fn before_patch(path: &str, nth: u32, mutation: Mutation) -> Fault {
    Fault::new(Some("PATCH"), path, FaultAction::Mutate(mutation)).nth(nth)
}

/// Another host stamps holder epoch `epoch` (a take-over), leaving `spec` alone.
pub(crate) fn stamp_epoch(epoch: &str) -> Mutation {
    Mutation::SetAnnotation {
        key: "sandbox.namzu.ai/holder-epoch".into(),
        value: epoch.into(),
    }
}

/// Another host resumes the workspace.
pub(crate) fn resumed_by_another() -> Mutation {
    Mutation::MergePatch(serde_json::json!({"spec": {"operatingMode": "Running"}}))
}

/// A connection to `context` of `kubeconfig` (its current context for `None`), on the sim's
/// clock, each request bounded by `timeout`.
pub(crate) async fn connect(
    t: &TestSim,
    kubeconfig: &Path,
    context: Option<&str>,
    timeout: std::time::Duration,
) -> Connection {
    Connection::open(&ConnectOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        context: context.map(str::to_string),
        request_timeout: Some(timeout),
        clock: Some(t.sim.clock()),
        ..Default::default()
    })
    .await
    .expect("the sim's context opens")
}

/// A write policy of the TUI's tests: read-only or not, audited as `audit` says.
pub(crate) fn policy(read_only: bool, audit: AuditLog) -> WritePolicy {
    WritePolicy {
        read_only,
        audit,
        throttle: Default::default(),
        per_sandbox_label_key: None,
    }
}

/// The TUI's I/O over these contexts, each with its write policy, on the first one's clock.
pub(crate) fn tui_io(clusters: Vec<(Connection, WritePolicy)>, live: LiveOptions) -> Io {
    Io {
        clock: clusters[0].0.clock.clone(),
        policy: clusters[0].1.clone(),
        added: Default::default(),
        switch: None,
        clusters: clusters
            .into_iter()
            .map(|(conn, policy)| Cluster::new(conn, policy))
            .collect(),
        flags: Default::default(),
        wait_timeout: std::time::Duration::from_secs(2),
        writes_in_flight: Default::default(),
        closed: Default::default(),
        log_task: Default::default(),
        forwards: Default::default(),
        live,
    }
}

/// How the TUI is told of a context a test opened: its name, the server as snapshots show it,
/// its safety rules.
pub(crate) fn context_options(conn: &Connection, rules: ContextRules) -> ContextOptions {
    ContextOptions {
        name: conn.context.clone(),
        server: "http://sim".into(),
        namespace: conn.namespace.clone(),
        rules,
        open_error: None,
    }
}

/// Ctrl-C to a child process, as a user stops it.
pub(crate) fn sigint(child: &std::process::Child) {
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
}

/// Ctrl-C, then its exit status (waited for off the runtime's threads).
pub(crate) async fn interrupt(mut child: std::process::Child) -> std::process::ExitStatus {
    sigint(&child);
    tokio::task::spawn_blocking(move || child.wait().expect("wait"))
        .await
        .expect("join")
}

/// `tool` is not on PATH: the test says it did not run (`what`) — except under `CI=true`, where
/// a test that asserts nothing would pass: there it fails.
pub(crate) fn tool_missing(tool: &str, what: &str) -> bool {
    let arg = if tool == "kubectl" { "version" } else { "-V" };
    let mut cmd = Command::new(tool);
    cmd.arg(arg);
    if tool == "kubectl" {
        cmd.arg("--client");
    }
    let missing = cmd.output().is_err();
    assert!(
        !(missing && std::env::var("CI").as_deref() == Ok("true")),
        "CI=true: {tool} must be on PATH for {what}"
    );
    if missing {
        eprintln!("SKIPPED: {tool} is not on PATH; {what} did not run");
    }
    missing
}

/// Run kubectl against the sim (its own cache dir); `None` (and a note) when kubectl is not
/// installed — under `CI=true` that fails the test (`tool_missing`). `what` names the test.
pub(crate) async fn kubectl_on(t: &TestSim, what: &str, args: &[&str]) -> Option<std::process::Output> {
    if tool_missing("kubectl", what) {
        return None;
    }
    let mut full: Vec<String> = vec![
        "--kubeconfig".into(),
        t.sim.kubeconfig().display().to_string(),
        "--cache-dir".into(),
        t.dir.path().join("kube-cache").display().to_string(),
    ];
    full.extend(args.iter().map(|s| s.to_string()));
    let out = tokio::task::spawn_blocking(move || std::process::Command::new("kubectl").args(&full).output())
        .await
        .expect("join")
        .expect("kubectl runs");
    Some(out)
}
