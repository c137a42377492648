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
use std::process::{Command, Output, Stdio};
use std::time::Duration;

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
    /// The home [`bin`] gives the binary for this sim: one for all of a test's runs.
    pub(crate) fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// The real binary ([`bin`]) on this sim's clock, its audit log in the sim's temp dir; the
    /// test names the kubeconfig.
    pub(crate) fn bin(&self) -> Command {
        let mut command = bin(&self.home());
        command.envs([now_env(self), audit_env(self)]);
        command
    }

    /// The binary on this sim as a shell command line (for tmux): isolated ([`bin_line`]), its
    /// audit log in the sim's temp dir, `extra` set, `--kubeconfig` the sim's; arguments follow.
    pub(crate) fn line(&self, extra: &[(String, String)]) -> String {
        let mut env = vec![audit_env(self)];
        env.extend_from_slice(extra);
        format!(
            "{} --kubeconfig {}",
            bin_line(&self.home(), &env),
            self.sim.kubeconfig().display()
        )
    }

    /// A rules file of `yaml` in the sim's temp dir, as `KUBECTL_NAMZU_CONFIG` names it.
    pub(crate) fn rules_env(&self, yaml: &str) -> (String, String) {
        let rules = self.dir.path().join("rules.yaml");
        std::fs::write(&rules, yaml).expect("rules file");
        ("KUBECTL_NAMZU_CONFIG".into(), rules.display().to_string())
    }

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
    namzu_env(full, sim_env(t)).await
}

/// The environment of a run on `t`: its home (one for all of a test's runs), its clock, its
/// audit log.
pub(crate) fn sim_env(t: &TestSim) -> Vec<(String, String)> {
    let mut env = isolated_env(&t.home());
    env.extend([now_env(t), audit_env(t)]);
    env
}

/// The binary's clock pinned to the sim's: both read the same instant, whatever the day.
pub(crate) fn now_env(t: &TestSim) -> (String, String) {
    (NOW_ENV.into(), t.sim.now().to_rfc3339())
}

/// Run the real binary with exactly these arguments and extra environment, isolated ([`bin`]) in a
/// home of its own; its clock reads [`TEST_START`] (where every test sim's clock starts) unless
/// `env` says otherwise.
pub(crate) async fn namzu_env(args: Vec<String>, env: Vec<(String, String)>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        let home = tempfile::tempdir().expect("tempdir");
        bin(home.path())
            .args(&args)
            .env(NOW_ENV, TEST_START)
            .envs(env)
            .output()
            .expect("run kubectl-namzu")
    })
    .await
    .expect("join")
}

/// The binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_kubectl-namzu");

/// What the binary would take from the environment of the user who runs the tests: their
/// kubeconfig, rules file, audit log, read-only switch, pinned clock, an in-cluster service
/// account. None of it reaches a test's run.
const USERS_OWN: &[&str] = &[
    "KUBECONFIG",
    "KUBECTL_NAMZU_CONFIG",
    "KUBECTL_NAMZU_AUDIT_LOG",
    "KUBECTL_NAMZU_READ_ONLY",
    NOW_ENV,
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
];

/// The environment of an isolated run under `home`: HOME (so `~/.kube/config` is not the
/// user's), the XDG config dir (no rules file) and state dir (audit log and tombstones), no colour.
pub(crate) fn isolated_env(home: &Path) -> Vec<(String, String)> {
    let at = |sub: &str| home.join(sub).display().to_string();
    vec![
        ("HOME".into(), home.display().to_string()),
        ("XDG_CONFIG_HOME".into(), at(".config")),
        ("XDG_STATE_HOME".into(), at(".local/state")),
        ("XDG_CACHE_HOME".into(), at(".cache")),
        ("NO_COLOR".into(), "1".into()),
    ]
}

/// The real binary, isolated from the user who runs the tests: `home` (a directory of the
/// test's own) is its HOME and holds its XDG config and state dirs, none of the user's
/// kubeconfig, rules file, audit log or state is inherited ([`USERS_OWN`]), no colour, stdin
/// empty. The one way a test starts the binary; a test adds the kubeconfig and clock it means.
pub(crate) fn bin(home: &Path) -> Command {
    let mut command = Command::new(BIN);
    isolate(&mut command, home);
    command
}

/// [`bin`]'s isolation for a command that runs the binary (a shell, strace).
pub(crate) fn isolate<'c>(command: &'c mut Command, home: &Path) -> &'c mut Command {
    for name in USERS_OWN {
        command.env_remove(name);
    }
    command.envs(isolated_env(home)).stdin(std::process::Stdio::null())
}

/// [`bin`] as a shell command line (for tmux, which runs a line of shell): `env -u … K=V …
/// /path/to/kubectl-namzu`, with `extra` set after the isolation; arguments follow.
pub(crate) fn bin_line(home: &Path, extra: &[(String, String)]) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let mut line = String::from("env");
    for name in USERS_OWN {
        line.push_str(&format!(" -u {name}"));
    }
    for (k, v) in isolated_env(home).iter().chain(extra) {
        line.push_str(&format!(" {k}={}", quote(v)));
    }
    line.push_str(&format!(" {}", quote(BIN)));
    line
}

/// How often a wait looks again (unless it says otherwise).
const LOOK: Duration = Duration::from_millis(10);

/// When a wait gives up.
struct Deadline(std::time::Instant);

impl Deadline {
    fn after(bound: Duration) -> Deadline {
        Deadline(std::time::Instant::now() + bound)
    }

    fn passed(&self) -> bool {
        std::time::Instant::now() >= self.0
    }
}

/// Look (every 10 ms, bounded by `within`) until `look` gives a value; the test fails with what
/// the last look saw (its `Err`). The one wait on a condition: no fixed delays.
pub(crate) fn wait_for<T>(within: Duration, look: impl FnMut() -> Result<T, String>) -> T {
    wait_for_every(LOOK, within, look)
}

/// [`wait_for`], looking every `every` (a look that is itself a process, say).
pub(crate) fn wait_for_every<T>(every: Duration, within: Duration, mut look: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Deadline::after(within);
    loop {
        match look() {
            Ok(value) => return value,
            Err(seen) => assert!(!deadline.passed(), "not within {within:?}: {seen}"),
        }
        std::thread::sleep(every);
    }
}

/// The rows `list`/`get -o json` printed, asserting the command succeeded and that it printed
/// kubectl's List (`{"apiVersion": "v1", "items": […], "kind": "List", …}`): its items.
pub(crate) fn listed(o: &std::process::Output) -> Vec<Value> {
    assert!(o.status.success(), "{}", err(o));
    let list: Value = serde_json::from_str(&out(o)).unwrap_or_else(|e| panic!("{e}: {}\n{}", out(o), err(o)));
    assert_eq!(
        (&list["apiVersion"], &list["kind"]),
        (&Value::from("v1"), &Value::from("List")),
        "{list}"
    );
    list["items"].as_array().expect("a List's items").clone()
}

/// Wait, bounded by `within`, until `done` holds; the test fails naming `what` if it never does.
pub(crate) fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    wait_for(within, || if done() { Ok(()) } else { Err(what.to_string()) })
}

/// Whether `done` holds within `bound` (looked at every 10 ms): for a test whose result is
/// whether something happened in time.
pub(crate) fn holds_within(bound: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Deadline::after(bound);
    let mut held = done();
    while !held && !deadline.passed() {
        std::thread::sleep(LOOK);
        held = done();
    }
    held
}

/// [`wait_until`] on the runtime: it yields between looks.
pub(crate) async fn until(what: &str, within: Duration, done: impl FnMut() -> bool) {
    assert!(happens_within(within, done).await, "not within {within:?}: {what}");
}

/// [`holds_within`] on the runtime: whether `done` holds within `bound`, yielding between looks.
pub(crate) async fn happens_within(bound: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Deadline::after(bound);
    loop {
        if done() {
            return true;
        } else if deadline.passed() {
            return false;
        }
        tokio::time::sleep(LOOK).await;
    }
}

/// A runtime, what `start` starts on it and a tmux server of the test's own (`session`); `None`,
/// saying so, where tmux is not installed (under `CI=true` that fails: [`tool_missing`]).
pub(crate) fn in_tmux<T>(
    what: &str,
    session: &'static str,
    start: impl std::future::Future<Output = T>,
) -> Option<(tokio::runtime::Runtime, T, Tmux)> {
    if tool_missing("tmux", what) {
        return None;
    }
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let started = runtime.block_on(start);
    Some((runtime, started, Tmux::new(session)))
}

/// A tmux server of the test's own (its socket named for the session, this process and a count),
/// killed when dropped.
pub(crate) struct Tmux {
    pub(crate) socket: String,
    pub(crate) session: &'static str,
}

impl Tmux {
    /// How often the screen is looked at: each look is a `tmux capture-pane` process.
    const EVERY: Duration = Duration::from_millis(100);

    /// A server of its own (however many a test or the suite starts) with one `session`.
    pub(crate) fn new(session: &'static str) -> Tmux {
        static SERVERS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = SERVERS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Tmux {
            socket: format!("namzu-{session}-{}-{n}", std::process::id()),
            session,
        }
    }

    pub(crate) fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", self.session])
    }

    /// Each key (or word) sent as its own `send-keys`.
    pub(crate) fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.cmd(&["send-keys", "-t", self.session, k]);
        }
    }

    /// A session of `width`×`height` running `script`.
    pub(crate) fn start(&self, width: u16, height: u16, script: &str) {
        let (w, h) = (width.to_string(), height.to_string());
        self.cmd(&["new-session", "-d", "-s", self.session, "-x", &w, "-y", &h, script]);
    }

    /// How long a screen is waited for: generous, as the whole suite shares two cores (a look
    /// that succeeds returns at once).
    const WITHIN: Duration = Duration::from_secs(60);

    /// Wait (bounded) until the screen no longer shows `text` (a pane closed, say: the key after
    /// an Escape must not be sent before, or the two read as Alt-key).
    pub(crate) fn expect_gone(&self, text: &str) -> String {
        wait_for_every(Tmux::EVERY, Tmux::WITHIN, || {
            let screen = self.screen();
            if screen.contains(text) {
                Err(format!("screen still showed {text:?}:\n{screen}"))
            } else {
                Ok(screen)
            }
        })
    }

    /// Wait (bounded) until the screen shows `text`, drawn whole (the same on a second look: a
    /// look while a frame is being written may hold half of it); the screen on failure.
    pub(crate) fn expect(&self, text: &str) -> String {
        wait_for_every(Tmux::EVERY, Tmux::WITHIN, || {
            let screen = self.screen();
            if screen.contains(text) && self.screen() == screen {
                Ok(screen)
            } else {
                Err(format!("screen never showed {text:?} drawn whole:\n{screen}"))
            }
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
    }
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

/// Run with the audit log in the sim's temp dir, on the sim's clock (as [`namzu`] does).
pub(crate) async fn run_audited(t: &TestSim, args: &[&str]) -> std::process::Output {
    namzu(t, args).await
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
    ("KUBECTL_NAMZU_AUDIT_LOG".into(), audit_path(t).display().to_string())
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
    let home = tempfile::tempdir().expect("tempdir");
    let mut child = bin(home.path())
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
        recording: None,
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

/// The writes the sim was sent (PATCHes and DELETEs), each as `METHOD path`.
pub(crate) fn sent(t: &TestSim) -> Vec<String> {
    t.sim
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH" || r.method == "DELETE")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

/// The exit code (-1 for a signal).
pub(crate) fn code(o: &std::process::Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// The binary's arguments against the sim (its kubeconfig, namespace `agents`).
pub(crate) fn agents_args(t: &TestSim, rest: &[&str]) -> Vec<String> {
    let mut full = vec![
        "--kubeconfig".to_string(),
        t.sim.kubeconfig().display().to_string(),
        "-n".into(),
        "agents".into(),
    ];
    full.extend(rest.iter().map(|s| s.to_string()));
    full
}

/// Run the binary; a run still going after `limit` is killed and the test fails (a watchdog
/// for a read that would never end, not a race to win).
pub(crate) async fn bounded(t: &TestSim, rest: &[&str], limit: Duration) -> std::process::Output {
    let child = t
        .bin()
        .args(agents_args(t, rest))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let waited = tokio::task::spawn_blocking(move || child.wait_with_output());
    match tokio::time::timeout(limit, waited).await {
        Ok(done) => done.expect("join").expect("output"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("kubectl-namzu {rest:?} still running after {limit:?}");
        }
    }
}

/// The binary with its stdout on a terminal (a pty from `script`): what the terminal is sent.
pub(crate) fn on_a_terminal(t: &TestSim, rest: &[&str]) -> Option<String> {
    if tool_missing("script", "a terminal's logs") {
        return None;
    }
    let quoted: Vec<String> = agents_args(t, rest).into_iter().map(|a| format!("'{a}'")).collect();
    let line = format!("{} {}", bin_line(&t.home(), &[now_env(t)]), quoted.join(" "));
    let o = Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("script runs");
    assert!(o.status.success(), "{}", err(&o));
    Some(out(&o).replace("\r\n", "\n"))
}

/// The entries of the audit log at `path` (none if there is no log).
pub(crate) fn audit_log_entries(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("audit line is JSON"))
        .collect()
}

/// The audit log of `t`'s runs ([`audit_env`]).
pub(crate) fn audit_path(t: &TestSim) -> PathBuf {
    t.dir.path().join("audit.jsonl")
}

/// The entries of `t`'s audit log.
pub(crate) fn audit_entries(t: &TestSim) -> Vec<Value> {
    audit_log_entries(&audit_path(t))
}

/// The pod of Sandbox `ns/name` never finishes terminating (a stuck kubelet): a suspend's wait
/// stays open.
pub(crate) fn stuck_terminating(t: &TestSim, ns: &str, name: &str) {
    t.sim.set_knobs(
        ns,
        name,
        namzu_sim::controller::Knobs {
            stuck_terminating: true,
            ..Default::default()
        },
    );
}

/// Each line `child` prints on stdout (piped), as it comes, handed to `send` on a thread of its
/// own until `send` says no more (or stdout closes); the thread, to join.
pub(crate) fn forward_lines(
    child: &mut std::process::Child,
    mut send: impl FnMut(String) -> bool + Send + 'static,
) -> std::thread::JoinHandle<()> {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("stdout is piped");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if !send(line) {
                break;
            }
        }
    })
}

/// The lines `child` prints on stdout, as they come.
pub(crate) fn stdout_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    let (tx, lines) = std::sync::mpsc::channel();
    forward_lines(child, move |line| tx.send(line).is_ok());
    lines
}

/// [`stdout_lines`] for a test on the runtime.
pub(crate) fn stdout_lines_async(child: &mut std::process::Child) -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
    forward_lines(child, move |line| tx.send(line).is_ok());
    lines
}
