//! Following a set of contexts live: each context's live inventory ([`live::follow`]) on a
//! task of its own, its reports tagged with the context (its rows named after it) and merged
//! into one stream. `list -w` follows its fleet through it, the TUI each context it shows; both
//! only render what it yields. Every follow stops when the stream is dropped.

use crate::cluster::connect::Connection;
use crate::cluster::inventory::{Query, Scope};
use crate::cluster::live::{self, LiveEvent, LiveOptions, StreamName, StreamStatus};
use namzu_domain::drift::OverlayFlags;
use namzu_domain::mirror::RowChange;
use std::collections::BTreeMap;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// One context to follow.
pub struct FollowContext {
    /// What its rows and reports are named after (`None`: a single context, unnamed).
    pub context: Option<String>,
    pub conn: Connection,
    pub scope: Scope,
}

/// One report of one context's live inventory; its rows carry the context.
#[derive(Debug)]
pub struct Followed {
    pub context: Option<String>,
    pub event: LiveEvent,
}

/// The contexts followed: their reports as they come, until dropped.
pub struct Following {
    events: UnboundedReceiver<Followed>,
    _tasks: Vec<AbortOnDrop>,
}

/// Follow every target at once, each with the same query, overlays and tuning.
pub fn follow(
    targets: impl IntoIterator<Item = FollowContext>,
    query: &Query,
    flags: &OverlayFlags,
    options: &LiveOptions,
) -> Following {
    let (tx, events) = unbounded_channel();
    let tasks = targets
        .into_iter()
        .map(|target| {
            let (tx, query, flags, options) = (tx.clone(), query.clone(), flags.clone(), options.clone());
            AbortOnDrop(Some(tokio::spawn(async move {
                let (member_tx, mut member_events) = unbounded_channel();
                let follow = live::follow(target.conn, target.scope, query, flags, options, member_tx);
                // the follow ends when nobody reads it any more (its channel closed) or when it
                // cannot go on; the forwarding ends with it
                let forward = async move {
                    loop {
                        let event = tokio::select! {
                            // nobody reads any more (`Following::finish`): the follow ends too
                            _ = tx.closed() => break,
                            e = member_events.recv() => match e {
                                Some(e) => e,
                                None => break,
                            },
                        };
                        let event = named(event, &target.context);
                        let followed = Followed {
                            context: target.context.clone(),
                            event,
                        };
                        if tx.send(followed).is_err() {
                            break;
                        }
                    }
                };
                tokio::join!(follow, forward);
            })))
        })
        .collect();
    Following { events, _tasks: tasks }
}

impl Following {
    /// The next report of any context; `None` once every follow has ended.
    pub async fn next(&mut self) -> Option<Followed> {
        self.events.recv().await
    }

    /// Stop every follow and wait until each has ended (a recording's session is closed with
    /// its stop record), where dropping would cut them short.
    pub async fn finish(self) {
        let Following { events, mut _tasks } = self;
        drop(events);
        for task in &mut _tasks {
            if let Some(handle) = task.0.take() {
                let _ = handle.await;
            }
        }
    }
}

/// Rows named after their context.
fn named(event: LiveEvent, context: &Option<String>) -> LiveEvent {
    let name = |mut changes: Vec<RowChange>| {
        for change in &mut changes {
            if let RowChange::Upsert(w) = change {
                w.context = context.clone();
            }
        }
        changes
    };
    match event {
        LiveEvent::Rows(changes) => LiveEvent::Rows(name(changes)),
        LiveEvent::Provisional(changes) => LiveEvent::Provisional(name(changes)),
        other => other,
    }
}

/// A watch's turn worth a line: it lost the server, or it is back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    Reconnecting { stream: StreamName, why: String },
    LiveAgain { stream: StreamName },
}

/// Which watches are reconnecting, per context: a line when one starts to, and one when it is
/// live again (not one per retry).
#[derive(Debug, Default)]
pub struct Turns {
    down: BTreeMap<(Option<String>, StreamName), bool>,
}

impl Turns {
    pub fn turn(&mut self, context: &Option<String>, stream: &StreamName, status: &StreamStatus) -> Option<Turn> {
        let down = matches!(status, StreamStatus::Reconnecting { .. });
        let was = self
            .down
            .insert((context.clone(), stream.clone()), down)
            .unwrap_or(false);
        match (status, was) {
            (StreamStatus::Reconnecting { why, .. }, false) => Some(Turn::Reconnecting {
                stream: stream.clone(),
                why: why.clone(),
            }),
            (StreamStatus::Live, true) => Some(Turn::LiveAgain { stream: stream.clone() }),
            _ => None,
        }
    }
}

/// A task that stops when its handle is dropped.
struct AbortOnDrop(Option<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(handle) = &self.0 {
            handle.abort();
        }
    }
}
