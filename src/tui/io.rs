//! The I/O task's work: each effect runs through the same cluster functions the CLI uses and
//! reports back as actions. The UI never awaits these.

use super::action::{Action, Effect, Loaded, RowKey};
use crate::clock::Clock;
use crate::cluster::access;
use crate::cluster::connect::Connection;
use crate::cluster::detail;
use crate::cluster::inventory::{self, Query, Scope};
use crate::cluster::live::{self, LiveOptions};
use crate::cluster::resources;
use crate::cluster::wait;
use crate::cluster::write::{self, WritePolicy};
use crate::domain::drift::OverlayFlags;
use crate::domain::fence::Verb;
use crate::domain::naming::WorkspaceId;
use crate::domain::object::name;
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
}

impl Cluster {
    pub fn new(conn: Connection, policy: WritePolicy) -> Cluster {
        Cluster {
            conn,
            policy,
            following: tokio::sync::watch::channel(0).0,
        }
    }
}

pub struct Io {
    /// The contexts opened, by name; an effect runs in its own.
    pub clusters: Vec<Cluster>,
    /// Ticks read it (every context's connection shares it).
    pub clock: Clock,
    pub flags: OverlayFlags,
    pub wait_timeout: Duration,
    /// Writes sent and not yet answered, in every context.
    pub writes_in_flight: Arc<AtomicUsize>,
    pub live: LiveOptions,
}

/// One write in flight, counted until it is dropped.
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn enter(count: &Arc<AtomicUsize>) -> InFlight {
        count.fetch_add(1, Ordering::SeqCst);
        InFlight(count.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Io {
    /// The context named, if it was opened.
    pub fn cluster(&self, context: &str) -> Option<&Cluster> {
        self.clusters.iter().find(|c| c.conn.context == context)
    }

    pub async fn perform(&self, effect: Effect, out: UnboundedSender<Action>) {
        // the app asks only of contexts that were opened
        let Some(cluster) = self.cluster(effect.context()) else {
            return;
        };
        cluster.perform(self, effect, out).await;
    }
}

impl Cluster {
    async fn perform(&self, io: &Io, effect: Effect, out: UnboundedSender<Action>) {
        let send = |a: Action| {
            let _ = out.send(a);
        };
        match effect {
            Effect::Refresh { context, scope } => send(Action::Loaded {
                result: self.load(io, &scope).await,
                context,
                scope,
            }),
            Effect::Follow {
                context,
                scope,
                generation,
            } => {
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
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let follow = live::follow(
                    self.conn.clone(),
                    scope.clone(),
                    Query::default(),
                    io.flags.clone(),
                    io.live.clone(),
                    tx,
                );
                let task = tokio::spawn(follow);
                loop {
                    tokio::select! {
                        _ = replaced.wait_for(|g| *g != generation) => break,
                        event = rx.recv() => match event {
                            Some(event) => {
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
                task.abort();
            }
            Effect::CheckAccess { context, scope } => {
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
                send(Action::Access {
                    context,
                    scope,
                    patch: patch.ok(),
                    delete: delete.ok(),
                    namespaces,
                });
            }
            Effect::Detail(key) => send(Action::Detail {
                result: self.detail(io, &key).await,
                key,
            }),
            Effect::Yaml(key) => send(Action::Detail {
                result: self.yaml(&key).await,
                key,
            }),
            Effect::Preview { key, plan, take_over } => {
                let outcome = write::write(&self.conn, &self.policy, &plan).await;
                send(Action::Preview {
                    key,
                    take_over,
                    outcome,
                });
            }
            Effect::Write { key, plan, wait } => {
                // counted while in flight: quitting waits for it, so it lands in the audit log
                let _in_flight = InFlight::enter(&io.writes_in_flight);
                let before = if plan.verb == Verb::Resume {
                    write::pod_uid_before(&self.conn, &plan.namespace, &plan.id).await
                } else {
                    None
                };
                let outcome = write::write(&self.conn, &self.policy, &plan).await;
                let landed = outcome.landed();
                send(Action::Done {
                    key: key.clone(),
                    verb: plan.verb,
                    outcome,
                });
                if let Some(session) = &self.policy.audit.session {
                    send(Action::Sent(session.lock().unwrap_or_else(|p| p.into_inner()).clone()));
                }
                if let Some(why) = self.policy.audit.lost() {
                    send(Action::AuditFailed(why));
                }
                drop(_in_flight);
                if landed && wait {
                    let progress_key = key.clone();
                    let waited = wait::wait(
                        &self.conn,
                        &plan.namespace,
                        &plan.id,
                        plan.verb,
                        before.as_deref(),
                        io.wait_timeout,
                        |what, _| {
                            send(Action::WaitProgress {
                                key: progress_key.clone(),
                                message: format!("waiting for {what}"),
                            });
                        },
                    )
                    .await;
                    send(Action::Waited {
                        key,
                        verb: plan.verb,
                        waited,
                    });
                }
            }
        }
    }

    async fn load(&self, io: &Io, scope: &Scope) -> Result<Loaded, String> {
        let query = Query {
            per_sandbox_label_key: io.flags.per_sandbox_label_key.clone(),
            ..Default::default()
        };
        let inv = inventory::read(&self.conn, scope, &query)
            .await
            .map_err(|e| e.to_string())?;
        let now = self.conn.clock.now();
        let rows = inv.workspaces(&io.flags, now);
        let namespaces = inv.namespaces.iter().map(|n| n.namespace.clone()).collect();
        Ok(Loaded {
            rows,
            warnings: inv.warnings,
            namespaces,
        })
    }

    /// The Sandbox as the API serves it, without managedFields, as YAML.
    async fn yaml(&self, key: &RowKey) -> Result<String, String> {
        let id = WorkspaceId::parse(&key.id).map_err(|e| e.to_string())?;
        let object = resources::get(&self.conn, &resources::SANDBOXES, &key.namespace, &id.sandbox_name())
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("workspace {} is gone", key.id))?;
        Ok(super::app::yaml(&object))
    }

    async fn detail(&self, io: &Io, key: &RowKey) -> Result<String, String> {
        let id = WorkspaceId::parse(&key.id).map_err(|e| e.to_string())?;
        let d = detail::read(&self.conn, &key.namespace, &id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("workspace {} is gone", key.id))?;
        let now = self.conn.clock.now();
        let w = d.workspace(&io.flags, now);
        let text = crate::present::detail::render_with_drift(&w, &d, now);
        Ok(text)
    }
}

/// How long a TUI action waits for its transition before saying it is unconfirmed.
pub const WAIT: Duration = Duration::from_secs(60);
