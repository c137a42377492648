//! The simulated cluster (docs/ARCHITECTURE.md, "The simulated cluster"): a loopback Kubernetes API server with a model of the
//! agent-sandbox controller, for `kubectl namzu demo` and for every integration test.
//! It stands alone: nothing here calls the tool's cluster, CLI or TUI code.

pub mod auth;
pub mod clock;
pub mod controller;
pub mod day;
pub mod discovery;
pub mod events;
pub mod exec;
pub mod faults;
mod http;
mod kubeconfig;
pub mod logs;
pub mod pod_admission;
pub mod portforward;
pub mod pulse;
pub mod record;
pub mod resources;
pub mod scenario;
pub mod selector;
pub mod status;
pub mod store;
mod table;
pub mod volumes;
mod watch;
mod wire;

use auth::User;
use chrono::{DateTime, Utc};
use clock::Clock;
use controller::{Controller, Knobs, Timing, Written, knob_key};
use discovery::AgentSandbox;
use faults::Fault;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
pub use kubeconfig::write_fleet_kubeconfig;
use kubeconfig::{Access, write_kubeconfig};
use record::Recorded;
use resources::{CLAIMS, NAMESPACES, Resource, SANDBOXES};
use scenario::Scenario;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use store::Store;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Everything the server holds, behind one lock.
pub struct SimState {
    pub store: Store,
    pub controller: Controller,
    pub faults: Vec<Fault>,
    pub record: Vec<Recorded>,
    pub users: Vec<User>,
    pub strict: bool,
    pub agent_sandbox: AgentSandbox,
    /// Serve streaming lists (`sendInitialEvents`), as Kubernetes ≥ 1.32 does by default.
    pub watch_list: bool,
    /// `cilium.io/v2` is served.
    pub cilium: bool,
    /// The Kubernetes minor version served (`/version`): below 32 no streaming lists, below 27
    /// no OpenAPI v3 (v2 is served by every version).
    pub server_minor: u32,
    /// `Some(d)`: a DELETE removes the object only; its dependents go `d` later, by garbage
    /// collection, and a pod bound to a node stays Terminating until its kubelet confirms, `d`
    /// later. `None`: both within the request.
    pub gc_delay: Option<chrono::Duration>,
    /// Garbage collection and kubelet confirmations not done yet.
    pub gc_due: Vec<GcDue>,
}

/// Work the garbage collector (or a kubelet) does later.
#[derive(Debug, Clone)]
pub enum GcDue {
    /// The dependents of a deleted owner.
    Dependents {
        at: DateTime<Utc>,
        namespace: String,
        owner_uid: String,
    },
    /// A Terminating pod the kubelet confirms gone.
    Pod {
        at: DateTime<Utc>,
        namespace: String,
        name: String,
        uid: String,
    },
}

impl GcDue {
    fn at(&self) -> DateTime<Utc> {
        match self {
            GcDue::Dependents { at, .. } | GcDue::Pod { at, .. } => *at,
        }
    }
}

impl SimState {
    /// Every resource served: agent-sandbox's as configured, the core ones, and Cilium's.
    pub fn served(&self) -> Vec<Resource> {
        let mut out = self.agent_sandbox.served();
        out.push(resources::EVENTS_V1);
        if self.cilium {
            out.push(resources::CILIUM_POLICIES);
        }
        out
    }

    pub fn reconcile(&mut self, now: DateTime<Utc>) {
        self.controller.reconcile(&mut self.store, now, false);
        self.sync_volumes(now);
    }

    /// The volume controller's pass over what changed in claims and volumes (`sim/volumes.rs`).
    pub fn sync_volumes(&mut self, now: DateTime<Utc>) {
        volumes::sync(&mut self.store, &clock::k8s_time(now));
    }

    /// Another writer's change to the object a request path addresses.
    pub fn mutate(&mut self, path: &str, m: &faults::Mutation, now: DateTime<Utc>) {
        let Some(resources::Target::Objects {
            group,
            plural,
            namespace,
            name: Some(name),
            ..
        }) = resources::parse_path(path)
        else {
            return;
        };
        let Some(r) = self
            .served()
            .into_iter()
            .find(|r| r.group == group && r.plural == plural)
        else {
            return;
        };
        let ns = namespace.unwrap_or_default();
        let Some(mut obj) = self.store.get(&r, &ns, &name).cloned() else {
            return;
        };
        match m {
            faults::Mutation::BumpResourceVersion => {
                let n = obj.pointer("/status/simTouches").and_then(Value::as_u64).unwrap_or(0);
                obj["status"]["simTouches"] = json!(n + 1);
                self.store.update(&r, obj);
            }
            faults::Mutation::SetAnnotation { key, value } => {
                obj["metadata"]["annotations"][key.as_str()] = json!(value);
                self.store.update(&r, obj);
            }
            faults::Mutation::MergePatch(patch) => {
                json_patch::merge(&mut obj, patch);
                self.store.update(&r, obj);
            }
            faults::Mutation::Delete => {
                self.store
                    .delete(&r, &ns, &name, &clock::k8s_time(now), &resources::CASCADE);
            }
            faults::Mutation::Replace => {
                let at = clock::k8s_time(now);
                self.store.delete(&r, &ns, &name, &at, &resources::CASCADE);
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    for k in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
                        meta.remove(k);
                    }
                }
                let _ = self.store.create(&r, obj, &at);
            }
        }
        self.reconcile(now);
    }

    /// Reconcile what a scheduled transition has fallen due for, and nothing else.
    pub fn tick(&mut self, now: DateTime<Utc>) {
        self.store.expire_events(now);
        self.collect_garbage(now);
        if self.controller.next_due().is_some_and(|d| d <= now) {
            self.controller.reconcile_due(&mut self.store, now);
        }
        self.sync_volumes(now);
        self.controller.logs.chatter(now);
    }

    /// The garbage collector's and the kubelets' work that has fallen due.
    fn collect_garbage(&mut self, now: DateTime<Utc>) {
        if self.gc_due.iter().all(|g| g.at() > now) {
            return;
        }
        let (due, later): (Vec<GcDue>, Vec<GcDue>) = std::mem::take(&mut self.gc_due)
            .into_iter()
            .partition(|g| g.at() <= now);
        self.gc_due = later;
        let stamp = clock::k8s_time(now);
        for g in due {
            match g {
                GcDue::Dependents {
                    namespace, owner_uid, ..
                } => {
                    self.store
                        .collect_garbage(&owner_uid, &namespace, &stamp, &resources::CASCADE);
                }
                GcDue::Pod {
                    namespace, name, uid, ..
                } => {
                    let same = self
                        .store
                        .get(&resources::PODS, &namespace, &name)
                        .is_some_and(|p| store::meta(p, "uid") == uid);
                    if same && let Some(pod) = self.store.remove_now(&resources::PODS, &namespace, &name) {
                        let uid = store::meta(&pod, "uid").to_string();
                        self.store
                            .collect_garbage(&uid, &namespace, &stamp, &resources::CASCADE);
                    }
                }
            }
        }
    }

    /// After a write: the Sandbox written is reconciled (a real controller's watch would see
    /// just that one) after the controller's lag (`Timing::reconcile_delay`); a claim, a warm
    /// pool or a template wakes the claims' and pools' passes and the Sandboxes they change; a
    /// pod or a disk the passes of the Sandboxes that read it, then the pools' and claims'; a
    /// refused write none; a write to anything else the whole pass.
    pub fn written(&mut self, written: Written, now: DateTime<Utc>) {
        let lag = self.controller.timing.reconcile_delay;
        match written {
            // a real controller sees the write through its watch and queue: later
            Written::Sandbox(key) if lag > chrono::Duration::zero() => self.controller.later(key, now + lag),
            Written::Sandbox(key) => self.controller.reconcile_key(&mut self.store, &key, now, false),
            Written::ClaimOrPool => self.controller.reconcile_claims_and_pools(&mut self.store, now),
            Written::Near(object) => self.controller.reconcile_near(&mut self.store, &object, now),
            Written::Other => self.reconcile(now),
            Written::Nothing => {}
        }
        self.sync_volumes(now);
    }
}

pub struct Shared {
    state: Mutex<SimState>,
    pub clock: Clock,
    /// The round trip every request takes, in microseconds (0: none), outside the lock: it is
    /// waited on the runtime's timer, never on the sim clock.
    latency_us: AtomicU64,
    /// Requests being served now, the most there were at once, and connections accepted: what
    /// a bench reads to see how many requests a client keeps in flight.
    in_flight: AtomicU64,
    peak_in_flight: AtomicU64,
    connections: AtomicU64,
}

/// One request counted in flight until it is answered or dropped.
pub(crate) struct InFlight<'a>(&'a Shared);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, SimState> {
        // a panicking test thread must not take every later request down with it
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn latency(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.latency_us.load(Ordering::Relaxed))
    }

    pub(crate) fn in_flight(&self) -> InFlight<'_> {
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_in_flight.fetch_max(now, Ordering::Relaxed);
        InFlight(self)
    }

    fn set_latency(&self, latency: std::time::Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.latency_us.store(us, Ordering::Relaxed);
    }
}

#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Reject any PATCH of a Sandbox that is not a JSON Patch led by a `test`, and any DELETE of
    /// a Sandbox without preconditions.
    pub strict: bool,
    /// `Some(t)`: a manual clock starting at `t` that only [`Sim::advance`] moves.
    pub manual_clock: Option<DateTime<Utc>>,
    pub timing: Timing,
    /// Bearer tokens; empty = no authentication. The kubeconfig carries the first user's token.
    pub users: Vec<User>,
    pub agent_sandbox: AgentSandbox,
    /// Serve `cilium.io/v2` CiliumNetworkPolicies (a cluster with Cilium).
    pub cilium: bool,
    pub port: u16,
    /// Where the kubeconfig is written.
    pub kubeconfig: PathBuf,
    /// The kubeconfig context's namespace.
    pub namespace: String,
}

/// Where every test's manual clock starts: a fixed instant, so output never depends on the day.
pub const TEST_START: &str = "2026-11-29T12:00:00Z";

pub fn test_start() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(TEST_START)
        .expect("TEST_START is RFC 3339")
        .with_timezone(&Utc)
}

impl SimConfig {
    /// Strict, a manual clock starting at [`TEST_START`] whatever the day (the tool under test
    /// is handed the same clock), no auth, any free port.
    pub fn for_tests(kubeconfig: &Path) -> SimConfig {
        SimConfig {
            strict: true,
            manual_clock: Some(test_start()),
            // tests see the controller's pass inside the write unless they ask for its lag
            timing: Timing {
                reconcile_delay: chrono::Duration::zero(),
                ..Timing::default()
            },
            users: Vec::new(),
            agent_sandbox: AgentSandbox::Current,
            cilium: true,
            port: 0,
            kubeconfig: kubeconfig.to_path_buf(),
            namespace: "default".into(),
        }
    }
}

/// The context (and cluster) name of the kubeconfig a sim writes.
pub const SIM_CONTEXT: &str = "namzu-sim";

/// A running simulated cluster. Dropping it stops the server.
pub struct Sim {
    shared: Arc<Shared>,
    addr: SocketAddr,
    kubeconfig: PathBuf,
    /// The kubeconfig's token (the first user's) and namespace, for kubeconfigs written later.
    token: Option<String>,
    namespace: String,
    tasks: Vec<JoinHandle<()>>,
    /// `false` ends every open connection: the server is down.
    serving: tokio::sync::watch::Sender<bool>,
}

impl Drop for Sim {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Sim {
    /// Bind, load the scenario (settled: delays already elapsed), write the kubeconfig, serve.
    pub async fn start(mut config: SimConfig, scenario: &Scenario) -> std::io::Result<Sim> {
        if config.users.is_empty() {
            config.users = scenario.users.clone();
        }
        let clock = match config.manual_clock {
            Some(t) => Clock::manual(t),
            None => Clock::System,
        };
        let mut store = Store::new();
        store.set_clock(clock.clone());
        let state = SimState {
            store,
            controller: Controller::new(config.timing),
            faults: Vec::new(),
            record: Vec::new(),
            users: config.users.clone(),
            strict: config.strict,
            // a scenario that names an agent-sandbox release is served as that one
            agent_sandbox: scenario.agent_sandbox.map_or(config.agent_sandbox, |r| r.served()),
            watch_list: true,
            cilium: config.cilium,
            server_minor: discovery::DEFAULT_MINOR,
            gc_delay: None,
            gc_due: Vec::new(),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            clock,
            latency_us: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            peak_in_flight: AtomicU64::new(0),
            connections: AtomicU64::new(0),
        });
        load(&shared, scenario).map_err(std::io::Error::other)?;
        // the watch cache starts when the server does: a watch from a resourceVersion before it
        // (the scenario's own writes) gets 410, as from a real server's
        shared.lock().store.compact();

        let listener = TcpListener::bind(("127.0.0.1", config.port)).await?;
        let addr = listener.local_addr()?;
        let token = config.users.first().map(|u| u.token.clone());
        write_kubeconfig(
            &config.kubeconfig,
            &[Access {
                context: SIM_CONTEXT,
                addr,
                token: token.as_deref(),
                namespace: &config.namespace,
            }],
        )?;
        let serving = tokio::sync::watch::channel(true).0;
        let mut tasks = vec![tokio::spawn(accept_loop(listener, shared.clone(), serving.subscribe()))];
        if config.manual_clock.is_none() {
            tasks.push(tokio::spawn(tick(shared.clone())));
        }
        Ok(Sim {
            shared,
            addr,
            kubeconfig: config.kubeconfig,
            token,
            namespace: config.namespace,
            tasks,
            serving,
        })
    }

    /// The server goes down: the port stops accepting and every open connection (watches
    /// included) is cut. The state is kept for [`Sim::restart`].
    pub async fn stop(&mut self) {
        self.tasks[0].abort();
        // the listener is closed once the aborted task is gone: then the port is free again
        let _ = (&mut self.tasks[0]).await;
        self.serving.send_replace(false);
    }

    /// Serve again on the same port, with the state the server had.
    pub async fn restart(&mut self) -> std::io::Result<()> {
        // the stopped accept loop lets go of its socket as its task ends: the port is taken
        // again once it has (bounded: a port another process took stays an error)
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && tries < 100 => {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                other => break other?,
            }
        };
        self.serving.send_replace(true);
        self.tasks[0] = tokio::spawn(accept_loop(listener, self.shared.clone(), self.serving.subscribe()));
        Ok(())
    }

    /// An API server restart over the kept store (etcd kept): down, then serving again with
    /// every resourceVersion from before expired: a watch resumed from one gets `ERROR 410`.
    pub async fn restart_expiring(&mut self) -> std::io::Result<()> {
        if *self.serving.borrow() {
            self.stop().await;
        }
        self.shared.lock().store.restarted();
        self.restart().await
    }

    /// Serve Kubernetes `1.<minor>`: `/version` says so, streaming lists are served from 1.32
    /// (the WatchList feature's default), OpenAPI v3 from 1.27 (v2 always).
    pub fn set_server_version(&self, minor: u32) {
        let st = &mut *self.shared.lock();
        st.server_minor = minor;
        st.watch_list = minor >= 32;
    }

    /// Garbage collection after `delay` (`None`: within the DELETE, the default): see
    /// [`SimState::gc_delay`].
    pub fn set_gc_delay(&self, delay: Option<chrono::Duration>) {
        self.shared.lock().gc_delay = delay;
    }

    /// Every request's answer waits `latency` first (a round trip; a watch's stream waits once,
    /// before its head, not per event), on the runtime's timer: the sim clock does not move.
    /// Zero (the default) answers at once. A scenario sets it with `server: {latency: 30ms}`.
    pub fn set_latency(&self, latency: std::time::Duration) {
        self.shared.set_latency(latency);
    }

    /// The most requests served at once since the last [`Sim::reset_counters`] (watches count
    /// while their head is being made), and the connections accepted since.
    pub fn concurrency(&self) -> (u64, u64) {
        (
            self.shared.peak_in_flight.load(Ordering::Relaxed),
            self.shared.connections.load(Ordering::Relaxed),
        )
    }

    pub fn reset_counters(&self) {
        self.shared.peak_in_flight.store(0, Ordering::Relaxed);
        self.shared.connections.store(0, Ordering::Relaxed);
    }

    /// Bytes sent on watch streams so far.
    pub fn watch_bytes(&self) -> u64 {
        self.shared
            .lock()
            .store
            .watch_bytes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// End every open watch, as a server restart or an idle cut does; clients watch again.
    pub fn close_watches(&self) {
        self.shared.lock().store.close_watches();
    }

    /// Forget the watch history and end every open watch: a client that watches again from
    /// where it was gets 410 Gone and must list again.
    pub fn expire_watches(&self) {
        let st = &mut *self.shared.lock();
        st.store.compact();
        st.store.close_watches();
    }

    /// Serve streaming lists (`sendInitialEvents=true`) or refuse them as a server without the
    /// WatchList feature does (422).
    pub fn set_watch_list(&self, served: bool) {
        self.shared.lock().watch_list = served;
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Write a kubeconfig for another token (another user) at `path`.
    pub fn write_kubeconfig_for(&self, path: &Path, token: Option<&str>, namespace: &str) -> std::io::Result<()> {
        write_kubeconfig(
            path,
            &[Access {
                context: SIM_CONTEXT,
                addr: self.addr,
                token,
                namespace,
            }],
        )
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.shared.clock.now()
    }

    /// The sim's clock itself, to hand to the tool under test: both then read the same instant.
    pub fn clock(&self) -> Clock {
        self.shared.clock.clone()
    }

    /// Move a manual clock forward and let the controller catch up.
    pub fn advance(&self, by: chrono::Duration) {
        self.shared.clock.advance(by);
        let now = self.shared.clock.now();
        let mut st = self.shared.lock();
        st.store.expire_events(now);
        st.reconcile(now);
        st.controller.logs.chatter(now);
    }

    /// Append one line to a container's current log, stamped with the sim clock; open follow streams get it at once.
    pub fn append_log(&self, namespace: &str, pod: &str, container: &str, line: &str) {
        let now = self.now();
        let st = &mut *self.shared.lock();
        let uid = st
            .store
            .get(&resources::PODS, namespace, pod)
            .and_then(|p| p.pointer("/metadata/uid").and_then(Value::as_str))
            .unwrap_or("")
            .to_string();
        st.controller.logs.append(namespace, pod, &uid, container, now, line);
    }

    /// The container restarts: its current log becomes the previous one, restartCount + 1, lastState.terminated set in the pod status (exitCode 1, reason Error), open follow streams of the old instance end.
    pub fn restart_container(&self, namespace: &str, pod: &str, container: &str) {
        let now = self.now();
        let st = &mut *self.shared.lock();
        let SimState { store, controller, .. } = st;
        controller.restart_container(store, namespace, pod, container, now);
    }

    /// Every request served so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().record.clone()
    }

    pub fn clear_requests(&self) {
        self.shared.lock().record.clear();
    }

    pub fn add_fault(&self, fault: Fault) {
        self.shared.lock().faults.push(fault);
    }

    pub fn clear_faults(&self) {
        self.shared.lock().faults.clear();
    }

    pub fn set_knobs(&self, namespace: &str, name: &str, knobs: Knobs) {
        let now = self.now();
        let mut st = self.shared.lock();
        st.controller.knobs.insert(knob_key(namespace, name), knobs);
        st.reconcile(now);
    }

    pub fn set_strict(&self, strict: bool) {
        self.shared.lock().strict = strict;
    }

    /// Forget the watch history: a watch from an older resourceVersion gets 410 Gone.
    pub fn compact(&self) {
        self.shared.lock().store.compact();
    }

    pub fn get(&self, r: &Resource, namespace: &str, name: &str) -> Option<Value> {
        self.shared.lock().store.get(r, namespace, name).cloned()
    }

    pub fn list(&self, r: &Resource, namespace: Option<&str>) -> Vec<Value> {
        self.shared.lock().store.list(r, namespace).cloned().collect()
    }

    /// Change an object behind the API's back (as another writer would): bumps resourceVersion.
    pub fn modify(&self, r: &Resource, namespace: &str, name: &str, edit: impl FnOnce(&mut Value)) -> Option<Value> {
        let now = self.now();
        let mut st = self.shared.lock();
        let mut obj = st.store.get(r, namespace, name)?.clone();
        edit(&mut obj);
        let out = st.store.update(r, obj);
        if r.plural == resources::SANDBOXES.plural && r.group == resources::SANDBOXES.group {
            // as a write of a Sandbox through the API wakes its own pass, not every Sandbox's (a
            // whole pass at 55,000 objects holds the lock for seconds)
            let key = (namespace.to_string(), name.to_string());
            let SimState { controller, store, .. } = &mut *st;
            controller.reconcile_key(store, &key, now, false);
            st.sync_volumes(now);
        } else {
            st.written(Written::of(r, &out), now);
        }
        Some(out)
    }

    /// Create an object as another client would (the controller then reacts).
    pub fn create(&self, r: &Resource, obj: Value) -> Result<Value, String> {
        let now = self.now();
        let mut st = self.shared.lock();
        let out = st
            .store
            .create(r, obj, &clock::k8s_time(now))
            .map_err(|e| e.body.to_string())?;
        st.written(Written::of(r, &out), now);
        Ok(out)
    }

    /// Delete an object as another client would (its dependents go with it).
    pub fn delete(&self, r: &Resource, namespace: &str, name: &str) -> Option<Value> {
        let now = self.now();
        let mut st = self.shared.lock();
        let out = st
            .store
            .delete(r, namespace, name, &clock::k8s_time(now), &resources::CASCADE);
        let written = out.as_ref().map_or(Written::Other, |o| Written::of(r, o));
        st.written(written, now);
        out
    }

    /// Delete an object with `propagationPolicy: Orphan` (`kubectl delete --cascade=orphan`):
    /// its dependents stay, their ownerReferences to it removed.
    pub fn delete_orphaning(&self, r: &Resource, namespace: &str, name: &str) -> Option<Value> {
        let now = self.now();
        let mut st = self.shared.lock();
        let uid = store::meta(st.store.get(r, namespace, name)?, "uid").to_string();
        st.store.orphan_dependents(&uid, namespace, &resources::CASCADE);
        let out = st.store.delete(r, namespace, name, &clock::k8s_time(now), &[]);
        st.reconcile(now);
        out
    }

    /// Create objects (and namespaces) after start, e.g. to seed thousands of workspaces.
    pub fn load(&self, scenario: &Scenario) -> Result<(), String> {
        load(&self.shared, scenario)
    }
}

/// The namespaces the scenario names or its objects live in, created; the ones its
/// background objects are spread over returned.
fn create_namespaces(
    store: &mut Store,
    scenario: &Scenario,
    background: &scenario::Background,
    now_s: &str,
) -> Result<Vec<String>, String> {
    let mut namespaces: Vec<String> = scenario.namespaces.clone();
    namespaces.extend(scenario.workspaces.iter().map(|w| w.namespace.clone()));
    namespaces.extend(
        scenario
            .objects
            .iter()
            .filter_map(|o| o.pointer("/metadata/namespace")?.as_str().map(str::to_string)),
    );
    namespaces.push("default".into());
    let mut spread: Vec<String> = background.own_namespaces();
    spread.extend(scenario.workspaces.iter().map(|w| w.namespace.clone()));
    spread.dedup();
    namespaces.extend(background.own_namespaces());
    for ns in namespaces {
        if store.get(&NAMESPACES, "", &ns).is_none() {
            store
                .create(
                    &NAMESPACES,
                    json!({"metadata":{"name":ns},"status":{"phase":"Active"}}),
                    now_s,
                )
                .map_err(|e| e.body.to_string())?;
        }
    }
    Ok(spread)
}

/// What the scenario gives in full stays as given: a warm pool's status; a Bound claim's volume.
fn keep_given(st: &mut SimState, scenario: &Scenario, now_s: &str) {
    // a warm pool whose status the scenario gives stays as given; others the pool controller runs
    for obj in scenario
        .objects
        .iter()
        .filter(|o| o["kind"] == "SandboxWarmPool" && o.get("status").is_some())
    {
        let ns = store::meta(obj, "namespace");
        let ns = if ns.is_empty() { "default" } else { ns };
        st.controller
            .frozen_pools
            .insert(knob_key(ns, store::meta(obj, "name")));
    }
    // a Bound claim given in full has its volume: the one it names, else one provisioned
    // (reclaim policy from its knobs, `reclaimPolicy`, Delete by default)
    for obj in scenario.objects.iter().filter(|o| o["kind"] == "PersistentVolumeClaim") {
        let (ns, name) = (store::meta(obj, "namespace"), store::meta(obj, "name"));
        let ns = if ns.is_empty() { "default" } else { ns };
        let policy = st
            .controller
            .knobs
            .get(&knob_key(ns, name))
            .and_then(|k| k.reclaim_policy.clone())
            .unwrap_or_else(|| "Delete".into());
        if let Some(pvc) = st.store.get(&resources::PVCS, ns, name).cloned()
            && pvc.pointer("/status/phase").and_then(Value::as_str) == Some("Bound")
        {
            volumes::settle_claim(&mut st.store, pvc, &policy, now_s);
        }
    }
}

fn load(shared: &Shared, scenario: &Scenario) -> Result<(), String> {
    let now = shared.clock.now();
    let now_s = clock::k8s_time(now);
    let mut st = shared.lock();
    if let Some(server) = &scenario.server {
        if let Some(minor) = server.minor()? {
            st.server_minor = minor;
            st.watch_list = minor >= 32;
        }
        if let Some(delay) = server.gc_delay()? {
            st.gc_delay = Some(delay);
        }
        if let Some(latency) = server.latency()? {
            shared.set_latency(latency);
        }
    }
    let background = scenario.background.clone().unwrap_or_default();
    let spread = create_namespaces(&mut st.store, scenario, &background, &now_s)?;
    let served = resources::CORE
        .iter()
        .chain(&[SANDBOXES, resources::CILIUM_POLICIES])
        .chain(&resources::EXTENSIONS)
        .copied()
        .collect::<Vec<_>>();
    for obj in &scenario.objects {
        let (api_version, kind) = (
            obj["apiVersion"].as_str().unwrap_or(""),
            obj["kind"].as_str().unwrap_or(""),
        );
        let r = served
            .iter()
            .find(|r| r.kind == kind && r.api_version() == api_version)
            .ok_or_else(|| format!("scenario object of unknown type {api_version} {kind}"))?;
        let created = st
            .store
            .create(r, obj.clone(), &now_s)
            .map_err(|e| e.body["message"].to_string())?;
        // a scenario may say how many spec writes an object has seen (its generation)
        if let Some(g) = obj.pointer("/metadata/generation").filter(|g| g.is_i64()) {
            let mut kept = created;
            kept["metadata"]["generation"] = g.clone();
            st.store.update(r, kept);
        }
    }
    for w in &scenario.workspaces {
        let claim_uid = w
            .owner_claim
            .as_ref()
            .and_then(|c| st.store.get(&CLAIMS, &w.namespace, c))
            .and_then(|c| c.pointer("/metadata/uid").and_then(Value::as_str).map(str::to_string));
        let created = st
            .store
            .create(&SANDBOXES, w.sandbox(claim_uid.as_deref()), &now_s)
            .map_err(|e| e.body["message"].to_string())?;
        for policy in w.policies(&created, claim_uid.as_deref()) {
            st.store
                .create(&resources::CILIUM_POLICIES, policy, &now_s)
                .map_err(|e| e.body["message"].to_string())?;
        }
    }
    for i in 0..background.pods {
        let ns = &spread[i % spread.len()];
        st.store
            .create(&resources::PODS, scenario::Background::pod(i, ns, &now_s), &now_s)
            .map_err(|e| e.body["message"].to_string())?;
    }
    for i in 0..background.pvcs {
        let ns = &spread[i % spread.len()];
        st.store
            .create(&resources::PVCS, scenario::Background::pvc(i, ns), &now_s)
            .map_err(|e| e.body["message"].to_string())?;
    }
    for (key, knobs) in scenario.all_knobs() {
        st.controller.knobs.insert(key, knobs);
    }
    keep_given(&mut st, scenario, &now_s);
    let SimState { store, controller, .. } = &mut *st;
    // the pulses' hour, played at the times it happened
    for p in &scenario.pulse {
        pulse::play(controller, store, p, now)?;
    }
    // settle twice: pods are created, then move to their steady state
    controller.reconcile(store, now, true);
    controller.reconcile(store, now, true);
    volumes::sync(store, &now_s);
    // the scenario's own logs, over what the model made up
    for w in &scenario.workspaces {
        let name = format!("namzu-ws-{}", w.id);
        let Some(uid) = store
            .get(&resources::PODS, &w.namespace, &name)
            .and_then(|p| p.pointer("/metadata/uid").and_then(Value::as_str))
            .map(str::to_string)
        else {
            continue;
        };
        for (previous, logs) in [(false, &w.logs), (true, &w.previous_logs)] {
            for (container, lines) in logs {
                controller.scenario_logs(store, &w.namespace, &name, &uid, container, lines, previous, now);
            }
        }
    }
    Ok(())
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, serving: tokio::sync::watch::Receiver<bool>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        shared.connections.fetch_add(1, Ordering::Relaxed);
        let (shared, mut serving) = (shared.clone(), serving.clone());
        tokio::spawn(async move {
            let service = service_fn(move |req| http::handle(shared.clone(), req));
            let connection = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            // a stopped server drops its connections mid-answer, as a crashed one would
            tokio::select! {
                _ = connection => {}
                _ = serving.wait_for(|up| !*up) => {}
            }
        });
    }
}

/// On a real clock the controller moves on its own.
async fn tick(shared: Arc<Shared>) {
    let mut interval = tokio::time::interval(std::time::Duration::from_millis(100));
    loop {
        interval.tick().await;
        let now = shared.clock.now();
        shared.lock().tick(now);
    }
}
