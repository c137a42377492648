//! One connection through a pod's port: `pods/portforward` over WebSocket, through kube-rs
//! (`Api::<Pod>::portforward`, the `v4.channel.k8s.io` protocol: a data and an error channel per
//! port). Which pod is `domain/triage.rs`'s rule; following the workspace is `ops/port_forward.rs`.

use super::connect::Connection;
use super::error::{ApiCall, ClusterError};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use namzu_domain::naming::{is_path_safe_name, validate_namespace};

/// An open forward to one port of one pod: its byte stream, what the server's error channel
/// says (`None` when it closes without a word), and the task behind both (abort it when done).
pub struct PortStream {
    pub stream: tokio::io::DuplexStream,
    pub error: BoxFuture<'static, Option<String>>,
    pub forwarder: kube::api::Portforwarder,
}

fn call(namespace: &str, pod: &str) -> ApiCall {
    ApiCall {
        verb: "create",
        resource: "pods/portforward".into(),
        namespace: Some(namespace.to_string()),
        name: pod.to_string(),
    }
}

/// Open a forward to `port` of `pod` (the upgrade bounded by `--request-timeout`).
pub async fn open(conn: &Connection, namespace: &str, pod: &str, port: u16) -> Result<PortStream, ClusterError> {
    let op = call(namespace, pod);
    validate_namespace(namespace).map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    if !is_path_safe_name(pod) {
        return Err(ClusterError::Other(format!("{op}: invalid name {pod:?}")));
    }
    let api: kube::Api<Pod> = kube::Api::namespaced(conn.client.clone(), namespace);
    let mut forwarder = conn.bounded(&op, api.portforward(pod, &[port])).await?;
    let (Some(stream), Some(error)) = (forwarder.take_stream(port), forwarder.take_error(port)) else {
        forwarder.abort();
        return Err(ClusterError::Other(format!("{op}: no stream for port {port}")));
    };
    Ok(PortStream {
        stream,
        error: Box::pin(error),
        forwarder,
    })
}
