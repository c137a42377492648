//! `pods/portforward` over WebSocket, as kube-apiserver + kubelet speak it to kube-rs and to
//! WebSocket clients of the `v4.channel.k8s.io` protocol: a GET with `Upgrade: websocket` and
//! `?ports=8080,…`; per port two channels, data (2·i) and error (2·i+1), the first frame on each
//! carrying the port as 2 bytes little-endian. Behind it the pod's one listener: on
//! [`LISTEN_PORT`] (and every `containerPort` its spec declares) a tiny responder answers each
//! line with the pod's name and uid, and an HTTP request with the same line as its body (then
//! the stream ends, `Connection: close`). A port nothing listens on gets the kubelet's error on its
//! error channel. A forward ends when its pod goes: deleted, replaced under its name, being
//! deleted, or its container restarted (the process that listened is gone).
//! SPDY, and kubectl's SPDY tunnelled in WebSocket (`SPDY/3.1+portforward.k8s.io`), are not
//! spoken: they are refused with the API server's Status, as exec refuses SPDY.

use super::Shared;
use super::SimState;
use super::logs::container_status;
use super::resources::PODS;
use super::status::{self, ApiError};
use super::wire::{Body, full};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use hyper::Response;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::sync::Arc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

/// The port every simulated workspace pod listens on.
pub const LISTEN_PORT: u16 = 8080;

/// How much a stream may send without a line end before the responder drops it.
const MAX_PENDING: usize = 64 * 1024;

/// Whether a request path is a pod's portforward subresource: `(namespace, pod)`.
pub(crate) fn portforward_target(path: &str) -> Option<(String, String)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["api", "v1", "namespaces", ns, "pods", name, "portforward"] => Some((ns.to_string(), name.to_string())),
        _ => None,
    }
}

/// The subprotocol answered, as the kubelet's WebSocket port-forward does: `v4.channel.k8s.io`
/// when offered (kube-rs offers v5 then v4; port-forward has no v5); `Some("")` (none named)
/// when the client offers none; `None` for anything else (kubectl's SPDY tunnel).
pub(crate) fn choose_protocol(offered: &str) -> Option<&'static str> {
    let offered: Vec<&str> = offered.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    if offered.is_empty() {
        return Some("");
    }
    offered.contains(&"v4.channel.k8s.io").then_some("v4.channel.k8s.io")
}

/// One forward: the pod instance it reaches and the ports asked.
#[derive(Debug, Clone)]
pub(crate) struct Forward {
    pub namespace: String,
    pub pod: String,
    pub uid: String,
    /// The listening container and its restart count when the forward opened.
    pub container: String,
    pub restarts: u64,
    pub ports: Vec<u16>,
    pub listening: Vec<u16>,
}

/// The ports a pod listens on: [`LISTEN_PORT`] and the declared `containerPort`s.
fn listening_ports(pod: &Value) -> Vec<u16> {
    let mut ports = vec![LISTEN_PORT];
    for c in pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for p in c["ports"].as_array().into_iter().flatten() {
            if let Some(n) = p["containerPort"].as_u64().and_then(|n| u16::try_from(n).ok()) {
                ports.push(n);
            }
        }
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// `?ports=a,b` (also repeated), each 1–65535, as the API server validates them.
fn parse_ports(query: &[(String, String)]) -> Result<Vec<u16>, ApiError> {
    let mut ports = Vec::new();
    for (_, v) in query.iter().filter(|(k, _)| k == "ports") {
        for p in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match p.parse::<u16>() {
                Ok(n) if n > 0 => ports.push(n),
                _ => {
                    return Err(status::invalid(&format!(
                        "PodPortForwardOptions \"\" is invalid: ports: Invalid value: {p:?}: port must be in the range 1-65535"
                    )));
                }
            }
        }
    }
    if ports.is_empty() {
        return Err(status::bad_request("at least 1 port must be specified"));
    }
    if ports.len() > 64 {
        return Err(status::bad_request("too many ports: at most 64 in one request"));
    }
    Ok(ports)
}

/// Check the pod as the API server and the kubelet do, and describe the forward.
pub(crate) fn prepare(st: &SimState, ns: &str, name: &str, query: &[(String, String)]) -> Result<Forward, ApiError> {
    let ports = parse_ports(query)?;
    let pod = st
        .store
        .get(&PODS, ns, name)
        .ok_or_else(|| status::not_found(&PODS, name))?;
    crate::exec::on_a_node(pod, name)?;
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    if phase != "Running" {
        return Err(status::bad_request(&format!(
            "unable to upgrade connection: pod {name} is {phase}, not running"
        )));
    }
    let (container, restarts) = listener(pod).unwrap_or_default();
    Ok(Forward {
        namespace: ns.to_string(),
        pod: name.to_string(),
        uid: pod
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        container,
        restarts,
        ports,
        listening: listening_ports(pod),
    })
}

/// The container whose process listens (the first) and its restart count.
fn listener(pod: &Value) -> Option<(String, u64)> {
    let first = pod.pointer("/spec/containers/0/name").and_then(Value::as_str)?;
    let restarts = container_status(pod, first)
        .and_then(|c| c["restartCount"].as_u64())
        .unwrap_or(0);
    Some((first.to_string(), restarts))
}

/// Whether the process that listened when `f` opened still runs: the same pod (uid), not being
/// deleted, its container running and not restarted since.
fn still_there(st: &SimState, f: &Forward) -> bool {
    let Some(pod) = st.store.get(&PODS, &f.namespace, &f.pod) else {
        return false;
    };
    let same = pod.pointer("/metadata/uid").and_then(Value::as_str) == Some(f.uid.as_str());
    let deleting = pod.pointer("/metadata/deletionTimestamp").is_some();
    let running = container_status(pod, &f.container).is_some_and(|c| c.pointer("/state/running").is_some());
    same && !deleting && running && listener(pod).map(|(_, r)| r) == Some(f.restarts)
}

/// The 101 answer; the forward runs once hyper hands over the connection.
pub(crate) fn upgrade(
    shared: Arc<Shared>,
    forward: Forward,
    key: &str,
    protocol: &'static str,
    on: OnUpgrade,
) -> Result<Response<Body>, ApiError> {
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut answer = Response::builder()
        .status(101)
        .header("upgrade", "websocket")
        .header("connection", "Upgrade")
        .header("sec-websocket-accept", accept);
    if !protocol.is_empty() {
        answer = answer.header("sec-websocket-protocol", protocol);
    }
    let answer = answer
        .body(full(Bytes::new()))
        .map_err(|e| status::bad_request(&e.to_string()))?;
    tokio::spawn(async move {
        let Ok(upgraded) = on.await else {
            return;
        };
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        run(ws, &shared, forward).await;
    });
    Ok(answer)
}

fn frame(channel: u8, data: &[u8]) -> Message {
    let mut out = Vec::with_capacity(data.len() + 1);
    out.push(channel);
    out.extend_from_slice(data);
    Message::Binary(out.into())
}

/// The kubelet's words for a port nothing listens on.
pub(crate) fn refused(f: &Forward, port: u16) -> String {
    format!(
        "error forwarding port {port} to pod {}, uid {}: failed to connect to localhost:{port} inside namespace \"{}\", IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused IPv6 dial tcp6 [::1]:{port}: connect: connection refused ",
        f.pod, f.uid, f.pod
    )
}

/// What the responder says to one line.
pub(crate) fn answer_line(f: &Forward) -> String {
    format!("pod {} uid {}\n", f.pod, f.uid)
}

/// The listener of one port: what it answers to the bytes so far, and whether the stream ends.
#[derive(Debug, Default)]
pub(crate) struct Responder {
    pending: Vec<u8>,
}

impl Responder {
    pub(crate) fn feed(&mut self, f: &Forward, data: &[u8]) -> (Vec<u8>, bool) {
        self.pending.extend_from_slice(data);
        let http = [&b"GET "[..], b"HEAD ", b"POST ", b"PUT "]
            .iter()
            .any(|m| self.pending.starts_with(m));
        if http {
            if let Some(end) = self.pending.windows(4).position(|w| w == b"\r\n\r\n") {
                self.pending.drain(..end + 4);
                let body = answer_line(f);
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                return (format!("{head}{body}").into_bytes(), true);
            }
            return (Vec::new(), self.pending.len() > MAX_PENDING);
        }
        let mut out = Vec::new();
        while let Some(at) = self.pending.iter().position(|b| *b == b'\n') {
            self.pending.drain(..=at);
            out.extend_from_slice(answer_line(f).as_bytes());
        }
        (out, self.pending.len() > MAX_PENDING)
    }
}

async fn run<S>(ws: WebSocketStream<S>, shared: &Shared, f: Forward)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut tx, mut rx) = ws.split();
    let mut open = vec![true; f.ports.len()];
    let mut responders: Vec<Responder> = f.ports.iter().map(|_| Responder::default()).collect();
    for (i, port) in f.ports.iter().enumerate() {
        let ch = u8::try_from(2 * i).unwrap_or(u8::MAX - 1);
        let _ = tx.send(frame(ch, &port.to_le_bytes())).await;
        let _ = tx.send(frame(ch + 1, &port.to_le_bytes())).await;
        if !f.listening.contains(port) {
            let _ = tx.send(frame(ch + 1, refused(&f, *port).as_bytes())).await;
            open[i] = false;
        }
    }
    let mut check = tokio::time::interval(std::time::Duration::from_millis(20));
    let mut client_closed = false;
    while open.iter().any(|o| *o) {
        tokio::select! {
            m = rx.next() => match m {
                Some(Ok(Message::Binary(b))) if b.len() > 1 => {
                    let i = usize::from(b[0] / 2);
                    if b[0] % 2 == 1 || !open.get(i).copied().unwrap_or(false) {
                        continue;
                    }
                    let (out, end) = responders[i].feed(&f, &b[1..]);
                    if !out.is_empty() && tx.send(frame(b[0], &out)).await.is_err() {
                        break;
                    }
                    if end {
                        open[i] = false;
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                    client_closed = true;
                    break;
                }
                Some(Ok(_)) => {}
            },
            _ = check.tick() => {
                if !still_there(&shared.lock(), &f) {
                    break;
                }
            }
        }
    }
    if client_closed {
        let _ = tx.send(Message::Close(None)).await;
        return;
    }
    crate::exec::close_normally(&mut tx, &mut rx).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forward() -> Forward {
        Forward {
            namespace: "agents".into(),
            pod: "namzu-ws-a".into(),
            uid: "u-1".into(),
            container: "agent".into(),
            restarts: 0,
            ports: vec![8080],
            listening: vec![8080],
        }
    }

    #[test]
    fn the_responder_answers_lines_and_http() {
        let f = forward();
        let mut r = Responder::default();
        assert_eq!(r.feed(&f, b"hel"), (Vec::new(), false));
        assert_eq!(
            r.feed(&f, b"lo\nx\n"),
            (b"pod namzu-ws-a uid u-1\npod namzu-ws-a uid u-1\n".to_vec(), false)
        );
        let mut h = Responder::default();
        let (out, end) = h.feed(&f, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        let out = String::from_utf8(out).unwrap_or_default();
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n") && out.ends_with("\r\n\r\npod namzu-ws-a uid u-1\n"));
        assert!(end);
    }

    #[test]
    fn paths_protocols_and_ports() {
        assert_eq!(
            portforward_target("/api/v1/namespaces/agents/pods/p/portforward"),
            Some(("agents".into(), "p".into()))
        );
        assert_eq!(
            choose_protocol("v5.channel.k8s.io, v4.channel.k8s.io"),
            Some("v4.channel.k8s.io")
        );
        assert_eq!(choose_protocol(""), Some(""));
        assert_eq!(choose_protocol("SPDY/3.1+portforward.k8s.io"), None);
        let q = |v: &str| vec![("ports".to_string(), v.to_string())];
        assert_eq!(parse_ports(&q("80,1234")).ok(), Some(vec![80, 1234]));
        assert!(parse_ports(&q("0")).is_err());
        assert!(parse_ports(&[]).is_err());
        assert!(refused(&forward(), 9).contains("connect: connection refused"));
    }
}
