//! `port-forward`: a local port that follows its workspace. Every accepted connection goes to the
//! workspace's own pod as `domain::triage::command_target` decides it (never a foreign pod, nor
//! one being deleted, nor the pod of a Suspended workspace), read again for each connection: a
//! container restart, a replaced pod or a suspend/resume costs the connections open then, never
//! the forward. Each new target, each wait and each refusal is said through `say`, in the tool's
//! words; the front-end (the CLI, the TUI) decides where the lines go.

use crate::cluster::connect::Connection;
use crate::cluster::error::ClusterError;
use crate::cluster::portforward;
use crate::cluster::triage::read_pod;
use crate::console::printable;
use namzu_domain::naming::WorkspaceId;
use namzu_domain::object::{name, uid};
use namzu_domain::triage::{Purpose, Unavailable, command_target};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// How often a waiting connection reads the workspace again.
const POLL: Duration = Duration::from_millis(250);

/// How many times one connection tries a freshly read pod whose forward would not open (it was
/// replaced between the read and the upgrade).
const ATTEMPTS: usize = 3;

/// Where the lines go.
pub type Say = Arc<dyn Fn(String) + Send + Sync>;

/// A forward: the workspace, the port in its pod, and where it listens.
pub struct Forward {
    pub conn: Connection,
    pub namespace: String,
    pub id: WorkspaceId,
    pub remote: u16,
    /// The address listened on, as said (`127.0.0.1:8080`).
    pub local: String,
    said: Mutex<Said>,
}

/// The last target and the last wait said, so each change is said once.
#[derive(Debug, Default)]
struct Said {
    /// Pod, uid, restart count.
    target: Option<(String, String, u64)>,
    waiting: Option<String>,
}

/// What the workspace offers a connection now.
#[derive(Debug)]
pub enum Resolved {
    /// Its own pod: name, uid, restart count of the container.
    Pod { name: String, uid: String, restarts: u64 },
    /// No pod to reach now (Suspended, being created, being replaced): the line says what it waits for.
    Wait(String),
    /// Never this workspace's pod, or no workspace: the line says why.
    Refused(Unavailable),
    /// No Sandbox by that name.
    Absent,
}

/// Read the workspace in `namespace` and decide what a connection reaches now.
pub async fn resolve(conn: &Connection, namespace: &str, id: &WorkspaceId) -> Result<Resolved, ClusterError> {
    let Some(read) = read_pod(conn, namespace, id).await? else {
        return Ok(Resolved::Absent);
    };
    Ok(
        match command_target(id.as_str(), &read.sandbox, read.pod.as_ref(), None, Purpose::Exec) {
            Ok((pod, chosen)) => Resolved::Pod {
                name: name(pod).to_string(),
                uid: uid(pod).unwrap_or_default().to_string(),
                restarts: restarts(pod, &chosen.container),
            },
            Err(u @ (Unavailable::Foreign { .. } | Unavailable::NotAWorkspace { .. })) => Resolved::Refused(u),
            Err(Unavailable::Suspended { .. } | Unavailable::Terminating { suspended: true, .. }) => {
                Resolved::Wait(format!("workspace {id} is Suspended: no pod; waiting for it to resume"))
            }
            Err(u) => Resolved::Wait(format!("{}; waiting for the workspace's pod", u.message())),
        },
    )
}

fn restarts(pod: &serde_json::Value, container: &str) -> u64 {
    pod.pointer("/status/containerStatuses")
        .and_then(serde_json::Value::as_array)
        .and_then(|all| all.iter().find(|c| c["name"] == container))
        .and_then(|c| c["restartCount"].as_u64())
        .unwrap_or(0)
}

/// Listen on `address:local` (0: a free port).
pub async fn listen(address: &str, local: u16) -> Result<TcpListener, String> {
    TcpListener::bind((address, local))
        .await
        .map_err(|e| format!("cannot listen on {address}:{local}: {e}"))
}

impl Forward {
    pub fn new(conn: Connection, namespace: String, id: WorkspaceId, remote: u16, local: String) -> Forward {
        Forward {
            conn,
            namespace,
            id,
            remote,
            local,
            said: Mutex::new(Said::default()),
        }
    }

    fn said(&self) -> std::sync::MutexGuard<'_, Said> {
        self.said.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Say a wait once (until a target or another wait is said).
    fn say_waiting(&self, say: &Say, line: String) {
        let mut said = self.said();
        if said.waiting.as_deref() != Some(line.as_str()) {
            say(printable(&line));
            said.waiting = Some(line);
        }
    }

    /// Say a new target once: the first, a restarted container, a replaced pod.
    fn say_target(&self, say: &Say, pod: &str, uid: &str, restarts: u64) {
        let mut said = self.said();
        let now = (pod.to_string(), uid.to_string(), restarts);
        if said.target.as_ref() == Some(&now) {
            said.waiting = None;
            return;
        }
        let forwarding = format!("forwarding {} → pod {pod} (uid {uid}) port {}", self.local, self.remote);
        let line = match &said.target {
            Some((_, was, _)) if was == uid => format!("the container restarted (restart {restarts}): {forwarding}"),
            Some((p, was, _)) => format!("pod {p} (uid {was}) is gone: {forwarding}"),
            None => forwarding,
        };
        say(printable(&line));
        said.target = Some(now);
        said.waiting = None;
    }
}

/// Accept connections until the caller stops awaiting; each is served on its own task.
pub async fn serve(listener: TcpListener, forward: Arc<Forward>, say: Say) {
    loop {
        match listener.accept().await {
            Ok((socket, _)) => {
                let (forward, say) = (Arc::clone(&forward), Arc::clone(&say));
                tokio::spawn(async move { connection(socket, &forward, &say).await });
            }
            Err(e) => {
                say(format!("cannot accept a connection on {}: {e}", forward.local));
                tokio::time::sleep(POLL).await;
            }
        }
    }
}

/// Whether the local client hung up, looked at for [`POLL`] (while a connection waits for a pod).
async fn hung_up(socket: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    match tokio::time::timeout(POLL, socket.peek(&mut b)).await {
        Ok(Ok(0) | Err(_)) => true,
        // bytes already sent wait for the pod: the peek sees them at once, so the wait is here
        Ok(Ok(_)) => {
            tokio::time::sleep(POLL).await;
            false
        }
        Err(_) => false,
    }
}

/// One local connection: wait for the workspace's own pod, then carry the bytes both ways.
async fn connection(mut socket: TcpStream, f: &Forward, say: &Say) {
    let mut failures = 0;
    loop {
        let resolved = match resolve(&f.conn, &f.namespace, &f.id).await {
            Ok(r) => r,
            Err(e) => {
                say(printable(&format!("cannot read workspace {}: {e}", f.id)));
                return;
            }
        };
        match resolved {
            Resolved::Pod { name, uid, restarts } => {
                let opened = portforward::open(&f.conn, &f.namespace, &name, f.remote).await;
                match opened {
                    Ok(stream) => {
                        f.say_target(say, &name, &uid, restarts);
                        carry(&mut socket, stream, f, say, &name).await;
                        return;
                    }
                    // replaced between the read and the upgrade: read it again
                    Err(_) if failures + 1 < ATTEMPTS => {
                        failures += 1;
                        tokio::time::sleep(POLL).await;
                    }
                    Err(e) => {
                        say(printable(&format!("cannot forward to pod {name}: {e}")));
                        return;
                    }
                }
            }
            Resolved::Wait(line) => {
                f.say_waiting(say, line);
                if hung_up(&socket).await {
                    return;
                }
            }
            Resolved::Refused(u) => {
                // never forwarded there: the local connection closes
                say(printable(&format!("{}: the connection is closed", u.message())));
                return;
            }
            Resolved::Absent => {
                say(format!(
                    "workspace {} not found in namespace {}: the connection is closed",
                    f.id, f.namespace
                ));
                return;
            }
        }
    }
}

/// The longest message from a pod's error channel said whole.
const MAX_MESSAGE: usize = 1024;

/// A server's message cut to [`MAX_MESSAGE`] characters (and said so).
fn bounded(message: &str) -> String {
    match message.char_indices().nth(MAX_MESSAGE) {
        Some((at, _)) => format!("{}… (cut at {MAX_MESSAGE} characters)", &message[..at]),
        None => message.trim_end().to_string(),
    }
}

/// Bytes both ways until either side ends; the pod's error channel is said.
async fn carry(socket: &mut TcpStream, stream: portforward::PortStream, f: &Forward, say: &Say, pod: &str) {
    let portforward::PortStream {
        stream: pod_side,
        error,
        forwarder,
    } = stream;
    let (mut from_pod, mut to_pod) = tokio::io::split(pod_side);
    let (mut from_client, mut to_client) = socket.split();
    let up = async {
        let _ = tokio::io::copy(&mut from_client, &mut to_pod).await;
        let _ = to_pod.shutdown().await;
        std::future::pending::<()>().await;
    };
    let down = async {
        let _ = tokio::io::copy(&mut from_pod, &mut to_client).await;
        let _ = to_client.shutdown().await;
    };
    // the channel closing without a word is the end of the stream, which `down` sees
    let error = async {
        match error.await {
            Some(message) => message,
            None => std::future::pending().await,
        }
    };
    // the error first: kube-rs hands it over before it ends the stream, so a port that failed
    // is said even when its end is seen at the same time
    tokio::select! {
        biased;
        message = error => say(printable(&format!("pod {pod} port {}: {}", f.remote, bounded(&message)))),
        () = down => {}
        () = up => {}
    }
    forwarder.abort();
}

#[cfg(test)]
mod tests {
    use super::bounded;

    #[test]
    fn a_servers_message_is_bounded() {
        assert_eq!(bounded("refused \n"), "refused");
        let long = "x".repeat(5000);
        let cut = bounded(&long);
        assert!(cut.len() < 1100 && cut.ends_with("(cut at 1024 characters)"), "{cut}");
    }
}
