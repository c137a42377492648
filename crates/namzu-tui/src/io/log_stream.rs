//! The log pane's streams on the I/O side: one row's own pod's log (`l`), or the logs of every
//! marked row at once, each workspace's stream read and followed by the same
//! `cluster::triage::read_log` as `kubectl namzu logs -f` with one workspace or several (across
//! restarts and reconnects, until the pod's end). One pane streams at a time: a pane's streams
//! are one task, stopped together when it closes or another opens.

use super::{Io, own_container};
use crate::action::Action;
use namzu_domain::naming::WorkspaceKey;
use namzu_domain::triage::Purpose;
use namzu_engine::cluster::connect::Connection;
use namzu_engine::cluster::resources;
use namzu_engine::cluster::triage::{self, LogAsk, LogNote, LogSink};
use tokio::sync::mpsc::UnboundedSender;

/// The log pane's stream on the I/O side: the one running, and up to which streams were stopped.
#[derive(Debug, Default)]
pub struct LogTask {
    stream: u64,
    handle: Option<tokio::task::AbortHandle>,
    stopped: u64,
}

/// Lines the log pane asks for first: the newest this many (of each workspace), then what comes.
pub(crate) const LOG_TAIL: i64 = 1000;

/// One log a pane reads: the workspace, in its context's connection, and which of the pane's
/// workspaces it is.
pub(super) struct Read {
    pub conn: Connection,
    pub key: WorkspaceKey,
    pub container: Option<String>,
    pub from: usize,
}

impl Io {
    /// Stream `reads` into the pane `stream` (all at once, one task), stopping the stream it
    /// replaces.
    pub(super) async fn start_logs(
        &self,
        reads: Vec<Read>,
        previous: bool,
        stream: u64,
        out: &UnboundedSender<Action>,
    ) {
        // effects run in any order: a stream already stopped, or older than the one
        // running, never starts (the pane it was for is gone or moved on)
        let task = {
            let mut current = self.log_task.lock().unwrap_or_else(|p| p.into_inner());
            if stream <= current.stopped || stream < current.stream {
                return;
            }
            let out = out.clone();
            let task = tokio::spawn(async move {
                let each = reads
                    .into_iter()
                    .map(|read| stream_logs(read, previous, stream, out.clone()));
                futures::future::join_all(each).await;
            });
            if let Some(old) = current.handle.replace(task.abort_handle()) {
                old.abort();
            }
            current.stream = stream;
            task
        };
        // a panic in the stream is the UI's to report, as any effect's
        if let Err(e) = task.await
            && e.is_panic()
        {
            std::panic::resume_unwind(e.into_panic());
        }
    }

    /// Stop the pane's stream `stream` (and any older one, whichever runs first).
    pub(super) fn stop_logs(&self, stream: u64) {
        let mut current = self.log_task.lock().unwrap_or_else(|p| p.into_inner());
        current.stopped = current.stopped.max(stream);
        if current.stream <= stream
            && let Some(task) = current.handle.take()
        {
            task.abort();
        }
    }

    /// The marked rows' logs in one pane: each in its own context's connection; a context not
    /// open (it cannot be: the rows came from it) says so as that workspace's end.
    pub(super) async fn logs_of(
        &self,
        keys: Vec<WorkspaceKey>,
        previous: bool,
        stream: u64,
        out: &UnboundedSender<Action>,
    ) {
        let mut reads = Vec::new();
        for (from, key) in keys.into_iter().enumerate() {
            match self.connection(key.context_name()) {
                Some(conn) => reads.push(Read {
                    conn,
                    key,
                    container: None,
                    from,
                }),
                None => {
                    let _ = out.send(Action::LogEnded {
                        stream,
                        from,
                        text: format!("context {} is not open", key.context_name()),
                        failed: true,
                    });
                }
            }
        }
        self.start_logs(reads, previous, stream, out).await;
    }
}

/// Stream a row's own pod's log into the pane, as actions of stream `stream`.
async fn stream_logs(read: Read, previous: bool, stream: u64, out: UnboundedSender<Action>) {
    let Read {
        conn,
        key,
        container,
        from,
    } = read;
    let ended = |text: String, failed: bool| Action::LogEnded {
        stream,
        from,
        text,
        failed,
    };
    let (pod, chosen) = match own_container(&conn, &key, container.as_deref(), Purpose::Logs { previous }).await {
        Ok(found) => found,
        Err(why) => {
            let _ = out.send(ended(why, true));
            return;
        }
    };
    let mut source = format!("pod {pod} · container {}", chosen.container);
    if let Some(all) = &chosen.defaulted_among {
        source.push_str(&format!(" (the default of {})", all.join(", ")));
    }
    if previous {
        source.push_str(" · previous instance");
    }
    let _ = out.send(Action::LogOpened { stream, from, source });
    let ask = LogAsk {
        container: chosen.container,
        previous,
        follow: !previous,
        tail_lines: Some(LOG_TAIL),
        // every line keeps the server's timestamp: `t` shows it, the pane hides it otherwise
        timestamps: true,
        ..Default::default()
    };
    let pod_object = match resources::get(&conn, &resources::PODS, &key.namespace, &pod).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            let _ = out.send(ended(format!("pod {pod} is gone"), true));
            return;
        }
        Err(e) => {
            let _ = out.send(ended(e.to_string(), true));
            return;
        }
    };
    let mut sink = PaneSink {
        out: out.clone(),
        stream,
        from,
    };
    let action = match triage::read_log(&conn, &key.namespace, pod_object, ask, true, &mut sink).await {
        Ok(end) => ended(end.message().unwrap_or_else(|| "the log ended".into()), false),
        Err(e) => ended(e.to_string(), true),
    };
    let _ = out.send(action);
}

/// Lines and notes of one stream, as actions.
struct PaneSink {
    out: UnboundedSender<Action>,
    stream: u64,
    from: usize,
}

impl LogSink for PaneSink {
    fn lines(&mut self, lines: Vec<String>) -> bool {
        lines.is_empty()
            || self
                .out
                .send(Action::LogLines {
                    stream: self.stream,
                    from: self.from,
                    lines,
                })
                .is_ok()
    }

    fn note(&mut self, note: LogNote) {
        let text = match note {
            LogNote::Restarted { container, restart } => {
                format!("--- container {container} restarted (restart {restart}): the new instance follows ---")
            }
            LogNote::Reconnecting { why } => format!("--- the stream ended ({why}): reading on ---"),
            LogNote::Waiting { container, state } => {
                format!("--- container {container} is not running ({state}): its next start follows ---")
            }
        };
        let _ = self.out.send(Action::LogNote {
            stream: self.stream,
            from: self.from,
            text,
        });
    }
}
