//! The I/O task's work: each effect runs through the same cluster functions the CLI uses and
//! reports back as actions. The UI never awaits these.

mod log_stream;

pub use log_stream::LogTask;

use super::action::{Action, Effect};
use super::context_options::ContextOptions;
use namzu_clock::Clock;
use namzu_domain::drift::OverlayFlags;
use namzu_domain::naming::WorkspaceId;
use namzu_domain::naming::WorkspaceKey;
use namzu_domain::object::name;
use namzu_domain::timeline;
use namzu_domain::triage::{Purpose, SHELL, Unavailable, command_target, kubectl_exec_args};
use namzu_engine::cluster::access;
use namzu_engine::cluster::connect::Connection;
use namzu_engine::cluster::detail;
use namzu_engine::cluster::inventory::{Query, Scope};
use namzu_engine::cluster::live::{LiveOptions, PulseAsk};
use namzu_engine::cluster::resources;
use namzu_engine::cluster::triage;
use namzu_engine::cluster::write::{Outcome, Plan, WritePolicy};
use namzu_engine::ops::follow::{self, FollowContext, Followed};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// One context's connection, what it may write (its read-only rule, its own throttle; the
/// audit log shared), and which of its Follows is current.
pub struct Cluster {
    pub conn: Connection,
    pub policy: WritePolicy,
    /// Which Follow is current: an older one stops when it changes.
    following: tokio::sync::watch::Sender<u64>,
    /// What the pulse view asks of the follow, and the newest ask's place (`Effect::PulseWatch`).
    pulse: tokio::sync::watch::Sender<Option<PulseAsk>>,
    pulse_seq: std::sync::Mutex<u64>,
}

impl Cluster {
    pub fn new(conn: Connection, policy: WritePolicy) -> Cluster {
        Cluster {
            conn,
            policy,
            following: tokio::sync::watch::channel(0).0,
            pulse: tokio::sync::watch::channel(None).0,
            pulse_seq: std::sync::Mutex::new(0),
        }
    }
}

/// How a single-context session opens another of the kubeconfig's contexts (`:ctx NAME`, `c`).
#[derive(Clone, Default)]
pub struct Switch {
    /// The session's connect options (the safety rules file and the flags over it included):
    /// only the context differs, and `Connection::open` decides the rules there.
    pub connect: namzu_engine::cluster::connect::ConnectOptions,
    /// The kubeconfig's contexts, in its order.
    pub contexts: Vec<String>,
}

pub struct Io {
    /// The contexts opened, by name; an effect runs in its own.
    pub clusters: Vec<Cluster>,
    /// Contexts opened while the UI runs (a single-context session switching context).
    pub added: std::sync::RwLock<Vec<Arc<Cluster>>>,
    /// How another context is opened (`None`: this session cannot switch).
    pub switch: Option<Switch>,
    /// The write policy a context opened later starts from (its own read-only rule and
    /// throttle added; the audit log shared).
    pub policy: WritePolicy,
    /// Ticks read it (every context's connection shares it).
    pub clock: Clock,
    pub flags: OverlayFlags,
    pub wait_timeout: Duration,
    /// Writes sent and not yet answered, in every context.
    pub writes_in_flight: Arc<AtomicUsize>,
    /// The UI has quit: a batch starts no further write.
    pub closed: Arc<std::sync::atomic::AtomicBool>,
    pub live: LiveOptions,
    /// The log pane's stream: one at a time, stopped when the pane closes or another opens.
    pub log_task: std::sync::Mutex<LogTask>,
    /// The forwards started with `f`: each stops when the UI quits (this is dropped).
    pub forwards: Forwards,
    /// The flight recorder's directory `:at` replays from (`None`: none could be named).
    pub recording: Option<std::path::PathBuf>,
}

/// Forwards running in the background, stopped when dropped.
#[derive(Debug, Default)]
pub struct Forwards(std::sync::Mutex<Vec<tokio::task::AbortHandle>>);

impl Drop for Forwards {
    fn drop(&mut self) {
        for task in self.0.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
            task.abort();
        }
    }
}

impl Io {
    /// The context named, if it was opened.
    pub fn cluster(&self, context: &str) -> Option<&Cluster> {
        self.clusters.iter().find(|c| c.conn.context == context)
    }

    pub async fn perform(&self, effect: Effect, out: UnboundedSender<Action>) {
        if let Effect::OpenContext { context, replacing } = effect {
            let result = self.open_context(&context, &replacing).await;
            let _ = out.send(Action::ContextOpened { context, result });
            return;
        }
        if let Effect::Copy(text) = effect {
            let _ = out.send(Action::Copied(copy_to_clipboard(&text)));
            return;
        }
        if let Effect::LogsOf { keys, previous, stream } = effect {
            return self.logs_of(keys, previous, stream, &out).await;
        }
        // the app asks only of contexts that were opened
        if let Some(cluster) = self.cluster(effect.context()) {
            return cluster.perform(self, effect, out).await;
        }
        let added = self
            .added
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|c| c.conn.context == effect.context())
            .cloned();
        if let Some(cluster) = added {
            cluster.perform(self, effect, out).await;
        }
    }

    /// The connection of context `name`, opened at start or since.
    fn connection(&self, name: &str) -> Option<Connection> {
        if let Some(cluster) = self.cluster(name) {
            return Some(cluster.conn.clone());
        }
        let added = self.added.read().unwrap_or_else(|p| p.into_inner());
        added.iter().find(|c| c.conn.context == name).map(|c| c.conn.clone())
    }

    /// Open context `name` in place of `replacing` (whose watches stop): its connection with
    /// the session's options, its rules decided at open; one opened before is reused.
    async fn open_context(&self, name: &str, replacing: &str) -> Result<ContextOptions, String> {
        let described = |c: &Cluster| ContextOptions {
            name: c.conn.context.clone(),
            server: c.conn.server.clone(),
            namespace: c.conn.namespace.clone(),
            rules: c.conn.rules.clone(),
            open_error: None,
        };
        let stop = |c: &Cluster| c.following.send_modify(|g| *g += 1);
        let found = |io: &Io, name: &str| -> Option<Arc<Cluster>> {
            io.added
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .find(|c| c.conn.context == name)
                .cloned()
        };
        let opened = match (self.cluster(name), found(self, name)) {
            (Some(c), _) => Some(described(c)),
            (None, Some(c)) => Some(described(&c)),
            (None, None) => None,
        };
        let opened = match opened {
            Some(o) => o,
            None => {
                let switch = self.switch.as_ref().ok_or("this session cannot open another context")?;
                let opts = namzu_engine::cluster::connect::ConnectOptions {
                    context: Some(name.to_string()),
                    clock: Some(self.clock.clone()),
                    interactive_exec: false,
                    ..switch.connect.clone()
                };
                let conn = Connection::open(&opts).await.map_err(|e| e.to_string())?;
                conn.version().await.map_err(|e| e.to_string())?;
                let policy = namzu_engine::ops::write::rules::policy(&self.policy, &conn.rules);
                let cluster = Cluster::new(conn, policy);
                let o = described(&cluster);
                self.added
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(Arc::new(cluster));
                o
            }
        };
        // the context left stops watching: its rows are no longer shown
        if let Some(c) = self.cluster(replacing) {
            stop(c);
        } else if let Some(c) = found(self, replacing) {
            stop(&c);
        }
        Ok(opened)
    }
}

impl Cluster {
    async fn perform(&self, io: &Io, effect: Effect, out: UnboundedSender<Action>) {
        let send = |a: Action| {
            let _ = out.send(a);
        };
        match effect {
            Effect::Follow {
                context,
                scope,
                generation,
            } => self.follow_live(io, context, scope, generation, &out).await,
            Effect::CheckAccess { context, scope } => send(self.check_access(context, scope).await),
            Effect::Detail(key) => send(Action::Detail {
                result: self.detail(io, &key).await,
                key,
            }),
            Effect::Yaml(key) => send(Action::Detail {
                result: self.yaml(&key).await,
                key,
            }),
            Effect::Logs {
                key,
                container,
                previous,
                stream,
            } => {
                let read = log_stream::Read {
                    conn: self.conn.clone(),
                    key,
                    container,
                    from: 0,
                };
                io.start_logs(vec![read], previous, stream, &out).await;
            }
            Effect::StopLogs { stream, .. } => io.stop_logs(stream),
            Effect::History(key) => send(Action::History {
                result: self.history(&key).await,
                key,
            }),
            Effect::Shell(key) => send(Action::ShellReady {
                result: self.shell(&key).await,
                key,
            }),
            Effect::Forward(key) => self.forward(io, key, out.clone()).await,
            // answered by the Io itself
            Effect::OpenContext { .. } | Effect::Copy(_) | Effect::LogsOf { .. } => {}
            Effect::Save { name, text, .. } => send(Action::Saved(save(&name, &text))),
            effect @ (Effect::ReplayAt { .. } | Effect::DetailAt { .. }) => {
                // boxed, as the pulse's: these reads' futures are large, and `perform`'s would
                // hold them inline on every caller's stack
                if let Some(answer) = Box::pin(self.replayed(io, effect)).await {
                    send(answer);
                }
            }
            Effect::PulseWatch { seq, ask, .. } => {
                let mut newest = self.pulse_seq.lock().unwrap_or_else(|p| p.into_inner());
                if seq > *newest {
                    *newest = seq;
                    self.pulse.send_replace(ask);
                }
            }
            Effect::Leaks { context, scope } => {
                let ns = match &scope {
                    Scope::Namespace(n) => Some(n.as_str()),
                    Scope::All => None,
                };
                let result = namzu_engine::cluster::leaks::read(&self.conn, ns, self.conn.clock.now())
                    .await
                    .map(|r| (r.leaks, r.warnings))
                    .map_err(|e| e.to_string());
                send(Action::Leaks { context, scope, result });
            }
            Effect::DeleteLeaks {
                context,
                scope,
                names,
                include_detached,
                typed,
            } => {
                let result = self.delete_leaks(&scope, names, include_detached, typed).await;
                send(Action::LeaksDeleted { context, scope, result });
            }
            Effect::Preview { key, plan, take_over } => {
                // the one preview of every front-end (`ops::write::preview`)
                let outcome = namzu_engine::ops::write::preview(&self.conn, &self.policy, &plan).await;
                send(Action::Preview {
                    key,
                    take_over,
                    outcome,
                });
            }
            Effect::Writes {
                writes,
                take_over,
                wait,
                ..
            } => self.write_rows(io, writes, take_over, wait, &out).await,
        }
    }

    /// Follow the context live until a newer Follow replaces this one or the UI stops listening.
    async fn follow_live(
        &self,
        io: &Io,
        context: String,
        scope: Scope,
        generation: u64,
        out: &UnboundedSender<Action>,
    ) {
        // effects run in any order: only a later Follow replaces an earlier one
        let newer = self.following.send_if_modified(|g| {
            let newer = generation > *g;
            if newer {
                *g = generation;
            }
            newer
        });
        if !newer {
            return;
        }
        let mut replaced = self.following.subscribe();
        let target = FollowContext {
            context: Some(context.clone()),
            conn: self.conn.clone(),
            scope: scope.clone(),
        };
        // the follow computes the pulse while the pulse view asks it to (`Effect::PulseWatch`)
        let live = LiveOptions {
            pulse: Some(self.pulse.subscribe()),
            ..io.live.clone()
        };
        let mut following = follow::follow([target], &Query::default(), &io.flags, &live);
        loop {
            tokio::select! {
                _ = replaced.wait_for(|g| *g != generation) => break,
                followed = following.next() => match followed {
                    Some(Followed { event, .. }) => {
                        let action = Action::Live {
                            context: context.clone(),
                            scope: scope.clone(),
                            generation,
                            event,
                        };
                        if out.send(action).is_err() {
                            break;
                        }
                    }
                    None => break,
                },
            }
        }
    }

    /// What the user may do in the scope (patch, delete) and the namespaces to switch among.
    async fn check_access(&self, context: String, scope: Scope) -> Action {
        let ns = match &scope {
            Scope::Namespace(n) => Some(n.as_str()),
            Scope::All => None,
        };
        let (patch, delete, listed) = tokio::join!(
            access::can(&self.conn, "patch", "agents.x-k8s.io", "sandboxes", ns),
            access::can(&self.conn, "delete", "agents.x-k8s.io", "sandboxes", ns),
            resources::list(&self.conn, &resources::NAMESPACES, None, None),
        );
        // a user who may not list namespaces switches among those the inventory saw
        let namespaces = listed.unwrap_or_default().iter().map(|n| name(n).to_string()).collect();
        Action::Access {
            context,
            scope,
            patch: patch.ok(),
            delete: delete.ok(),
            namespaces,
        }
    }

    /// The Sandbox as the API serves it, without managedFields, as YAML.
    async fn yaml(&self, key: &WorkspaceKey) -> Result<String, String> {
        let id = WorkspaceId::parse(&key.id).map_err(|e| e.to_string())?;
        let object = resources::get(&self.conn, &resources::SANDBOXES, &key.namespace, &id.sandbox_name())
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("workspace {} is gone", key.id))?;
        Ok(super::app::yaml(&object))
    }

    async fn detail(&self, io: &Io, key: &WorkspaceKey) -> Result<String, String> {
        let id = WorkspaceId::parse(&key.id).map_err(|e| e.to_string())?;
        let d = detail::read(&self.conn, &key.namespace, &id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("workspace {} is gone", key.id))?;
        let now = self.conn.clock.now();
        let mut w = d.workspace(&io.flags, now);
        // every command the pane shows names the row's context: pasted in a shell whose current
        // context is another, it still acts on this row's cluster
        w.context = Some(self.conn.context.clone());
        let text = namzu_engine::present::detail::render_with_drift(&w, &d, now);
        Ok(text)
    }
}

impl Cluster {
    async fn history(&self, key: &WorkspaceKey) -> Result<namzu_engine::present::history::History, String> {
        let id = WorkspaceId::parse(&key.id).map_err(|e| e.to_string())?;
        let read = triage::read_history(&self.conn, &key.namespace, &id, &self.policy.audit)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("workspace {} is gone", key.id))?;
        let inputs = read.inputs();
        let now = self.conn.clock.now();
        // laid out at the pane's width as it is drawn
        Ok(namzu_engine::present::history::History {
            entries: timeline::timeline(&inputs),
            waterfall: timeline::waterfall(&inputs, now),
            warnings: read.warnings.clone(),
            now,
        })
    }

    /// The confirmed writes of this context through the one batch every front-end's writes go
    /// through (`ops::write::confirmed` checks the context's rules again, `ops::write::run` sends
    /// each as bound, at most [`PARALLEL`] at once, and stops as a bulk write stops): each row's
    /// result, its wait's progress and end come back as actions.
    async fn write_rows(
        &self,
        io: &Io,
        writes: Vec<(WorkspaceKey, Plan)>,
        take_over: bool,
        wait: bool,
        out: &UnboundedSender<Action>,
    ) {
        use namzu_engine::ops::write::{self as ops_write, Request};
        let Some((verb, epoch)) = writes.first().map(|(_, plan)| (plan.verb, plan.epoch)) else {
            return;
        };
        let label = writes.first().and_then(|(key, _)| key.context.clone());
        let bound: Vec<(WorkspaceKey<WorkspaceId>, Plan)> = writes
            .into_iter()
            .map(|(key, plan)| {
                let key = WorkspaceKey {
                    context: key.context,
                    namespace: plan.namespace.clone(),
                    id: plan.id.clone(),
                };
                (key, plan)
            })
            .collect();
        let keys: Vec<WorkspaceKey> = bound.iter().map(|(k, _)| row_key(k)).collect();
        let member = namzu_engine::ops::fleet::Member {
            conn: self.conn.clone(),
            rules: self.conn.rules.clone(),
        };
        let checked = match ops_write::confirmed(member, &self.policy, label, false, bound) {
            Ok(checked) => checked,
            Err(e) => {
                // refused before anything is sent: every row says why
                let outcome = Outcome::Refused { message: e.to_string() };
                for key in keys {
                    let _ = out.send(Action::Done {
                        key,
                        verb,
                        outcome: outcome.clone(),
                    });
                }
                return;
            }
        };
        let request = Request {
            verb,
            // (each write carries the epoch it was bound to; this is the first's)
            epoch,
            take_over,
            dry_run: false,
            server_dry_run: false,
            yes: true,
            parallel: PARALLEL,
            wait: wait.then_some(io.wait_timeout),
            refresh: None,
        };
        let rows = Rows {
            out,
            verb,
            audit: &self.policy.audit,
            in_flight: &io.writes_in_flight,
            closed: &io.closed,
        };
        if let Ok(ran) = ops_write::run(&checked, &request, &rows).await {
            // a stop is recorded as the CLI records it: what was done and not started
            ran.record_stop(&checked, verb);
        }
    }

    /// `:at`'s reads, answered.
    async fn replayed(&self, io: &Io, effect: Effect) -> Option<Action> {
        match effect {
            Effect::ReplayAt {
                context,
                scope,
                instant,
                changes,
            } => Some(Action::Replayed {
                result: self.replay_at(io, &scope, instant, changes).await,
                context,
                scope,
                instant,
            }),
            Effect::DetailAt { key, instant } => Some(Action::Detail {
                result: self.detail_at(io, &key, instant),
                key,
            }),
            _ => None,
        }
    }

    /// `:at`: this context's rows as the recording held them (what `list --at` reads).
    async fn replay_at(
        &self,
        io: &Io,
        scope: &Scope,
        instant: chrono::DateTime<chrono::Utc>,
        changes: bool,
    ) -> Result<namzu_engine::ops::replay::RowsAt, String> {
        let root = io.recording.clone().ok_or(NO_RECORDING)?;
        let at = namzu_engine::ops::replay::At { root, instant };
        namzu_engine::ops::replay::rows_at(&at, &self.conn, scope, &io.flags, changes)
            .await
            .map_err(|e| e.to_string())
    }

    /// Enter while replaying: the detail as the recording held it (`inspect --at`'s read), under
    /// the line that says the instant and how complete the recording is there.
    fn detail_at(&self, io: &Io, key: &WorkspaceKey, instant: chrono::DateTime<chrono::Utc>) -> Result<String, String> {
        let id = WorkspaceId::parse(&key.id).map_err(|e| e.to_string())?;
        let root = io.recording.clone().ok_or(NO_RECORDING)?;
        let at = namzu_engine::ops::replay::At { root, instant };
        let read = namzu_engine::ops::replay::detail_at(&at, &self.conn.context, &key.namespace, &id)
            .map_err(|e| e.to_string())?;
        let d = read
            .detail
            .ok_or_else(|| format!("workspace {} was not there then ({})", key.id, read.coverage))?;
        let mut w = d.workspace(&io.flags, instant);
        w.context = Some(self.conn.context.clone());
        let text = namzu_engine::present::detail::render_with_drift(&w, &d, instant);
        Ok(format!("{}\n\n{text}", read.coverage))
    }

    /// The leaks view's delete: `leaks --delete`'s own use case (`ops::leaks`) over this context
    /// — read again now, planned, every rule checked, the typed count compared with what it
    /// plans now, each DELETE re-checked, tombstoned and audited. What it came to, in words.
    async fn delete_leaks(
        &self,
        scope: &Scope,
        names: Vec<String>,
        include_detached: bool,
        typed: String,
    ) -> Result<String, String> {
        use namzu_engine::ops::leaks::{self, Front, Question, Report, Request};
        struct Typed {
            typed: String,
            lines: std::sync::Mutex<Vec<String>>,
        }
        impl Front for Typed {
            fn ask_typed<'a>(&'a self, q: &'a Question) -> futures::future::BoxFuture<'a, Result<bool, String>> {
                let same = q.word() == self.typed;
                Box::pin(async move { Ok(same) })
            }
            fn cancelled(&self, context: &str) {
                self.push(format!(
                    "cancelled: the typed count was not \"{}\"; nothing deleted in {context}",
                    self.typed
                ));
            }
            fn step(&self, report: &Report, done: usize, total: usize) {
                self.push(report.line(done, total));
            }
            fn output_closed(&self) -> bool {
                false
            }
            fn interrupted_twice() {}
        }
        impl Typed {
            fn push(&self, line: String) {
                self.lines.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
        }
        let rules = self.conn.rules.clone();
        let member = namzu_engine::ops::fleet::Member {
            conn: self.conn.clone(),
            rules: rules.clone(),
        };
        let fleet =
            namzu_engine::ops::fleet::Fleet::of_one(member.clone(), self.conn.clock.clone(), self.policy.read_only);
        leaks::admit(&fleet).map_err(|e| e.to_string())?;
        let ns = match scope {
            Scope::Namespace(n) => Some(n.as_str()),
            Scope::All => None,
        };
        let report = namzu_engine::cluster::leaks::read(&self.conn, ns, self.conn.clock.now())
            .await
            .map_err(|e| e.to_string())?;
        let request = Request {
            names,
            include_detached,
            detached_after_days: namzu_domain::leaks::DETACHED_AFTER_DAYS,
            ..Default::default()
        };
        let checked = leaks::prepare(&fleet, vec![(member, report.leaks)], &request, &self.policy, true)
            .map_err(|e| e.to_string())?;
        let front = Typed {
            typed,
            lines: Default::default(),
        };
        let ran = leaks::run(checked, &front).await.map_err(|e| e.to_string())?;
        let mut lines = front.lines.into_inner().unwrap_or_else(|p| p.into_inner());
        if ran.total == 0 {
            lines.push("nothing to delete: the leaks named are no longer deletable (read again)".into());
        } else if ran.failed() + ran.refused() == 0 && lines.iter().all(|l| !l.starts_with("cancelled")) {
            lines.push("kubectl namzu restore undoes it".into());
        }
        Ok(lines.join("; "))
    }

    /// `f`: a free local port forwarded to the row's own pod through the CLI's use case
    /// (`ops::port_forward`), its news on the status line, until the UI quits.
    async fn forward(&self, io: &Io, key: WorkspaceKey, out: UnboundedSender<Action>) {
        use namzu_engine::ops::port_forward::{self, Forward, Say};
        let who = key.who(io.clusters.len() > 1);
        let id = match WorkspaceId::parse(&key.id) {
            Ok(id) => id,
            Err(e) => {
                let _ = out.send(Action::Forwarding(format!("{who}: {e}")));
                return;
            }
        };
        let listener = match port_forward::listen("127.0.0.1", 0).await {
            Ok(l) => l,
            Err(e) => {
                let _ = out.send(Action::Forwarding(format!("{who}: {e}")));
                return;
            }
        };
        let local = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let port = super::action::FORWARD_PORT;
        let forward = Arc::new(Forward::new(
            self.conn.clone(),
            key.namespace.clone(),
            id,
            port,
            local.clone(),
        ));
        let news = out.clone();
        let (prefix, say_who) = (who.clone(), who.clone());
        let say: Say = Arc::new(move |line: String| {
            let _ = news.send(Action::Forwarding(format!("{prefix}: {line}")));
        });
        let task = tokio::spawn(port_forward::serve(listener, forward, say));
        io.forwards
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(task.abort_handle());
        let _ = out.send(Action::Forwarding(format!(
            "{say_who}: forwarding {local} → port {port} of its own pod (follows it across restarts and suspend/resume; stops when the TUI quits)"
        )));
    }

    /// The kubectl command line of a shell in the row's own pod, or why there is none.
    async fn shell(&self, key: &WorkspaceKey) -> Result<crate::action::ShellTarget, String> {
        let (pod, container) = own_container(&self.conn, key, None, Purpose::Exec).await?;
        let argv = kubectl_exec_args(
            &self.conn.kubectl_flags,
            &key.namespace,
            &pod,
            &container.container,
            true,
            true,
            &[SHELL.to_string()],
        );
        Ok(crate::action::ShellTarget {
            argv,
            pod,
            container: container.container,
        })
    }
}

/// The row's own pod (its name) and the container a command acts on, or the line why not.
async fn own_container(
    conn: &Connection,
    key: &WorkspaceKey,
    asked: Option<&str>,
    purpose: Purpose,
) -> Result<(String, namzu_domain::triage::Chosen), String> {
    let id = WorkspaceId::parse(&key.id).map_err(|e| e.to_string())?;
    let read = triage::read_pod(conn, &key.namespace, &id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("workspace {} is gone", key.id))?;
    let (pod, chosen) =
        command_target(&key.id, &read.sandbox, read.pod.as_ref(), asked, purpose).map_err(|u| tui_words(&u))?;
    Ok((name(pod).to_string(), chosen))
}

/// What the UI says of a workspace with nothing to read or run in: the resume is a key here.
fn tui_words(u: &Unavailable) -> String {
    match u {
        Unavailable::Suspended { id } => {
            format!("workspace {id} is Suspended: its pod was deleted (the disk is kept); press R to resume it")
        }
        other => other.message(),
    }
}

/// Write a new file in the temporary directory, private to the user; its path.
fn save(name: &str, text: &str) -> Result<String, String> {
    use std::io::Write;
    let path = std::env::temp_dir().join(name);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path.display().to_string())
}

/// How long a TUI action waits for its transition before saying it is unconfirmed.
pub(crate) const WAIT: Duration = Duration::from_secs(60);

/// `:at` without a directory to replay from.
const NO_RECORDING: &str =
    "no recording directory (set XDG_STATE_HOME or HOME, or pass --recording DIR; kubectl namzu record fills it)";

/// Put `text` on the clipboard by OSC 52, the escape terminals (and tmux with `set-clipboard`)
/// take; what it came to, in words. Whether the terminal took it cannot be read back: a console
/// known to ignore it (TERM linux or dumb) is said so, the rest as asked.
fn copy_to_clipboard(text: &str) -> String {
    use base64::Engine;
    let term = std::env::var("TERM").unwrap_or_default();
    if term == "linux" || term == "dumb" || term.is_empty() {
        return format!(
            "this terminal ({}) has no clipboard escape: {text}",
            if term.is_empty() { "no TERM" } else { &term }
        );
    }
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return format!("not copied: the output is not a terminal: {text}");
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    // inside tmux the escape passes through only wrapped for it
    let escape = if std::env::var_os("TMUX").is_some() {
        format!("\x1bPtmux;\x1b\x1b]52;c;{encoded}\x07\x1b\\")
    } else {
        format!("\x1b]52;c;{encoded}\x07")
    };
    let mut stdout = std::io::stdout();
    match std::io::Write::write_all(&mut stdout, escape.as_bytes()).and_then(|()| std::io::Write::flush(&mut stdout)) {
        Ok(()) => format!("copied (OSC 52; a terminal that refuses it leaves the clipboard as it was): {text}"),
        Err(e) => format!("could not write to the terminal ({e}): {text}"),
    }
}

/// Writes at once in one context's batch: the CLI's `--parallel` default.
const PARALLEL: usize = 10;

/// A row's key from a write's (the TUI names each row after its context).
fn row_key(key: &WorkspaceKey<WorkspaceId>) -> WorkspaceKey {
    WorkspaceKey::new(key.context.as_deref(), &key.namespace, key.id.as_str())
}

/// The TUI as a front-end of a write batch (`ops::write::Front`, as the CLI's terminal is): its
/// rows' notes and the status line take each step; the popup confirmed and bound every write
/// before the batch began, so nothing is asked here.
struct Rows<'a> {
    out: &'a UnboundedSender<Action>,
    verb: namzu_domain::fence::Verb,
    audit: &'a namzu_engine::cluster::audit::AuditLog,
    /// Writes sent and not yet answered: quitting waits for them, so they land in the audit log.
    in_flight: &'a Arc<AtomicUsize>,
    /// The UI has quit: no further write starts.
    closed: &'a std::sync::atomic::AtomicBool,
}

impl namzu_engine::ops::write::Front for Rows<'_> {
    fn can_ask(&self) -> bool {
        false
    }

    fn ask_typed<'b>(
        &'b self,
        _: &'b namzu_engine::ops::write::Question,
    ) -> futures::future::BoxFuture<'b, Result<bool, String>> {
        // never asked: a bound write was confirmed in the popup (and `can_ask` is false)
        Box::pin(async { Ok(false) })
    }

    fn previewed(&self, _: &Outcome) {}

    fn sending(&self, _: &WorkspaceKey<WorkspaceId>) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
    }

    fn sent(&self, key: &WorkspaceKey<WorkspaceId>, outcome: &Outcome) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let _ = self.out.send(Action::Done {
            key: row_key(key),
            verb: self.verb,
            outcome: outcome.clone(),
        });
        if let Some(session) = &self.audit.session {
            let _ = self
                .out
                .send(Action::Sent(session.lock().unwrap_or_else(|p| p.into_inner()).clone()));
        }
        if let Some(why) = self.audit.lost() {
            let _ = self.out.send(Action::AuditFailed(why));
        }
    }

    fn waiting(&self, key: &WorkspaceKey<WorkspaceId>, what: &str, _: Option<namzu_domain::state::State>) {
        let _ = self.out.send(Action::WaitProgress {
            key: row_key(key),
            message: format!("waiting for {what}"),
        });
    }

    fn waited(&self) {}

    fn step(&self, step: &namzu_engine::ops::write::Step) {
        use namzu_engine::ops::write::Step;
        match step {
            Step::Done(report) => {
                if let Some(waited) = &report.waited {
                    let _ = self.out.send(Action::Waited {
                        key: row_key(&report.key),
                        verb: self.verb,
                        waited: waited.clone(),
                    });
                }
            }
            Step::NotStarted(stop, _, key) => {
                let _ = self.out.send(Action::NotStarted {
                    key: row_key(key),
                    why: stop.reason(),
                });
            }
            // nothing is asked, so nothing is cancelled
            Step::Cancelled(_) => {}
        }
    }

    fn output_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    // the UI's own second quit abandons the writes in flight (`wait_for_writes`)
    fn interrupted_twice() {}
}
